"""The verdict: built once, with every field, after the last stage and after everything the code
under test started has ended; `to_json()` is what `verdict.json` holds
(schemas/verdict.schema.json, which a test holds it to)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from reprogate.core.diagnostics import ExitCode
from reprogate.core.redact import redact
from reprogate.rebuild.comparisons import Comparison
from reprogate.rebuild.run_binding import RunBinding


@dataclass(frozen=True)
class StageRecord:
    """One stage as the verdict lists it."""

    name: str
    status: str  # pass, fail, skipped, not-run
    seconds: float
    detail: str
    log_tail: str = ""
    exit_code: int = 1  # when it failed
    cause: str | None = None  # when it failed: what it blames (stages.base.Cause), where it can tell

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "status": self.status,
            "seconds": round(self.seconds, 3),
            "detail": redact(self.detail),
            **({"log_tail": redact(self.log_tail)} if self.log_tail else {}),
            **({"cause": self.cause} if self.cause and self.status == "fail" else {}),
        }


@dataclass(frozen=True)
class RecordRef:
    """The record the verdict is about: where, what it is called, its digest and level."""

    path: str
    name: str | None
    digest: str
    level: str

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "name": self.name, "digest": self.digest, "level": self.level}


@dataclass(frozen=True)
class SeedsUsed:
    rebuilt: tuple[int, ...]
    reference: tuple[int, ...]
    metric: tuple[int, ...]
    source: str

    def to_json(self) -> dict[str, Any]:
        return {"rebuilt": list(self.rebuilt), "reference": list(self.reference), "metric": list(self.metric), "source": self.source}


@dataclass(frozen=True)
class Claim:
    """The bounded claim (rebuild/claim.py)."""

    replayed: bool
    text: str
    compared: tuple[str, ...]
    not_covered: tuple[str, ...]
    placement: Mapping[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        found: dict[str, Any] = {"replayed": self.replayed, "text": self.text, "compared": list(self.compared), "not_covered": list(self.not_covered)}
        if self.placement is not None:
            found["placement"] = dict(self.placement)
        return found


@dataclass(frozen=True)
class FileRef:
    """A file the rebuild wrote beside the verdict, by path and SHA-256."""

    path: str
    checksum: str

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "checksum": self.checksum}


@dataclass(frozen=True)
class Verdict:
    passed: bool
    diagnosis: str | None  # the first failing stage
    exit_code: int  # 0, or the first failing stage's: 1 not reproduced, 2 unusable input, 3 infrastructure
    record: RecordRef
    run: RunBinding
    stages: tuple[StageRecord, ...]
    environment: Mapping[str, Any]  # what was realized, what the ranks said of it, the machine, side by side with the record
    seeds: SeedsUsed
    tests: tuple[Comparison, ...]
    curves: Mapping[str, list[tuple[int, float]]]
    started_at: str
    seconds: float
    tool: str
    claim: Claim
    rebuild_record: FileRef | None = None
    first_difference: Mapping[str, Any] | None = None  # compare.FirstDifference.to_json(): the cause the diagnosis names
    loss: Mapping[str, Any] | None = None  # step_figures.Figures.to_json() of the loss: every loss figure the report states
    logs: tuple[str, ...] = ()  # each rank's output, kept beside the verdict (rank_logs.py), relative to its folder

    @property
    def infrastructure(self) -> bool:
        return self.exit_code == ExitCode.INFRA

    @property
    def failed_stage(self) -> StageRecord | None:
        return next((s for s in self.stages if s.name == self.diagnosis), None)

    def code(self) -> ExitCode:
        """The exit code of `reprogate rebuild`."""
        return ExitCode(self.exit_code)

    def to_json(self) -> dict[str, Any]:
        found: dict[str, Any] = {
            "apiVersion": "reprogate/v1",
            "kind": "Verdict",
            "verdict": "pass" if self.passed else "fail",
            "diagnosis": self.diagnosis,
            "infrastructure": self.infrastructure,
            "exit_code": self.exit_code,
            "record": self.record.to_json(),
            "run": self.run.as_json(),
            "stages": [s.to_json() for s in self.stages],
            "environment": dict(self.environment),
            "seeds": self.seeds.to_json(),
            "tests": [t.to_json() for t in self.tests],
            "curves": {k: [list(p) for p in v] for k, v in self.curves.items()},
            "started_at": self.started_at,
            "seconds": round(self.seconds, 3),
            "tool": self.tool,
            "claim": self.claim.to_json(),
        }
        if self.rebuild_record is not None:
            found["rebuild_record"] = self.rebuild_record.to_json()
        found["first_difference"] = _redacted(dict(self.first_difference)) if self.first_difference is not None else None
        found["loss"] = dict(self.loss) if self.loss is not None else None
        if self.logs:
            found["logs"] = list(self.logs)
        return found


def _redacted(cause: dict[str, Any]) -> dict[str, Any]:
    """The first difference with its text and string values redacted: a traced value is whatever
    the code under test wrote (a metric could hold a token it read)."""
    return {key: redact(value) if isinstance(value, str) and key != "role" else value for key, value in cause.items()}
