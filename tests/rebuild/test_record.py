"""The run record a rebuild writes about itself (rebuild/record.py): the checked-out record with its
environment half replaced by what the rebuild ran, and the rebuild's own trace and metric values as
its reference. The state is built by hand; no stage runs."""

from __future__ import annotations

import copy
import hashlib
from pathlib import Path
from typing import Any

from support import EXAMPLES
from support.realized import container_identity, realized, venv_identity
from support.rebuilds import make_state

from reprogate.core.documents import load_document
from reprogate.core.schemas import validator
from reprogate.rebuild.realizers.base import Choice, Identity
from reprogate.rebuild.record import rebuild_record
from reprogate.rebuild.state import Environment, Probe, RebuildState, Runs, SeedRun
from reprogate.rebuild.verdict import RecordRef
from reprogate.runtime.trace import parse_event

RECORD = EXAMPLES / "tiny" / "records" / "tiny.yaml"
OF = RecordRef("examples/tiny/records/tiny.yaml", "tiny-markov-mlp", "canonical-v1:sha256:" + "0" * 64, "bitwise")
LOCK = "sha256:" + "ab" * 32


def _state(tmp_path: Path, data: dict[str, Any] | None = None, realizer: str = "venv", identity: Identity | None = None) -> RebuildState:
    record = copy.deepcopy(data if data is not None else load_document(RECORD).data)
    record["source"]["lock_files"] = [{"path": "tiny/project/requirements.txt", "checksum": "sha256:" + "00" * 32}]
    state = make_state(RECORD, record, EXAMPLES.parent, tmp_path)
    identity = identity or venv_identity("tiny/project/requirements.txt", LOCK)
    state.environment = Environment(Choice(realizer, "the record asks for it"), realized(realizer, identity), "bubblewrap")
    state.probe = Probe({"python": "3.12.1", "packages": {"torch": "2.13.0+cpu", "numpy": "2.1.3"}})
    traces = [f'{{"type": "step", "step": 1, "rank": {rank}, "loss": 2.0}}\n'.encode() for rank in (0, 1)]  # as the run stage judged them
    metric = str(record["contract"]["metric"]["name"])
    state.runs = Runs(
        (
            SeedRun(1, (parse_event({"type": "metric", "name": metric, "value": 0.9, "rank": 0}, "seed 1"),), True, 1.0, "", tuple(traces)),
            SeedRun(77, (parse_event({"type": "metric", "name": metric, "value": 0.95, "rank": 0}, "seed 77"),), True, 1.0),
            SeedRun(78, (parse_event({"type": "metric", "name": "other", "value": 5.0, "rank": 0}, "seed 78"),), True, 1.0),
        )
    )
    return state


def test_the_rebuild_record_names_what_it_rebuilt_and_what_ran(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    state = _state(tmp_path)
    written = rebuild_record(state, OF, False, "2026-12-01T00:00:00Z", out)
    meta = written["metadata"]
    assert meta["name"] == "tiny-markov-mlp-rebuild" and meta["created"] == "2026-12-01T00:00:00Z"
    assert meta["rebuild_of"] == {"record": OF.path, "digest": OF.digest, "environment": "reference", "verdict": "fail", "realizer": "venv"}
    assert written["software"] == {
        "present": True,
        "python": "3.12.1",
        "framework": {"name": "torch", "version": "2.13.0+cpu"},
        "packages": {"torch": "2.13.0+cpu", "numpy": "2.1.3"},
    }
    pinned = [e for e in written["source"]["lock_files"] if e["path"] == "tiny/project/requirements.txt"]
    assert [e["checksum"] for e in pinned] == [LOCK], "the installed lock file is pinned by what the venv was made from"
    assert "baseline" not in written and written["execution"]["world_size"] == 2


def test_its_reference_is_the_first_seeds_trace_and_every_seeds_metric(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    written = rebuild_record(_state(tmp_path), OF, True, "2026-12-01T00:00:00Z", out)
    trace = out / "rebuild-trace.jsonl"
    joined = b"".join(f'{{"type": "step", "step": 1, "rank": {rank}, "loss": 2.0}}\n'.encode() for rank in (0, 1))
    assert trace.read_bytes() == joined
    assert written["reference"]["trace"]["checksum"] == "sha256:" + hashlib.sha256(joined).hexdigest()
    values = written["reference"]["metric"]["values"]
    assert values == [{"seed": 1, "value": 0.9}, {"seed": 77, "value": 0.95}], "a seed that reported no such metric adds no value"
    assert written["metadata"]["rebuild_of"]["verdict"] == "pass"


def test_the_rebuild_record_is_a_run_record(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    written = rebuild_record(_state(tmp_path), OF, True, "2026-12-01T00:00:00Z", out)
    problems = [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator("RunRecord").iter_errors(written)]
    assert not problems, problems


def test_a_container_rebuild_names_the_image_it_ran(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    data = copy.deepcopy(load_document(RECORD).data)
    built = container_identity("sha256:" + "cd" * 32, "built from tiny/Dockerfile in this checkout", built_from="tiny/Dockerfile")
    state = _state(tmp_path, data, realizer="container", identity=built)
    written = rebuild_record(state, OF, True, "2026-12-01T00:00:00Z", out)
    box = written["container"]
    assert box["image_id"] == "sha256:" + "cd" * 32 and box["built_from"] == "tiny/Dockerfile"
    assert "digest" not in box and "used" not in box, "an image built here has no registry digest to claim"
