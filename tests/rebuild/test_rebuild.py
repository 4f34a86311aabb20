"""Fault drills on the real tiny example: each names the right first failing stage."""

from __future__ import annotations

import json
import os
import platform
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result
from support import break_torch, edit_record

if os.environ.get("CI") != "true":
    pytest.importorskip("torch")

Cli = Callable[..., Result]
RECORD = Path("tiny") / "records" / "tiny.yaml"


def rebuild(cli: Cli, project: Path, *args: str) -> tuple[Result, dict[str, Any]]:
    out = project.parent / "out"
    shutil.rmtree(out, ignore_errors=True)  # the last run's: rebuild writes only into a fresh folder
    result = cli("rebuild", str(project / RECORD), "--out", str(out), "--format", "json", *args)
    verdict = json.loads((out / "verdict.json").read_text()) if (out / "verdict.json").exists() else {}
    return result, verdict


def drill(project: Path, **variables: str) -> None:
    """Set the example's fault-drill variables the way a record does: ranks get the record's
    execution.env and nothing of the rebuild's own environment."""
    edit_record(project / RECORD, lambda r: r["execution"].setdefault("env", {}).update(variables))


def stages(verdict: dict[str, Any]) -> dict[str, str]:
    return {s["name"]: s["status"] for s in verdict["stages"]}


def test_clean_rebuild_passes_and_twice_gives_identical_digests(cli: Cli, project: Path, tmp_path: Path) -> None:
    first, verdict = rebuild(cli, project, "--workdir", str(tmp_path / "w1"))
    assert first.exit_code == 0, first.output
    assert verdict["verdict"] == "pass" and verdict["diagnosis"] is None
    assert stages(verdict) == {
        "artifacts": "pass",
        "digest": "skipped",
        "preflight": "pass",
        "dataset": "pass",
        "config": "pass",
        "envelope": "pass",
        "run": "pass",
        "batches": "pass",
        "model-state": "pass",
        "steps": "pass",
        "metric": "pass",
    }
    assert verdict["claim"]["replayed"] is True and "no container" in " ".join(verdict["claim"]["not_covered"])
    costs = json.loads((tmp_path / "w1" / "preflight.json").read_text())["ranks"]  # what each rank's preflight cost, torch's import said apart
    assert sorted(costs) == ["0", "1"] and all(0 < cost["import_seconds"] and 0 < cost["cpu_seconds"] for cost in costs.values())
    second, again = rebuild(cli, project, "--workdir", str(tmp_path / "w2"))
    assert second.exit_code == 0
    traces = [sorted((tmp_path / w / "runs" / "seed-1" / "trace").glob("*.jsonl")) for w in ("w1", "w2")]
    assert [p.read_bytes() for p in traces[0]] == [p.read_bytes() for p in traces[1]]
    assert verdict["curves"] == again["curves"]
    assert cli("validate", str(project.parent / "out" / "verdict.json")).exit_code == 0
    # the training script's output is kept on a pass, and the report names it
    out = project.parent / "out"
    assert again["logs"] == ["ranks/preflight/rank0.log", "ranks/preflight/rank1.log"]
    # the script's own line (torch may print a c10d warning before it: inside the sandbox's
    # loopback-only network the store's peer has no host name)
    assert [line for line in (out / "ranks" / "preflight" / "rank0.log").read_text().splitlines() if line.startswith("seed 1: val_loss ")]
    assert "`ranks/preflight/rank0.log`" in (out / "report.md").read_text()


def test_flipped_byte_in_a_shard_is_diagnosed_at_dataset(cli: Cli, project: Path) -> None:
    shard = project / "tiny" / "data" / "shard-002.txt"
    blob = bytearray(shard.read_bytes())
    blob[1000] ^= 0x01
    shard.write_bytes(bytes(blob))
    result, verdict = rebuild(cli, project)
    assert result.exit_code == 1 and verdict["diagnosis"] == "dataset"
    assert "shard-002.txt" in next(s["detail"] for s in verdict["stages"] if s["name"] == "dataset")
    assert stages(verdict)["run"] == "not-run"
    # the code under test never ran: the rank hosts preflight left waiting (sandboxed, in a session
    # of their own) are the rebuild's own, and ending them is no "left running" (it was, 4 of them)
    assert "left running" not in result.output, result.output


def test_a_dataset_kept_only_in_a_copy_rebuilds_from_it_with_dataset_root(cli: Cli, project: Path) -> None:
    """What `audit --retiring` says for a dataset kept only by a copy: the rebuild reads the shards
    there, checked against the same manifest, and the ranks train on them as on the repository's."""
    data = project / "tiny" / "data"
    copy = project.parent / "copy-of-tiny-data"
    copy.mkdir()
    for shard in sorted(data.glob("*.txt")) + [data / "vocab.json"]:
        shutil.move(shard, copy / shard.name)  # the repository's own copy is gone (retired)
    result, verdict = rebuild(cli, project)
    assert result.exit_code == 1 and verdict["diagnosis"] == "dataset", result.output
    result, verdict = rebuild(cli, project, "--dataset-root", str(copy))
    assert result.exit_code == 0, result.output
    assert f"from --dataset-root {copy}" in next(s["detail"] for s in verdict["stages"] if s["name"] == "dataset")
    blob = bytearray((copy / "shard-001.txt").read_bytes())
    blob[10] ^= 0x01
    (copy / "shard-001.txt").write_bytes(bytes(blob))
    result, verdict = rebuild(cli, project, "--dataset-root", str(copy))
    assert result.exit_code == 1 and verdict["diagnosis"] == "dataset" and "shard-001.txt" in json.dumps(verdict["stages"])


def test_changed_configuration_value_is_diagnosed_at_config(cli: Cli, project: Path) -> None:
    config = project / "tiny" / "config" / "tiny.yaml"
    config.write_text(config.read_text().replace("lr: 0.01", "lr: 0.02"))
    _, verdict = rebuild(cli, project)
    assert verdict["diagnosis"] == "config"


def test_world_size_outside_the_envelope_is_rejected_before_the_run(cli: Cli, project: Path) -> None:
    result, verdict = rebuild(cli, project, "--world-size", "3")
    assert result.exit_code == 1 and verdict["diagnosis"] == "envelope"
    assert "never widened" in next(s["detail"] for s in verdict["stages"] if s["name"] == "envelope")
    assert stages(verdict)["run"] == "not-run"


def test_bitwise_cpu_record_rebuilt_with_other_kernels_is_rejected_at_envelope(cli: Cli, project: Path) -> None:
    """The envelope asks for AVX2 kernels while execution.env pins the baseline ones (what every
    x86-64 CPU runs, so the outcome does not depend on this machine): the envelope says so first,
    naming both capabilities and the way out."""
    edit_record(project / RECORD, lambda r: r["contract"]["envelope"]["cpu"].update(capability=["avx2"]))
    result, verdict = rebuild(cli, project)
    assert result.exit_code == 1 and verdict["diagnosis"] == "envelope" and stages(verdict)["run"] == "not-run"
    detail = next(s["detail"] for s in verdict["stages"] if s["name"] == "envelope")
    assert "needs torch's avx2 CPU kernels" in detail and "would use default" in detail
    assert "ATEN_CPU_CAPABILITY=default" in detail and "behavioral contract" in detail
    assert verdict["environment"]["cpu_capability"] == "default"


def test_the_example_rebuilds_whatever_kernels_the_runner_asks_for(cli: Cli, project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """AVX-512 and MKL's AVX2 path set on the runner do not reach the ranks (they get the rank
    allowlist and the record's execution.env, which pins the portable kernels), so the digests match."""
    monkeypatch.setenv("ATEN_CPU_CAPABILITY", "avx512")
    monkeypatch.setenv("MKL_CBWR", "AVX2")
    result, verdict = rebuild(cli, project)
    assert result.exit_code == 0, result.output
    assert stages(verdict)["model-state"] == "pass" and verdict["environment"]["cpu_capability"] == "default"
    assert "torch CPU kernels default, MKL_CBWR COMPATIBLE" in verdict["claim"]["text"]


def test_ranks_that_cannot_import_torch_are_could_not_start_and_the_environment_is_still_described(cli: Cli, project: Path, tmp_path: Path) -> None:
    """A torch that fails to import (here one shadowing the real one on the record's PYTHONPATH) is
    an infrastructure failure at preflight; rank 0 has already told what its environment holds,
    so the report still says which Python and packages the ranks had."""
    break_torch(project, RECORD)
    result, verdict = rebuild(cli, project)
    assert result.exit_code == 3 and verdict["diagnosis"] == "preflight" and verdict["infrastructure"] is True
    assert "broken on purpose" in verdict["stages"][2].get("log_tail", "") + verdict["stages"][2]["detail"]
    inside = verdict["environment"]["inside"]
    assert inside["python"] == platform.python_version() and inside["packages"] > 0
    assert stages(verdict)["run"] == "not-run"


def test_record_whose_seed_disagrees_with_its_reference_is_rejected_before_the_run(cli: Cli, project: Path) -> None:
    edit_record(project / RECORD, lambda r: r["seeds"].update({"global": 2}))
    result, verdict = rebuild(cli, project)
    assert result.exit_code == 1 and verdict["diagnosis"] == "envelope" and stages(verdict)["batches"] == "not-run"
    assert "made with seed 1 (its meta, rank 0); the record says 2" in next(s["detail"] for s in verdict["stages"] if s["name"] == "envelope")


def test_perturbation_is_caught_bitwise_at_model_state_at_that_step(cli: Cli, project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    drill(project, EXAMPLE_PERTURB_STEP="7")
    _, verdict = rebuild(cli, project)
    assert verdict["diagnosis"] == "model-state"
    assert next(s["detail"] for s in verdict["stages"] if s["name"] == "model-state").startswith("step 7, rank 0")
    assert stages(verdict)["batches"] == "pass"


def test_perturbation_is_caught_behaviorally_at_steps(cli: Cli, project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    edit_record(project / RECORD, lambda r: r["contract"].update(level="behavioral", tolerance={"abs": 1e-4, "rel": 1e-4}))
    drill(project, EXAMPLE_PERTURB_STEP="7")
    _, verdict = rebuild(cli, project)
    assert verdict["diagnosis"] == "steps" and stages(verdict)["model-state"] == "skipped"
    detail = next(s["detail"] for s in verdict["stages"] if s["name"] == "steps")
    first = int(detail.split(",")[0].removeprefix("step "))
    assert first > 7  # the weights changed after step 7; a later loss is the first outside tolerance
    assert verdict["tests"][0]["test"] == "step tolerance" and verdict["tests"][0]["abs"] == 1e-4


def test_behavioral_rebuild_passes_within_tolerance(cli: Cli, project: Path) -> None:
    edit_record(project / RECORD, lambda r: r["contract"].update(level="behavioral", tolerance={"abs": 1e-4, "rel": 1e-4}))
    result, verdict = rebuild(cli, project)
    assert result.exit_code == 0 and stages(verdict)["steps"] == "pass"


def test_metric_shift_beyond_the_interval_is_diagnosed_at_metric(cli: Cli, project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    drill(project, EXAMPLE_METRIC_SHIFT="0.05")
    result, verdict = rebuild(cli, project)
    assert result.exit_code == 1 and verdict["diagnosis"] == "metric"
    assert stages(verdict)["steps"] == "pass"  # training was identical; only the metric moved
    test = verdict["tests"][-1]
    assert test["alpha"] == 0.05 and test["n"] == 20 and test["m"] == 1 and test["passed"] is False
    report = (project.parent / "out" / "report.md").read_text()
    assert "Way forward" in report and "baseline label" in report and "bypass" in report


def test_crashing_entrypoint_is_diagnosed_at_run_with_its_log_tail(cli: Cli, project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    drill(project, EXAMPLE_CRASH_STEP="3")
    result, verdict = rebuild(cli, project)
    assert verdict["diagnosis"] == "run"
    run_stage = next(s for s in verdict["stages"] if s["name"] == "run")
    assert "crashing at step 3" in run_stage["log_tail"]
    assert "crashing at step 3" in (project.parent / "out" / "report.md").read_text()


def test_several_seeds_of_a_bitwise_contract_replay_the_trace_seed_then_judge_fresh_ones(cli: Cli, project: Path) -> None:
    result, verdict = rebuild(cli, project, "--seeds", "4")
    assert result.exit_code == 0, result.output
    test = verdict["tests"][-1]
    assert test["test"] == "Wilcoxon rank-sum (exact mid-p, two-sided)" and test["n"] == 20 and test["m"] == 3 and test["alpha"] == 0.05
    assert test["rule"].startswith("test: robust, m = 3 >= 3")
    # the first fresh seed lands at 1.018, 4.3 sd above the 20 reference seeds' mean (the model's loss has a long right
    # tail): the rank-sum test counts it as the highest seed, no more; at m = 2 the t fails this good build
    rebuilt, metric = verdict["seeds"]["rebuilt"], verdict["seeds"]["metric"]
    assert rebuilt[0] == 1 and rebuilt[1:] == metric and not set(metric) & set(range(1, 21)) and verdict["seeds"]["source"] == "fresh"
    assert test["power"]["minimum_detectable_shift"] > 0 and 0 < test["power"]["power"] <= 1  # the record declares detect: relative 4.5 %


def as_base(project: Path) -> str:
    """The project as the first commit of a fresh repository (the base a pull request starts from)."""
    from support import git

    git(project, "init", "-q", "-b", "main")
    git(project, "add", "-A")
    git(project, "commit", "-qm", "base")
    return git(project, "rev-parse", "HEAD")


def statistical(project: Path) -> None:
    edit_record(project / RECORD, lambda r: r["contract"].update(level="statistical"))


def test_a_statistical_rebuild_of_three_fresh_seeds_passes_a_good_build_and_fails_a_shifted_one(cli: Cli, project: Path) -> None:
    statistical(project)
    result, verdict = rebuild(cli, project, "--seeds", "3")
    assert result.exit_code == 0, result.output
    seeds = verdict["seeds"]
    assert len(seeds["metric"]) == 3 and seeds["rebuilt"] == seeds["metric"] and not set(seeds["metric"]) & set(seeds["reference"])
    assert stages(verdict)["batches"] == "skipped"  # fresh seeds read the data in their own order
    claim = verdict["claim"]
    assert "Wilcoxon rank-sum" in claim["compared"][-1] and "fresh seed(s)" in claim["compared"][-1]  # test: seeds at m = 3
    assert verdict["tests"][-1]["test"] == "Wilcoxon rank-sum (exact mid-p, two-sided)" and "m = 3 >= 3" in verdict["tests"][-1]["rule"]
    report = (project.parent / "out" / "report.md").read_text()
    assert "minimum detectable shift" in report and "fresh seed(s)" in report

    from reprogate.core.canonical import canonical_digest
    from reprogate.core.documents import load_document
    from reprogate.core.record import read_record
    from reprogate.rebuild.judged_by import CONTRACT_SECTIONS
    from reprogate.rebuild.seed_plan import plan

    data = load_document(project / RECORD).data
    again = plan(read_record(data, schema_valid=True), canonical_digest({k: data.get(k) for k in CONTRACT_SECTIONS}), 3)
    assert list(again.metric_seeds) == seeds["metric"]  # drawn from the judging contract's digest: a rerun draws the same

    drill(project, EXAMPLE_METRIC_SHIFT="0.05")  # about 11 sd of the reference seeds
    result, shifted = rebuild(cli, project, "--seeds", "3")
    assert result.exit_code == 1 and shifted["diagnosis"] == "metric", result.output
    assert shifted["seeds"]["metric"] == seeds["metric"]  # the environment changed, not the judging contract: the same seeds
    assert "at or below α=0.05 (Wilcoxon rank-sum" in next(s["detail"] for s in shifted["stages"] if s["name"] == "metric")


def test_named_replay_seeds_are_rerun_and_the_claim_says_they_are_not_independent(cli: Cli, project: Path) -> None:
    statistical(project)
    edit_record(project / RECORD, lambda r: (r["seeds"].update(replay=[2, 3]), r["contract"]["metric"].update(rebuild_seeds=2)))
    result, verdict = rebuild(cli, project)  # no --seeds: the contract's rebuild_seeds (the gate's dispatch gives none)
    assert result.exit_code == 0, result.output
    assert verdict["seeds"]["metric"] == [2, 3] and verdict["seeds"]["source"] == "replay"
    assert any("not independent" in limit for limit in verdict["claim"]["not_covered"])
    too_many, _ = rebuild(cli, project, "--seeds", "3")
    assert too_many.exit_code == 2 and "seeds.replay" in too_many.output


def test_changed_source_is_diagnosed_at_artifacts(cli: Cli, project: Path) -> None:
    train = project / "tiny" / "project" / "train.py"
    train.write_text(train.read_text() + "\n# a change\n")
    _, verdict = rebuild(cli, project)
    assert verdict["diagnosis"] == "artifacts" and "git tree" in verdict["stages"][0]["detail"]


def test_work_folder_must_be_empty(cli: Cli, project: Path, tmp_path: Path) -> None:
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "leftover").write_text("x")
    result, _ = rebuild(cli, project, "--workdir", str(busy))
    assert result.exit_code == 2 and "not empty" in result.stderr


def test_invalid_record_is_refused_before_any_stage(cli: Cli, project: Path) -> None:
    edit_record(project / RECORD, lambda r: r["execution"].pop("world_size"))
    result, verdict = rebuild(cli, project)
    assert result.exit_code == 2 and verdict == {} and "validate" in result.stderr


def test_a_record_without_its_configurations_hash_is_refused_not_run_as_inits_draft(cli: Cli, project: Path) -> None:
    """Only `init`'s own draft may lack job.config.hash (core.record.read_draft_job): a committed
    record that drops it, claiming its configuration is code, is refused like any invalid record,
    so no rebuild runs without the pin the trace is compared with."""
    edit_record(project / RECORD, lambda r: (r["job"]["config"].pop("hash"), r["job"]["config"].update(hash_of="trace")))
    result, verdict = rebuild(cli, project)
    assert result.exit_code == 2 and verdict == {} and "job.config" in result.stderr and "hash" in result.stderr


def test_interval_command_stores_the_interval(cli: Cli, project: Path) -> None:
    record = project / RECORD
    edit_record(record, lambda r: (r["contract"].update(level="statistical"), r["contract"]["metric"].pop("interval")))
    assert cli("validate", str(record)).exit_code == 1  # a statistical contract carries its interval
    result = cli("interval", str(record))
    assert result.exit_code == 0 and "95 % prediction interval [0.945403, 0.994188]" in result.output
    assert cli("validate", str(record)).exit_code == 0


def test_interval_accounts_for_resolution() -> None:
    from reprogate.rebuild.stats import prediction_interval

    values = [0.9391, 0.9407, 0.9422, 0.9400]
    plain = prediction_interval(values, 0.05)
    coarse = prediction_interval(values, 0.05, resolution=0.002)
    assert coarse.low == pytest.approx(plain.low - 0.001) and coarse.high == pytest.approx(plain.high + 0.001)
    flat = prediction_interval([0.5, 0.5, 0.5], 0.05, resolution=0.01)
    assert flat.contains(0.504) and not flat.contains(0.506)  # quantised equal values still leave room


def test_report_and_compare_commands(cli: Cli, project: Path, tmp_path: Path) -> None:
    rebuild(cli, project, "--workdir", str(tmp_path / "w"))
    verdict = project.parent / "out" / "verdict.json"
    markdown = cli("report", str(verdict))
    assert markdown.exit_code == 0 and "```mermaid\n%%{init:" in markdown.output and "\nxychart-beta\n" in markdown.output and "### Claim" in markdown.output
    assert "The rebuild's loss equals the reference's at every one of the 80 steps both recorded (every rank)." in markdown.output
    assert json.loads(cli("report", str(verdict), "--format", "json").output)["kind"] == "Verdict"
    reference = project / "tiny" / "reference" / "trace.jsonl"
    rebuilt = sorted((tmp_path / "w" / "runs" / "seed-1" / "trace").glob("*.jsonl"))
    same = cli("compare", str(reference), *map(str, rebuilt), "--tensors", "model_state,head.weight")
    assert same.exit_code == 0 and "tensors  pass" in same.output


def test_statistical_and_tost_helpers_match_scipy() -> None:
    from scipy import stats

    from reprogate.rebuild.stats import welch_tost

    x, y = [2.1, 2.0, 2.2, 2.05, 2.15], [2.12, 2.08, 2.2, 2.1]
    tost = welch_tost(x, y, 0.2, 0.05)
    p_low = stats.ttest_ind([v + 0.2 for v in y], x, equal_var=False, alternative="greater").pvalue
    p_high = stats.ttest_ind([v - 0.2 for v in y], x, equal_var=False, alternative="less").pvalue
    assert tost.p_value == pytest.approx(max(p_low, p_high))
    ci = stats.ttest_ind(y, x, equal_var=False).confidence_interval(0.90)
    assert (tost.ci_low, tost.ci_high) == (pytest.approx(ci.low), pytest.approx(ci.high))
    assert tost.equivalent and not welch_tost(x, [v + 0.5 for v in y], 0.2, 0.05).equivalent


@pytest.mark.parametrize("kind", ["fifo", "dev-zero"])
def test_a_reference_trace_that_is_a_fifo_or_dev_zero_is_refused_not_read_forever(project: Path, tmp_path: Path, kind: str) -> None:
    import subprocess
    import sys

    from reprogate.core.documents import load_document

    trace = project / load_document(project / RECORD).data["reference"]["trace"]["path"]
    trace.unlink()
    if kind == "fifo":
        os.mkfifo(trace)
    else:
        trace.symlink_to("/dev/zero")
    command = [sys.executable, "-m", "reprogate", "rebuild", str(project / RECORD), "--out", str(tmp_path / "out")]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False, cwd=project)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "is not a regular file" in done.stdout and "Traceback" not in done.stderr


@pytest.mark.parametrize("value", [".nan", ".inf", "-.Inf"])
def test_a_non_finite_number_in_a_record_is_unreadable_input_for_every_command(cli: Cli, project: Path, tmp_path: Path, value: str) -> None:
    """`alpha: .nan` used to exit 0 from `interval` writing `nan%`, and end `rebuild` in a traceback."""
    record = project / RECORD
    text = record.read_text()
    assert "  alpha: 0.05" in text
    record.write_text(text.replace("  alpha: 0.05", f"  alpha: {value}", 1))
    for args in (("interval", str(record)), ("rebuild", str(record), "--out", str(tmp_path / "out")), ("validate", str(record))):
        result = cli(*args)
        assert result.exit_code == 2, (args, result.output)
        assert "is not a finite number" in result.output and "Traceback" not in result.output, (args, result.output)


def test_a_duplicate_key_is_unreadable_input_for_every_command_that_reads_the_record(cli: Cli, project: Path, tmp_path: Path) -> None:
    """It was exit 1 (the check failed) in interval, capture --into and rebuild, and 2 for a file
    that is not UTF-8: unreadable input is 2 everywhere, validate's included (it names both lines)."""
    record = project / RECORD
    record.write_text(record.read_text() + "kind: RunRecord\n")
    for args in (("interval", str(record)), ("rebuild", str(record), "--out", str(tmp_path / "out")), ("capture", "--into", str(record), "--no-framework")):
        result = cli(*args)
        assert result.exit_code == 2 and "duplicate key" in result.output and "Traceback" not in result.output, (args, result.output)
    checked = cli("validate", str(record))
    assert checked.exit_code == 2 and "first at line" in checked.output, checked.output


def test_a_pull_request_that_widens_its_own_interval_is_judged_by_the_bases(cli: Cli, project: Path, tmp_path: Path) -> None:
    """The head shifts the metric and loosens its contract to cover it — α lowered to 0.0001, the
    interval recomputed from it, so the record is valid: judged by its own words it passes; with
    --contract-from BASE (what the gate's dispatch asks for) it fails at metric, the claim says
    whose contract judged, and the verdict still names the head's record. (A bound widened by
    hand is caught earlier: validate recomputes it.)"""
    from support import git

    from reprogate.core.documents import load_document
    from reprogate.rebuild.state import record_digest

    base = as_base(project)

    def loosen(record: dict[str, Any]) -> None:
        record["execution"].setdefault("env", {}).update(EXAMPLE_METRIC_SHIFT="0.05")
        record["contract"]["metric"]["alpha"] = 0.0001

    edit_record(project / RECORD, loosen)
    assert cli("interval", str(project / RECORD)).exit_code == 0
    assert cli("validate", str(project / RECORD)).exit_code == 0
    git(project, "commit", "-qam", "loosen the contract")
    own, loose = rebuild(cli, project)
    assert own.exit_code == 0 and loose["verdict"] == "pass", own.output
    judged, strict = rebuild(cli, project, "--contract-from", base)
    assert judged.exit_code == 1 and strict["diagnosis"] == "metric", judged.output
    assert any("judged by the contract of tiny/records/tiny.yaml at the base" in n and "contract" in n for n in strict["claim"]["not_covered"])
    assert strict["record"]["digest"] == record_digest(load_document(project / RECORD).data) == loose["record"]["digest"]
    missing = cli("rebuild", str(project / RECORD), "--contract-from", "0" * 40, "--out", str(tmp_path / "o"))
    assert missing.exit_code == 3 and "fetch" in missing.output


def test_a_pull_request_cannot_choose_replayed_seeds_or_a_wide_equivalence_margin_for_itself(cli: Cli, project: Path) -> None:
    """A statistical head that shifts its metric and asks to replay reference seeds under a TOST
    with a huge margin would pass by its own words; judged by the base (--contract-from, what the
    gate dispatches), it draws fresh seeds and the two-sample t fails it."""
    from support import git

    statistical(project)
    base = as_base(project)

    def cheat(record: dict[str, Any]) -> None:
        record["execution"].setdefault("env", {}).update(EXAMPLE_METRIC_SHIFT="0.05")
        record["seeds"]["replay"] = [1, 2]
        record["contract"]["metric"].update(test="equivalence", margin=1.0)

    edit_record(project / RECORD, cheat)
    git(project, "commit", "-qam", "replay my own seeds")
    own, loose = rebuild(cli, project, "--seeds", "2")
    assert own.exit_code == 0 and loose["seeds"]["source"] == "replay" and loose["tests"][-1]["test"] == "Welch TOST equivalence", own.output
    judged, strict = rebuild(cli, project, "--seeds", "2", "--contract-from", base)
    assert judged.exit_code == 1 and strict["diagnosis"] == "metric", judged.output
    assert strict["seeds"]["source"] == "fresh" and strict["tests"][-1]["test"].startswith("two-sample t")


def test_a_run_that_ignores_the_seed_it_was_given_fails_at_run(cli: Cli, project: Path) -> None:
    """An entrypoint that drops REPROGATE_SEED falls back to its own seed: its "fresh" runs would
    be the reference's own seed, judged as independent. The trace's meta says which it applied."""
    statistical(project)
    script = "import os, runpy, sys; os.environ.pop('REPROGATE_SEED'); sys.argv = ['train.py', '--config', '../config/tiny.yaml']; "
    entry = ["python", "-c", script + "runpy.run_path('train.py', run_name='__main__')"]
    edit_record(project / RECORD, lambda r: r["job"].update(entrypoint=entry))
    result, verdict = rebuild(cli, project)
    assert result.exit_code == 1 and verdict["diagnosis"] == "run", result.output
    assert "applied seed 1 (its trace's meta), not the one it was given" in next(s["detail"] for s in verdict["stages"] if s["name"] == "run")
