"""The verdict: built once, with every field, after the last stage and after everything the code
under test started has ended; `to_json()` is what `verdict.json` holds
(schemas/verdict.schema.json, which a test holds it to), and `Verdict.from_json` the one way back:
a verdict file's JSON, held to that schema, as the same frozen value
(`Verdict.from_json(v.to_json()) == v`). Every reader of a verdict (the report, `attest`, the
badge, `github status` and its check run) takes this value, never the JSON.

A field added to the verdict is added here three times: the dataclass field, its `to_json` and
its `from_json` (and in the schema); tests/rebuild/test_verdict_reader.py holds the round trip."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from reprogate.core.diagnostics import ExitCode, field_path
from reprogate.core.errors import UsageError
from reprogate.core.frozen import freeze, thaw
from reprogate.core.levels import LEVELS, Level, level_of
from reprogate.core.redact import redact
from reprogate.core.schemas import validator
from reprogate.rebuild import step_figures
from reprogate.rebuild.comparisons import StatedTest
from reprogate.rebuild.run_binding import RunBinding
from reprogate.rebuild.stage_names import Cause, StageName, StageStatus, cause_of, stage_name_of, stage_status_of
from reprogate.rebuild.step_figures import Figures
from reprogate.rebuild.verdict_environment import VerdictEnvironment


@dataclass(frozen=True)
class StageRecord:
    """One stage as the verdict lists it."""

    name: StageName
    status: StageStatus
    seconds: float
    detail: str
    log_tail: str = ""
    exit_code: int = field(default=1, compare=False)  # when it failed (the verdict's exit_code says it; the stage's own is not written)
    cause: Cause | None = None  # when it failed: what it blames, where it can tell
    as_read: bool = field(default=False, compare=False, repr=False)  # read from a file: its text is redacted already

    def __post_init__(self) -> None:
        object.__setattr__(self, "seconds", round(self.seconds, 3))  # what the verdict states: milliseconds

    def to_json(self) -> dict[str, Any]:
        shown = _as_is if self.as_read else redact  # text read back is written as read: redacting twice is not redacting once
        return {
            "name": self.name,
            "status": self.status,
            "seconds": self.seconds,
            "detail": shown(self.detail),
            **({"log_tail": shown(self.log_tail)} if self.log_tail else {}),
            **({"cause": self.cause} if self.cause and self.status == "fail" else {}),
        }

    @staticmethod
    def from_json(data: Mapping[str, Any], exit_code: int) -> StageRecord:
        """One of a verdict's `stages`; `exit_code`: the verdict's, which the failing stage had."""
        status = stage_status_of(data["status"])
        failed = exit_code if status == "fail" else 1
        return StageRecord(
            stage_name_of(data["name"]), status, data["seconds"], data["detail"], data.get("log_tail", ""), failed, cause_of(data.get("cause")), True
        )


@dataclass(frozen=True)
class RecordRef:
    """The record the verdict is about: where, what it is called, its digest and level."""

    path: str
    name: str | None
    digest: str
    level: Level

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "name": self.name, "digest": self.digest, "level": self.level}

    @staticmethod
    def from_json(data: Mapping[str, Any]) -> RecordRef:
        level = level_of(data["level"])
        if level is None:  # the verdict schema's enum: a schema-checked verdict never gets here
            raise ValueError(f"record.level {data['level']!r} is none of {', '.join(LEVELS)}")
        return RecordRef(data["path"], data.get("name"), data["digest"], level)


@dataclass(frozen=True)
class SeedsUsed:
    rebuilt: tuple[int, ...]
    reference: tuple[int, ...]
    metric: tuple[int, ...] | None  # None: a verdict that does not say (written before it did)
    source: str | None

    def to_json(self) -> dict[str, Any]:
        found: dict[str, Any] = {"rebuilt": list(self.rebuilt), "reference": list(self.reference)}
        if self.metric is not None:
            found["metric"] = list(self.metric)
        if self.source is not None:
            found["source"] = self.source
        return found

    @staticmethod
    def from_json(data: Mapping[str, Any]) -> SeedsUsed:
        metric = data.get("metric")
        return SeedsUsed(tuple(data["rebuilt"]), tuple(data["reference"]), None if metric is None else tuple(metric), data.get("source"))


@dataclass(frozen=True)
class Claim:
    """The bounded claim (rebuild/claim.py)."""

    replayed: bool
    text: str
    compared: tuple[str, ...]
    not_covered: tuple[str, ...]
    placement: Mapping[str, Any] | None = None

    def __post_init__(self) -> None:
        if self.placement is not None:
            object.__setattr__(self, "placement", freeze(self.placement))

    def to_json(self) -> dict[str, Any]:
        found: dict[str, Any] = {"replayed": self.replayed, "text": self.text, "compared": list(self.compared), "not_covered": list(self.not_covered)}
        if self.placement is not None:
            found["placement"] = thaw(self.placement)
        return found

    @staticmethod
    def from_json(data: Mapping[str, Any]) -> Claim:
        return Claim(data["replayed"], data["text"], tuple(data["compared"]), tuple(data["not_covered"]), data.get("placement"))


@dataclass(frozen=True)
class FileRef:
    """A file the rebuild wrote beside the verdict, by path and SHA-256."""

    path: str
    checksum: str

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "checksum": self.checksum}

    @staticmethod
    def from_json(data: Mapping[str, Any]) -> FileRef:
        return FileRef(data["path"], data["checksum"])


@dataclass(frozen=True)
class StatedCause:
    """The cause the diagnosis names (compare.FirstDifference, as the verdict states it): the
    first scalar of the trace the rebuild does not match."""

    field: str  # lr, batch, metrics.NAME, loss, tensors.NAME, model_state
    role: str  # input or output
    step: int
    rank: int
    reference: Any  # the values as traced (JSON; frozen)
    rebuilt: Any  # None: missing from the rebuild
    judged: str | None  # exact or tolerance (None: a verdict written before it said)
    text: str
    as_read: bool = dataclasses.field(default=False, compare=False, repr=False)  # read from a file: redacted already (`field` is a field here)

    def __post_init__(self) -> None:
        object.__setattr__(self, "reference", freeze(self.reference))
        object.__setattr__(self, "rebuilt", freeze(self.rebuilt))

    @staticmethod
    def from_json(data: Mapping[str, Any], as_read: bool = True) -> StatedCause:
        """`first_difference` of a verdict file; `as_read` False for `FirstDifference.to_json()`
        as the rebuild made it (its text is redacted when the verdict is written)."""
        return StatedCause(
            data["field"], data["role"], data["step"], data["rank"], data["reference"], data["rebuilt"], data.get("judged"), data["text"], as_read
        )

    def to_json(self) -> dict[str, Any]:
        found: dict[str, Any] = {"field": self.field, "role": self.role, "step": self.step, "rank": self.rank}
        found.update({"reference": thaw(self.reference), "rebuilt": thaw(self.rebuilt)})
        if self.judged is not None:
            found["judged"] = self.judged
        found["text"] = self.text
        return found if self.as_read else _redacted(found)


@dataclass(frozen=True)
class Verdict:
    passed: bool
    diagnosis: str | None  # the first failing stage
    exit_code: int  # 0, or the first failing stage's: 1 not reproduced, 2 unusable input, 3 infrastructure
    record: RecordRef
    run: RunBinding
    stages: tuple[StageRecord, ...]
    environment: VerdictEnvironment  # what was realized, what the ranks said of it, the machine, side by side with the record
    seeds: SeedsUsed
    tests: tuple[StatedTest, ...]
    curves: Mapping[str, Sequence[tuple[int, float]]]
    started_at: str
    seconds: float
    tool: str
    claim: Claim
    rebuild_record: FileRef | None = None
    first_difference: StatedCause | None = None  # the cause the diagnosis names
    loss: Figures | None = None  # every loss figure the report states (step_figures)
    logs: tuple[str, ...] = ()  # each rank's output, kept beside the verdict (rank_logs.py), relative to its folder
    # What a verdict file said of `infrastructure` where that is not what its exit code says: no
    # rebuild writes such a file, so the gate, reading it, must see what it claims (None: as the exit code says).
    said_infrastructure: bool | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "seconds", round(self.seconds, 3))
        object.__setattr__(self, "curves", freeze(self.curves))

    @property
    def infrastructure(self) -> bool:
        return self.said_infrastructure if self.said_infrastructure is not None else self.exit_code == ExitCode.INFRA

    @property
    def failed_stage(self) -> StageRecord | None:
        return next((s for s in self.stages if s.name == self.diagnosis), None)

    @property
    def cause(self) -> str | None:
        """What the failing stage blames (stages.base.Cause), where it said."""
        stage = self.failed_stage
        return stage.cause if stage is not None else None

    @property
    def log_tail(self) -> str:
        """The first stage's log tail (the failing run's), or empty."""
        return next((s.log_tail for s in self.stages if s.log_tail), "")

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
            "environment": self.environment.to_json(),
            "seeds": self.seeds.to_json(),
            "tests": [t.to_json() for t in self.tests],
            "curves": {k: [list(p) for p in v] for k, v in self.curves.items()},
            "started_at": self.started_at,
            "seconds": self.seconds,
            "tool": self.tool,
            "claim": self.claim.to_json(),
        }
        if self.rebuild_record is not None:
            found["rebuild_record"] = self.rebuild_record.to_json()
        found["first_difference"] = self.first_difference.to_json() if self.first_difference is not None else None
        found["loss"] = self.loss.to_json() if self.loss is not None else None
        if self.logs:
            found["logs"] = list(self.logs)
        return found

    @staticmethod
    def from_json(data: Any, where: str) -> Verdict:
        """The verdict `data` (a verdict file's JSON; `where` names the file) holds, after the
        schema has checked every field this reads: a UsageError (exit 2) naming the file and the
        field otherwise, which `github status` turns into an `error` state.

        A verdict of an older reprogate lacks fields this one writes: without `exit_code` it is
        0 on a pass and 1 on a failure (as `attest` always read it), without `run`, `environment`,
        `curves` or `loss` they are empty, without `seeds.metric`/`source` they stay unsaid."""
        check_shape(data, where)
        passed = data["verdict"] == "pass"
        exit_code = data.get("exit_code", 0 if passed else 1)
        said = data.get("infrastructure") is True  # a verdict without the flag never said so
        record = data.get("rebuild_record")
        cause = data.get("first_difference")
        return Verdict(
            passed=passed,
            diagnosis=data["diagnosis"],
            exit_code=exit_code,
            record=RecordRef.from_json(data["record"]),
            run=RunBinding.from_json(data.get("run")),
            stages=tuple(StageRecord.from_json(s, exit_code) for s in data["stages"]),
            environment=VerdictEnvironment.from_json(data.get("environment")),
            seeds=SeedsUsed.from_json(data["seeds"]),
            tests=tuple(StatedTest.from_json(t) for t in data["tests"]),
            curves=data.get("curves") or {},
            started_at=data["started_at"],
            seconds=data["seconds"],
            tool=data["tool"],
            claim=Claim.from_json(data["claim"]),
            rebuild_record=FileRef.from_json(record) if record is not None else None,
            first_difference=StatedCause.from_json(cause) if cause is not None else None,
            loss=step_figures.from_json(data.get("loss")),
            logs=tuple(data.get("logs") or ()),
            said_infrastructure=said if said != (exit_code == ExitCode.INFRA) else None,
        )


def check_shape(data: Any, where: str) -> None:
    """Refuse `data` unless it is a verdict as the schema describes one (the first error, by field)."""
    if not isinstance(data, Mapping) or data.get("kind") != "Verdict":
        raise UsageError(f"{where}: not a reprogate verdict (kind: Verdict)")
    errors = sorted(validator("Verdict").iter_errors(data), key=lambda e: list(e.absolute_path))
    if errors:
        first = errors[0]
        raise UsageError(
            f"{where}: {field_path(first.absolute_path) or '(top level)'}: {first.message[:300]}",
            hint="the verdict was not written by this reprogate, or was changed",
        )


def _as_is(text: str) -> str:
    return text


def _redacted(cause: dict[str, Any]) -> dict[str, Any]:
    """The first difference with its text and string values redacted: a traced value is whatever
    the code under test wrote (a metric could hold a token it read)."""
    return {key: redact(value) if isinstance(value, str) and key != "role" else value for key, value in cause.items()}
