"""Dataset manifests on real files: build, verify every failure kind, remote shards, DVC import."""

from __future__ import annotations

import hashlib
import http.server
import io
import json
import os
import shutil
import socket
import threading
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result
from support import REPO

from reprogate.core.documents import load_document
from reprogate.core.progress import Progress
from reprogate.datasets.hashing import hash_file, hash_files

Cli = Callable[..., Result]
DVC_PROJECT = REPO / "tests" / "fixtures" / "dvc" / "project"


@pytest.fixture
def data(tmp_path: Path) -> Path:
    """A small dataset: shards at two depths, a tokenizer, a file of a few MiB."""
    root = tmp_path / "data"
    (root / "train").mkdir(parents=True)
    (root / "val").mkdir()
    (root / "tok").mkdir()
    (root / "train" / "part-000.bin").write_bytes(os.urandom(3 * 1024 * 1024 + 17))
    (root / "train" / "part-001.bin").write_bytes(b"second shard\n" * 1000)
    (root / "val" / "part-000.bin").write_bytes(b"validation\n")
    (root / "tok" / "tokenizer.json").write_text('{"vocab": {"a": 0}}')
    (root / "notes.tmp").write_text("scratch")
    return root


def build(cli: Cli, root: Path, out: Path, *extra: str) -> Result:
    return cli("dataset", "manifest", str(root), "-o", str(out), "-q", "--file", "tokenizer=tok/tokenizer.json", "--exclude", "*.tmp", "--id", "D-1", *extra)


def verify(cli: Cli, manifest: Path, *extra: str) -> Result:
    return cli("dataset", "verify", str(manifest), "-q", *extra)


# build -------------------------------------------------------------------------------------------


def test_manifest_names_every_shard_with_size_and_checksum(cli: Cli, data: Path, tmp_path: Path) -> None:
    out = tmp_path / "m.yaml"
    result = build(cli, data, out)
    assert result.exit_code == 0, result.output
    manifest = load_document(out).data
    assert [s["name"] for s in manifest["shards"]] == ["train/part-000.bin", "train/part-001.bin", "val/part-000.bin"]
    first = data / "train" / "part-000.bin"
    assert manifest["shards"][0] == {
        "name": "train/part-000.bin",
        "bytes": first.stat().st_size,
        "checksum": "sha256:" + hashlib.sha256(first.read_bytes()).hexdigest(),
    }
    assert manifest["files"][0]["role"] == "tokenizer" and manifest["files"][0]["name"] == "tok/tokenizer.json"
    assert manifest["selection"] == {"exclude": ["*.tmp"]}
    assert manifest["digest"] in result.output
    assert cli("validate", str(out)).exit_code == 0


def test_rebuilding_unchanged_data_gives_identical_bytes(cli: Cli, data: Path, tmp_path: Path) -> None:
    build(cli, data, tmp_path / "a.yaml", "--jobs", "1")
    build(cli, data, tmp_path / "b.yaml", "--jobs", "2")
    assert (tmp_path / "a.yaml").read_bytes() == (tmp_path / "b.yaml").read_bytes()


def test_include_globs_and_base_fields_are_kept(cli: Cli, data: Path, tmp_path: Path) -> None:
    base = tmp_path / "base.yaml"
    build(cli, data, base)
    text = base.read_text().replace("algorithm: sha256", 'algorithm: sha256\nretention: {policy: keep, expires: "2030-01-01"}\nsplit: {method: shards}')
    base.write_text(text)
    out = tmp_path / "m.yaml"
    result = cli("dataset", "manifest", str(data), "-o", str(out), "-q", "--include", "train/**", "--base", str(base))
    assert result.exit_code == 0, result.output
    manifest = load_document(out).data
    assert [s["name"] for s in manifest["shards"]] == ["train/part-000.bin", "train/part-001.bin"]
    assert manifest["id"] == "D-1" and manifest["retention"]["expires"] == "2030-01-01" and manifest["split"] == {"method": "shards"}


def test_interrupted_build_leaves_no_partial_manifest(cli: Cli, data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "m.yaml"
    out.write_text("previous manifest\n")
    import reprogate.datasets.build as build_module

    def interrupted(*args: Any, **kwargs: Any) -> Any:
        raise KeyboardInterrupt

    monkeypatch.setattr(build_module, "hash_files", interrupted)
    result = build(cli, data, out)
    assert result.exit_code == 130 and "reprogate dataset manifest: interrupted" in result.output, result.output  # 128 + SIGINT, as a shell reports Ctrl-C
    assert out.read_text() == "previous manifest\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data", "m.yaml"]


def test_failed_write_keeps_the_old_manifest(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from reprogate.core import fileio

    target = tmp_path / "m.yaml"
    target.write_text("old\n")

    def broken(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(fileio.os, "fsync", broken)
    with pytest.raises(OSError):
        fileio.atomic_write(target, "new\n" * 1000)
    assert target.read_text() == "old\n" and [p.name for p in tmp_path.iterdir()] == ["m.yaml"]


def test_symlink_leaving_the_root_stops_the_build(cli: Cli, data: Path, tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("not data")
    os.symlink(secret, data / "train" / "leak.bin")
    result = build(cli, data, tmp_path / "m.yaml")
    assert result.exit_code == 1 and "train/leak.bin" in result.stderr
    assert not (tmp_path / "m.yaml").exists()


def test_symlinked_folder_inside_the_root_is_followed_without_looping(cli: Cli, data: Path, tmp_path: Path) -> None:
    os.symlink(data / "val", data / "val-link")
    os.symlink(data, data / "train" / "loop")
    result = build(cli, data, tmp_path / "m.yaml")
    assert result.exit_code == 0, result.stderr
    names = [s["name"] for s in load_document(tmp_path / "m.yaml").data["shards"]]
    assert "val-link/part-000.bin" in names and not any("loop" in n for n in names)


def test_hashing_memory_does_not_grow_with_shard_size(tmp_path: Path) -> None:
    big = tmp_path / "big.bin"
    with open(big, "wb") as fh:
        for _ in range(64):
            fh.write(os.urandom(1024 * 1024))
    tracemalloc.start()
    digest = hash_file(big, "sha256")
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert digest.size == 64 * 1024 * 1024
    assert peak < 3 * 1024 * 1024  # one 1 MiB buffer, not the 64 MiB file


def test_parallel_hashing_returns_results_in_input_order(tmp_path: Path) -> None:
    paths = []
    for i in range(300):
        path = tmp_path / f"f{i:03d}"
        path.write_bytes(os.urandom(i * 997))
        paths.append(path)
    results = hash_files(paths, "sha256", jobs=4)
    assert [r.path for r in results] == paths
    assert all(r.checksum == "sha256:" + hashlib.sha256(p.read_bytes()).hexdigest() for r, p in zip(results, paths, strict=True))


def test_blake3_is_an_option(cli: Cli, data: Path, tmp_path: Path) -> None:
    blake3 = pytest.importorskip("blake3") if os.environ.get("CI") != "true" else __import__("blake3")
    out = tmp_path / "m.yaml"
    assert build(cli, data, out, "--algorithm", "blake3").exit_code == 0
    shard = load_document(out).data["shards"][0]
    assert shard["checksum"] == "blake3:" + blake3.blake3((data / "train" / "part-000.bin").read_bytes()).hexdigest()
    assert verify(cli, out, "--root", str(data)).exit_code == 0


def test_blake3_missing_is_a_clear_usage_error(cli: Cli, data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(__import__("sys").modules, "blake3", None)
    result = build(cli, data, tmp_path / "m.yaml", "--algorithm", "blake3")
    assert result.exit_code == 2 and "reprogate[blake3]" in result.stderr


def test_progress_line_shows_files_bytes_rate_and_eta() -> None:
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    screen = Terminal()
    progress = Progress("hashing", 2, 2048, stream=screen)
    progress.advance(1024, 1)
    progress.advance(1024, 1)
    progress.close()
    text = screen.getvalue()
    assert "2/2 files" in text and "2.0 KiB/2.0 KiB" in text and "/s" in text and "left" in text
    quiet = Terminal()
    Progress("hashing", 1, 1, quiet=True, stream=quiet).advance(1, 1)
    piped = io.StringIO()
    Progress("hashing", 1, 1, stream=piped).advance(1, 1)
    assert quiet.getvalue() == "" and piped.getvalue() == ""


# verify ------------------------------------------------------------------------------------------


@pytest.fixture
def manifest(cli: Cli, data: Path, tmp_path: Path) -> Path:
    out = tmp_path / "m.yaml"
    assert build(cli, data, out, "--namespace", str(data)).exit_code == 0
    return out


def findings(result: Result) -> dict[str, Any]:
    return json.loads(result.output)


def test_verify_all_match(cli: Cli, manifest: Path) -> None:
    result = verify(cli, manifest)
    assert result.exit_code == 0, result.output
    assert "4 shard(s) checked" in result.output and "all match" in result.output


def test_verify_reports_each_failure_kind_by_name(cli: Cli, manifest: Path, data: Path) -> None:
    (data / "train" / "part-001.bin").unlink()  # missing
    with open(data / "val" / "part-000.bin", "r+b") as fh:  # truncated
        fh.truncate(4)
    blob = bytearray((data / "train" / "part-000.bin").read_bytes())  # one flipped byte
    blob[123456] ^= 0x01
    (data / "train" / "part-000.bin").write_bytes(bytes(blob))
    (data / "train" / "part-002.bin").write_bytes(b"new")  # extra
    result = verify(cli, manifest, "--format", "json", "--keep-going")
    assert result.exit_code == 1
    report = findings(result)
    assert report["missing"] == ["train/part-001.bin"]
    assert report["truncated"] == ["val/part-000.bin"]
    assert report["corrupt"] == ["train/part-000.bin"]
    assert report["extra"] == ["train/part-002.bin"]
    located = {f["message"].split(":")[1].strip(): f["line"] for f in report["findings"]}
    text = manifest.read_text().splitlines()
    assert "train/part-001.bin" in text[located["train/part-001.bin"] - 1]


def test_size_failures_stop_before_hashing_unless_asked(cli: Cli, manifest: Path, data: Path) -> None:
    (data / "train" / "part-001.bin").unlink()
    blob = bytearray((data / "train" / "part-000.bin").read_bytes())
    blob[0] ^= 0xFF
    (data / "train" / "part-000.bin").write_bytes(bytes(blob))
    fast = findings(verify(cli, manifest, "--format", "json"))
    assert fast["missing"] == ["train/part-001.bin"] and fast["corrupt"] == [] and fast["checksums_skipped"] is True
    full = findings(verify(cli, manifest, "--format", "json", "--keep-going"))
    assert full["corrupt"] == ["train/part-000.bin"]


@pytest.mark.parametrize("name", ["../outside.bin", "/etc/passwd", "train/../../outside.bin", "a\\..\\b", "file:///etc/passwd"])
def test_traversal_names_are_refused_and_never_read(cli: Cli, manifest: Path, tmp_path: Path, name: str) -> None:
    (tmp_path / "outside.bin").write_bytes(b"x")
    text = manifest.read_text().replace("name: val/part-000.bin", f"name: {json.dumps(name)}")
    manifest.write_text(text)
    result = verify(cli, manifest, "--format", "json")
    assert result.exit_code == 1
    assert findings(result)["unsafe"] == [name]
    check = cli("validate", str(manifest))
    assert check.exit_code == 1 and "unsafe shard name" in check.output


def test_symlink_out_of_the_root_is_refused(cli: Cli, manifest: Path, data: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside.bin"
    outside.write_bytes((data / "val" / "part-000.bin").read_bytes())  # same bytes: must still fail
    (data / "val" / "part-000.bin").unlink()
    os.symlink(outside, data / "val" / "part-000.bin")
    report = findings(verify(cli, manifest, "--format", "json"))
    assert report["unsafe"] == ["val/part-000.bin"]


def test_unreadable_and_unusable_manifests_are_exit_2(cli: Cli, tmp_path: Path, manifest: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("kind: DatasetManifest\nshards: [\n")
    assert verify(cli, bad).exit_code == 2
    s3 = tmp_path / "s3.yaml"
    s3.write_text(manifest.read_text().replace(f"namespace: {manifest.parent / 'data'}", "namespace: s3://bucket/d1/"))
    result = verify(cli, s3)
    assert result.exit_code == 2 and "--root" in result.output


def test_github_format_annotates_the_manifest_lines(cli: Cli, manifest: Path, data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path / "summary.md"))
    (data / "train" / "part-001.bin").unlink()
    result = verify(cli, manifest, "--format", "github")
    assert result.exit_code == 1
    assert any(line.startswith("::error file=") and "missing%3A" not in line and "train/part-001.bin" in line for line in result.output.splitlines())
    assert "train/part-001.bin" in (tmp_path / "summary.md").read_text()


# remote shards -----------------------------------------------------------------------------------


class _Handler(http.server.SimpleHTTPRequestHandler):
    failures: dict[str, int] = {}

    def log_message(self, *args: Any) -> None:
        pass

    def send_head(self) -> Any:
        left = self.failures.get(self.path, 0)
        if left:
            self.failures[self.path] = left - 1
            self.send_error(503)
            return None
        return super().send_head()


@pytest.fixture
def http_root(data: Path) -> Iterator[str]:
    handler = lambda *a, **k: _Handler(*a, directory=str(data), **k)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()
    _Handler.failures.clear()


def test_verify_over_http(cli: Cli, manifest: Path, http_root: str, data: Path) -> None:
    assert verify(cli, manifest, "--root", http_root).exit_code == 0
    (data / "train" / "part-001.bin").unlink()
    report = findings(verify(cli, manifest, "--root", http_root, "--format", "json"))
    assert report["missing"] == ["train/part-001.bin"] and report["exit_code"] == 1


def test_transient_server_errors_are_retried(cli: Cli, manifest: Path, http_root: str) -> None:
    _Handler.failures["/train/part-000.bin"] = 2
    assert verify(cli, manifest, "--root", http_root, "--retries", "3").exit_code == 0


@pytest.fixture
def silent_server() -> Iterator[str]:
    """Accepts connections, then never answers: the remote that stops responding."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.1)
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}/"
    stop.set()
    thread.join()
    for conn in held:
        conn.close()
    listener.close()


def test_remote_that_stops_answering_is_exit_3(cli: Cli, manifest: Path, silent_server: str) -> None:
    result = verify(cli, manifest, "--root", silent_server, "--timeout", "0.3", "--retries", "1", "--format", "json")
    assert result.exit_code == 3, result.output
    assert len(findings(result)["unreachable"]) == 4


# DVC interop -------------------------------------------------------------------------------------


@pytest.fixture
def dvc_project(tmp_path: Path) -> Path:
    target = tmp_path / "dvc"
    shutil.copytree(DVC_PROJECT, target)
    return target


@pytest.mark.parametrize("dvc_file", ["dvc.lock", "data/images.dvc", "data/raw.csv.dvc"])
def test_manifest_from_real_dvc_files_verifies_without_rehashing_differently(cli: Cli, dvc_project: Path, dvc_file: str) -> None:
    out = dvc_project / "manifests" / "m.yaml"
    result = cli("dataset", "from-dvc", str(dvc_project / dvc_file), "-o", str(out))
    assert result.exit_code == 0, result.output + result.stderr
    manifest = load_document(out).data
    assert manifest["algorithm"] == "md5" and manifest["source"] == {"tool": "dvc", "file": Path(dvc_file).name}
    assert cli("validate", str(out)).exit_code == 0
    assert verify(cli, out).exit_code == 0  # our md5 and DVC's directory hash agree with DVC's


def test_dvc_directory_change_is_caught(cli: Cli, dvc_project: Path) -> None:
    out = dvc_project / "m.yaml"
    cli("dataset", "from-dvc", str(dvc_project / "data" / "images.dvc"), "-o", str(out))
    (dvc_project / "data" / "images" / "nested" / "c.bin").write_text("nested imagf\n")
    report = findings(verify(cli, out, "--format", "json"))
    assert report["corrupt"] == ["images"]


def test_dvc2_files_warn_about_their_hashes(cli: Cli, dvc_project: Path) -> None:
    legacy = dvc_project / "data" / "raw.csv.dvc"
    legacy.write_text(legacy.read_text().replace("  hash: md5\n", ""))
    result = cli("dataset", "from-dvc", str(legacy), "-o", str(dvc_project / "m.yaml"))
    assert result.exit_code == 0 and "DVC 2" in result.stderr


def test_dvc_file_without_outputs_is_refused(cli: Cli, tmp_path: Path) -> None:
    empty = tmp_path / "x.dvc"
    empty.write_text("outs: []\n")
    result = cli("dataset", "from-dvc", str(empty), "-o", str(tmp_path / "m.yaml"))
    assert result.exit_code == 1 and not (tmp_path / "m.yaml").exists()


@pytest.mark.parametrize("size", [0, 1, 1000, 64 * 1024 - 1, 64 * 1024, 300_000])
@pytest.mark.parametrize("algorithm", ["sha256", "md5"])
def test_a_file_is_hashed_whole_whether_read_at_once_or_streamed(tmp_path: Path, size: int, algorithm: str) -> None:
    import hashlib

    from reprogate.datasets.hashing import FileReader

    path = tmp_path / "f.bin"
    path.write_bytes(bytes(range(256)) * (size // 256) + b"x" * (size % 256))
    seen: list[int] = []
    got = FileReader(algorithm, str(tmp_path)).check(str(path), size, True, seen.append)
    assert got == (size, hashlib.new(algorithm, path.read_bytes()).digest(), "", "") and sum(seen) == size


def test_a_small_file_that_grew_after_its_size_was_taken_is_hashed_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """fstat said one byte less than the file holds (it grew in between): the one-call read gets
    more than that, and reading goes on to the end, so the digest is of what the file holds."""
    import hashlib

    from reprogate.datasets import hashing

    path = tmp_path / "f.bin"
    path.write_bytes(b"abc" * 100)
    real_fstat = os.fstat

    def stale(fd: int) -> os.stat_result:
        info = real_fstat(fd)
        fields = list(info)
        fields[6] = info.st_size - 1  # st_size
        return os.stat_result(fields)

    monkeypatch.setattr(hashing.os, "fstat", stale)
    size, digest, problem, _ = hashing.FileReader("sha256", str(tmp_path)).check(str(path), 299, True)
    assert (size, digest, problem) == (300, hashlib.sha256(b"abc" * 100).digest(), "")


def test_a_manifest_written_into_its_own_dataset_lists_neither_itself_nor_its_temporaries(cli: Callable[..., Any], tmp_path: Path) -> None:
    """`dataset manifest DIR -o DIR/m.json`: the atomic writer's temporary sat beside the shards
    while they were walked, and a killed run's leftover stayed there for the next run."""
    data = tmp_path / "data"
    data.mkdir()
    (data / "a.bin").write_bytes(b"a" * 100)
    (data / ".m.json.k1ll3d.tmp").write_text("left by a killed run")
    (data / ".other.tmp").write_text("any *.tmp is a leftover temporary (select.DEFAULT_EXCLUDES), never a shard")
    result = cli("dataset", "manifest", str(data), "-o", str(data / "m.json"), "--quiet")
    assert result.exit_code == 0, result.output
    import json

    names = sorted(shard["name"] for shard in json.loads((data / "m.json").read_text())["shards"])
    assert names == ["a.bin"], names
    assert cli("dataset", "verify", str(data / "m.json")).exit_code == 0
