"""A record and its own reference trace must agree on what the reference run used.

The Tracer writes a meta event per rank, read inside the training process: the seed
seed_everything applied, the world size of the process group, the digests of the configuration
and dataset manifest the script was given, and torch's CPU capability and MKL mode. A record that
pins one seed while its reference trace was made with another would otherwise validate, and its
rebuild would fail at `batches` with the wrong diagnosis. `rebuild` runs the same comparison in
its envelope stage, before the run.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from reprogate.core.diagnostics import Diagnostic
from reprogate.core.record import RunRecord
from reprogate.rules.base import RuleContext
from reprogate.rules.files import AddressError, resolve
from reprogate.runtime.trace import MetaEvent, TraceError, TraceEvent, leading_meta_events, meta_events


@dataclass(frozen=True)
class Disagreement:
    path: tuple[Any, ...]  # the record's field
    code: str
    message: str


HINT = "the record and its reference trace disagree: correct the record, or remake the reference run with the record's value"


def _primary_seed(record: RunRecord) -> int | None:
    seeds = record.seeds
    if seeds is None:
        return None
    if seeds.global_seed is not None:
        return seeds.global_seed
    return seeds.evaluation[0] if seeds.evaluation else None


def reference_disagreements(record: RunRecord, events: Iterable[TraceEvent], trace_name: str = "the reference trace") -> list[Disagreement]:
    """Every field where the reference trace's meta (any rank) contradicts the record, once per field."""
    metas = meta_events(events)
    if not metas:
        return []
    out: list[Disagreement] = []
    config = record.job.config if record.job is not None else None
    manifest = record.dataset.manifest if record.dataset is not None else None
    envelope = record.contract.envelope if record.contract is not None else None
    world = record.execution.world_size if record.execution is not None else None
    pinned_config = None if config is None or config.hash_of == "argv" else config.hash
    plain: list[tuple[tuple[str, ...], object, Callable[[MetaEvent], object], str, str]] = [
        (("seeds", "global"), _primary_seed(record), lambda m: m.seed, "trace-meta-seed", "seed"),
        (("execution", "world_size"), world, lambda m: m.world_size, "trace-meta-world-size", "world size"),
        # a configuration pinned as the entrypoint's arguments (hash_of: argv) is not what the script handed Tracer(config=...)
        (("job", "config", "hash"), pinned_config, lambda m: m.config_digest, "trace-meta-config", "configuration digest"),
        (("dataset", "manifest", "digest"), manifest.digest if manifest else None, lambda m: m.dataset_digest, "trace-meta-dataset", "dataset manifest digest"),
    ]
    for path, pinned, read, code, what in plain:
        if pinned is None:
            continue
        wrong = next((m for m in metas if read(m) is not None and read(m) != pinned), None)
        if wrong is not None:
            said = f"{trace_name} was made with {what} {read(wrong)} (its meta, rank {wrong.rank}); the record says {pinned}"
            out.append(Disagreement(path, code, said))
    if config is not None and config.hash_of == "trace":
        silent = next((m for m in metas if m.config_digest is None), None)
        if silent is not None:
            said = (
                f"the record pins the configuration the entrypoint hands to Tracer(config=...) (job.config.hash_of: trace), and "
                f"{trace_name} records none (its meta, rank {silent.rank})"
            )
            out.append(Disagreement(("job", "config", "hash_of"), "trace-meta-config", said))
    cpu = [(m, m.cpu) for m in metas if m.cpu is not None]
    capabilities = list(envelope.cpu_capability or ()) if envelope is not None else []
    if capabilities:
        allowed = {str(c).lower() for c in capabilities}
        outside = next(((m, c) for m, c in cpu if c.capability is not None and c.capability.lower() not in allowed), None)
        if outside is not None:
            said = f"{trace_name} ran torch's {outside[1].capability} CPU kernels (its meta, rank {outside[0].rank}), outside the envelope's {capabilities}"
            out.append(Disagreement(("contract", "envelope", "cpu", "capability"), "trace-meta-cpu-capability", said))
    modes = list(envelope.cpu_mkl_cbwr or ()) if envelope is not None else []
    if modes:
        allowed = {str(m).upper() for m in modes}
        outside = next(((m, c) for m, c in cpu if c.mkl_cbwr is not None and c.mkl_cbwr.upper() not in allowed), None)
        if outside is not None:
            said = f"{trace_name} ran MKL in reproducibility mode {outside[1].mkl_cbwr} (its meta, rank {outside[0].rank}), outside the envelope's {modes}"
            out.append(Disagreement(("contract", "envelope", "cpu", "mkl_cbwr"), "trace-meta-mkl-cbwr", said))
    return out


def reference_trace_meta_agrees(ctx: RuleContext) -> Iterator[Diagnostic]:
    trace = ctx.record.reference.trace if ctx.record.reference is not None else None
    rel = trace.path if trace is not None else None
    if rel is None:
        return
    try:
        real = resolve(ctx, rel)
    except AddressError:
        return  # the checksum rule reports a missing or misplaced file
    st = real.stat()
    key = ("trace-meta", str(real), st.st_size, st.st_mtime_ns)
    if key not in ctx.cache:
        try:
            ctx.cache[key] = leading_meta_events(real)
        except TraceError as exc:  # a meta of the wrong shape (a rank "1"): said, never compared
            ctx.cache[key] = exc
        except (OSError, UnicodeDecodeError):
            ctx.cache[key] = []
    if isinstance(ctx.cache[key], TraceError):
        said = f"the reference trace {rel}: {ctx.cache[key]}: its meta cannot be compared with the record"
        yield ctx.finding(("reference", "trace", "path"), said, "trace-meta-shape", "remake the reference trace with reprogate.trace's Tracer")
        return
    for found in reference_disagreements(ctx.record, ctx.cache[key], f"the reference trace {rel}"):
        yield ctx.finding(found.path, found.message, found.code, HINT)
