"""Per-rank facts must agree with the world size: a seed or a device for every rank, no more."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from reprogate.core.diagnostics import Diagnostic
from reprogate.rules.base import RuleContext, get, items


def _rank_coverage(ctx: RuleContext, where: tuple[Any, ...], entries: Any, world: int, what: str) -> Iterator[Diagnostic]:
    seen: dict[int, int] = {}
    for i, entry in items(entries):
        rank = get(entry, "rank")
        if not isinstance(rank, int) or isinstance(rank, bool):
            continue
        if rank >= world:
            yield ctx.finding(where + (i, "rank"), f"rank {rank} is outside world size {world} (ranks are 0..{world - 1})", f"{what}-rank-out-of-range")
        elif rank in seen:
            yield ctx.finding(where + (i, "rank"), f"rank {rank} appears twice (entries {seen[rank]} and {i})", f"{what}-rank-duplicate")
        else:
            seen[rank] = i
    missing = sorted(set(range(world)) - set(seen))
    if missing and isinstance(entries, list):
        shown = ", ".join(map(str, missing[:8])) + (" ..." if len(missing) > 8 else "")
        yield ctx.finding(
            where,
            f"{len(entries)} entries for world size {world}: no entry for rank {shown}",
            f"{what}-rank-missing",
            f"give one entry per rank 0..{world - 1}",
        )


def seeds_cover_every_rank(ctx: RuleContext) -> Iterator[Diagnostic]:
    world = get(ctx.data, "execution", "world_size")
    if isinstance(world, int) and world >= 1 and isinstance(get(ctx.data, "seeds", "per_rank"), list):
        yield from _rank_coverage(ctx, ("seeds", "per_rank"), get(ctx.data, "seeds", "per_rank"), world, "seed")


def rank_mapping_matches_shape(ctx: RuleContext) -> Iterator[Diagnostic]:
    execution = get(ctx.data, "execution")
    world = get(execution, "world_size")
    if not isinstance(world, int) or world < 1:
        return
    nodes, per_node = get(execution, "nodes"), get(execution, "ranks_per_node")
    elastic = get(execution, "elastic", "enabled") is True
    if isinstance(nodes, int) and isinstance(per_node, int) and not elastic and nodes * per_node != world:
        yield ctx.finding(
            ("execution", "world_size"), f"world size {world} is not nodes ({nodes}) x ranks per node ({per_node}) = {nodes * per_node}", "world-size-shape"
        )
    mapping = get(execution, "rank_mapping")
    if not isinstance(mapping, list):
        return
    yield from _rank_coverage(ctx, ("execution", "rank_mapping"), mapping, world, "mapping")
    devices: dict[str, int] = {}
    for i, entry in items(mapping):
        node, device = get(entry, "node"), get(entry, "device")
        if isinstance(nodes, int) and isinstance(node, int) and node >= nodes:
            yield ctx.finding(("execution", "rank_mapping", i, "node"), f"node {node} is outside the run's {nodes} node(s)", "mapping-node-out-of-range")
        if isinstance(device, str):
            if device in devices:
                yield ctx.finding(
                    ("execution", "rank_mapping", i, "device"),
                    f"device {device} is mapped to two ranks (entries {devices[device]} and {i})",
                    "mapping-device-duplicate",
                )
            devices[device] = i
    known = {get(g, "uuid") for _, g in items(get(ctx.data, "devices", "gpus"))} - {None}
    if known:
        for i, entry in items(mapping):
            device = get(entry, "device")
            if isinstance(device, str) and device not in known:
                yield ctx.finding(
                    ("execution", "rank_mapping", i, "device"), f"device {device} is not among the record's devices.gpus", "mapping-device-unknown"
                )
