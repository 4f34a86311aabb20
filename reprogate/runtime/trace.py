"""Trace files: their format, and reading them back for comparison.

A trace is JSON Lines, one object per event, written per rank by the Tracer (runtime.tracer):

  {"type": "meta", "rank": 0, "world_size": 2, "seed": 7, "digest": "sha256", "cpu": {...}, ...}
  {"type": "step", "rank": 0, "step": 1, "batch": "sha256:...", "loss": 2.31, "lr": 0.01,
   "metrics": {...}, "tensors": {"fc.weight": "sha256:..."}, "model_state": "sha256:..."}
  {"type": "metric", "rank": 0, "name": "val_loss", "value": 1.87, "step": 40}

The meta event states what the run really used, read inside the training process when the first
event is written (after the script has seeded and configured torch): the seed `seed_everything`
applied, the world size, the configuration and dataset-manifest digests the script passed, torch's
CPU capability, MKL's reproducibility mode, thread counts and the determinism switches. `validate`
and `rebuild` hold a record to its reference trace's meta, and `capture` takes the training
process's determinism switches from it. Standard library only: the rebuild reads traces here and
ranks may too.

Each line is checked once (check_event) and turned into one frozen typed event here (a
`StepEvent`, `MetricEvent`, `MetaEvent`, or an `OtherEvent` for a type this format does not
define): nothing past the reader holds the raw mapping. A field the format does not name is kept,
read-only, in the event's `extra`, so a comparison of whole events (a step's every field) sees as
much as the trace says; `to_json()` gives the line's object back.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, ClassVar, TypeAlias

# A JSON value as a trace holds it, frozen: objects are read-only mappings, arrays tuples.
Value: TypeAlias = "str | int | float | bool | None | tuple[Value, ...] | Mapping[str, Value]"
EMPTY: Mapping[str, Value] = MappingProxyType({})


def read_trace(paths: Iterable[str | Path]) -> list[TraceEvent]:
    """Events of one or more trace files, sorted by (type, step, rank) for comparison."""
    texts = []
    for path in paths:
        with open(path, encoding="utf-8") as fh:
            texts.append(fh.read())
    return trace_events(texts)


class TraceError(ValueError):
    """A trace line that is not an event of this format; the message names the line and field."""


NUMBERS = ("loss", "lr")  # step fields the comparisons read as numbers


def _integer(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _shown(value: object) -> str:
    return json.dumps(value)[:40]


def check_event(event: object, where: str) -> dict[str, Any]:
    """`event` if it has the shape every reader of a trace relies on (an object; integer step and
    rank, a step event's step present; numeric loss and lr; a metric's string name and numeric
    value; the digests strings, the metrics and tensors objects of numbers and of strings; a
    meta's seed and world size integers, its cpu and determinism objects), else TraceError naming
    `where` and the field. Traces come from training code, so nothing later may assume more."""
    if not isinstance(event, dict):
        raise TraceError(f"{where}: a trace line is a JSON object, not a {type(event).__name__}")
    for name in ("step", "rank"):
        if name in event and not _integer(event[name]):
            raise TraceError(f"{where}: {name} is an integer, not {_shown(event[name])}")
    kind = event.get("type")
    if kind == "step":
        if "step" not in event:
            raise TraceError(f"{where}: a step event has no step")
        for name in NUMBERS:
            if name in event and not _number(event[name]):
                raise TraceError(f"{where}: {name} is a number, not {_shown(event[name])}")
        _strings(event, ("batch", "model_state"), where)
        _table(event, "metrics", _number, "a number", where)
        _table(event, "tensors", lambda v: isinstance(v, str), "a string", where)
    elif kind == "metric":
        if not isinstance(event.get("name"), str):
            raise TraceError(f"{where}: a metric event's name is a string")
        if not _number(event.get("value")):
            raise TraceError(f"{where}: metric {event['name'][:60]!r}: value is a number, not {json.dumps(event.get('value'))[:40]}")
    elif kind == "meta":
        for name in ("seed", "world_size"):
            if name in event and not _integer(event[name]):
                raise TraceError(f"{where}: {name} is an integer, not {_shown(event[name])}")
        _strings(event, ("digest", "config_digest", "dataset_digest", "torch"), where)
        for name in ("cpu", "determinism"):
            if name in event and not isinstance(event[name], dict):
                raise TraceError(f"{where}: {name} is an object, not {_shown(event[name])}")
        if "cpu" in event:
            _cpu(event["cpu"], where)
    return event


def _cpu(cpu: Mapping[str, Any], where: str) -> None:
    """The meta's cpu facts of the types process_facts.cpu_facts writes them."""
    for name in ("architecture", "capability", "mkl_cbwr"):
        if name in cpu and not isinstance(cpu[name], str):
            raise TraceError(f"{where}: cpu.{name} is a string, not {_shown(cpu[name])}")
    if "threads" in cpu and not _integer(cpu["threads"]):
        raise TraceError(f"{where}: cpu.threads is an integer, not {_shown(cpu['threads'])}")
    if "portable" in cpu and not isinstance(cpu["portable"], bool):
        raise TraceError(f"{where}: cpu.portable is true or false, not {_shown(cpu['portable'])}")
    _table(cpu, "env", lambda v: isinstance(v, str), "a string", where, "cpu.env")


def _strings(event: Mapping[str, Any], names: Iterable[str], where: str) -> None:
    for name in names:
        if name in event and not isinstance(event[name], str):
            raise TraceError(f"{where}: {name} is a string, not {_shown(event[name])}")


def _table(event: Mapping[str, Any], name: str, kind: Any, words: str, where: str, field_name: str | None = None) -> None:
    """An object whose every value is `kind` (metrics: numbers; tensors: digests), its field named
    `field_name` in a message (by default `name`)."""
    if name not in event:
        return
    table, shown = event[name], field_name or name
    if not isinstance(table, dict):
        raise TraceError(f"{where}: {shown} is an object, not {_shown(table)}")
    wrong = next((k for k, v in table.items() if not kind(v)), None)
    if wrong is not None:
        raise TraceError(f"{where}: {shown}.{wrong[:60]} is {words}, not {_shown(table[wrong])}")


@dataclass(frozen=True)
class CpuFacts:
    """The CPU side of a rank as the meta states it (process_facts.cpu_facts): the architecture,
    torch's CPU capability (its kernels), MKL's reproducibility mode, the thread count, the CPU
    variables set, and whether the portable CPU mode was applied; anything else is in `extra`."""

    architecture: str | None = None
    capability: str | None = None
    mkl_cbwr: str | None = None
    threads: int | None = None
    portable: bool | None = None
    env: Mapping[str, str] | None = None
    extra: Mapping[str, Value] = field(default_factory=lambda: EMPTY)

    def to_json(self) -> dict[str, Any]:
        found = {name: getattr(self, name) for name in ("architecture", "capability", "mkl_cbwr", "threads", "portable")}
        found["env"] = dict(self.env) if self.env is not None else None
        return {**plain(self.extra), **_without_none(found)}

    @staticmethod
    def of(cpu: Mapping[str, Any]) -> CpuFacts:
        """The facts of a cpu object check_event passed."""
        env = cpu.get("env")
        return CpuFacts(
            cpu.get("architecture"),
            cpu.get("capability"),
            cpu.get("mkl_cbwr"),
            cpu.get("threads"),
            cpu.get("portable"),
            MappingProxyType(dict(env)) if env is not None else None,
            _extra(cpu, CPU_FIELDS),
        )


def frozen(value: Any) -> Value:
    """A JSON value made read-only: objects as mappings no one can change, arrays as tuples (what
    core.frozen.freeze does; runtime/ imports no core module but canonical, so it has its own)."""
    if isinstance(value, dict):
        return MappingProxyType({str(k): frozen(v) for k, v in value.items()})
    if isinstance(value, list | tuple):
        return tuple(frozen(v) for v in value)
    result: Value = value
    return result


def plain(value: Value) -> Any:
    """A frozen value as plain JSON again (dicts and lists), for writing it out."""
    if isinstance(value, Mapping):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, tuple):
        return [plain(v) for v in value]
    return value


def _frozen_table(value: Any) -> Mapping[str, Value]:
    found = frozen(value)
    return found if isinstance(found, Mapping) else EMPTY


@dataclass(frozen=True)
class StepEvent:
    """One training step of one rank. Every field the format has is an attribute (None: the line
    has no such field; a missing rank is rank 0, as every reader has read it); any other field is
    in `extra`, so comparing whole steps compares all the trace wrote."""

    step: int
    rank: int = 0
    loss: float | None = None  # an integer stays one: numbers compare as the trace wrote them
    lr: float | None = None
    batch: str | None = None
    metrics: Mapping[str, float] | None = None
    tensors: Mapping[str, str] | None = None
    model_state: str | None = None
    extra: Mapping[str, Value] = field(default_factory=lambda: EMPTY)

    kind: ClassVar[str] = "step"

    def has(self, name: str) -> bool:
        """Whether the line has the field `name` (a contract's tolerance names trace fields)."""
        return self.named(name) is not None if name in STEP_FIELDS else name in self.extra

    def named(self, name: str) -> Value:
        """The field `name` of the line, None when it has none: the one read by a name, for the
        comparisons whose contract names what they compare (loss, lr, a field a script added)."""
        if name == "type":
            return "step"
        if name in STEP_FIELDS:
            found: Value = getattr(self, name)
            return found
        return self.extra.get(name)

    def to_json(self) -> dict[str, Any]:
        found = {name: plain(self.named(name)) for name in sorted(STEP_FIELDS)}
        return {**plain(self.extra), **_without_none(found)}


@dataclass(frozen=True)
class MetricEvent:
    """A named metric a rank reported (a validation loss), at a step or at the end."""

    name: str
    value: float
    rank: int = 0
    step: int | None = None
    extra: Mapping[str, Value] = field(default_factory=lambda: EMPTY)

    kind: ClassVar[str] = "metric"

    def to_json(self) -> dict[str, Any]:
        found = {"type": "metric", "rank": self.rank, "name": self.name, "value": self.value, "step": self.step}
        return {**plain(self.extra), **_without_none(found)}


@dataclass(frozen=True)
class MetaEvent:
    """What one rank ran with, read inside the training process (see the module's docstring);
    what a script or an integration added (framework, steps, ...) is in `extra`."""

    rank: int = 0
    world_size: int | None = None
    seed: int | None = None
    digest: str | None = None  # the Tracer's digest algorithm
    config_digest: str | None = None
    dataset_digest: str | None = None
    torch: str | None = None
    cpu: CpuFacts | None = None
    determinism: Mapping[str, Value] | None = None  # process_facts.determinism_facts: torch's switches
    step: int | None = None
    extra: Mapping[str, Value] = field(default_factory=lambda: EMPTY)

    kind: ClassVar[str] = "meta"

    def to_json(self) -> dict[str, Any]:
        found = {name: plain(getattr(self, name)) for name in sorted(META_FIELDS - {"type", "cpu"})}
        found["cpu"] = self.cpu.to_json() if self.cpu is not None else None
        return {**plain(self.extra), **_without_none({"type": "meta", **found})}


@dataclass(frozen=True)
class OtherEvent:
    """A line of a type this format does not define (or of none): kept whole, compared by nothing."""

    type: Value  # None: the line has no type
    rank: int = 0
    step: int | None = None
    extra: Mapping[str, Value] = field(default_factory=lambda: EMPTY)

    kind: ClassVar[str] = "other"

    def to_json(self) -> dict[str, Any]:
        found: dict[str, Any] = plain(self.extra)
        if self.type is not None:
            found["type"] = plain(self.type)
        found["rank"] = self.rank
        if self.step is not None:
            found["step"] = self.step
        return found


TraceEvent = StepEvent | MetricEvent | MetaEvent | OtherEvent

STEP_FIELDS = frozenset({"type", "rank", "step", "loss", "lr", "batch", "metrics", "tensors", "model_state"})
METRIC_FIELDS = frozenset({"type", "rank", "step", "name", "value"})
CPU_FIELDS = frozenset({"architecture", "capability", "mkl_cbwr", "threads", "portable", "env"})
META_FIELDS = frozenset({"type", "rank", "world_size", "seed", "digest", "config_digest", "dataset_digest", "torch", "cpu", "determinism", "step"})


def _without_none(found: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in found.items() if v is not None}


def _extra(event: Mapping[str, Any], known: frozenset[str]) -> Mapping[str, Value]:
    rest = {k: v for k, v in event.items() if k not in known}
    return _frozen_table(rest) if rest else EMPTY


def typed_event(event: Mapping[str, Any]) -> TraceEvent:
    """The typed value of an event check_event passed (its checks are what make this total: a
    field of the format is never null there)."""
    kind, rank = event.get("type"), event.get("rank", 0)
    if kind == "step":
        metrics, tensors = event.get("metrics"), event.get("tensors")
        return StepEvent(
            event["step"],
            rank,
            event.get("loss"),
            event.get("lr"),
            event.get("batch"),
            MappingProxyType(dict(metrics)) if metrics is not None else None,  # check_event: an object of numbers
            MappingProxyType(dict(tensors)) if tensors is not None else None,  # check_event: an object of strings
            event.get("model_state"),
            _extra(event, STEP_FIELDS),
        )
    if kind == "metric":
        return MetricEvent(event["name"], event["value"], rank, event.get("step"), _extra(event, METRIC_FIELDS))
    if kind == "meta":
        cpu, determinism = event.get("cpu"), event.get("determinism")
        return MetaEvent(
            rank,
            event.get("world_size"),
            event.get("seed"),
            event.get("digest"),
            event.get("config_digest"),
            event.get("dataset_digest"),
            event.get("torch"),
            CpuFacts.of(cpu) if cpu is not None else None,
            _frozen_table(determinism) if determinism is not None else None,
            event.get("step"),
            _extra(event, META_FIELDS),
        )
    return OtherEvent(frozen(kind), rank, event.get("step"), _extra(event, frozenset({"type", "rank", "step"})))


def parse_event(event: object, where: str) -> TraceEvent:
    """One line's object as its typed event: check_event, then typed_event."""
    return typed_event(check_event(event, where))


def order(event: TraceEvent) -> tuple[str, int, int, str]:
    """The one sort key of trace events: (type, step, rank, name)."""
    kind = event.kind if not isinstance(event, OtherEvent) else ("" if event.type is None else str(plain(event.type)))
    step = event.step if event.step is not None else -1
    return kind, step, event.rank, event.name if isinstance(event, MetricEvent) else ""


def trace_events(texts: Iterable[str]) -> list[TraceEvent]:
    """The events of trace texts (JSON Lines), sorted by (type, step, rank) for comparison. A
    line that is not JSON, or not an event of this format (check_event), is a TraceError (a
    ValueError) naming it."""
    events = []
    for text in texts:
        for number, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                event = json.loads(line)
            except RecursionError:
                raise TraceError(f"line {number}: JSON nested too deeply") from None
            except ValueError as exc:
                raise TraceError(f"line {number}: not JSON ({exc})") from None
            events.append(parse_event(event, f"line {number}"))
    return sorted(events, key=order)


def meta_events(events: Iterable[TraceEvent]) -> list[MetaEvent]:
    """The meta events of a trace, rank by rank."""
    return sorted((e for e in events if isinstance(e, MetaEvent)), key=lambda e: e.rank)


def leading_meta_events(path: Path) -> list[MetaEvent]:
    """The meta events at the head of a trace file (a Tracer writes meta first; a combined
    reference trace sorts meta events first), without reading the steps that follow. Each meta
    passes check_event (an integer rank: the readers sort and name ranks by it), else TraceError
    naming the line and the field."""
    metas: list[MetaEvent] = []
    with open(path, encoding="utf-8") as fh:
        for number, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                event = json.loads(line)
            except (ValueError, RecursionError):
                break
            if not isinstance(event, dict) or event.get("type") != "meta":
                break
            found = parse_event(event, f"line {number}")
            assert isinstance(found, MetaEvent)  # its type is meta
            metas.append(found)
    return metas
