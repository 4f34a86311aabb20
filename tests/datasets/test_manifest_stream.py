"""JSON Lines manifests: written and read a line at a time, same digest as YAML and JSON, damage
reported by line, nothing half-written, memory that does not grow with the shard count."""

from __future__ import annotations

import hashlib
import json
import os
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import Result
from support import edit_record
from support.rebuilds import make_state

from reprogate.core.canonical import canonical_digest
from reprogate.core.documents import load_document, load_text
from reprogate.core.yamlout import FlowMap, _RoundTripDumper, flow_item
from reprogate.datasets import manifest_digest
from reprogate.datasets.build import write_manifest
from reprogate.datasets.digest import ManifestDigest
from reprogate.datasets.manifest_lines import ShardLines
from reprogate.datasets.manifests import StreamedManifest, load_manifest
from reprogate.datasets.select import Walk
from reprogate.rebuild.stages.artifacts import copy_in
from reprogate.rebuild.stages.dataset import dataset

Cli = Callable[..., Result]
FORMS = ("m.yaml", "m.json", "m.jsonl")


@pytest.fixture
def data(tmp_path: Path) -> Path:
    """Shards at two depths with names that sort differently as paths and as folder entries."""
    root = tmp_path / "data"
    for name, content in {
        "a/x.bin": b"under a",
        "a-b.bin": b"a dash, sorts before a/ in code-point order",
        "a0.bin": b"zero",
        "b/c/d.bin": os.urandom(300_000),
        "b/c.bin": b"file beside folder c",
        "tok/tokenizer.json": b'{"vocab": {}}',
    }.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(content)
    return root


def build(cli: Cli, root: Path, out: Path, *extra: str) -> Result:
    result = cli("dataset", "manifest", str(root), "-o", str(out), "-q", "--file", "tokenizer=tok/tokenizer.json", "--id", "D-9", *extra)
    assert result.exit_code == 0, result.output + result.stderr
    return result


def verify(cli: Cli, manifest: Path, root: Path, *extra: str) -> tuple[Result, dict[str, Any]]:
    result = cli("dataset", "verify", str(manifest), "--root", str(root), "-q", "--format", "json", *extra)
    return result, json.loads(result.output)


def lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()


def line_of(path: Path, name: str) -> int:
    """1-based line of the shard named `name` in a JSON Lines manifest."""
    return next(i for i, text in enumerate(lines(path), 1) if i > 1 and json.loads(text)["name"] == name)


# round trip and digest ---------------------------------------------------------------------------


def test_jsonl_round_trip_header_then_one_sorted_shard_per_line(cli: Cli, data: Path, tmp_path: Path) -> None:
    out = tmp_path / "m.jsonl"
    result = build(cli, data, out, "--version", "2")
    text = lines(out)
    header = json.loads(text[0])
    assert "shards" not in header and header["id"] == "D-9" and header["version"] == "2" and header["files"][0]["name"] == "tok/tokenizer.json"
    shards = [json.loads(t) for t in text[1:]]
    names = [s["name"] for s in shards]
    assert names == ["a-b.bin", "a/x.bin", "a0.bin", "b/c.bin", "b/c/d.bin"] == sorted(names)
    assert header["digest"] in result.output
    doc = load_manifest(out)
    assert isinstance(doc.data, StreamedManifest) and list(doc.data["shards"]) == shards
    yaml_twin = tmp_path / "m.yaml"
    build(cli, data, yaml_twin, "--version", "2")
    assert load_document(yaml_twin).data["shards"] == shards
    assert verify(cli, out, data)[0].exit_code == 0
    assert cli("validate", str(out)).exit_code == 0


def test_the_digest_is_the_same_in_every_form(cli: Cli, data: Path, tmp_path: Path) -> None:
    digests = set()
    for form in FORMS:
        result = build(cli, data, tmp_path / form)
        digests.add(result.output.split("digest ")[1].strip())
        printed = cli("digest", "--manifest", str(tmp_path / form))
        assert printed.exit_code == 0, printed.output + printed.stderr
        digests.add(printed.output.split()[0])
    assert len(digests) == 1
    whole = load_document(tmp_path / "m.yaml").data
    assert digests == {canonical_digest({k: v for k, v in whole.items() if k != "digest"})}


TRICKY = [
    {"name": 'quote"and\\backslash', "bytes": 1, "checksum": "sha256:" + "1" * 64},
    {"name": "tab\tnew\nline", "bytes": 2, "checksum": "sha256:" + "2" * 64},
    {"name": "ünïcødé/😀.bin", "bytes": 3, "checksum": "sha256:" + "3" * 64},
    {"name": "yes", "bytes": 4, "checksum": "sha256:" + "4" * 64, "kind": "file"},
    {"name": "1e3", "bytes": 0, "checksum": "sha256:" + "5" * 64},
]


AROUND_SHARDS = {  # canonical-v1 sorts keys: these fall before and after "shards"
    "retention": {"expires": "2031-01-01"},
    "source": {"tool": "reprogate"},
    "split": {"method": "shards"},
    "version": "7",
    "streaming": {"snapshot_id": "s"},
}


@pytest.mark.parametrize("extra", [{}, AROUND_SHARDS], ids=["plain", "fields-sorting-before-and-after-shards"])
def test_incremental_digest_equals_canonical_digest_of_the_whole(extra: dict[str, Any], tmp_path: Path) -> None:
    shards = sorted(TRICKY, key=lambda s: s["name"])
    manifest = {"apiVersion": "reprogate/v1", "kind": "DatasetManifest", "id": "D", **extra, "algorithm": "sha256", "shards": shards}
    expected = canonical_digest(manifest)
    digest = ManifestDigest({k: v for k, v in manifest.items() if k != "shards"})
    for shard in manifest["shards"]:
        digest.add(shard)
    assert digest.value() == expected
    for form in FORMS:
        assert write_manifest({**manifest, "digest": expected}, tmp_path / form) == expected
        loaded = load_manifest(tmp_path / form).data
        assert manifest_digest(loaded) == expected == loaded["digest"]
        if form != "m.jsonl":
            assert loaded["shards"] == manifest["shards"]
    assert list(load_manifest(tmp_path / "m.jsonl").data["shards"]) == manifest["shards"]


def test_empty_dataset_in_every_form(cli: Cli, tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    digests = set()
    for form in FORMS:
        result = cli("dataset", "manifest", str(tmp_path / "empty"), "-o", str(tmp_path / form), "-q", "--id", "E")
        assert result.exit_code == 0, result.stderr
        digests.add(result.output.split("digest ")[1].strip())
        assert cli("validate", str(tmp_path / form)).exit_code == 0
    assert len(digests) == 1 and lines(tmp_path / "m.jsonl")[1:] == []


def test_yaml_items_written_directly_read_back_as_pyyaml_would_write_them() -> None:
    more = [{"name": "a/b-c_d.bin", "bytes": 10, "checksum": "md5:" + "a" * 32}, {"name": "-x", "bytes": 1, "checksum": "x"}]
    more.append({"name": "on", "bytes": 0, "checksum": "c"})  # a YAML 1.1 boolean
    for shard in [*TRICKY, *more]:
        fast = flow_item(shard)
        pyyaml = yaml.dump([FlowMap(shard)], Dumper=_RoundTripDumper, sort_keys=False, allow_unicode=True, width=1 << 30)
        assert load_text("x:\n" + fast, "fast").data["x"] == [shard] == load_text("x:\n" + pyyaml, "pyyaml").data["x"]
        assert fast.count("\n") == 1


# damage is reported by line ----------------------------------------------------------------------


@pytest.fixture
def manifest(cli: Cli, data: Path, tmp_path: Path) -> Path:
    out = tmp_path / "m.jsonl"
    build(cli, data, out)
    return out


def test_truncated_last_line_is_exit_2_with_its_line(cli: Cli, manifest: Path, data: Path) -> None:
    raw = manifest.read_bytes()
    manifest.write_bytes(raw[: len(raw) - 30])  # cut inside the last shard line
    last = len(lines(manifest))
    result, report = verify(cli, manifest, data)
    assert result.exit_code == 2 and report["ok"] is False
    assert [f["line"] for f in report["findings"]] == [last]
    assert f"line {last}:" in report["findings"][0]["message"] and "cut short" in report["findings"][0]["message"]
    checked = cli("validate", str(manifest), "--format", "json")
    assert checked.exit_code == 2 and f"line {last}" in checked.output
    digest = cli("digest", "--manifest", str(manifest))
    assert digest.exit_code == 2 and f"line {last}" in digest.stderr


@pytest.mark.parametrize("damage", ["{not json", "", '{"name": "a/x.bin"} trailing', "[1, 2]", '{"name": "x", "bytes": NaN, "checksum": "c"}'])
def test_a_damaged_line_in_the_middle_is_exit_2_with_its_line(cli: Cli, manifest: Path, data: Path, damage: str) -> None:
    text = lines(manifest)
    text[2] = damage
    manifest.write_text("\n".join(text) + "\n")
    result, report = verify(cli, manifest, data)
    assert result.exit_code == 2, report
    assert report["findings"][0]["line"] == 3 and report["findings"][0]["message"].startswith("line 3:")
    assert "nothing was verified" in cli("dataset", "verify", str(manifest), "--root", str(data), "-q").output
    assert cli("validate", str(manifest)).exit_code == 2


def test_a_shard_line_against_the_schema_is_reported_with_line_and_field(cli: Cli, manifest: Path, data: Path) -> None:
    text = lines(manifest)
    shard = json.loads(text[3])
    shard["bytes"] = -1
    shard["colour"] = "blue"
    text[3] = json.dumps(shard)
    manifest.write_text("\n".join(text) + "\n")
    result, report = verify(cli, manifest, data)
    assert result.exit_code == 2
    assert {(f["line"], f["field"]) for f in report["findings"]} == {(4, "shards[2].bytes"), (4, "shards[2].colour")}
    checked = cli("validate", str(manifest), "--format", "json")
    assert checked.exit_code == 1 and "shards[2].colour" in checked.output


def test_out_of_order_and_repeated_shards(cli: Cli, manifest: Path, data: Path) -> None:
    text = lines(manifest)
    swapped = [text[0], text[2], text[1], *text[3:]]
    manifest.write_text("\n".join(swapped) + "\n")
    result, report = verify(cli, manifest, data)
    assert result.exit_code == 2 and report["findings"][0]["line"] == 3 and "out of order" in report["findings"][0]["message"]
    found = json.loads(cli("validate", str(manifest), "--format", "json").output)
    assert "manifest-order" in {f["code"] for f in found["files"][0]["findings"]}
    repeated = [text[0], text[1], text[1], *text[2:]]
    manifest.write_text("\n".join(repeated) + "\n")
    assert "listed twice" in verify(cli, manifest, data)[1]["findings"][0]["message"]
    found = json.loads(cli("validate", str(manifest), "--format", "json").output)
    assert "manifest-duplicate-shard" in {f["code"] for f in found["files"][0]["findings"]}


def test_edited_content_no_longer_matches_its_digest(cli: Cli, manifest: Path) -> None:
    text = lines(manifest)
    shard = json.loads(text[1])
    shard["bytes"] += 1
    text[1] = json.dumps(shard)
    manifest.write_text("\n".join(text) + "\n")
    found = json.loads(cli("validate", str(manifest), "--format", "json").output)
    assert [f["code"] for f in found["files"][0]["findings"]] == ["manifest-digest-mismatch"]


def test_missing_extra_truncated_corrupt_and_unsafe_by_name_and_line(cli: Cli, manifest: Path, data: Path, tmp_path: Path) -> None:
    (data / "a0.bin").unlink()
    (data / "b" / "c.bin").write_bytes(b"file beside folder C")  # same size, other bytes
    (data / "a-b.bin").write_bytes(b"cut")
    (data / "a" / "new.bin").write_bytes(b"extra")
    (tmp_path / "outside.bin").write_bytes(b"under a")
    (data / "a" / "x.bin").unlink()
    os.symlink(tmp_path / "outside.bin", data / "a" / "x.bin")
    result, report = verify(cli, manifest, data, "--keep-going")
    assert result.exit_code == 1
    assert report["missing"] == ["a0.bin"] and report["truncated"] == ["a-b.bin"] and report["corrupt"] == ["b/c.bin"]
    assert report["unsafe"] == ["a/x.bin"] and report["extra"] == ["a/new.bin"]
    by_name = {f["message"].split(": ")[1]: f["line"] for f in report["findings"]}
    for name in ("a0.bin", "a-b.bin", "b/c.bin", "a/x.bin"):
        assert by_name[name] == line_of(manifest, name)
    assert by_name["a/new.bin"] == 1  # extra files point at the header, which holds the selection
    fast = verify(cli, manifest, data)[1]
    assert fast["corrupt"] == [] and fast["checksums_skipped"] is True and fast["missing"] == ["a0.bin"]


def test_worker_processes_report_what_one_process_reports(cli: Cli, tmp_path: Path) -> None:
    root = tmp_path / "many"
    for i in range(1_300):  # enough lines for the forked workers
        folder = root / f"{i // 400:02d}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{i:05d}.bin").write_bytes(i.to_bytes(3, "little") * (1 + i % 7))
    manifest = tmp_path / "many.jsonl"
    assert cli("dataset", "manifest", str(root), "-o", str(manifest), "-q", "--jobs", "2").exit_code == 0
    single = tmp_path / "single.jsonl"
    assert cli("dataset", "manifest", str(root), "-o", str(single), "-q", "--jobs", "1").exit_code == 0
    assert manifest.read_bytes() == single.read_bytes()
    (root / "00" / "00007.bin").unlink()
    (root / "01" / "00500.bin").write_bytes(b"\xff" * 12)  # same size (3 x (1 + 500 % 7)), other bytes
    (root / "02" / "00900.bin").write_bytes(b"longer than before")
    (root / "03" / "extra.bin").write_bytes(b"new")
    reports = [verify(cli, manifest, root, "--keep-going", "--jobs", jobs)[1] for jobs in ("2", "1")]
    assert reports[0] == reports[1]
    assert reports[0]["missing"] == ["00/00007.bin"] and reports[0]["extra"] == ["03/extra.bin"]
    assert sorted(reports[0]["corrupt"]) == ["01/00500.bin", "02/00900.bin"]
    assert {f["line"] for f in reports[0]["findings"] if "00500" in f["message"]} == {line_of(manifest, "01/00500.bin")}


def test_long_names_in_forked_workers_neither_hang_nor_crash(tmp_path: Path) -> None:
    """Replies larger than a socket buffer (hundreds of 3,000-byte names a batch) once deadlocked
    the parent and a worker, each waiting to send; run as a process with a time limit."""
    import subprocess
    import sys

    manifest = tmp_path / "long.jsonl"
    header = {"apiVersion": "reprogate/v1", "kind": "DatasetManifest", "id": "L", "algorithm": "sha256", "selection": {}}
    lines = [json.dumps(header)] + [json.dumps({"name": f"{i:05d}" + "n" * 3000, "bytes": 1, "checksum": "sha256:" + "0" * 64}) for i in range(2_500)]
    manifest.write_text("\n".join(lines) + "\n")
    (tmp_path / "root").mkdir()
    argv = [sys.executable, "-m", "reprogate", "dataset", "verify", str(manifest), "--root", str(tmp_path / "root"), "-q", "--jobs", "2"]
    done = subprocess.run([*argv, "--keep-going", "--format", "json"], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr[-2000:]
    assert len(json.loads(done.stdout)["missing"]) == 2_500


def test_extra_files_are_found_wherever_pieces_and_folders_cut_the_names(cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Extra files are found by merging the manifest's names (in pieces of a few lines) with the
    walk's (in runs of one folder's files): before the first name, inside a folder, in a folder
    the manifest never names, in a subfolder between two names, after the last; files the
    selection excludes and the manifest itself are not extra; a symlink to a file inside is."""
    import reprogate.datasets.verify_lines as verify_lines

    root = tmp_path / "data"
    for i in range(40):
        folder = root / f"{i // 8:02d}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{i:05d}.bin").write_bytes(bytes([i]) * (i + 1))
    manifest = root / "m.jsonl"  # inside the root it describes
    assert cli("dataset", "manifest", str(root), "-o", str(manifest), "-q", "--exclude", "*.tmp").exit_code == 0
    extras = ["!first.bin", "01/00009a.bin", "02/sub/deep.bin", "02b/x.bin", "04/link.bin", "zz.bin"]
    for name in extras:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        if name != "04/link.bin":
            (root / name).write_bytes(b"new")
    (root / "04" / "link.bin").symlink_to(root / "00" / "00001.bin")
    (root / "01" / "junk.tmp").write_bytes(b"excluded by the selection")
    for lines_per_piece in (1, 3, 7, 100):
        monkeypatch.setattr(verify_lines, "CHUNK_LINES", lines_per_piece)
        monkeypatch.setattr(verify_lines, "FIRST_CHUNK_LINES", lines_per_piece)
        for jobs in ("1", "2"):
            result, report = verify(cli, manifest, root, "--jobs", jobs)
            assert result.exit_code == 1 and report["extra"] == extras, (lines_per_piece, jobs, report["extra"])
            assert not any(report[kind] for kind in ("missing", "truncated", "corrupt", "unsafe"))


def test_reading_a_manifest_of_long_lines_holds_a_few_blocks_not_hundreds_of_lines(tmp_path: Path) -> None:
    """Lines of 300 KB (a shard line padded with spaces, which JSON allows): reading holds about
    one piece of PIECE_SPAN bytes, never the 256 lines raw() asks for at a time (75 MB here)."""
    path = tmp_path / "fat.jsonl"
    line = json.dumps({"name": "a.bin", "bytes": 1, "checksum": "sha256:" + "0" * 64}).encode() + b" " * 300_000 + b"\n"
    path.write_bytes(b'{"kind": "DatasetManifest"}\n' + line * 300)
    tracemalloc.start()
    count = sum(1 for _ in ShardLines(path, "fat.jsonl").raw())
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert count == 300 and peak < 8 * 2**20, peak


@pytest.mark.parametrize("suffix", [".jsonl", ".yaml"])
def test_a_dvc_directory_shard_under_a_local_root_is_hashed_there_and_its_files_are_not_extra(cli: Cli, tmp_path: Path, suffix: str) -> None:
    from reprogate.datasets.dvcdir import dvc_directory_md5

    root = tmp_path / "data"
    for name, payload in {"a.bin": b"a", "feat/x.npy": b"x" * 10, "feat/sub/y.npy": b"y", "z.bin": b"zz"}.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(payload)
    size, count, checksum = dvc_directory_md5(root / "feat")
    shards = [
        {"name": "a.bin", "bytes": 1, "checksum": "sha256:" + hashlib.sha256(b"a").hexdigest()},
        {"name": "feat", "bytes": size, "checksum": checksum, "kind": "dvc-directory", "files": count},
        {"name": "z.bin", "bytes": 2, "checksum": "sha256:" + hashlib.sha256(b"zz").hexdigest()},
    ]
    manifest = tmp_path / f"m{suffix}"
    write_manifest({"apiVersion": "reprogate/v1", "kind": "DatasetManifest", "id": "F", "algorithm": "sha256", "selection": {}, "shards": shards}, manifest)
    result, report = verify(cli, manifest, root)
    assert result.exit_code == 0, report
    (root / "feat2.bin").write_bytes(b"new")
    (root / "feat" / "x.npy").write_bytes(b"X" * 10)
    result, report = verify(cli, manifest, root)
    assert result.exit_code == 1 and report["extra"] == ["feat2.bin"] and report["corrupt"] == ["feat"], report


def test_extra_files_named_with_the_last_code_points_are_found(cli: Cli, tmp_path: Path) -> None:
    root = tmp_path / "data"
    root.mkdir()
    (root / "a.bin").write_bytes(b"a")
    manifest = tmp_path / "m.jsonl"
    assert cli("dataset", "manifest", str(root), "-o", str(manifest), "-q").exit_code == 0
    last = ["\U0010ffff" * 2, "\U0010ffff" * 3]
    for name in last:
        (root / name).write_bytes(b"late")
    result, report = verify(cli, manifest, root)
    assert result.exit_code == 1 and report["extra"] == last


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_name_that_is_not_valid_unicode_is_refused_as_unsafe(cli: Cli, tmp_path: Path, jobs: str) -> None:
    """JSON can spell a lone surrogate (\\ud800), which no file name holds: refused by name, in
    the worker processes (1,200 shards) as in this one."""
    root = tmp_path / "data"
    root.mkdir()
    shards = [{"name": f"f{i:05d}.bin", "bytes": 1, "checksum": "sha256:" + "0" * 64} for i in range(1_200)]
    shards[700]["name"] = "f00700\ud800.bin"
    manifest = tmp_path / "m.jsonl"
    header = {"apiVersion": "reprogate/v1", "kind": "DatasetManifest", "id": "U", "algorithm": "sha256", "selection": {}}
    manifest.write_text("\n".join(json.dumps(line) for line in [header, *shards]) + "\n")
    result, report = verify(cli, manifest, root, "--keep-going", "--jobs", jobs)
    assert result.exit_code == 1 and len(report["unsafe"]) == 1 and len(report["missing"]) == 1_199, result.output[-2000:]
    assert any("lone surrogate" in f["message"] and f["line"] == 702 for f in report["findings"])


def test_an_order_error_stops_the_check_wherever_the_pieces_are_cut(cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A repeated name on a piece's first line or inside one: the same findings (what comes
    after an order error is not checked), so the report does not depend on where pieces end."""
    import reprogate.datasets.verify_lines as verify_lines

    root = tmp_path / "data"
    root.mkdir()
    shards = [{"name": f"f{i:04d}.bin", "bytes": 1, "checksum": "sha256:" + "0" * 64} for i in range(40)]
    shards[20] = dict(shards[19])  # line 22 repeats line 21
    shards[30]["bytes"] = -33  # line 32 breaks the schema, after the order error
    manifest = tmp_path / "m.jsonl"
    header = {"apiVersion": "reprogate/v1", "kind": "DatasetManifest", "id": "O", "algorithm": "sha256", "selection": {}}
    manifest.write_text("\n".join(json.dumps(line) for line in [header, *shards]) + "\n")
    seen = []
    for lines_per_piece in (1, 2, 3, 5, 21, 100):
        monkeypatch.setattr(verify_lines, "CHUNK_LINES", lines_per_piece)
        monkeypatch.setattr(verify_lines, "FIRST_CHUNK_LINES", lines_per_piece)
        result, report = verify(cli, manifest, root)
        assert result.exit_code == 2
        seen.append([(f["line"], f["code"]) for f in report["findings"]])
    assert all(found == [(22, "manifest-order")] for found in seen), seen


def test_walk_runs_are_one_folders_files_in_the_walks_order(tmp_path: Path) -> None:
    root = tmp_path / "data"
    for name in ("a.bin", "b/c.bin", "b/d/e.bin", "b/f.bin", "b/g.tmp", "c.bin", "d.bin"):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(b"x")
    (root / "b" / "link.bin").symlink_to(root / "a.bin")
    for include, exclude in (([], []), ([], ["*.tmp"]), (["b/**"], [])):
        walk = Walk(root, include, exclude, sizes=False)
        runs = list(walk.runs())
        assert [item for run in runs for item in run] == list(Walk(root, include, exclude, sizes=False))
        assert list(Walk(root, include, exclude, sizes=False).name_runs()) == [[name for name, _, _ in run] for run in runs]
        assert all(len({name.rpartition("/")[0] for name, _, _ in run}) == 1 for run in runs), runs
    assert [[name for name, _, _ in run] for run in Walk(root, [], []).runs()] == [
        ["a.bin"],
        ["b/c.bin"],
        ["b/d/e.bin"],
        ["b/f.bin", "b/link.bin"],  # b/g.tmp: a leftover temporary is never a shard (select.DEFAULT_EXCLUDES)
        ["c.bin", "d.bin"],
    ]


def _lines_by_readline(path: Path, limit: int) -> list[tuple[int, bytes]]:
    """What reading a line at a time gives (the reference for ShardLines.raw and .pieces): each
    line with its newline, a line over `limit` bytes cut at limit + 1 and nothing after it."""
    found = []
    with open(path, "rb") as fh:
        fh.readline(limit + 1)
        line = 1
        while raw := fh.readline(limit + 1):
            line += 1
            found.append((line, raw))
            if len(raw) > limit:
                break
    return found


@pytest.mark.parametrize("seed", range(30))
def test_manifest_pieces_hold_exactly_the_lines_reading_line_by_line_gives(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int) -> None:
    """Pieces are cut at newlines found in blocks: whatever the block size, the line limit, the
    piece size asked, a line longer than the limit, a last line without newline or a file cut
    short, they hold the lines reading a line at a time gives, numbered the same."""
    import random

    import reprogate.datasets.manifest_lines as manifest_lines

    rng = random.Random(seed)
    path = tmp_path / "m.jsonl"
    for _ in range(40):
        limit, block, wanted = rng.choice([5, 8, 16, 40]), rng.choice([1, 3, 7, 64, 1000]), rng.choice([1, 2, 5, 100])
        monkeypatch.setattr(manifest_lines, "MAX_LINE", limit)
        monkeypatch.setattr(manifest_lines, "PIECE_BLOCK", block)
        monkeypatch.setattr(manifest_lines, "PIECE_SPAN", rng.choice([3, 10, 50, 10**6]))
        sizes = [0, 1, 2, limit - 2, limit - 1, limit, limit + 1, limit + 5, rng.randint(0, 3 * limit)]
        data = b"header\n" + b"".join(b"x" * rng.choice(sizes) + b"\n" for _ in range(rng.randint(0, 30)))
        path.write_bytes(data[: rng.randint(0, len(data))] if rng.random() < 0.4 else data)
        expected = _lines_by_readline(path, limit)
        assert list(ShardLines(path, "m.jsonl").raw()) == expected
        pieced = []
        for first, piece, count in ShardLines(path, "m.jsonl").pieces(lambda: wanted):  # noqa: B023 - used within this iteration
            parts = piece.split(b"\n")
            last = parts.pop()
            assert count == len(parts) + bool(last) and count >= 1
            pieced += [(first + i, part + b"\n") for i, part in enumerate(parts)] + ([(first + len(parts), last)] if last else [])
        assert pieced == expected


# nothing half-written ----------------------------------------------------------------------------


def test_interrupted_streaming_build_leaves_the_old_manifest_and_no_temporary(cli: Cli, data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for i in range(40):
        (data / "many" / f"{i:02d}.bin").parent.mkdir(exist_ok=True)
        (data / "many" / f"{i:02d}.bin").write_bytes(bytes([i]) * 100)
    out = tmp_path / "m.jsonl"
    out.write_text("previous manifest\n")
    import reprogate.datasets.build as build_module

    real = build_module._hashed
    written = []

    def interrupted(*args: Any, **kwargs: Any) -> Iterator[Any]:
        for names, batch in real(*args, **kwargs):
            if written:
                raise KeyboardInterrupt  # Ctrl-C after a batch of shards was written
            written.append(len(names))
            yield names, batch

    monkeypatch.setattr(build_module, "_hashed", interrupted)
    result = cli("dataset", "manifest", str(data), "-o", str(out), "-q", "--jobs", "1")
    assert result.exit_code == 130 and "reprogate dataset manifest: interrupted" in result.output, result.output  # 128 + SIGINT, as a shell reports Ctrl-C
    assert len(written) == 1 and 0 < written[0] < 45
    assert out.read_text() == "previous manifest\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data", "m.jsonl"]


def test_a_shard_that_vanishes_mid_build_stops_it_without_writing(cli: Cli, data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import reprogate.datasets.build as build_module

    class Racing(Walk):
        def name_runs(self) -> Iterator[list[str]]:
            for run in super().name_runs():
                if "b/c.bin" in run:
                    os.unlink(data / "b" / "c.bin")  # deleted between the walk and the read
                yield run

    monkeypatch.setattr(build_module, "Walk", Racing)
    result = cli("dataset", "manifest", str(data), "-o", str(tmp_path / "m.jsonl"), "-q")
    assert result.exit_code == 1 and "b/c.bin" in result.stderr and "nothing written" in result.stderr
    assert not (tmp_path / "m.jsonl").exists() and sorted(p.name for p in tmp_path.iterdir()) == ["data"]


def test_a_file_name_that_is_not_utf8_is_refused_by_name(cli: Cli, data: Path, tmp_path: Path) -> None:
    (data / "b" / os.fsdecode(b"caf\xe9.bin")).write_bytes(b"latin-1 name")
    result = cli("dataset", "manifest", str(data), "-o", str(tmp_path / "m.jsonl"), "-q")
    assert result.exit_code == 1 and "not valid UTF-8" in result.stderr and "b/caf" in result.stderr
    assert not (tmp_path / "m.jsonl").exists()


# readers that address a manifest -----------------------------------------------------------------


def test_a_record_pins_a_jsonl_manifest_by_its_digest(cli: Cli, project: Path) -> None:
    yaml_manifest = project / "data" / "d77.manifest.yaml"
    source = load_document(yaml_manifest).data
    pinned = write_manifest(source, project / "data" / "d77.manifest.jsonl")
    assert pinned == manifest_digest(source)
    record = project / "records" / "drill.yaml"
    edit_record(record, lambda r: r["dataset"]["manifest"].update(path="data/d77.manifest.jsonl", digest=pinned))
    assert cli("validate", str(record)).exit_code == 0, cli("validate", str(record)).output
    text = lines(project / "data" / "d77.manifest.jsonl")
    text[1] = text[1].replace('"bytes": ', '"bytes": 1')
    (project / "data" / "d77.manifest.jsonl").write_text("\n".join(text) + "\n")
    found = cli("validate", str(record), "--format", "json")
    assert found.exit_code == 1 and "canonical-mismatch" in found.output


def test_rebuild_dataset_stage_fetches_and_checks_a_jsonl_dataset(cli: Cli, data: Path, tmp_path: Path) -> None:
    repo = tmp_path
    manifest = repo / "data.jsonl"
    digest = build(cli, data, manifest, "--namespace", "data").output.split("digest ")[1].strip()
    record = {"dataset": {"manifest": {"path": "data.jsonl", "digest": digest}}}
    state = make_state(repo / "record.yaml", record, repo, tmp_path / "work")
    copy_in(state.job, "data.jsonl")  # what the artifacts stage does with an addressed manifest
    result = dataset(state)
    assert result.status == "pass", result.detail
    assert (tmp_path / "work" / "data" / "b" / "c" / "d.bin").is_file() and (tmp_path / "work" / "data" / "tok" / "tokenizer.json").is_file()
    (data / "a0.bin").write_bytes(b"Zero")  # the repository's copy changed: fetched again, and caught
    failed = dataset(make_state(repo / "record.yaml", record, repo, tmp_path / "work"))
    assert failed.status == "fail" and "a0.bin" in failed.detail


# memory stays flat -------------------------------------------------------------------------------


def _synthetic(path: Path, count: int) -> str:
    fields = {"apiVersion": "reprogate/v1", "kind": "DatasetManifest", "id": "S", "algorithm": "sha256", "selection": {}}
    shards = ({"name": f"d{i // 1000:04d}/f{i:07d}.bin", "bytes": i, "checksum": "sha256:" + f"{i:064x}"} for i in range(count))
    return write_manifest({**fields, "shards": shards}, path)  # a generator: written as it is produced


def test_reading_and_digesting_a_jsonl_manifest_holds_one_line_at_a_time(tmp_path: Path) -> None:
    peaks = []
    for count in (2_000, 40_000):
        path = tmp_path / f"m{count}.jsonl"
        written = _synthetic(path, count)
        tracemalloc.start()
        data = load_manifest(path).data
        assert isinstance(data["shards"], ShardLines)
        assert manifest_digest(data) == written
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
    assert peaks[1] < peaks[0] * 1.5 + 256 * 1024  # 20x the shards, about the same memory


def test_verify_memory_does_not_grow_with_the_shard_count(cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from reprogate.datasets import hashing
    from reprogate.datasets.build import BuildOptions, build_manifest
    from reprogate.datasets.verify import VerifyOptions
    from reprogate.datasets.verify import verify as run_verify

    monkeypatch.setattr(hashing, "BATCH_FILES", 64)  # both sizes below span many batches
    peaks = []
    for count in (1_000, 8_000):
        root = tmp_path / f"d{count}"
        for i in range(count):
            folder = root / f"{i // 500:03d}"
            folder.mkdir(parents=True, exist_ok=True)
            (folder / f"{i:05d}.bin").write_bytes(i.to_bytes(4, "little"))
        manifest = tmp_path / f"m{count}.jsonl"
        build_manifest(BuildOptions(root, manifest, quiet=True, jobs=1))
        tracemalloc.start()
        report = run_verify(manifest, VerifyOptions(root=str(root), quiet=True, jobs=1))
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
        assert report.exit_code == 0 and report.checked == count
    assert peaks[1] < peaks[0] * 1.5 + 512 * 1024, peaks


def test_walk_yields_code_point_order_holding_one_folder_at_a_time(data: Path) -> None:
    walked = [name for name, _, _ in Walk(data, [], [])]
    assert walked == sorted(walked) and "tok/tokenizer.json" in walked
    sized = {name: size for name, size, _ in Walk(data, [], [])}
    assert sized["b/c/d.bin"] == 300_000 and {s for _, s, _ in Walk(data, [], [], sizes=False)} == {-1}


def test_verify_of_a_loaded_manifest_gives_the_heap_back_as_it_found_it(tmp_path: Path) -> None:
    """A YAML manifest is loaded whole and the heap frozen while its shards are hashed; the
    caller's heap is unfrozen afterwards (it used to stay frozen for the rest of the process)."""
    import gc

    from reprogate.datasets.build import BuildOptions, build_manifest
    from reprogate.datasets.verify import VerifyOptions
    from reprogate.datasets.verify import verify as run_verify

    root = tmp_path / "d"
    root.mkdir()
    for i in range(20):
        (root / f"{i:02d}.bin").write_bytes(bytes([i]))
    manifest = tmp_path / "m.yaml"
    build_manifest(BuildOptions(root, manifest, quiet=True, jobs=1))
    before = gc.get_freeze_count()
    report = run_verify(manifest, VerifyOptions(root=str(root), quiet=True, jobs=1))
    assert report.exit_code == 0 and report.checked == 20
    assert gc.get_freeze_count() == before


def test_the_inline_path_of_verify_reports_every_kind_of_file_as_the_general_path_does(cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """verify_lines reads a plain small shard inline (open relative to its folder, the end offset
    for its size, one read); anything else goes through FileReader.check. Whatever stands where a
    shard was (another size, other bytes, nothing, a FIFO, a folder, an empty file, links inside
    and outside the root), both say the same, and the inline path never hangs on a FIFO."""
    from reprogate.datasets import verify_lines

    root = tmp_path / "data"
    names = ["corrupt.bin", "empty.bin", "fifo.bin", "folder.bin", "grown.bin", "in/link.bin", "in/ok.bin", "missing.bin", "out/x.bin", "outside.bin"]
    names.append("short.bin")
    for name in names:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(name.encode() * 3)
    (root / "empty.bin").write_bytes(b"")
    manifest = tmp_path / "m.jsonl"
    assert cli("dataset", "manifest", str(root), "-o", str(manifest), "-q").exit_code == 0
    (root / "corrupt.bin").write_bytes(b"x" * len(b"corrupt.bin" * 3))
    (root / "fifo.bin").unlink()
    os.mkfifo(root / "fifo.bin")
    (root / "folder.bin").unlink()
    (root / "folder.bin").mkdir()
    (root / "grown.bin").write_bytes(b"grown.bin" * 4)
    (root / "in" / "link.bin").unlink()
    os.symlink(root / "in" / "ok.bin", root / "in" / "link.bin")  # inside the root: followed, and shorter
    (root / "missing.bin").unlink()
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "x.bin").write_bytes(b"out/x.bin" * 3)
    (outside / "y.bin").write_bytes(b"outside.bin" * 3)
    (root / "out" / "x.bin").unlink()
    (root / "out").rmdir()
    os.symlink(outside, root / "out")  # a folder that leads out of the root
    (root / "outside.bin").unlink()
    os.symlink(outside / "y.bin", root / "outside.bin")  # same bytes, outside the root: refused
    (root / "short.bin").write_bytes(b"short")
    inline = verify(cli, manifest, root, "--keep-going")
    monkeypatch.setattr(verify_lines, "SMALL_FILE", 0)  # every shard through FileReader.check
    general = verify(cli, manifest, root, "--keep-going")
    assert inline[0].exit_code == general[0].exit_code == 1
    assert inline[1] == general[1]
    report = inline[1]
    assert sorted(report["corrupt"]) == ["corrupt.bin", "grown.bin"] and sorted(report["truncated"]) == ["in/link.bin", "short.bin"]
    assert sorted(report["missing"]) == ["fifo.bin", "folder.bin", "missing.bin"]
    assert sorted(report["unsafe"]) == ["out", "out/x.bin", "outside.bin"] and report["extra"] == []  # the walk names the link "out" too
    assert report["checked"] == len(names)


@pytest.mark.parametrize("suffix", ["jsonl", "json", "yaml"])
def test_a_build_writes_the_same_manifest_whichever_path_reads_its_files(cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, suffix: str) -> None:
    """Small regular files are read inline beside their folder's descriptor, and their shards
    rendered by the hashing worker; empty and large files and symlinks go through FileReader.check.
    Every path gives the same manifest, byte for byte, with hashlib's checksums."""
    from reprogate.datasets import hashing

    root = tmp_path / "data"
    contents = {"a/empty.bin": b"", "a/small.bin": b"small", "b/large.bin": os.urandom(hashing.SMALL_FILE + 3), 'c/quote"d.bin': b"q", "d/ü.bin": b"u"}
    for name, content in contents.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(content)
    os.symlink(root / "a" / "small.bin", root / "a" / "link.bin")  # inside the root: followed
    contents["a/link.bin"] = b"small"
    inline = tmp_path / f"inline.{suffix}"
    assert cli("dataset", "manifest", str(root), "-o", str(inline), "-q").exit_code == 0
    monkeypatch.setattr(hashing, "SMALL_FILE", 0)
    general = tmp_path / f"general.{suffix}"
    assert cli("dataset", "manifest", str(root), "-o", str(general), "-q").exit_code == 0
    assert inline.read_bytes() == general.read_bytes()
    shards = {s["name"]: s for s in load_manifest(inline, str(inline)).data["shards"]}
    assert {name: (s["bytes"], s["checksum"]) for name, s in shards.items()} == {
        name: (len(content), "sha256:" + hashlib.sha256(content).hexdigest()) for name, content in contents.items()
    }


# reading the lines `dataset manifest` writes without parsing them -----------------------------


def test_plain_lines_takes_only_lines_exactly_as_dataset_manifest_writes_them() -> None:
    """verify_lines.plain_lines reads a piece of shard lines with one match when every line is a
    plain file shard as the writer renders it; any other line, however close, leaves the piece
    to the JSON parse and the schema (None). Whatever it takes parses to the same shard, and is
    one the schema and the plain-name test accept."""
    from reprogate.datasets.manifest_writer import render_files
    from reprogate.datasets.names import plain_shape
    from reprogate.datasets.shard_checker import shard_checker
    from reprogate.datasets.verify_lines import plain_lines

    names, sizes = ["a/b/c.bin", "a-b.bin", "x/y+z=1@2,3.bin", "_0"], [0, 1, 1024, 10**17]
    checksums = ["sha256:" + hashlib.sha256(n.encode()).hexdigest() for n in names]
    piece = render_files("jsonl", names, sizes, checksums)[1]
    expected = [(n, str(s), c) for n, s, c in zip(names, sizes, checksums, strict=True)]
    assert plain_lines(piece, "sha256") == expected
    assert plain_lines(piece.rstrip(b"\n"), "sha256") == expected  # the file's last line may have no newline
    assert plain_lines(piece, "blake3") is None  # another algorithm's checksums: compared, and found corrupt, the general way
    line = piece.split(b"\n")[0].decode()
    close = [
        line.replace('", "bytes"', '","bytes"'),
        line.replace("{", "{ "),
        line + " ",
        line + "\r",
        line.replace('"name": "a/b/c.bin"', '"name": "a/b/\\u0063.bin"'),
        line.replace("a/b/c.bin", ".a/c.bin"),
        line.replace("a/b/c.bin", "a/b:c.bin"),
        line.replace("a/b/c.bin", "a/b/ç.bin"),
        line.replace('"bytes": 0', '"bytes": 00'),
        line.replace('"bytes": 0', '"bytes": -0'),
        line.replace('"bytes": 0', '"bytes": 0.0'),
        line.replace('"bytes": 0', '"bytes": 1e3'),
        line.replace('"bytes": 0', '"bytes": "0"'),
        line.replace("sha256:" + checksums[0][7:], "sha256:" + checksums[0][7:].upper()),
        line.replace("sha256:" + checksums[0][7:], "sha256:" + checksums[0][8:]),
        line.replace("sha256:", "md5:"),
        line.replace("}", ', "kind": "file"}'),
        json.dumps({"bytes": 0, "name": "a/b/c.bin", "checksum": checksums[0]}),
        line + line,
        "",
    ]
    for variant in close:
        assert plain_lines(f"{variant}\n".encode(), "sha256") is None, variant
        assert plain_lines(piece + f"{variant}\n".encode(), "sha256") is None, variant  # one line is enough
    rng = __import__("random").Random(44)
    alphabet = '{}":, abc019./-_\\\n'
    taken = 0
    for _ in range(3000):  # one character changed, added or removed: taken only if still a plain shard
        at = rng.randrange(len(line))
        variant = line[:at] + rng.choice(["", rng.choice(alphabet)]) + line[at + rng.randrange(2) :]
        rows = plain_lines(variant.encode(), "sha256")
        if rows is not None:
            taken += 1
            (shard,) = [json.loads(text) for text in variant.splitlines()]
            assert rows == [(shard["name"], str(shard["bytes"]), shard["checksum"])]
            assert shard_checker().valid(shard) and len(shard) == 3 and plain_shape(shard["name"])
    assert taken  # some changes keep the shape (another name, size or digit)


def test_verify_reports_the_same_whether_plain_lines_are_matched_or_parsed(cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every kind of finding, in one process and in forked workers, is the same when pieces of
    plain lines are read with one match (plain_lines) as when every line is parsed."""
    from reprogate.datasets import verify_lines

    root = tmp_path / "data"
    for i in range(1_100):  # enough for the forked workers
        folder = root / f"{i // 400:02d}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{i:05d}.bin").write_bytes(i.to_bytes(2, "little") * (1 + i % 5))
    (root / "02" / "kept.bin").write_bytes(b"outside the root by name")
    manifest = tmp_path / "m.jsonl"
    assert cli("dataset", "manifest", str(root), "-o", str(manifest), "-q").exit_code == 0
    text = lines(manifest)
    at = next(i for i, line in enumerate(text) if '"02/kept.bin"' in line)
    text[at] = text[at].replace('"02/kept.bin"', '"02/kept.bin/../../01/00400.bin"')  # still in order; refused as unsafe
    text.insert(at, text[at - 1].replace("01099.bin", "01099.bin.gone"))  # a name the manifest alone has
    first = line_of(manifest, "02/00800.bin") - 1
    # beside a name of the same folder (so no folder check of its own): a traversal by its last part
    text[first:first] = [text[first].replace("02/00800.bin", "02/--.bin"), text[first].replace("02/00800.bin", "02/..")]
    at += 2
    other = line_of(manifest, "01/00600.bin") - 1
    text[other] = json.dumps(dict(sorted(json.loads(text[other]).items())))  # valid, keys in another order: parsed
    manifest.write_text("\n".join(text) + "\n")
    (root / "00" / "00007.bin").unlink()
    (root / "01" / "00500.bin").write_bytes(b"\xff" * 2)  # same size, other bytes
    (root / "02" / "00900.bin").write_bytes(b"c")
    (root / "02" / "01000.bin").write_bytes(b"longer than it was")
    (root / "02" / "extra.bin").write_bytes(b"new")
    (root / "01" / "00600.bin").write_bytes(b"\0" * 2)
    matched: list[bool] = []
    real = verify_lines.plain_lines

    def spied(piece: bytes, algorithm: str) -> list[tuple[str, str, str]] | None:
        rows = real(piece, algorithm)
        matched.append(rows is not None)
        return rows

    monkeypatch.setattr(verify_lines, "plain_lines", spied)
    fast = [verify(cli, manifest, root, "--keep-going", "--jobs", jobs) for jobs in ("1", "2")]
    assert any(matched) and not all(matched)  # the piece with the edited lines is parsed
    monkeypatch.setattr(verify_lines, "plain_lines", lambda piece, algorithm: None)
    parsed = [verify(cli, manifest, root, "--keep-going", "--jobs", jobs) for jobs in ("1", "2")]
    assert [r[1] for r in fast] == [r[1] for r in parsed] and fast[0][1] == fast[1][1]
    assert {r[0].exit_code for r in fast + parsed} == {1}, fast[0][1]["findings"][:3]
    report = fast[0][1]
    assert sorted(report["missing"]) == ["00/00007.bin", "02/--.bin", "02/01099.bin.gone"] and report["extra"] == ["02/extra.bin", "02/kept.bin"]
    assert sorted(report["corrupt"]) == ["01/00500.bin", "01/00600.bin", "02/01000.bin"] and report["truncated"] == ["02/00900.bin"]
    assert report["unsafe"] == ["02/..", "02/kept.bin/../../01/00400.bin"]
    lines_of = {f["message"].split(": ")[1]: f["line"] for f in report["findings"]}
    assert lines_of["02/00900.bin"] == line_of(manifest, "02/00900.bin") and lines_of["02/01099.bin.gone"] == at + 1
