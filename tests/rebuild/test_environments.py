"""The reference and rebuilt environments side by side: only comparable values are marked as differing."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from support.realized import realized, venv_identity
from support.rebuilds import make_state

from reprogate.rebuild.environments import UNKNOWN, RebuiltSide, side_by_side
from reprogate.rebuild.realizers.base import Choice
from reprogate.rebuild.state import Environment, Machine, Probe
from reprogate.runtime.trace import parse_event

RECORD: dict[str, Any] = {
    "job": {"environment": {"realizer": "venv"}},
    "source": {
        "lock_files": [
            {"path": "train/requirements.txt", "checksum": "sha256:fef8fc27ce19aaaaaaaaaaaaaaaa"},
            {"path": "train/requirements.in", "checksum": "sha256:59b66a64fb0bbbbbbbbbbbbbbbbb"},
        ]
    },
    "software": {"python": "3.11.7", "framework": {"name": "torch", "version": "2.13.0+cpu"}, "packages": {"numpy": "1.26.0", "torch": "2.13.0+cpu"}},
    "host": {"os": {"pretty_name": "Debian GNU/Linux 12 (bookworm)"}, "cpu_model": "AMD EPYC"},
    "cpu": {"model": "AMD EPYC", "capability": {"effective": "avx2"}, "mkl_cbwr": "OFF"},
    "execution": {"world_size": 2},
}
PACKAGES = {"numpy": "2.1.3", "torch": "2.13.0+cpu", "filelock": "3.20.0"}
REBUILT = RebuiltSide(
    requested="candidate",
    realizer="venv",
    realized=venv_identity("train/requirements.txt", "sha256:8e423e1426b2cccccccccccccc"),
    python="3.11.7",
    os="Debian GNU/Linux 12 (bookworm)",
    torch="2.13.0+cpu",
    cpu={"cpu_model": "AMD EPYC", "cpu_capability": "default", "mkl_cbwr": "COMPATIBLE"},
    world_size=2,
    packages=PACKAGES,
)
META = [
    parse_event(e, "a test") for e in ({"type": "meta", "rank": 0, "cpu": {"capability": "default", "mkl_cbwr": "COMPATIBLE"}}, {"type": "step", "step": 1})
]


def rows(**kwargs: Any) -> dict[str, dict[str, Any]]:
    found = side_by_side(RECORD, REBUILT, **kwargs)
    return {row["what"]: row for row in found}


def test_the_installed_lock_file_is_compared_with_its_own_pin_only() -> None:
    lock = rows(reference_events=META)["lock file"]
    assert lock["reference"] == "train/requirements.txt sha256:fef8fc27ce19" and lock["rebuilt"] == "train/requirements.txt sha256:8e423e1426b2"
    assert lock["same"] is False and "requirements.in" not in lock["reference"]


def test_cpu_kernels_of_the_reference_come_from_its_trace_meta_before_the_host_capture() -> None:
    with_meta, without = rows(reference_events=META), rows()
    assert with_meta["torch CPU kernels"]["same"] and with_meta["MKL_CBWR"]["same"]
    assert (without["torch CPU kernels"]["reference"], without["torch CPU kernels"]["same"]) == ("avx2", False)


def test_a_bumped_package_is_named_and_extra_packages_are_counted_not_flagged() -> None:
    found = rows(reference_events=META)
    assert (found["package numpy"]["reference"], found["package numpy"]["rebuilt"], found["package numpy"]["same"]) == ("1.26.0", "2.1.3", False)
    assert "package torch" not in found
    assert found["packages the record does not list"]["rebuilt"] == "1: filelock" and found["packages the record does not list"]["same"]


def test_a_side_that_was_not_captured_is_no_difference() -> None:
    found = side_by_side({"execution": {"world_size": 2}}, dataclasses.replace(REBUILT, packages=None))
    python = next(row for row in found if row["what"] == "Python")
    assert python["reference"] == UNKNOWN and python["same"]


def test_the_rebuilt_column_is_what_the_ranks_told_and_the_envelope_found(tmp_path: Path) -> None:
    state = make_state(tmp_path / "record.yaml", RECORD, tmp_path, tmp_path)
    empty = RebuiltSide.of(state)
    assert (empty.realizer, empty.python, empty.torch, empty.packages) == (None, None, None, None), "nothing realized: nothing claimed"
    installed = venv_identity("train/requirements.txt", "sha256:8e42")
    state.environment = Environment(Choice("venv", "the record asks for it"), realized("venv", installed), "bubblewrap")
    state.probe = Probe({"python": "3.11.7", "os_pretty": "Debian GNU/Linux 12 (bookworm)", "packages": PACKAGES})
    state.machine = Machine(nodes=1, world_size=2, python="3.11.6", os="debian-12", torch="2.13.0+cpu", cpu={"cpu_model": "AMD EPYC"})
    side = RebuiltSide.of(state)
    assert (side.realizer, side.python, side.os, side.torch, side.world_size) == ("venv", "3.11.7", "Debian GNU/Linux 12 (bookworm)", "2.13.0+cpu", 2)
    assert side.packages == PACKAGES and side.cpu["cpu_model"] == "AMD EPYC"
    found = {row["what"]: row for row in side_by_side(RECORD, side)}
    assert found["lock file"]["rebuilt"] == "train/requirements.txt sha256:8e42" and found["GPUs"]["rebuilt"] == "none"
