"""Each fuzz harness, run for a few seconds as part of the suite: a regression in a reader that
a short run finds fails here, with the input and the traceback. The longer run is tools/fuzz.

REPROGATE_FUZZ_SECONDS sets the time per harness (default 5: a smoke run of each of the sixteen;
at 15 they took over six minutes of the suite's thirty). Without atheris the harnesses cannot run: skipped on a
developer's machine, a failure in CI (env CI set), where the dev extras install it.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest
from runner import HARNESSES, run_harness

SECONDS = float(os.environ.get("REPROGATE_FUZZ_SECONDS", "5"))

if importlib.util.find_spec("atheris") is None:
    if os.environ.get("CI"):
        raise ImportError("atheris is not installed; the dev extras install it (pip install -e '.[dev]'), and CI runs the fuzz harnesses")
    pytest.skip("atheris is not installed (pip install atheris, or the dev extras)", allow_module_level=True)


def test_every_family_has_a_harness() -> None:
    assert HARNESSES == [
        "answers",
        "capacity",
        "config",
        "dockerfiles",
        "events",
        "intervals",
        "lockfiles",
        "manifests",
        "payloads",
        "records",
        "registry",
        "retiring",
        "sarif",
        "trace_meta",
        "traces",
        "verdicts",
    ]


@pytest.mark.parametrize("harness", HARNESSES)
def test_harness_finds_nothing(harness: str, tmp_path: Path) -> None:
    run = run_harness(harness, SECONDS, tmp_path / "artifacts", tmp_path / "corpus")
    print(run.line())
    assert not run.findings, f"{harness}: {run.findings[0].summary}; input {run.findings[0].artifact}\n{run.output[-6000:]}"
    assert run.executions > 0 and run.cov > 0, f"{harness} did not run:\n{run.output[-4000:]}"
