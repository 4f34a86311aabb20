"""Which seeds a rebuild runs, and which of them the metric is judged on.

The statistical test compares the rebuild's metric with the reference seeds' as two independent
samples. Rerunning the reference's own seeds breaks that (a deterministic build gives back the
same values, and a broken one that depends on the seed can hide), so the metric is judged on
fresh seeds: drawn from the digest of the judging sections (contract, seeds, reference), so a
rerun of the same contract draws the same ones and a pull request cannot pick them by editing
anything else, and never one the reference used. A record may instead name the seeds to replay
(`seeds.replay`); the claim then says the samples are not independent.

Contracts that compare a trace step by step (bitwise, behavioral) need the reference's own seed
for that trace: their first run replays `seeds.global`, and the metric is judged on the further,
fresh runs when there are any, else on that replay (said so).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from reprogate.core.record import RunRecord, Seeds
from reprogate.core.seedstats import TRACE_LEVELS, trace_replays

SEED_SPACE = 2**31 - 1  # what every framework's manual_seed takes


@dataclass(frozen=True)
class SeedPlan:
    trace_seed: int | None  # the replayed reference seed a step-by-step comparison needs, else None
    metric_seeds: tuple[int, ...]  # the seeds the metric is judged on (may start with trace_seed)
    source: str  # fresh, replay (named by the record), trace-replay (the one run replays the trace's seed) or reference (init making one)

    @property
    def all(self) -> list[int]:
        return list(dict.fromkeys([*([self.trace_seed] if self.trace_seed is not None else []), *self.metric_seeds]))

    def describe(self) -> str:
        shown = ", ".join(map(str, self.metric_seeds))
        if self.source == "fresh":
            return f"metric judged on fresh seed(s) {shown}, none of which the reference ran (drawn from the judging contract's digest)"
        if self.source == "reference":
            return f"the reference seeds {shown}, run to make the reference"
        if self.source == "replay":
            return f"metric judged on replayed seed(s) {shown}, as the record asks (seeds.replay): not independent of the reference"
        return f"metric judged on seed {shown}, the reference seed the trace comparison replays: not independent of the reference"


def fresh_seeds(digest: str, count: int, used: set[int]) -> list[int]:
    """`count` seeds from the digest, none in `used`: the same record always draws the same."""
    found: list[int] = []
    counter = 0
    while len(found) < count:
        value = int.from_bytes(hashlib.sha256(f"{digest}:{counter}".encode()).digest()[:8], "big") % SEED_SPACE
        counter += 1
        if value not in used and value not in found:
            found.append(value)
    return found


def runs_for(asked: int | None, record: RunRecord) -> int:
    """How many runs: `--seeds` when given, else the contract's `metric.rebuild_seeds` (what the
    planner priced; the base's under --contract-from, so a pull request cannot lower it), else 1.
    Both count every run, the trace replay of a bitwise or behavioral contract included."""
    if asked is not None:
        return asked
    metric = record.contract.metric if record.contract is not None else None
    return metric.rebuild_seeds if metric is not None and metric.rebuild_seeds is not None else 1


def plan(record: RunRecord, digest: str, runs: int) -> SeedPlan:
    """`runs` seeds in all (`--seeds`)."""
    seeds = record.seeds or Seeds()
    level = record.contract.level if record.contract is not None else None
    values = record.reference.metric.values if record.reference is not None and record.reference.metric is not None else ()
    used = {s for s in [seeds.global_seed, *(seeds.evaluation or ()), *(v.seed for v in values)] if s is not None}
    runs = max(1, runs)
    trace_seed = seeds.global_seed if level in TRACE_LEVELS else None
    if level in TRACE_LEVELS and trace_seed is None:
        trace_seed = seeds.evaluation[0] if seeds.evaluation else 0
    wanted = runs - trace_replays(level)
    replay = list(seeds.replay or ())
    if wanted == 0:
        return SeedPlan(trace_seed, (trace_seed,) if trace_seed is not None else (), "trace-replay")
    if replay:
        return SeedPlan(trace_seed, tuple(replay[:wanted]), "replay")
    return SeedPlan(trace_seed, tuple(fresh_seeds(digest, wanted, used)), "fresh")


__all__ = ["SeedPlan", "fresh_seeds", "plan", "runs_for"]
