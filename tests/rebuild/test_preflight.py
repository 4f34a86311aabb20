"""`reprogate preflight` with real torch.distributed processes (gloo on the CPU)."""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from support import EXAMPLES

from reprogate.rebuild.preflight import PreflightOptions, run_preflight

if os.environ.get("CI") != "true":
    pytest.importorskip("torch")  # CI installs torch (.[dev]); a developer machine may not have it


def preflight(*args: str, env: dict[str, str] | None = None, timeout: float = 60) -> tuple[int, dict[str, Any]]:
    """Run the CLI; the subprocess timeout is a liveness bound (a hang fails the test), not a benchmark."""
    clean = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "LOCAL_RANK")}
    done = subprocess.run(
        [sys.executable, "-m", "reprogate", "preflight", "--format", "json", *args],
        capture_output=True,
        text=True,
        env={**clean, **(env or {})},
        timeout=timeout,
    )
    return done.returncode, json.loads(done.stdout)


def statuses(result: dict[str, Any]) -> dict[str, str]:
    return {s["name"]: s["status"] for s in result["stages"]}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_two_rank_gloo_preflight_passes(tmp_path: Path) -> None:
    out = tmp_path / "preflight.json"
    code, result = preflight("--world-size", "2", "-o", str(out))
    assert code == 0, result
    assert result["verdict"] == "pass" and result["backend"] == "gloo" and result["world_size"] == 2
    assert statuses(result) == {"devices": "no-gpu", "framework-op": "no-gpu", "process-group": "pass", "collective": "pass"}
    assert set(result["stages"][3]["ranks"]) == {"0", "1"}
    assert "sum 3 correct" in result["stages"][3]["detail"]
    assert json.loads(out.read_text()) == result


def test_peer_that_never_joins_fails_at_the_process_group(tmp_path: Path) -> None:
    env = {"RANK": "0", "WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(free_port())}
    code, result = preflight("--timeout", "3", env=env, timeout=3 + 30)
    assert code == 1 and result["mode"] == "torchrun"
    assert result["failed_stage"] == "process-group" and statuses(result)["collective"] == "not-run"


def test_wrong_master_port_fails_at_the_process_group() -> None:
    env = {"RANK": "1", "WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(free_port())}
    code, result = preflight("--timeout", "3", env=env, timeout=3 + 30)
    assert code == 1 and result["failed_stage"] == "process-group"


def wrapper(tmp_path: Path, body: str) -> str:
    script = tmp_path / "python-wrapper"
    script.write_text(f"#!/bin/sh\n{body}\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return str(script)


def test_a_killed_rank_fails_the_preflight(tmp_path: Path) -> None:
    python = wrapper(tmp_path, f'if [ "$RANK" = 1 ]; then kill -9 $$; fi\nexec {sys.executable} "$@"')
    report = run_preflight(PreflightOptions(world_size=2, timeout=5, python=python))
    assert report.exit_code == 1
    assert report.failed_stage == "framework-op" and "rank 1 exited with code -9" in report.stage("framework-op").detail


def test_missing_torch_is_could_not_start(tmp_path: Path) -> None:
    hide = "import sys, runpy; sys.modules['torch'] = None; runpy.run_module('reprogate.runtime.preflight_rank', run_name='__main__')"
    python = wrapper(tmp_path, f'exec {sys.executable} -c "{hide}"')
    report = run_preflight(PreflightOptions(world_size=2, timeout=5, python=python))
    assert report.exit_code == 3 and "torch cannot be imported" in report.could_not_start


def test_record_expecting_gpus_fails_the_devices_stage_first() -> None:
    code, result = preflight("--record", str(EXAMPLES / "records" / "drill.yaml"))
    assert code == 1 and result["failed_stage"] == "devices"
    assert "expects 8 GPU(s)" in result["stages"][0]["detail"]
    assert statuses(result)["process-group"] == "not-run"


def test_nccl_without_a_gpu_is_a_named_failure() -> None:
    code, result = preflight("--backend", "nccl", "--timeout", "5")
    assert code == 1 and result["failed_stage"] == "process-group" and "nccl needs a GPU" in result["stages"][2]["detail"]
