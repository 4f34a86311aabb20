"""The reference environment (what the record says) beside the rebuilt one (what the ranks got).

A reviewer of a lock-file or image pull request wants one table: which Python, torch, image, lock
file, OS, CPU kernels and packages the reference ran with, and which the rebuild ran with. The
reference side comes from the record's captured sections; the rebuilt side from the realizer's
identity (realizers.base.Identity: its image and installed lock, in its own words) and from the
probe run inside the realized environment, so it is what the ranks really saw, not what was
asked for; the reference's CPU kernels come from its trace's meta (what its ranks ran
with) before the host capture (what the machine would have picked). A value the record did not
capture is taken from that meta where the meta holds it (torch's version, the CPU architecture,
the world size; process_facts and the Tracer write them) and the row says so (`reference_from`);
anything neither holds is shown as "not recorded", never guessed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from reprogate.rebuild.realizers.base import Identity
from reprogate.rebuild.state import Event, RebuildState
from reprogate.runtime.trace import CpuFacts, MetaEvent

MAX_PACKAGES = 12  # package rows beyond this are counted, not listed
UNKNOWN = "not recorded"
FROM_TRACE = "reference trace"  # a row's reference_from: the value is the reference trace's meta, not the record's


def _get(data: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(data, dict):
            return None
        data = data.get(key)
    return data


def _text(value: Any) -> str:
    if value in (None, "", [], {}):
        return UNKNOWN
    if isinstance(value, list):
        return ", ".join(str(v) for v in value)
    return str(value)


def _image(record: dict[str, Any]) -> Any:
    box = record.get("container")
    if not isinstance(box, dict) or box.get("used") is False:
        return "no container" if isinstance(box, dict) else None
    name = "/".join(str(box[k]) for k in ("registry", "repository") if box.get(k))
    return f"{name}@{box['digest']}" if box.get("digest") else box.get("image_id")


@dataclass(frozen=True)
class RebuiltSide:
    """The rebuilt column: what the ranks got, as realized and as told from inside."""

    requested: str  # reference or candidate
    realizer: str | None = None
    realized: Identity | None = None  # the realizer's own account (image id, lock file and digest); None: nothing was realized
    python: str | None = None
    os: str | None = None
    architecture: str | None = None  # platform.machine() inside the ranks' environment (the probe's)
    torch: str | None = None
    cpu: Mapping[str, Any] = field(default_factory=dict)  # cpu_model, cpu_capability, mkl_cbwr (rebuild/cpu.py)
    gpu_models: tuple[str, ...] = ()
    world_size: int | None = None
    packages: Mapping[str, str] | None = None

    @classmethod
    def of(cls, state: RebuildState) -> RebuiltSide:
        environment, probe, machine = state.environment, state.probe, state.machine
        return cls(
            requested=state.job.options.environment,
            realizer=environment.choice.name if environment is not None else None,
            realized=environment.realized.identity if environment is not None else None,
            python=(probe.python if probe is not None else None) or (machine.python if machine is not None else None),
            os=(probe.facts.get("os_pretty") if probe is not None else None) or (machine.os if machine is not None else None),
            architecture=probe.facts.get("machine") if probe is not None else None,
            torch=machine.torch if machine is not None else None,
            cpu=machine.cpu if machine is not None else {},
            gpu_models=machine.gpu_models if machine is not None else (),
            world_size=machine.world_size if machine is not None else None,
            packages=probe.packages if probe is not None else None,
        )


def _rebuilt_image(rebuilt: RebuiltSide) -> str:
    return "no container" if rebuilt.realized is None else rebuilt.realized.image_words()


def _locks(record: dict[str, Any]) -> Any:
    found = [f"{e.get('path')} {str(e.get('checksum', ''))[:19]}" for e in _get(record, "source", "lock_files") or [] if isinstance(e, dict)]
    return found or None


def _packages(recorded: Any, inside: Any) -> list[dict[str, Any]]:
    """One row per recorded package whose version differs or that is gone, by name; packages only
    the rebuild has are counted in one row (a record may list only the packages that matter)."""
    if not isinstance(recorded, dict) or not isinstance(inside, dict):
        return []
    rows = []
    for name in sorted(recorded):
        if recorded[name] != inside.get(name):
            rows.append(
                {"what": f"package {name}", "reference": _text(recorded[name]), "rebuilt": _text(inside.get(name)).replace(UNKNOWN, "absent"), "same": False}
            )
    if len(rows) > MAX_PACKAGES:
        rest = len(rows) - MAX_PACKAGES
        rows = rows[:MAX_PACKAGES] + [{"what": f"{rest} more package(s) differ", "reference": "…", "rebuilt": "…", "same": False}]
    extra = sorted(set(inside) - set(recorded))
    if extra:
        shown = ", ".join(extra[:5]) + (", …" if len(extra) > 5 else "")
        rows.append({"what": "packages the record does not list", "reference": "-", "rebuilt": f"{len(extra)}: {shown}", "same": True})
    return rows


def _reference_meta(events: Sequence[Event]) -> MetaEvent:
    """The reference trace's meta event: what the reference ranks themselves ran with (none: one that says nothing)."""
    return next((e for e in events if isinstance(e, MetaEvent)), MetaEvent())


def _lock_pair(record: dict[str, Any], rebuilt: RebuiltSide) -> tuple[Any, Any]:
    """The lock file the rebuild installed, beside the record's pin of that same file (a record
    may pin several lock files; only the installed one is comparable)."""
    installed = rebuilt.realized.installed_lock() if rebuilt.realized is not None else None
    if installed is None:
        return _locks(record), "none installed"
    pins = {str(e.get("path")): str(e.get("checksum", "")) for e in _get(record, "source", "lock_files") or [] if isinstance(e, dict)}
    pinned = pins.get(installed.path)
    return (f"{installed.path} {pinned[:19]}" if pinned else None), f"{installed.path} {installed.digest[:19]}"


def side_by_side(record: dict[str, Any], rebuilt: RebuiltSide, reference_events: Sequence[Event] = ()) -> list[dict[str, Any]]:
    """Rows of {what, reference, rebuilt, same} for the verdict and the report; a reference value
    read from the reference trace's meta carries reference_from: "reference trace"."""
    meta = _reference_meta(reference_events)
    meta_cpu = meta.cpu or CpuFacts()
    lock_reference, lock_rebuilt = _lock_pair(record, rebuilt)
    # (what, the record's value, the reference trace's meta's, the rebuild's, whether the meta's comes
    # first): a CPU's kernels and MKL mode are what the ranks ran with, so the trace says them first
    rows = [
        (
            "environment",
            f"the one the record pins (realizer {_get(record, 'job', 'environment', 'realizer') or 'chosen from the record'})",
            None,
            f"{rebuilt.requested} environment, realized by {rebuilt.realizer or '?'}",
            False,
        ),
        ("image", _image(record), None, _rebuilt_image(rebuilt), False),
        ("lock file", lock_reference, None, lock_rebuilt, False),
        ("Python", _get(record, "software", "python"), None, rebuilt.python, False),
        ("torch", _get(record, "software", "framework", "version"), meta.torch, rebuilt.torch, False),
        ("OS", _get(record, "host", "os", "pretty_name"), None, rebuilt.os, False),
        ("CPU", _get(record, "cpu", "model") or _get(record, "host", "cpu_model"), None, rebuilt.cpu.get("cpu_model"), False),
        ("CPU architecture", _get(record, "cpu", "architecture"), meta_cpu.architecture, rebuilt.architecture, False),
        ("torch CPU kernels", _get(record, "cpu", "capability", "effective"), meta_cpu.capability, rebuilt.cpu.get("cpu_capability"), True),
        ("MKL_CBWR", _get(record, "cpu", "mkl_cbwr"), meta_cpu.mkl_cbwr, rebuilt.cpu.get("mkl_cbwr"), True),
        (
            "GPUs",
            [g.get("name") for g in _get(record, "devices", "gpus") or [] if isinstance(g, dict)] or None,
            None,
            list(rebuilt.gpu_models) or "none",
            False,
        ),
        ("world size", _get(record, "execution", "world_size"), meta.world_size, rebuilt.world_size, False),
    ]
    compared = []
    for what, recorded, traced, right_value, trace_first in rows:
        from_trace = _text(traced) != UNKNOWN and (trace_first or _text(recorded) == UNKNOWN)
        left, right = _text(traced if from_trace else recorded), _text(right_value)
        # "same" is false only for two known values that differ: an uncaptured side is no difference
        row: dict[str, Any] = {"what": what, "reference": left, "rebuilt": right, "same": what == "environment" or UNKNOWN in (left, right) or left == right}
        if from_trace:
            row["reference_from"] = FROM_TRACE
        compared.append(row)
    return compared + _packages(_get(record, "software", "packages"), rebuilt.packages)
