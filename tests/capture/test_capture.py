"""`reprogate capture` on real git repositories, with missing layers, and with planted secrets."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result
from support import EXAMPLES, git

from reprogate.capture import CaptureContext, run_layer
from reprogate.capture import container as container_layer
from reprogate.capture import source as source_layer
from reprogate.capture.compat import classify
from reprogate.capture.layers import capture_all
from reprogate.core.documents import load_document

Cli = Callable[..., Result]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """The example project as a git repository with one commit."""
    root = tmp_path / "repo"
    shutil.copytree(EXAMPLES, root)
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "first")
    return root


def layer(root: Path, module: Any, **kw: Any) -> dict[str, Any]:
    return run_layer(module, CaptureContext(root=root, **kw))


# source ------------------------------------------------------------------------------------------


def test_clean_repository(repo: Path) -> None:
    source = layer(repo, source_layer)
    assert source["commit"] == git(repo, "rev-parse", "HEAD")
    assert source["dirty"] is False and "diff_digest" not in source and "untracked_digest" not in source
    assert source["lock_files"] == [
        {"path": path, "checksum": "sha256:" + hashlib.sha256((repo / path).read_bytes()).hexdigest(), "format": "pip-requirements"}
        for path in ("requirements.txt", "tiny/requirements.txt")  # the flagship example's own lock (tiny/requirements.in beside it is no lock)
    ]


def test_a_resolvers_input_is_watched_but_not_pinned_as_a_lock(repo: Path) -> None:
    """requirements.in names what to resolve; the lock compiled from it is what installs."""
    (repo / "requirements.in").write_text("torch\n")
    (repo / "constraints.in").write_text("numpy<3\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "inputs")
    paths = [entry["path"] for entry in layer(repo, source_layer)["lock_files"]]
    assert paths == ["requirements.txt", "tiny/requirements.txt"]
    watched = [entry["path"] for entry in layer(repo, source_layer, lock_globs=["*.in"])["lock_files"]]
    assert not [path for path in watched if path.endswith(".in")], "not even when the watch globs name it"


def test_dirty_repository_records_the_digest_of_its_diff(repo: Path) -> None:
    (repo / "config" / "c19.yaml").write_text((repo / "config" / "c19.yaml").read_text().replace("layers: 32", "layers: 48"))
    source = layer(repo, source_layer)
    diff = subprocess.run(["git", "-C", str(repo), "diff", "HEAD", "--binary", "--no-ext-diff", "--no-color"], capture_output=True, check=True).stdout
    assert source["dirty"] is True and source["diff_digest"] == "sha256:" + hashlib.sha256(diff).hexdigest()
    assert "untracked_digest" not in source


def test_untracked_files_make_a_repository_dirty_and_change_their_digest(repo: Path) -> None:
    (repo / "scratch.py").write_text("print('a')\n")
    first = layer(repo, source_layer)
    assert first["dirty"] is True and "diff_digest" not in first and first["untracked_digest"].startswith("sha256:")
    (repo / "scratch.py").write_text("print('b')\n")
    assert layer(repo, source_layer)["untracked_digest"] != first["untracked_digest"]
    (repo / ".gitignore").write_text("scratch.py\n.gitignore\n")
    assert layer(repo, source_layer)["dirty"] is False  # ignored files are not inputs


def test_project_folder_inside_a_repository_records_its_tree(repo: Path) -> None:
    source = layer(repo / "config", source_layer)
    assert source["path"] == "config" and source["tree"] == git(repo, "rev-parse", "HEAD:config")


def test_remote_url_loses_its_credentials(repo: Path) -> None:
    git(repo, "remote", "add", "origin", "https://x-access-token:ghp_abcdefghijklmnopqrstuvwxyz0123456789@github.com/org/repo.git")
    assert layer(repo, source_layer)["repository"] == "https://github.com/org/repo.git"


def test_no_git_and_no_commit_are_stated_not_crashed(tmp_path: Path) -> None:
    assert layer(tmp_path, source_layer) == {"present": False, "reason": layer(tmp_path, source_layer)["reason"]}
    assert "not a git repository" in layer(tmp_path, source_layer)["reason"]
    git(tmp_path, "init", "-q")
    assert layer(tmp_path, source_layer)["reason"] == "the repository has no commit yet"


def test_installs_no_lock_file_pins_are_listed(repo: Path) -> None:
    freeze = subprocess.run([sys.executable, "-m", "pip", "freeze", "--all"], capture_output=True, text=True, check=True).stdout
    lines = [line for line in freeze.splitlines() if "==" in line and not line.lower().startswith("reprogate")]
    dropped = next(line for line in lines if line.lower().startswith("click=="))
    changed = next(line for line in lines if line.lower().startswith("pyyaml=="))
    kept = [line for line in lines if line not in (dropped, changed)] + ["PyYAML==0.0.1"]
    (repo / "requirements.txt").write_text("\n".join(kept) + "\n")  # produced by pip freeze, then edited
    installs = {item["name"]: item for item in layer(repo, source_layer)["job_start_installs"]}
    assert installs["click"]["reason"] == "unpinned"
    assert installs["pyyaml"]["reason"] == "version-differs" and installs["pyyaml"]["locked"] == "0.0.1"
    assert "jsonschema" not in installs


# host, container, devices, software ---------------------------------------------------------------


def test_host_hashes_the_hostname(tmp_path: Path) -> None:
    import socket

    host = capture_all(CaptureContext(root=tmp_path, framework=False))["host"]
    assert host["hostname_sha256"] == "sha256:" + hashlib.sha256(socket.gethostname().encode()).hexdigest()
    assert socket.gethostname() not in json.dumps(host)


def test_devices_without_nvml_say_why(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from reprogate.capture import devices

    result = layer(tmp_path, devices)
    assert result["present"] is False and ("NVML" in result["reason"] or "nvidia-ml-py" in result["reason"])
    monkeypatch.setitem(sys.modules, "pynvml", None)
    assert layer(tmp_path, devices) == {"present": False, "reason": "nvidia-ml-py is not installed (pip install 'reprogate[gpu]')"}


def test_software_with_and_without_torch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from reprogate.capture import software

    torch = pytest.importorskip("torch") if os.environ.get("CI") != "true" else __import__("torch")
    described = layer(tmp_path, software)
    assert described["framework"]["version"] == str(torch.__version__)
    assert described["framework"]["config_digest"] == "sha256:" + hashlib.sha256(torch.__config__.show().encode()).hexdigest()
    assert set(described["determinism"]) >= {"deterministic_algorithms", "cudnn_deterministic", "tf32_matmul"}
    assert layer(tmp_path, software, framework=False)["reason"].startswith("framework not imported")
    monkeypatch.setattr(software.importlib.util, "find_spec", lambda name: None)
    assert layer(tmp_path, software)["reason"] == "torch is not installed"


def test_container_image_by_digest_only(tmp_path: Path) -> None:
    digest = "sha256:" + "ab" * 32
    found = layer(tmp_path, container_layer, image=f"ghcr.io/org/train:v1@{digest}")
    assert (found["registry"], found["repository"], found["tag"], found["digest"]) == ("ghcr.io", "org/train", "v1", digest)
    hub = layer(tmp_path, container_layer, image=f"python@{digest}")
    assert (hub["registry"], hub["repository"]) == ("docker.io", "library/python")


def test_mount_inventory_from_mountinfo(tmp_path: Path) -> None:
    sample = tmp_path / "mountinfo"
    sample.write_text(
        "36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue\n"
        "40 30 0:5 / /proc rw - proc proc rw\n"
        "41 30 8:1 /usr/lib/x86_64-linux-gnu/libcuda.so.580.82.07 /usr/lib/x86_64-linux-gnu/libcuda.so.1 ro,nosuid - ext4 /dev/sda1 rw\n"
        "42 30 0:50 / /run/secrets/hf\\040token ro - tmpfs tmpfs rw\n"
    )
    mounts = {m["destination"]: m for m in container_layer.mounts(sample)}
    assert "/proc" not in mounts
    assert mounts["/usr/lib/x86_64-linux-gnu/libcuda.so.1"]["kind"] == "library" and mounts["/usr/lib/x86_64-linux-gnu/libcuda.so.1"]["read_only"] is True
    assert mounts["/run/secrets/hf token"]["kind"] == "secret"
    assert mounts["/mnt2"]["source"] == "/dev/root:/mnt1"


def test_container_detection_markers(tmp_path: Path) -> None:
    assert container_layer.in_container(tmp_path) is None or os.environ.get("container")
    (tmp_path / ".dockerenv").write_text("")
    assert "Docker" in container_layer.in_container(tmp_path)


def test_a_broken_layer_does_not_lose_the_others(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from reprogate.capture import host

    def broken(ctx: CaptureContext) -> dict[str, Any]:
        raise RuntimeError("boom")

    monkeypatch.setattr(host, "capture", broken)
    document = capture_all(CaptureContext(root=tmp_path, framework=False))
    assert document["host"] == {"present": False, "reason": "capture failed: RuntimeError: boom"}
    assert document["software"]["present"] is True


# the command ---------------------------------------------------------------------------------------

SECRETS = {
    "NCCL_AUTH_TOKEN": "plain-looking-value-1",
    "TORCH_SECRET": "plain-looking-value-2",
    "CUDA_PASSWORD": "plain-looking-value-3",
    "OMP_API_KEY": "plain-looking-value-4",
    "MKL_CREDENTIALS": "plain-looking-value-5",
    "NCCL_DEBUG_FILE": "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
    "CUDA_CACHE_PATH": "github_pat_" + "11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz",
    "TORCH_HOME": "AKIA" + "IOSFODNN7EXAMPLE",
    "PYTORCH_CUDA_ALLOC_CONF": "hf_" + "aBcDeFgHiJkLmNoPqRsTuVwXyZ012345",
    "NCCL_SOCKET_IFNAME": "xoxb-" + "123456789012-abcdefghijkl",
    "TORCH_LOGS": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    "CUBLAS_LOGINFO_DBG": "-----BEGIN RSA PRIVATE KEY-----MIIEpAIBAAKCAQEA",
    "HF_TOKEN": "hf_" + "ZyXwVuTsRqPoNmLkJiHgFeDcBa987654",
    "GITHUB_TOKEN": "ghs_" + "16C7e42F292c6912E7710c838347Ae178B4a",
    "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "WANDB_API_KEY": "0123456789abcdef0123456789abcdef01234567",
    "OPENAI_API_KEY": "sk-" + "proj-abcdefghijklmnopqrstuvwxyz012345",
    "SLACK_WEBHOOK": "xoxp-" + "1234567890-0987654321-abcdef",
    "NCCL_PASS": "plain-looking-value-19",
    "CUDNN_PRIVATE_KEY": "plain-looking-value-20",
}


def test_twenty_planted_secrets_never_appear_in_anything_capture_writes(repo: Path, tmp_path: Path) -> None:
    git(repo, "remote", "add", "origin", "https://user:" + SECRETS["GITHUB_TOKEN"] + "@github.com/org/repo.git")
    env = {**os.environ, **SECRETS, "NCCL_ALGO": "Ring", "OMP_NUM_THREADS": "4"}
    record = repo / "records" / "startup.yaml"
    out = tmp_path / "capture.yaml"
    done = subprocess.run(
        [sys.executable, "-m", "reprogate", "capture", "-o", str(out), "--into", str(record), "--root", str(repo)], capture_output=True, env=env, cwd=repo
    )
    assert done.returncode == 0, done.stderr.decode()
    written = out.read_bytes() + record.read_bytes() + done.stdout + done.stderr
    for value in SECRETS.values():
        assert value.encode() not in written
    captured = load_document(out).data
    assert captured["environment"]["variables"]["NCCL_ALGO"] == "Ring"
    assert captured["environment"]["redacted"] >= 13  # the allowlisted ones; the rest were never read


def test_capture_output_validates_in_yaml_and_json(cli: Cli, repo: Path, tmp_path: Path) -> None:
    for name in ("capture.yaml", "capture.json"):
        out = tmp_path / name
        result = cli("capture", "-o", str(out), "--root", str(repo), "--no-framework")
        assert result.exit_code == 0, result.stderr
        check = cli("validate", str(out))
        assert check.exit_code == 0, check.output


def test_into_fills_environment_sections_and_keeps_a_persons_text(cli: Cli, repo: Path) -> None:
    record = repo / "records" / "behavioral.yaml"
    text = record.read_text().replace("contract:\n", "# reviewed by the release captain\ncontract:  # fixed before any rerun\n", 1)
    text = text.replace("execution:\n", "execution:\n  # two ranks, as on the reference node\n", 1)
    record.write_text(text)
    git(repo, "commit", "-qam", "comment the record")
    before = record.read_text()
    result = cli("capture", "--into", str(record), "--root", str(repo), "--no-framework")
    assert result.exit_code == 0, result.stderr
    after = record.read_text()
    person = before[before.index("# reviewed") : before.index("container:")]
    assert person in after  # contract, comments included, byte for byte
    assert "  # two ranks, as on the reference node\n" in after and "world_size: 2" in after
    data = load_document(record).data
    assert data["source"]["commit"] == git(repo, "rev-parse", "HEAD") and data["source"]["build_recipe"]["path"] == "Dockerfile"
    assert data["host"]["present"] is True and data["software"]["python"]
    assert cli("validate", str(record)).exit_code == 0, cli("validate", str(record)).output


def test_into_refuses_what_is_not_a_record(cli: Cli, repo: Path) -> None:
    manifest = repo / "data" / "d77.manifest.yaml"
    before = manifest.read_bytes()
    result = cli("capture", "--into", str(manifest), "--root", str(repo), "--no-framework")
    assert result.exit_code == 2 and manifest.read_bytes() == before


def test_an_image_tag_that_cannot_be_resolved_is_refused(cli: Cli, repo: Path) -> None:
    result = cli("capture", "--image", "127.0.0.1:1/org/train:latest", "--root", str(repo), "--no-framework")
    assert result.exit_code == 3 and "REF@sha256" in result.stderr


# driver compatibility --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "cuda, driver, status",
    [
        ("13.0", "580.82.07", "supported"),
        ("12.8", "570.26", "supported"),
        ("12.8", "550.54.14", "minor-version-compatible"),
        ("12.0", "525.60.13", "supported"),
        ("11.8", "450.80.02", "minor-version-compatible"),
        ("11.8", "450.36.06", "forward-compatible-only"),
        ("13.0", "570.124.06", "forward-compatible-only"),
        ("12.7", "580.82.07", "unsupported"),  # not in NVIDIA's table: close is not supported
        ("13.9", "999.1", "unsupported"),
        (None, None, "not-applicable"),
    ],
)
def test_driver_compatibility_table(cuda: str | None, driver: str | None, status: str) -> None:
    assert classify(cuda, driver).status == status


def test_validate_reports_an_unsupported_pair(cli: Cli, project: Path) -> None:
    from support import edit_record

    drill = project / "records" / "drill.yaml"
    edit_record(drill, lambda r: r["software"]["framework"].update(cuda="12.7"))
    result = cli("validate", str(drill))
    assert result.exit_code == 1 and "devices.driver_version  CUDA 12.7 with driver 580.82.07: unsupported" in result.output
    edit_record(drill, lambda r: (r["software"]["framework"].update(cuda="13.0"), r["devices"].update(driver_version="570.124.06")))
    warned = cli("validate", str(drill))
    assert "forward-compatibility" in warned.output and "warning:" in warned.output
