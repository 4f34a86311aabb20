"""Per-rank facts must agree with the world size: a seed or a device for every rank, no more."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from reprogate.core.diagnostics import Diagnostic
from reprogate.core.record import RankPlace, RankSeed
from reprogate.rules.base import RuleContext


def _rank_coverage(ctx: RuleContext, where: tuple[Any, ...], entries: Sequence[RankSeed | RankPlace], world: int, what: str) -> Iterator[Diagnostic]:
    seen: dict[int, int] = {}
    for i, entry in enumerate(entries):
        rank = entry.rank
        if rank >= world:
            yield ctx.finding(where + (i, "rank"), f"rank {rank} is outside world size {world} (ranks are 0..{world - 1})", f"{what}-rank-out-of-range")
        elif rank in seen:
            yield ctx.finding(where + (i, "rank"), f"rank {rank} appears twice (entries {seen[rank]} and {i})", f"{what}-rank-duplicate")
        else:
            seen[rank] = i
    missing = sorted(set(range(world)) - set(seen))
    if missing:
        shown = ", ".join(map(str, missing[:8])) + (" ..." if len(missing) > 8 else "")
        yield ctx.finding(
            where,
            f"{len(entries)} entries for world size {world}: no entry for rank {shown}",
            f"{what}-rank-missing",
            f"give one entry per rank 0..{world - 1}",
        )


def seeds_cover_every_rank(ctx: RuleContext) -> Iterator[Diagnostic]:
    execution, seeds = ctx.record.execution, ctx.record.seeds
    if execution is not None and seeds is not None and seeds.per_rank is not None:
        yield from _rank_coverage(ctx, ("seeds", "per_rank"), seeds.per_rank, execution.world_size, "seed")


def rank_mapping_matches_shape(ctx: RuleContext) -> Iterator[Diagnostic]:
    execution = ctx.record.execution
    if execution is None:
        return
    world, nodes, per_node = execution.world_size, execution.nodes, execution.ranks_per_node
    if nodes is not None and per_node is not None and not execution.elastic and nodes * per_node != world:
        yield ctx.finding(
            ("execution", "world_size"), f"world size {world} is not nodes ({nodes}) x ranks per node ({per_node}) = {nodes * per_node}", "world-size-shape"
        )
    mapping = execution.rank_mapping
    if mapping is None:
        return
    yield from _rank_coverage(ctx, ("execution", "rank_mapping"), mapping, world, "mapping")
    devices: dict[str, int] = {}
    for i, entry in enumerate(mapping):
        node, device = entry.node, entry.device
        if nodes is not None and node is not None and node >= nodes:
            yield ctx.finding(("execution", "rank_mapping", i, "node"), f"node {node} is outside the run's {nodes} node(s)", "mapping-node-out-of-range")
        if device is not None:
            if device in devices:
                yield ctx.finding(
                    ("execution", "rank_mapping", i, "device"),
                    f"device {device} is mapped to two ranks (entries {devices[device]} and {i})",
                    "mapping-device-duplicate",
                )
            devices[device] = i
    known = {g.uuid for g in (ctx.record.devices.gpus or ())} if ctx.record.devices is not None else set()
    if known:
        for i, entry in enumerate(mapping):
            device = entry.device
            if device is not None and device not in known:
                yield ctx.finding(
                    ("execution", "rank_mapping", i, "device"), f"device {device} is not among the record's devices.gpus", "mapping-device-unknown"
                )
