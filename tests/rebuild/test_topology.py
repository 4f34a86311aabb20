"""reprogate/rebuild/topology.py: where the rebuild's ranks ran, against the record's shape."""

from __future__ import annotations

import hashlib
from typing import Any

from reprogate.core.record import read_record
from reprogate.rebuild.topology import Topology
from reprogate.rebuild.topology import topology as typed_topology


def topology(data: Any, placement: dict[Any, str], local_ranks: dict[int, int] | None = None) -> Topology:
    """The topology against the record these sections read as (one that fails the schema reads as absent)."""
    return typed_topology(read_record(data), placement, local_ranks)


def name_digest(name: str) -> str:
    return "sha256:" + hashlib.sha256(name.encode()).hexdigest()


def test_nodes_in_order_of_their_first_rank_and_ranks_per_node() -> None:
    found = topology({}, {"3": "b", 0: "a", 1: "a", 2: "b"})
    assert found.placement == {0: "a", 1: "a", 2: "b", 3: "b"}  # ranks as integers
    assert found.nodes == ["a", "b"] and found.per_node == {"a": 2, "b": 2}
    assert found.changes == [] and found.remapped == []
    assert found.words() == "2 node(s) (rank 0 on a, rank 1 on a, rank 2 on b, rank 3 on b)"
    assert found.as_dict() == {
        "nodes": ["a", "b"],
        "ranks": [
            {"rank": 0, "node": "a", "node_index": 0},
            {"rank": 1, "node": "a", "node_index": 0},
            {"rank": 2, "node": "b", "node_index": 1},
            {"rank": 3, "node": "b", "node_index": 1},
        ],
        "ranks_per_node": {"a": 2, "b": 2},
        "changes": [],
    }


def test_the_node_order_follows_rank_0_not_the_names() -> None:
    assert topology({}, {0: "zeta", 1: "alpha"}).nodes == ["zeta", "alpha"]


def test_a_rank_on_another_node_index_is_a_rank_remap() -> None:
    data = {"execution": {"world_size": 2, "rank_mapping": [{"rank": 0, "node": 0, "local_rank": 0}, {"rank": 1, "node": 0, "local_rank": 1}]}}
    found = topology(data, {0: "a", 1: "b"})
    assert found.changes == ["rank-remap"]
    assert found.remapped == ["rank 1 ran on node 1 (b), the reference's on node 0"]


def test_a_rank_with_another_local_rank_is_a_rank_remap() -> None:
    # block distribution: ranks 0, 1 on a are local ranks 0, 1; the record had them swapped
    data = {"execution": {"world_size": 2, "rank_mapping": [{"rank": 0, "node": 0, "local_rank": 1}, {"rank": 1, "node": 0, "local_rank": 0}]}}
    found = topology(data, {0: "a", 1: "a"})
    assert found.changes == ["rank-remap"]
    assert found.remapped == ["rank 0 was local rank 0 on a, the reference's was 1", "rank 1 was local rank 1 on a, the reference's was 0"]
    # the launcher's own local ranks win over the block-distribution guess
    assert topology(data, {0: "a", 1: "a"}, local_ranks={0: 1, 1: 0}).changes == []


def test_the_recorded_mapping_as_placed_is_no_change() -> None:
    data = {"execution": {"world_size": 4, "rank_mapping": [{"rank": r, "node": r // 2, "local_rank": r % 2} for r in range(4)]}}
    assert topology(data, {0: "a", 1: "a", 2: "b", 3: "b"}).changes == []


def test_mapping_entries_for_ranks_not_placed_or_malformed_are_ignored() -> None:
    assert topology({"execution": {"world_size": 8, "rank_mapping": [{"rank": 7, "node": 3}]}}, {0: "a"}).changes == []
    data = {"execution": {"rank_mapping": [{"rank": 7, "node": 3}, "rank 0", {"rank": 0, "node": "first"}, {"node": 1}]}}
    assert topology(data, {0: "a"}).changes == []  # a mapping the schema rejects is none
    assert topology({"execution": "not a mapping"}, {0: "a"}).changes == []


def test_a_host_whose_name_hash_matches_no_node_is_a_node_change() -> None:
    assert topology({"host": {"hostname_sha256": name_digest("b")}}, {0: "a", 1: "b"}).changes == []
    assert topology({"host": {"hostname_sha256": name_digest("c")}}, {0: "a", 1: "b"}).changes == ["node-change"]
    assert topology({"host": {"hostname_sha256": 5}}, {0: "a"}).changes == []  # nothing to compare with
    assert topology({"host": "x"}, {0: "a"}).changes == []


def test_both_changes_are_reported_in_order() -> None:
    data = {"execution": {"world_size": 2, "rank_mapping": [{"rank": 1, "node": 0}]}, "host": {"hostname_sha256": name_digest("elsewhere")}}
    assert topology(data, {0: "a", 1: "b"}).changes == ["rank-remap", "node-change"]
