"""Running a fuzz harness for a while and reading what libFuzzer said: executions, coverage
(`cov:` edges and `ft:` features), and each finding (the uncaught exception and where it was
raised, with the input libFuzzer saved). tests/fuzz/test_harnesses.py and tools/fuzz both use it;
it needs no atheris itself (the harness process does).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
HARNESSES = sorted(p.stem.removeprefix("fuzz_") for p in HERE.glob("fuzz_*.py"))
_STATS = re.compile(r"^#(\d+)\s+\w+\s+cov: (\d+) ft: (\d+)", re.M)
_DONE = re.compile(r"^Done (\d+) runs in (\d+) second", re.M)
_ARTIFACT = re.compile(r"Test unit written to (\S+)")
_FRAME = re.compile(r'File "([^"]+)", line (\d+)')


@dataclass
class Finding:
    summary: str  # `KeyError: 'checksum' at reprogate/datasets/verify.py:109`
    artifact: str  # the input libFuzzer wrote (crash-*, timeout-*, oom-*)


@dataclass
class Run:
    harness: str
    seconds: float = 0.0
    executions: int = 0
    cov: int = 0
    ft: int = 0
    findings: list[Finding] = field(default_factory=list)
    output: str = ""  # the last run's output, for a failing test to show

    def line(self) -> str:
        ran = f"{self.harness:<12} {self.executions:>9,} executions in {self.seconds:5.0f} s"
        distinct = f" ({len({f.summary for f in self.findings})} distinct)" if self.findings else ""
        return f"{ran}  cov: {self.cov:<5} ft: {self.ft:<6} findings: {len(self.findings)}{distinct}"


def _finding(output: str) -> str:
    """The exception line and the innermost reprogate frame of atheris's traceback."""
    after = output.split("=== Uncaught Python exception: ===", 1)[-1].splitlines()
    kind = next((line.strip() for line in after if re.match(r"^\w+(\.\w+)*(Error|Exception|Exit|Interrupt)\b", line.strip())), "")
    frames = [(f, n) for f, n in _FRAME.findall(output.split("=== Uncaught Python exception: ===", 1)[-1]) if "/reprogate/" in f]
    where = f" at {frames[-1][0].split('/reprogate/', 1)[-1].join(['reprogate/', ''])}:{frames[-1][1]}" if frames else ""
    if "Timeout" in output and not kind:
        kind = "timeout (an input ran past -timeout)"
    if "out-of-memory" in output and not kind:
        kind = "out of memory (past -rss_limit_mb)"
    return (kind[:200] or "crash") + where


def run_harness(harness: str, seconds: float, artifacts: Path, corpus: Path | None = None, restart: bool = False) -> Run:
    """Fuzz `harness` for `seconds`. With `restart`, a finding does not end the run: libFuzzer
    starts again on the same corpus for the time left, so one run can report several."""
    artifacts.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}
    result = Run(harness)
    begin = time.monotonic()
    while True:
        left = seconds - (time.monotonic() - begin)
        if left < 1:
            break
        command = [
            sys.executable,
            str(HERE / f"fuzz_{harness}.py"),
            f"-max_total_time={int(left)}",
            f"-artifact_prefix={artifacts}/",
            "-timeout=20",
            "-rss_limit_mb=4096",
        ]
        if corpus is not None:
            corpus.mkdir(parents=True, exist_ok=True)
            command.append(str(corpus))
        done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, errors="replace", timeout=left + 120)
        output = done.stdout + done.stderr
        result.output = output
        stats = _STATS.findall(output)
        if stats:
            runs, cov, ft = (int(x) for x in stats[-1])
            result.cov, result.ft = max(result.cov, cov), max(result.ft, ft)
            ended = _DONE.findall(output)
            result.executions += int(ended[-1][0]) if ended else runs
        written = _ARTIFACT.findall(output)
        if done.returncode != 0 or written:
            result.findings.append(Finding(_finding(output), written[-1] if written else f"(exit {done.returncode}, no input written)"))
            if not restart or not stats:
                break
            continue
        break
    result.seconds = time.monotonic() - begin
    return result
