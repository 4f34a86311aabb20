"""Where the rebuild's ranks ran, against the record's shape: for the envelope and the claim.

The launcher reports which node each rank ran on (a Slurm task's SLURMD_NODENAME, a pod's node,
this machine). From that: the nodes used (in order of their first rank), the ranks on each, and
the topology changes against the reference, in the envelope's words:
- `rank-remap`: the record's execution.rank_mapping puts a rank on another node index or local
  rank than the rebuild did (rejected unless the envelope tolerates it);
- `node-change`: the rebuild ran on other machines than the reference (its host's name hash
  differs from every node used) — reported, since a rebuild on a CI runner or another
  allocation always is one; whether the numbers may depend on it is the contract's level.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from reprogate.core.record import RunRecord


@dataclass
class Topology:
    placement: dict[int, str]  # rank -> node name
    nodes: list[str]  # in order of their first rank
    per_node: dict[str, int]
    changes: list[str] = field(default_factory=list)  # rank-remap, node-change
    remapped: list[str] = field(default_factory=list)  # rank-remap in words

    def as_dict(self) -> dict[str, Any]:
        return {
            "nodes": self.nodes,
            "ranks": [{"rank": r, "node": n, "node_index": self.nodes.index(n)} for r, n in sorted(self.placement.items())],
            "ranks_per_node": self.per_node,
            "changes": self.changes,
        }

    def words(self) -> str:
        ranks = ", ".join(f"rank {r} on {n}" for r, n in sorted(self.placement.items()))
        return f"{len(self.nodes)} node(s) ({ranks})"


def topology(record: RunRecord, placement: dict[Any, str], local_ranks: dict[int, int] | None = None) -> Topology:
    """The rebuild's placement (rank -> node) compared with the record's shape and mapping."""
    placed = {int(r): str(n) for r, n in placement.items()}
    nodes = list(dict.fromkeys(placed[r] for r in sorted(placed)))
    per_node = dict(Counter(placed.values()))
    found = Topology(placed, nodes, per_node)
    if local_ranks is None:  # ranks fill each node in order (block distribution), as Slurm's and ours do
        seen: Counter[str] = Counter()
        local_ranks = {}
        for rank in sorted(placed):
            local_ranks[rank] = seen[placed[rank]]
            seen[placed[rank]] += 1
    mapping = (record.execution.rank_mapping if record.execution is not None else None) or ()
    for entry in mapping:
        if entry.rank not in placed:
            continue
        rank = entry.rank
        node_index = nodes.index(placed[rank])
        if entry.node is not None and entry.node != node_index:
            found.remapped.append(f"rank {rank} ran on node {node_index} ({placed[rank]}), the reference's on node {entry.node}")
        elif entry.local_rank is not None and entry.local_rank != local_ranks.get(rank):
            found.remapped.append(f"rank {rank} was local rank {local_ranks.get(rank)} on {placed[rank]}, the reference's was {entry.local_rank}")
    if found.remapped:
        found.changes.append("rank-remap")
    recorded = record.host.hostname_sha256 if record.host is not None else None
    if recorded is not None and nodes and not any(_name_digest(n) == recorded for n in nodes):
        found.changes.append("node-change")
    return found


def _name_digest(name: str) -> str:
    return "sha256:" + hashlib.sha256(name.encode()).hexdigest()
