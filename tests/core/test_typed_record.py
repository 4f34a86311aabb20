"""The run record's typed sections (core/record.py): built from every example record field for
field, each section None where the schema rejects that section (and only that one), and frozen."""

from __future__ import annotations

import copy
import dataclasses
import datetime
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from reprogate.core.documents import load_document, load_text
from reprogate.core.record import JobConfig, RunRecord, read_draft_job, read_record, section_check
from reprogate.core.schema_check import schema_diagnostics
from reprogate.validate.runner import Options, validate_document

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
RECORDS = sorted(p for p in EXAMPLES.rglob("*.yaml") if "kind: RunRecord" in p.read_text(encoding="utf-8"))
SECTIONS = [f.name for f in dataclasses.fields(RunRecord)]

# fields whose name is not the key they come from (flattened or renamed), as (class, field): path below the parent's mapping
RENAMED: dict[tuple[str, str], tuple[str, ...]] = {
    ("Seeds", "global_seed"): ("global",),
    ("Execution", "elastic"): ("elastic", "enabled"),
    ("Envelope", "nodes_min"): ("nodes", "min"),
    ("Envelope", "nodes_max"): ("nodes", "max"),
    ("Envelope", "cpu_capability"): ("cpu", "capability"),
    ("Envelope", "cpu_mkl_cbwr"): ("cpu", "mkl_cbwr"),
    ("Envelope", "cpu_architectures"): ("cpu", "architectures"),
    ("Execution", "collective_backend"): ("collective", "backend"),
    ("Contract", "lifetime_expires"): ("lifetime", "expires"),
    ("Host", "os_id"): ("os", "id"),
    ("Host", "os_version_id"): ("os", "version_id"),
}
DEFAULTS = {("Execution", "elastic"): False, ("Devices", "present"): True, ("Software", "present"): True, ("Host", "present"): True}


def _at(data: Any, path: tuple[str, ...]) -> Any:
    for key in path:
        if not isinstance(data, dict) or key not in data:
            return dataclasses.MISSING
        data = data[key]
    return data


def _same(typed: Any, raw: Any, where: str) -> None:
    """`typed` says what `raw` (the file's value) says: every modelled field, recursively."""
    if dataclasses.is_dataclass(typed):
        assert isinstance(raw, dict), where
        for f in dataclasses.fields(typed):
            key = (type(typed).__name__, f.name)
            found = _at(raw, RENAMED.get(key, (f.name,)))
            value = getattr(typed, f.name)
            if found is dataclasses.MISSING:
                if key == ("Dataset", "inline") or key == ("Dataset", "used") or key == ("Container", "used"):
                    continue  # said by the section's form, checked below
                assert value == DEFAULTS.get(key, f.default if f.default is not dataclasses.MISSING else ()), f"{where}.{f.name}"
            elif key == ("Dataset", "inline"):
                assert value is True, where
            else:
                _same(value, found, f"{where}.{f.name}")
    elif isinstance(typed, tuple):
        assert isinstance(raw, list) and len(raw) == len(typed), where
        for i, (a, b) in enumerate(zip(typed, raw, strict=True)):
            _same(a, b, f"{where}[{i}]")
    elif isinstance(typed, Mapping):
        assert dict(typed) == raw, where
    else:
        assert typed == raw and type(typed) is type(raw) or (isinstance(raw, float) and typed == int(raw)), f"{where}: {typed!r} != {raw!r}"


def test_there_are_example_records_of_every_level() -> None:
    levels = {read_record(load_document(p).data, schema_valid=True).contract.level for p in RECORDS}  # type: ignore[union-attr]
    assert levels == {"startup", "statistical", "behavioral", "bitwise"} and len(RECORDS) >= 9


@pytest.mark.parametrize("path", RECORDS, ids=lambda p: str(p.relative_to(EXAMPLES)))
def test_every_example_record_reads_field_for_field(path: Path) -> None:
    doc = load_document(path)
    assert schema_diagnostics(doc, "RunRecord") == []
    record = read_record(doc.data, schema_valid=True)
    assert record == read_record(doc.data), "checking each section again changes nothing on a valid record"
    for name in SECTIONS:
        value = getattr(record, name)
        assert (value is None) == (name not in doc.data), name
        if value is not None:
            _same(value, doc.data[name], name)
    if doc.data["container"].get("used") is False:
        assert record.container is not None and not record.container.used
    assert record.dataset is not None and record.dataset.used == (doc.data["dataset"].get("used") is not False)


BASE = EXAMPLES / "records" / "statistical.yaml"
# one schema-invalid form of each section: the wrong type, and one deeper inside where there is one
BROKEN: list[tuple[str, Any]] = [(name, [1]) for name in SECTIONS if name != "semantics"] + [
    ("semantics", "one.two"),
    ("semantics", 7),
    ("contract", {"level": "statistical", "envelope": {}, "metric": {"name": 3}}),
    ("contract", {"level": "sometimes", "envelope": {}}),
    ("source", {"dirty": "no", "commit": "0" * 40}),
    ("source", {"dirty": False}),  # neither a commit nor a tree
    ("dataset", {"manifest": {"path": "m.yaml"}}),  # no digest
    ("container", {"registry": "ghcr.io", "repository": "a/b"}),  # no digest
    ("seeds", {"per_rank": [{"rank": -1, "seed": 0}]}),
    ("execution", {"world_size": 0}),
    ("execution", {"world_size": 1, "env": {"A": 1}}),
    ("job", {"entrypoint": [], "config": {"hash": "canonical-v1:sha256:" + "0" * 64, "path": "c.yaml"}}),
    ("devices", {"gpus": [{"name": "H100"}]}),
    ("software", {"framework": {"name": "torch"}}),
    ("host", {"os": {"id": 7}}),
    ("state", {"checkpoint": {"step": 1}}),
    ("reference", {"metric": {"name": "acc", "values": [{"seed": 1, "value": "high"}]}}),
]


@pytest.mark.parametrize(("section", "broken"), BROKEN, ids=lambda v: v if isinstance(v, str) else None)
def test_a_section_the_schema_rejects_is_none_and_the_others_are_kept(section: str, broken: Any) -> None:
    doc = load_document(BASE)
    valid = read_record(doc.data, schema_valid=True)
    data = copy.deepcopy(doc.data)
    data[section] = broken
    assert not section_check(section)(broken)
    record = read_record(data)
    assert getattr(record, section) is None
    assert dataclasses.replace(record, **{section: getattr(valid, section)}) == valid, "only the broken section is lost"


@pytest.mark.parametrize(("section", "broken"), BROKEN, ids=lambda v: v if isinstance(v, str) else None)
def test_every_rule_runs_on_a_record_with_a_broken_section_and_the_schema_names_it(section: str, broken: Any, tmp_path: Path) -> None:
    doc = load_document(BASE)
    data = copy.deepcopy(doc.data)
    data[section] = broken
    data["contract"] = data["contract"] if section == "contract" else {**data["contract"], "lifetime": {"expires": "2020-01-01"}}
    broken_doc = load_text(yaml.safe_dump(data), "broken.yaml")
    found = validate_document(broken_doc, "RunRecord", Options(root=tmp_path, addressed_files=False, today=datetime.date(2026, 1, 1)), {})
    assert any(d.code.startswith("schema") and d.field.split(".")[0].split("[")[0] == section for d in found), found
    if section != "contract":  # a rule of another section still speaks
        assert "contract-expired" in {d.code for d in found}


def test_the_typed_record_is_frozen() -> None:
    record = read_record(load_document(EXAMPLES / "tiny" / "records" / "tiny.yaml").data, schema_valid=True)
    with pytest.raises(dataclasses.FrozenInstanceError):
        record.contract = None  # type: ignore[misc]
    assert record.execution is not None
    with pytest.raises(dataclasses.FrozenInstanceError):
        record.execution.world_size = 3  # type: ignore[misc]
    assert record.job is not None and isinstance(record.job.entrypoint, tuple)


def test_an_environment_map_is_read_only() -> None:
    data = load_document(BASE).data
    data["execution"]["env"] = {"OMP_NUM_THREADS": "1"}
    record = read_record(data)
    assert record.execution is not None and record.execution.env == {"OMP_NUM_THREADS": "1"}
    with pytest.raises(TypeError):
        record.execution.env["OMP_NUM_THREADS"] = "2"  # type: ignore[index]


def test_anything_but_a_mapping_is_a_record_without_sections() -> None:
    assert read_record(["apiVersion"]) == RunRecord() == read_record(None)


def test_what_the_rebuild_reads_is_modelled() -> None:
    """The fields the rebuild's stages judge by (the envelope's world sizes, topology changes and
    CPU architectures, the collective backend and scheduler, the host's name digest, the run's
    name, why no container or dataset) read as typed values."""
    data: dict[str, Any] = {
        "metadata": {"name": "run-1"},
        "contract": {
            "level": "bitwise",
            "envelope": {"world_sizes": [2, 4], "topology_changes": ["rank-remap"], "cpu": {"architectures": ["x86_64"]}},
        },
        "execution": {"world_size": 2, "collective": {"backend": "gloo"}, "scheduler_name": "slurm"},
        "host": {"hostname_sha256": "sha256:" + "a" * 64},
        "container": {"used": False, "reason": "runs where reprogate is installed"},
        "dataset": {"used": False, "reason": "reads no data"},
    }
    record = read_record(data)
    assert record.metadata is not None and record.metadata.name == "run-1"
    assert record.contract is not None and record.execution is not None
    envelope = record.contract.envelope
    assert (envelope.world_sizes, envelope.topology_changes, envelope.cpu_architectures) == ((2, 4), ("rank-remap",), ("x86_64",))
    assert (record.execution.collective_backend, record.execution.scheduler_name) == ("gloo", "slurm")
    assert record.host is not None and record.host.hostname_sha256 == "sha256:" + "a" * 64
    assert record.container is not None and record.container.reason == "runs where reprogate is installed"
    assert record.dataset is not None and record.dataset.reason == "reads no data"
    data["metadata"]["name"] = "no spaces allowed"
    assert read_record(data).metadata is None and read_record(data).execution == record.execution


CODE_CONFIG_DRAFT: dict[str, Any] = {
    "job": {
        "entrypoint": ["python", "train.py"],
        "workdir": "project",
        "config": {"path": "project/configurator.py", "hash_of": "trace", "checksum": "sha256:" + "b" * 64, "id": "configurator"},
    }
}


def test_inits_draft_of_a_configuration_written_as_code_is_typed_without_a_hash() -> None:
    """`init` runs its reference through the rebuild's stages before the trace gives the hash:
    the schema (and so read_record) rejects that job section, the draft reader types it with no
    hash, every other field as the file says."""
    assert read_record(CODE_CONFIG_DRAFT).job is None
    job = read_draft_job(CODE_CONFIG_DRAFT)
    assert job is not None
    assert job.config == JobConfig(None, "trace", "project/configurator.py", None, "sha256:" + "b" * 64, "configurator")
    assert (job.entrypoint, job.workdir) == (("python", "train.py"), "project")


@pytest.mark.parametrize(
    "broken",
    [
        {"entrypoint": "python train.py"},  # the rest of the section is checked as strictly as a record's
        {"config": {"path": "project/config.yaml"}},  # only a configuration written as code may lack its hash
        {"config": {"path": "project/configurator.py", "hash_of": "trace", "checksum": "md5:x"}},
        {"workdir": 7},
    ],
)
def test_a_draft_job_the_schema_rejects_for_anything_but_the_missing_hash_is_none(broken: dict[str, Any]) -> None:
    data = copy.deepcopy(CODE_CONFIG_DRAFT)
    data["job"].update(broken)
    assert read_draft_job(data) is None


def test_a_complete_job_reads_the_same_from_the_draft_reader() -> None:
    data = copy.deepcopy(CODE_CONFIG_DRAFT)
    data["job"]["config"]["hash"] = "canonical-v1:sha256:" + "c" * 64
    assert read_draft_job(data) == read_record(data).job is not None
