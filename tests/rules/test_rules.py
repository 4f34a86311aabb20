"""Each semantic rule: a record that breaks it, and the same record passing."""

from __future__ import annotations

import datetime
import os
from pathlib import Path
from typing import Any

import pytest
from support import edit_record

from reprogate.core.diagnostics import ExitCode
from reprogate.validate.runner import Options, validate


def codes(*paths: Path, strict: bool = False, today: datetime.date | None = None) -> dict[str, list[tuple[str, str]]]:
    report = validate([str(p) for p in paths], Options(strict=strict, today=today or datetime.date.today()))
    out: dict[str, list[tuple[str, str]]] = {}
    for f in report.files:
        out[Path(f.path).name] = [(d.code, d.severity.value) for d in f.diagnostics]
    return out


def errors(path: Path) -> list[str]:
    return [c for c, sev in codes(path)[path.name] if sev == "error"]


@pytest.fixture
def drill(project: Path) -> Path:
    return project / "records" / "drill.yaml"


def test_examples_pass_every_rule(project: Path) -> None:
    """Every example holds; the illustrative records (made-up commits, remote traces, a hand-written
    requirements list, no realizer named) are only warned that no rebuild could replay them — the
    tiny example can be. The integration examples' records (all named train.yaml) were made by
    `init` from 3 reference seeds, in seconds on a CPU, and declare what init declares of them now:
    the shift the 3 fresh rebuild seeds their rebuild_seeds run catch (the trace replay on top)."""
    found = codes(project)
    illustrative = {("not-rebuildable", "warning"), ("realizer-implicit", "warning"), ("lock-not-resolved", "warning")}
    assert found["train.yaml"] == [], found["train.yaml"]
    # tiny-2node keeps the test it was recorded with (its Slurm and Kubernetes rebuilds draw their
    # fresh seeds from its contract) and is told what every `test: seeds` record is told
    assert found["tiny-2node.yaml"] == [("metric-test-seeds", "notice")], found["tiny-2node.yaml"]
    assert found and all(set(v) <= illustrative for name, v in found.items() if name not in {"train.yaml", "tiny-2node.yaml"}), found
    assert found["tiny.yaml"] == []


# addressed files ---------------------------------------------------------------------------------


def test_lock_file_changed_since_record_is_environment_drift_not_an_error(project: Path, drill: Path) -> None:
    (project / "requirements.txt").write_text((project / "requirements.txt").read_text().replace("torch==2.13.0", "torch==2.14.0"))
    assert errors(drill) == []
    assert ("environment-drift", "notice") in codes(drill)[drill.name]


def test_recipe_removed_is_environment_drift(project: Path, drill: Path) -> None:
    (project / "Dockerfile").unlink()
    assert errors(drill) == [] and ("environment-drift", "notice") in codes(drill)[drill.name]


def test_reference_artifact_changed_since_record_is_still_an_error(project: Path, drill: Path) -> None:
    (project / "slurm-job.sh").write_text((project / "slurm-job.sh").read_text() + "# changed\n")
    assert errors(drill) == ["checksum-mismatch"]


def test_addressed_file_missing(project: Path, drill: Path) -> None:
    (project / "slurm-job.sh").unlink()
    assert errors(drill) == ["file-missing"]


def test_addressed_path_escaping_the_root_through_a_symlink(project: Path, drill: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside.sh"
    outside.write_text("#!/bin/sh\n")
    (project / "slurm-job.sh").unlink()
    os.symlink(outside, project / "slurm-job.sh")
    assert errors(drill) == ["path-outside-root"]


def test_recorded_size_is_checked_before_the_checksum(drill: Path) -> None:
    def change(r: dict[str, Any]) -> None:
        r["execution"]["job_spec"]["bytes"] = 1

    edit_record(drill, change)
    assert errors(drill) == ["size-mismatch"]


def test_configuration_hash_ignores_formatting_but_not_content(project: Path, drill: Path) -> None:
    config = project / "config" / "c19.yaml"
    text = config.read_text()
    config.write_text("# reformatted\n" + text.replace("  layers: 32\n", "  layers:    32   # same\n"))
    assert errors(drill) == []
    config.write_text(text.replace("layers: 32", "layers: 48"))
    assert errors(drill) == ["canonical-mismatch"]


def test_dataset_manifest_digest_and_id_are_checked(project: Path, drill: Path) -> None:
    manifest = project / "data" / "d77.manifest.yaml"
    text = manifest.read_text()
    manifest.write_text(text.replace("bytes: 268435456\n", "bytes: 268435457\n"))
    assert errors(drill) == ["canonical-mismatch"]
    manifest.write_text(text)

    def change(r: dict[str, Any]) -> None:
        r["dataset"]["manifest"]["id"] = "D-78"

    edit_record(drill, change)
    assert errors(drill) == ["manifest-id-mismatch"]


# ranks -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "change, expected",
    [
        (lambda r: r["seeds"]["per_rank"].pop(), ["seed-rank-missing"]),
        (lambda r: r["seeds"]["per_rank"][3].update(rank=2), ["seed-rank-duplicate", "seed-rank-missing"]),
        (lambda r: r["seeds"]["per_rank"].append({"rank": 8, "seed": 1}), ["seed-rank-out-of-range"]),
        (lambda r: r["execution"].update(ranks_per_node=4), ["world-size-shape"]),
        (lambda r: r["execution"]["rank_mapping"][1].update(device=r["execution"]["rank_mapping"][0]["device"]), ["mapping-device-duplicate"]),
        (lambda r: r["execution"]["rank_mapping"][1].update(device="GPU-00000000-0000-0000-0000-000000000000"), ["mapping-device-unknown"]),
        (lambda r: r["execution"]["rank_mapping"][1].update(node=1), ["mapping-node-out-of-range"]),
    ],
)
def test_per_rank_facts_agree_with_world_size(drill: Path, change: Any, expected: list[str]) -> None:
    edit_record(drill, change)
    assert sorted(errors(drill)) == sorted(expected)


def test_elastic_runs_may_differ_from_nodes_times_ranks(drill: Path) -> None:
    def change(r: dict[str, Any]) -> None:
        r["execution"].update(ranks_per_node=4, elastic={"enabled": True, "min_nodes": 1, "max_nodes": 2})

    edit_record(drill, change)
    assert errors(drill) == []


# contract levels ---------------------------------------------------------------------------------


def test_statistical_contract_carries_its_interval(drill: Path) -> None:
    edit_record(drill, lambda r: r["contract"]["metric"].pop("interval"))
    assert errors(drill) == ["statistical-no-interval"]


def test_statistical_contract_needs_a_metric(drill: Path) -> None:
    edit_record(drill, lambda r: r["contract"].pop("metric"))
    assert errors(drill) == ["statistical-no-metric"]


@pytest.mark.parametrize(
    "change, expected",
    [
        (lambda r: r["contract"]["metric"]["interval"].update(low=2.5), "statistical-bad-interval"),
        (lambda r: r["contract"]["metric"]["interval"].update(n=6), "statistical-n-mismatch"),
        (lambda r: r["reference"]["metric"].update(name="val_ppl"), "statistical-metric-mismatch"),
        (lambda r: r["seeds"]["evaluation"].append(99), "statistical-seed-without-value"),
    ],
)
def test_statistical_interval_is_consistent(drill: Path, change: Any, expected: str) -> None:
    edit_record(drill, change)
    assert errors(drill) == [expected]


def test_bitwise_contract_names_its_tensors(project: Path) -> None:
    record = project / "records" / "bitwise.yaml"
    assert errors(record) == []
    edit_record(record, lambda r: r["contract"].update(tensors=[]))
    assert errors(record) == ["bitwise-no-tensors"]


def test_bitwise_contract_forbids_dirty_source_without_diff_digest(project: Path) -> None:
    record = project / "records" / "bitwise.yaml"
    edit_record(record, lambda r: r["source"].update(dirty=True))
    assert errors(record) == ["bitwise-dirty-source"]
    edit_record(record, lambda r: r["source"].update(diff_digest="sha256:" + "0" * 64))
    assert errors(record) == []


def test_dirty_source_without_diff_is_a_warning_for_other_levels(drill: Path) -> None:
    edit_record(drill, lambda r: r["source"].update(dirty=True))
    assert [c for c in codes(drill)["drill.yaml"] if c[0] != "not-rebuildable"] == [("dirty-without-diff", "warning")]


def test_behavioral_contract_declares_steps_and_tolerance(project: Path) -> None:
    record = project / "records" / "behavioral.yaml"
    assert errors(record) == []
    edit_record(record, lambda r: r["contract"].pop("tolerance"))
    assert errors(record) == ["behavioral-no-tolerance"]


# retention ---------------------------------------------------------------------------------------


def test_expired_dataset_retention_is_reported(project: Path, drill: Path) -> None:
    after = datetime.date(2029, 10, 2)
    assert ("retention-expired", "warning") not in codes(drill, today=datetime.date(2029, 10, 1))["drill.yaml"]
    assert ("retention-expired", "warning") in codes(drill, today=after)["drill.yaml"]
    assert ("retention-expired", "warning") in codes(project / "data" / "d77.manifest.yaml", today=after)["d77.manifest.yaml"]
    report = validate([str(drill)], Options(today=after))
    assert report.exit_code == ExitCode.OK
    assert validate([str(drill)], Options(today=after, strict=True)).exit_code == ExitCode.FAILED


def test_expired_contract_lifetime_is_reported(drill: Path) -> None:
    assert ("contract-expired", "warning") in codes(drill, today=datetime.date(2028, 9, 1))["drill.yaml"]
    assert ("contract-expired", "warning") not in codes(drill, today=datetime.date(2028, 8, 31))["drill.yaml"]


# envelope ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "change, expected",
    [
        (lambda r: r["contract"]["envelope"].update(gpu_models=["NVIDIA A100-SXM4-80GB"]), "envelope-gpu-model"),
        (lambda r: r["contract"]["envelope"].update(driver_branch=["R570"]), "envelope-driver-branch"),
        (lambda r: r["contract"]["envelope"]["framework"].update(release="2.12"), "envelope-framework-release"),
        (lambda r: r["contract"]["envelope"].update(nodes={"min": 2, "max": 4}), "envelope-nodes"),
        (lambda r: r["contract"]["envelope"].update(os=["rhel-9.4"]), "envelope-os"),
    ],
)
def test_reference_run_lies_inside_its_envelope(drill: Path, change: Any, expected: str) -> None:
    edit_record(drill, change)
    assert expected in errors(drill)


def test_framework_release_prefix_admits_patch_versions(drill: Path) -> None:
    edit_record(drill, lambda r: r["contract"]["envelope"]["framework"].update(release="2.13.0"))
    assert errors(drill) == []


# manifests and configuration ---------------------------------------------------------------------


def test_manifest_internal_consistency(project: Path) -> None:
    manifest = project / "data" / "d77.manifest.yaml"

    def change(m: dict[str, Any]) -> None:
        m["shards"][1]["checksum"] = "md5:" + "0" * 32
        m["shards"].append(dict(m["shards"][0]))

    edit_record(manifest, change)
    assert sorted(errors(manifest)) == ["manifest-algorithm-mismatch", "manifest-duplicate-shard"]


def test_manifest_own_digest_is_checked(project: Path) -> None:
    from reprogate.core.documents import load_document
    from reprogate.datasets import manifest_digest

    manifest = project / "data" / "d77.manifest.yaml"
    good = manifest_digest(load_document(manifest).data)
    edit_record(manifest, lambda m: m.update(digest=good))
    assert errors(manifest) == []
    edit_record(manifest, lambda m: m.update(id="D-78"))
    assert errors(manifest) == ["manifest-digest-mismatch"]


def test_config_reference_must_be_an_existing_record(project: Path) -> None:
    config = project / ".reprogate.yaml"
    edit_record(config, lambda c: c.update(reference="records/missing.yaml"))
    assert errors(config) == ["file-missing"]
    edit_record(config, lambda c: c.update(reference="data/d77.manifest.yaml"))
    assert errors(config) == ["reference-not-a-record"]


def test_rules_do_not_crash_on_schema_invalid_records(drill: Path) -> None:
    def change(r: dict[str, Any]) -> None:
        r["seeds"]["per_rank"] = "all"
        r["execution"]["world_size"] = "eight"
        r["contract"]["metric"] = [1, 2]
        r["dataset"]["manifest"] = None
        r["devices"]["gpus"] = {"0": "x"}

    edit_record(drill, change)
    found = codes(drill)["drill.yaml"]
    assert sum(code == "schema.type" for code, _ in found) == 5, found


# secrets -----------------------------------------------------------------------------------------

TOKEN = "hf_" + "AbCdEfGhIjKlMnOpQrStUvWx"
GITHUB = "ghp_" + "0123456789abcdefghijABCDEFGHIJ"


def test_credentials_in_a_record_are_refused_and_never_echoed(cli: Any, project: Path) -> None:
    drill = project / "records" / "drill.yaml"

    def change(r: dict[str, Any]) -> None:
        r["execution"]["env"]["HF_TOKEN"] = TOKEN
        r["metadata"]["description"] = f"pushed with {GITHUB}"
        r["source"]["commit"] = GITHUB  # also breaks the schema: the message must not quote it

    edit_record(drill, change)
    found = codes(drill)["drill.yaml"]
    assert found.count(("secret-in-record", "error")) == 4  # two values, one name, and the commit
    for fmt in ("text", "json", "github"):
        result = cli("validate", "--format", fmt, str(drill))
        assert result.exit_code == 1
        assert TOKEN not in result.output and GITHUB not in result.output


def test_behaviour_variables_are_not_mistaken_for_secrets(drill: Path) -> None:
    def change(r: dict[str, Any]) -> None:
        r["execution"]["env"].update(NCCL_IB_PKEY="0", TORCH_NCCL_BLOCKING_WAIT="1", MKL_CBWR="COMPATIBLE")

    edit_record(drill, change)
    assert errors(drill) == []


# the record against its reference trace's meta --------------------------------------------------

TINY = Path("tiny") / "records" / "tiny.yaml"


@pytest.mark.parametrize(
    ("change", "code"),
    [
        (lambda r: r["seeds"].update({"global": 7}), "trace-meta-seed"),
        (lambda r: (r["execution"].update(world_size=1, ranks_per_node=1), r["contract"]["envelope"].update(world_sizes=[1])), "trace-meta-world-size"),
        (lambda r: r["contract"]["envelope"]["cpu"].update(capability=["avx512"]), "trace-meta-cpu-capability"),
        (lambda r: r["contract"]["envelope"]["cpu"].update(mkl_cbwr=["AUTO"]), "trace-meta-mkl-cbwr"),
    ],
)
def test_record_disagreeing_with_its_reference_trace_meta_fails_validate(project: Path, change: Any, code: str) -> None:
    record = project / TINY
    assert errors(record) == []
    edit_record(record, change)
    assert errors(record) == [code]


def test_reference_trace_meta_names_the_trace_and_both_values(cli: Any, project: Path) -> None:
    record = project / TINY
    edit_record(record, lambda r: r["seeds"].update({"global": 7}))
    result = cli("validate", str(record))
    assert result.exit_code == 1
    assert "tiny/reference/trace.jsonl was made with seed 1 (its meta, rank 0); the record says 7" in result.output
