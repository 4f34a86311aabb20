"""A rank's exit code and place files are written into the shared logs folder by its wrapper, but
the training code runs beside it and can write them too: both cluster launchers read them through
one reader (rebuild/launchers/rank_reports.py), and a file that is not what the wrapper writes is
a rank that has not reported, never a crash of the runner or an argument it passes on."""

from __future__ import annotations

from pathlib import Path

import pytest

from reprogate.rebuild.launchers.base import Shape
from reprogate.rebuild.launchers.kubernetes import KubernetesGroup, PodState
from reprogate.rebuild.launchers.rank_reports import Placement, parse_exit_code, parse_placement
from reprogate.rebuild.launchers.slurm import SlurmGroup


@pytest.mark.parametrize(
    "text, code",
    [("0\n", 0), ("137", 137), ("-9", -9), ("", None), (None, None), ("9" * 5000, None), ("1e3", None), ("٣", None), ("--1", None), ("1 2", None)],
)
def test_an_exit_file_is_an_integer_or_no_report(text: str | None, code: int | None) -> None:
    assert parse_exit_code(text) == code


@pytest.mark.parametrize(
    "text, placed",
    [
        ('{"rank": 0, "node": "n1", "step": "3"}\n', Placement("n1", "3")),
        ('{"node": "n1", "step": "0 --signal=KILL"}', Placement("n1", None)),  # no step id: never handed to scancel
        ('{"node": "n1", "step": 4}', Placement("n1", None)),
        ('{"node": ["n1"]}', Placement(None, None)),
        ('{"node": "n1\\u001b[2J"}', Placement(None, None)),
        ("[1]", None),
        ("[" * 100_000, None),
        ("not json", None),
        (None, None),
    ],
)
def test_a_place_file_gives_a_plain_node_name_and_step_or_nothing(text: str | None, placed: Placement | None) -> None:
    assert parse_placement(text) == placed


def _plant(logs: Path, rank: int, place: str, exit_code: str) -> None:
    (logs / f"rank{rank}.place").write_text(place)
    (logs / f"rank{rank}.exit").write_text(exit_code)


def test_kubernetes_ranks_that_planted_their_files_are_placed_by_the_api_and_not_yet_ended(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    _plant(logs, 0, "[1]", "9" * 5000)  # was: AttributeError on a list, ValueError on 5000 digits
    _plant(logs, 1, '{"node": "node-b"}', "0")
    group = KubernetesGroup(None, None, "rebuild-x", "default", Shape(world_size=2, nodes=2), logs)
    group.pods = {0: PodState("rebuild-x-0", "Running", "node-a", ""), 1: PodState("rebuild-x-1", "Running", None, "")}
    group._checked = float("inf")  # the API is not asked again: the pods above are what it said
    assert group.placement() == {0: "node-a", 1: "node-b"}
    assert group.poll() == {0: None, 1: 0}
    assert group.where(0) == "node node-a (pod rebuild-x-0)"


def test_slurm_ranks_that_planted_their_files_are_placed_by_slurm_and_not_yet_ended(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    _plant(logs, 0, '{"node": {"n": 1}, "step": "1;scancel -u root"}', "9" * 5000)
    _plant(logs, 1, '{"node": "c2", "step": "7"}', "3")
    group = SlurmGroup(Shape(world_size=2, nodes=2), logs, {}, "42")
    group.node_list = ["c1", "c2"]
    assert group.placement() == {0: "c1", 1: "c2"}
    assert {r: p.step for r, p in group._placed().items()} == {0: None, 1: "7"}
    assert group._exit_code(0) is None and group._exit_code(1) == 3
