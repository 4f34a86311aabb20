"""Training code gets an allowlisted environment, and whatever it prints leaves redacted.

An entrypoint that dumps its environment and fails, run by the rebuild while the runner's
environment holds a GitHub token, the Actions runtime token, a cloud key and a file-command path:
none of them reaches the ranks, and none of the planted values appears in anything the rebuild
writes or prints (verdict, report, rebuild record, stdout, stderr) — even the ones the entrypoint
prints on purpose, from a file it was given.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result
from support import edit_record

Cli = Callable[..., Result]
RECORD = Path("tiny") / "records" / "tiny.yaml"
PLANTED = {
    "GITHUB_TOKEN": "ghs_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
    "ACTIONS_RUNTIME_TOKEN": "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJydW5uZXIifQ.c2lnbmF0dXJlLXBhcnQ",
    "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY",
    "HF_TOKEN": "hf_" + "x" * 34,
    "GITHUB_ENV": "/home/runner/work/_temp/_runner_file_commands/set_env_0123",
}
DUMP = """
import json, os, sys
from pathlib import Path
print("ENV " + json.dumps(dict(os.environ), sort_keys=True))
print("FROM A FILE " + Path(os.environ["LEAK_FILE"]).read_text())
print("URL https://builder:hunter2hunter2@mirror.example/simple?token=abcdef123456")
sys.exit(7)
"""


def entrypoint(project: Path, script: str, text: str, **env: str) -> None:
    """The record runs `python SCRIPT` (written into the pinned folder, the tree re-pinned) with `env` added."""
    from reprogate.core.gittree import tree_id

    (project / "tiny" / "project" / script).write_text(text)

    def change(record: dict[str, Any]) -> None:
        record["job"]["entrypoint"] = ["python", script]
        record["execution"]["env"].update(env)
        record["source"]["tree"] = tree_id(project / "tiny" / "project")

    edit_record(project / RECORD, change)


def test_ranks_see_only_the_allowlist_and_nothing_planted_leaves(cli: Cli, project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in PLANTED.items():
        monkeypatch.setenv(name, value)
    leak = tmp_path / "leak.txt"
    leak.write_text(PLANTED["GITHUB_TOKEN"] + " " + PLANTED["AWS_SECRET_ACCESS_KEY"])
    entrypoint(project, "dump.py", DUMP, LEAK_FILE=str(leak))
    out = tmp_path / "out"
    result = cli("rebuild", str(project / RECORD), "--out", str(out), "--workdir", str(tmp_path / "work"))
    verdict = json.loads((out / "verdict.json").read_text())
    assert result.exit_code == 1 and verdict["diagnosis"] == "run", result.output
    tail = next(s["log_tail"] for s in verdict["stages"] if s["name"] == "run")
    seen = json.loads(
        next(line for line in (tmp_path / "work" / "runs" / "preflight" / "logs" / "rank0.log").read_text().splitlines() if line.startswith("ENV "))[4:]
    )
    assert not {"GITHUB_TOKEN", "ACTIONS_RUNTIME_TOKEN", "AWS_SECRET_ACCESS_KEY", "HF_TOKEN", "GITHUB_ENV"} & set(seen)
    assert seen["HOME"].startswith(str(tmp_path / "work")) and seen["OMP_NUM_THREADS"] == "1" and seen["RANK"] in ("0", "1")
    assert "FROM A FILE" in tail and "hunter2" not in tail and "abcdef123456" not in tail
    everything = result.output + result.stderr + "".join(p.read_text() for p in out.iterdir() if p.is_file())
    for value in PLANTED.values():
        if value.startswith("/"):
            continue
        assert value not in everything, f"a planted secret leaked: {value[:8]}..."


REWRITER = """
import os, sys, time
from pathlib import Path
target = Path(os.environ["REWRITE_TARGET"])
if os.fork() == 0:  # detach: a new session, then a grandchild whose parent exits at once
    os.setsid()
    if os.fork() == 0:
        Path(os.environ["REWRITER_PID"]).write_text(str(os.getpid()))
        deadline = time.time() + 20
        while time.time() < deadline:  # wait for reprogate to finish, then rewrite the verdict
            for verdict in target.glob("*/verdict.json"):
                verdict.write_text('{"verdict": "pass"}')
                Path(os.environ["REWRITER_PID"]).with_suffix(".done").write_text("rewritten")
            time.sleep(0.05)
    os._exit(0)
time.sleep(0.5)
sys.exit(3)
"""


def test_a_detached_rewriter_started_by_training_code_is_ended_before_the_verdict_is_written(
    cli: Cli, project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Training code forks, calls setsid, forks again and waits for reprogate to exit to rewrite
    verdict.json. The rebuild is the subreaper of everything it starts: the rewriter is killed
    before the verdict exists, and the verdict stays the rebuild's own."""
    import os
    import time

    runner_temp = tmp_path / "runner-temp"
    runner_temp.mkdir()
    marker = tmp_path / "rewriter.pid"

    entrypoint(project, "rewrite.py", REWRITER, REWRITE_TARGET=str(runner_temp), REWRITER_PID=str(marker))
    monkeypatch.setenv("RUNNER_TEMP", str(runner_temp))
    monkeypatch.setenv("REPROGATE_SANDBOX", "off")  # this layer alone: in the sandbox the rewriter could not write there at all
    result = cli("rebuild", str(project / RECORD), "--workdir", str(tmp_path / "work"))
    assert result.exit_code == 1, result.output
    (out,) = runner_temp.iterdir()
    assert marker.exists(), "the rewriter started"
    pid = int(marker.read_text())
    time.sleep(1.0)
    assert not marker.with_suffix(".done").exists(), "the verdict was rewritten after the rebuild"
    assert not os.path.exists(f"/proc/{pid}") or open(f"/proc/{pid}/stat").read().split(") ")[1][0] == "Z"
    assert "left running" in result.output
    assert json.loads((out / "verdict.json").read_text())["diagnosis"] == "run"


PROBE = """
import json, os, sys
from pathlib import Path
found = {}
def attempt(name, action):
    try:
        found[name] = str(action())[:200]
    except Exception as exc:
        found[name] = "refused: " + type(exc).__name__
attempt("pids", lambda: len([p for p in os.listdir("/proc") if p.isdigit()]))
attempt("environ_of_pid_1", lambda: Path("/proc/1/environ").read_bytes())
attempt("runner_environ", lambda: Path(f"/proc/{os.environ['RUNNER_PID']}/environ").read_bytes())
attempt("write_file_commands", lambda: Path(os.environ["FILE_COMMANDS"]).open("a").write("NODE_OPTIONS=--require=/x\\n"))
attempt("list_runner_temp", lambda: os.listdir(os.environ["RUNNER_TEMP_SEEN"]))
attempt("read_home_secret", lambda: Path(os.environ["HOME_FILE"]).read_text())
attempt("write_checkout", lambda: Path(os.environ["CHECKOUT_FILE"]).open("a").write("# changed"))
attempt("write_work", lambda: Path(os.environ["REPROGATE_TRACE_DIR"]).joinpath("probe.txt").write_text("ok"))
print("FOUND " + json.dumps(found, sort_keys=True))
sys.exit(5)
"""


def test_sandboxed_ranks_see_no_runner_process_secret_or_file_command(cli: Cli, project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The attacks of a rank without a sandbox, tried from inside bubblewrap: an ancestor's
    environ (the step shell holds the runner's variables), the runner's file commands under
    RUNNER_TEMP (GITHUB_ENV), a credential in the runner user's home, the checkout. Only the work
    folder can be written."""
    import os

    from reprogate.rebuild import sandbox

    if sandbox.unavailable() is not None and os.environ.get("CI") != "true":
        pytest.skip(sandbox.unavailable())
    home = tmp_path / "runner-home"
    (home / ".docker").mkdir(parents=True)
    (home / ".docker" / "config.json").write_text('{"auths": {"r": {"auth": "c2VjcmV0"}}}')
    runner_temp = tmp_path / "runner-temp"
    (runner_temp / "_runner_file_commands").mkdir(parents=True)
    file_commands = runner_temp / "_runner_file_commands" / "set_env_1234"
    file_commands.write_text("")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("RUNNER_TEMP", str(runner_temp))
    monkeypatch.setenv("GITHUB_ENV", str(file_commands))

    entrypoint(
        project,
        "probe.py",
        PROBE,
        RUNNER_PID=str(os.getpid()),
        FILE_COMMANDS=str(file_commands),
        RUNNER_TEMP_SEEN=str(runner_temp),
        HOME_FILE=str(home / ".docker" / "config.json"),
        CHECKOUT_FILE=str(project / "tiny" / "project" / "train.py"),
    )
    out = tmp_path / "out"
    result = cli("rebuild", str(project / RECORD), "--out", str(out), "--workdir", str(tmp_path / "work"))
    assert (out / "verdict.json").exists(), result.output
    verdict = json.loads((out / "verdict.json").read_text())
    assert verdict["diagnosis"] == "run", result.output
    log = (tmp_path / "work" / "runs" / "preflight" / "logs" / "rank0.log").read_text()
    found = json.loads(next(line for line in log.splitlines() if line.startswith("FOUND "))[6:])
    assert int(found["pids"]) <= 4, found["pids"]  # bwrap, the node supervisor, the node's two rank hosts (running the entrypoint)
    assert b"GITHUB_ENV" not in found["environ_of_pid_1"].encode()
    for attack in ("runner_environ", "write_file_commands", "read_home_secret", "write_checkout"):
        assert found[attack].startswith("refused"), (attack, found[attack])
    assert found["list_runner_temp"] in ("[]", "refused: FileNotFoundError"), found["list_runner_temp"]
    assert file_commands.read_text() == "" and "# changed" not in (project / "tiny" / "project" / "train.py").read_text()
    assert found["write_work"] == "2", found["write_work"]
    assert verdict["environment"]["sandbox"].startswith("bubblewrap")


def test_a_candidate_rebuild_is_refused_unsandboxed_unless_the_workflow_allows_it_and_then_the_claim_says_so(
    cli: Cli, project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REPROGATE_SANDBOX", "off")
    refused = cli("rebuild", str(project / RECORD), "--environment", "candidate", "--out", str(tmp_path / "refused"))
    assert refused.exit_code == 3 and "cannot be sandboxed here" in refused.output and not (tmp_path / "refused").exists(), refused.output
    allowed = cli("rebuild", str(project / RECORD), "--environment", "candidate", "--allow-unsandboxed", "--out", str(tmp_path / "allowed"))
    assert allowed.exit_code == 0, allowed.output
    verdict = json.loads((tmp_path / "allowed" / "verdict.json").read_text())
    assert verdict["environment"]["sandbox"].startswith("none") and any("without a sandbox" in n for n in verdict["claim"]["not_covered"])
    reference = cli("rebuild", str(project / RECORD), "--out", str(tmp_path / "reference"))
    assert reference.exit_code == 0, "a reference rebuild runs the record's own code: it is not refused"


FIFO_TRACE = """
import os
from pathlib import Path
trace = Path(os.environ["REPROGATE_TRACE_DIR"]) / f"trace-rank{os.environ['RANK']}.jsonl"
if os.environ["RANK"] == "0":
    os.mkfifo(trace)  # a read of it would never end
else:
    trace.symlink_to(os.environ["RUNNER_FILE"])  # a read of it would be the runner's file
"""


def test_a_trace_the_code_under_test_made_a_fifo_or_a_link_is_refused_not_read(cli: Cli, project: Path, tmp_path: Path) -> None:
    import subprocess
    import sys

    secret = project / "runner-file.txt"  # in the checkout, which the sandbox shows read-only
    secret.write_text('{"type": "step", "step": 1, "rank": 1, "loss": 0.0}\n')

    entrypoint(project, "fifo.py", FIFO_TRACE, RUNNER_FILE=str(secret))
    out = tmp_path / "out"
    command = [sys.executable, "-m", "reprogate", "rebuild", str(project / RECORD), "--out", str(out), "--timeout", "120"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)
    verdict = json.loads((out / "verdict.json").read_text())
    assert done.returncode == 1 and verdict["diagnosis"] == "run", done.stdout + done.stderr
    detail = next(s["detail"] for s in verdict["stages"] if s["name"] == "run")
    assert "the trace cannot be read" in detail and ("not a regular file" in detail or "Too many levels" in detail), detail
