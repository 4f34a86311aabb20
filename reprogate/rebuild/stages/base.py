"""What a rebuild stage is: a name, a function of the rebuild's state, the state fields it needs
from earlier stages and the one it provides to later ones; and what it returns."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from reprogate.rebuild.comparisons import Comparison
from reprogate.rebuild.stage_names import Cause, StageStatus
from reprogate.rebuild.state import RebuildState


@dataclass(frozen=True)
class StageResult:
    status: StageStatus = "not-run"
    detail: str = ""
    data: Mapping[str, Any] = field(default_factory=dict)
    log_tail: str = ""
    exit_code: int = 1  # when it fails: 1 not reproduced, 2 unusable input, 3 infrastructure
    comparison: Comparison | None = None  # the test it made, stated fully (steps, metric)
    cause: Cause | None = None  # when it fails: what its detail blames, where the stage can tell

    def said(self, more: str) -> StageResult:
        """The same result with more words in its detail."""
        return replace(self, detail=self.detail + more)


def passed(detail: str, comparison: Comparison | None = None, **data: Any) -> StageResult:
    return StageResult("pass", detail, data, comparison=comparison)


def failed(detail: str, log_tail: str = "", exit_code: int = 1, comparison: Comparison | None = None, cause: Cause | None = None, **data: Any) -> StageResult:
    return StageResult("fail", detail, data, log_tail=log_tail, exit_code=exit_code, comparison=comparison, cause=cause)


def skipped(detail: str) -> StageResult:
    return StageResult("skipped", detail)


class StageFn(Protocol):
    def __call__(self, state: RebuildState) -> StageResult: ...


@dataclass(frozen=True)
class Stage:
    run: StageFn
    needs: tuple[str, ...] = ()  # state fields an earlier stage must have set
    provides: tuple[str, ...] = ()  # state fields this stage sets (each field by one stage, once)
