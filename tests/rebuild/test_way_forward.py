"""The report's way forward is about the stage that failed first."""

from __future__ import annotations

from typing import Any

from support import verdicts
from support.verdicts import typed

from reprogate.core.schemas import validator
from reprogate.rebuild.report import WAY_FORWARD, markdown
from reprogate.rebuild.stages import STAGES


def make_verdict(verdict: str, diagnosis: str | None = None, infrastructure: bool = False) -> dict[str, Any]:
    return {**verdicts.make_verdict(verdict, diagnosis, infrastructure), "curves": {"reference": [], "rebuilt": []}}


def forward(diagnosis: str, infrastructure: bool = False) -> str:
    text = markdown(typed(make_verdict("fail", diagnosis, infrastructure)))
    return text.split("### Way forward\n\n", 1)[1].split("\n\n", 1)[0]


def test_every_stage_has_its_own_way_forward() -> None:
    assert set(WAY_FORWARD) == set(STAGES)
    texts = {stage: forward(stage) for stage in STAGES}
    assert len(set(texts.values())) == len(STAGES), "no two stages get the same advice"


def test_the_advice_names_what_the_stage_is_about() -> None:
    assert "reprogate dataset verify" in forward("dataset") and "configuration" not in forward("dataset")
    assert "keys" in forward("config") and "shards" not in forward("config")
    assert "runner, not the change" in forward("preflight") and "baseline label" not in forward("preflight")
    assert "--seeds N" in forward("metric")
    assert "behavioral contract" in forward("model-state")
    for stage in ("config", "dataset", "metric"):
        assert "baseline label" in forward(stage) and "no bypass flag" in forward(stage)


def test_an_inconclusive_rebuild_says_rerun_not_promote() -> None:
    text = forward("digest", infrastructure=True)
    assert "rerun" in text and "never a pass" in text and "baseline" not in text


def test_a_passing_rebuild_has_no_way_forward() -> None:
    assert "Way forward" not in markdown(typed(make_verdict("pass")))


def blaming(cause: str) -> str:
    verdict = make_verdict("fail", "preflight")
    for stage in verdict["stages"]:
        if stage["name"] == "preflight":
            stage["cause"] = cause
            stage["detail"] = "preflight failed at framework: torch cannot be imported; the venv made from requirements.txt cannot import typing_extensions"
    assert not list(validator("Verdict").iter_errors(verdict))
    return markdown(typed(verdict)).split("### Way forward\n\n", 1)[1].split("\n\n", 1)[0]


def test_the_advice_follows_what_the_failing_stage_blames() -> None:
    """An old project's rebuild: preflight fails because the venv its lock file makes lacks a
    module, and says so; the way forward must not then say it is the runner."""
    lock = blaming("lock-file")
    assert "lock file is incomplete, not the runner" in lock and "uv pip compile --generate-hashes" in lock
    assert "runner, not the change" not in lock and "baseline label" in lock
    image = blaming("image")
    assert "the image lacks it, not the runner" in image and "runner, not the change" not in image
    assert blaming("runner") == forward("preflight"), "a preflight that blames the runner keeps the runner's advice"
