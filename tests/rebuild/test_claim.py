"""The bounded claim (rebuild/claim.py): which environment ran, what was compared and by what
test, what it does not cover, and, on a failure, the first stage that differed.

The state is built by hand (no stage runs, no torch): claim() reads only the record, the
realized environment, the ranks and the machine, and the verdict's stages and tests.
"""

from __future__ import annotations

import copy
import hashlib
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from support.realized import container_identity, realized, venv_identity
from support.verdicts import make_verdict

from reprogate.core.documents import Document
from reprogate.core.schemas import load_schema
from reprogate.rebuild.claim import bounded_claim
from reprogate.rebuild.comparisons import EXACT, TOLERANCE, MetricTest, StepTest
from reprogate.rebuild.options import RebuildOptions
from reprogate.rebuild.realizers.base import Choice, Identity
from reprogate.rebuild.seed_plan import SeedPlan
from reprogate.rebuild.state import Environment, Fetched, Machine, Ranks, RebuildJob, RebuildState
from reprogate.rebuild.verdict import StageRecord

RECORD: dict[str, Any] = {
    "apiVersion": "reprogate/v1",
    "kind": "RunRecord",
    "metadata": {"name": "tiny-markov-mlp"},
    "contract": {
        "level": "bitwise",
        "steps": {"start": 0, "count": 80},
        "tensors": ["model_state", "head.weight"],
        "envelope": {"gpu_models": [], "world_sizes": [2], "framework": {"name": "torch", "release": "2.13"}},
    },
    "execution": {"world_size": 2, "nodes": 1},
}
MACHINE = {"machine": "x86_64", "os": "Linux 6.1", "torch": "2.13.0", "world_size": 2, "backend": "gloo", "launcher": "local"}
IMAGE_ID = "sha256:" + "ab" * 32
PINNED = "sha256:" + "cd" * 32


def context(
    tmp_path: Path,
    realizer: str | None = "current",
    identity: Identity | None = None,
    record: dict[str, Any] | None = None,
    machine: dict[str, Any] | None = None,
    environment: str = "reference",
    realized_one: bool = True,
) -> RebuildState:
    """A rebuild's state after its stages: realized by `realizer` (None: the digest stage never
    ran; `realized_one` False: it ran and failed), on the machine `machine` describes (its
    placement and launcher are the ranks')."""
    data = copy.deepcopy(record if record is not None else RECORD)
    said = dict(MACHINE if machine is None else machine)
    choice = Choice(realizer or "venv", f"the record asks for {realizer}")
    job = RebuildJob(tmp_path / "record.yaml", Document("record.yaml", data, "yaml"), tmp_path, tmp_path, RebuildOptions(environment=environment), choice, None)  # type: ignore[arg-type]
    state = RebuildState(job)
    if realizer is not None:
        state.fetched = Fetched((), (), tmp_path / "runtime")
        if realized_one:
            state.environment = Environment(choice, realized(realizer, identity), "bubblewrap")
    launcher = SimpleNamespace(name=said.get("launcher", "local"), ranks_run_here=True)
    placement = {int(k): v for k, v in (said.get("placement") or {}).items()}
    state.ranks = Ranks(launcher, SimpleNamespace(nodes=1), SimpleNamespace(stop=lambda: None), said.get("backend", "?"), "", placement=placement)  # type: ignore[arg-type]
    cpu = {k: said[k] for k in ("cpu_capability", "mkl_cbwr") if k in said}
    state.machine = Machine(
        nodes=1,
        world_size=said.get("world_size", 2),
        machine=said["machine"],
        os=said.get("os"),
        torch=said.get("torch"),
        gpu_models=tuple(said.get("gpu_models", ())),
        cpu=cpu,
    )
    return state


def _comparison(test: dict[str, Any]) -> StepTest | MetricTest:
    if test["test"] in (EXACT, TOLERANCE):
        return StepTest(test["test"], tuple(test["quantities"]), test["abs"], test["rel"], test["compared"], None, None, test["passed"])
    seeds = SeedPlan(None, tuple(test.get("seeds", ())), test.get("seed_source", "fresh"))
    figures = {k: test[k] for k in ("interval", "limit", "margin") if k in test}
    return MetricTest(test["test"], test["metric"], test["alpha"], test["n"], test["m"], test["passed"], seeds, test.get("power", {}), figures)


def claim(state: RebuildState, verdict: dict[str, Any]) -> dict[str, Any]:
    """The claim of a rebuild whose stages and tests `verdict` (a verdict's JSON) lists."""
    code = verdict.get("exit_code") or (3 if verdict.get("infrastructure") else 1)
    stages = tuple(StageRecord(s["name"], s["status"], s["seconds"], s["detail"], exit_code=code) for s in verdict["stages"])
    failed = next((s for s in stages if s.name == verdict["diagnosis"]), None)
    tests = tuple(_comparison(t) for t in verdict["tests"])
    return bounded_claim(state, stages, tests, failed, verdict["seeds"]["rebuilt"]).to_json()


def test_a_pass_in_the_current_environment_says_so_and_that_nothing_was_rebuilt(tmp_path: Path) -> None:
    found = claim(context(tmp_path, "current"), make_verdict("pass"))
    assert found["replayed"] is True
    assert found["text"].startswith(
        "tiny-markov-mlp was replayed from an empty worker in reprogate's own Python environment, on CPU (x86_64), Linux 6.1, torch 2.13.0"
    )
    assert "2 rank(s) over gloo" in found["text"] and "inside its contract's envelope" in found["text"]
    assert any(item.startswith("the environment was not rebuilt") and "realizer: current" in item for item in found["not_covered"])


@pytest.mark.parametrize(
    "identity, expected",
    [
        (
            container_identity(IMAGE_ID, digest_verified_by_engine=PINNED),
            f"the reference environment: image {IMAGE_ID[:19]} (pinned digest {PINNED} confirmed by the engine)",
        ),
        (
            container_identity(IMAGE_ID, "built from train/Dockerfile in this checkout", built_from="train/Dockerfile"),
            f"the reference environment: image {IMAGE_ID[:19]} (built from train/Dockerfile)",
        ),
        (
            container_identity(IMAGE_ID, "--image registry.example/x:1"),
            f"the reference environment: image {IMAGE_ID[:19]} (--image registry.example/x:1)",
        ),
    ],
)
def test_a_pass_in_a_container_names_the_image_and_how_it_was_verified(tmp_path: Path, identity: Identity, expected: str) -> None:
    found = claim(context(tmp_path, "container", identity), make_verdict("pass"))
    assert f"replayed from an empty worker in {expected}, on " in found["text"]
    assert IMAGE_ID not in found["text"], "the image ID is shortened to sha256: and 12 hex digits"
    assert not any("not rebuilt" in item for item in found["not_covered"])


def test_a_pass_in_a_venv_names_the_lock_file_and_its_digest(tmp_path: Path) -> None:
    identity = venv_identity("train/requirements.txt", "sha256:" + "0f" * 32)
    found = claim(context(tmp_path, "venv", identity, environment="candidate"), make_verdict("pass"))
    assert f"in the candidate environment: a venv from train/requirements.txt (sha256:{'0f' * 32}), on " in found["text"]
    assert not any("not rebuilt" in item for item in found["not_covered"])


def test_without_a_realized_environment_the_claim_says_none(tmp_path: Path) -> None:
    found = claim(context(tmp_path, None), make_verdict("fail", "artifacts"))
    assert "Rebuilt in no realized environment, on " in found["text"]


def test_a_failure_says_not_reproduced_and_names_the_first_failing_stage(tmp_path: Path) -> None:
    verdict = make_verdict("fail", "model-state")
    verdict["stages"][8]["detail"] = "head.weight differs at step 12"
    found = claim(context(tmp_path, "current"), verdict)
    assert found["replayed"] is False
    assert found["text"].startswith(
        "tiny-markov-mlp was NOT reproduced: the first difference is at the model-state stage (head.weight differs at step 12)."
        " Rebuilt in reprogate's own Python environment, on CPU"
    )
    assert "replayed from" not in found["text"]
    assert not any(item.startswith("bitwise digests") for item in found["compared"]), "a failed model-state comparison is not listed as compared"


@pytest.mark.parametrize(("code", "why"), [(2, "a problem with the input or the environment it declares"), (3, "an infrastructure failure")])
def test_a_rebuild_stopped_before_any_comparison_is_not_called_a_difference(tmp_path: Path, code: int, why: str) -> None:
    verdict = make_verdict("fail", "digest", infrastructure=code == 3)
    verdict["exit_code"] = code
    found = claim(context(tmp_path, "venv", realized_one=False), verdict)
    assert found["text"] == f"tiny-markov-mlp could not be rebuilt, so nothing was compared: the digest stage stopped it with {why} (digest fail)."
    assert "NOT reproduced" not in found["text"] and "None" not in found["text"]


def test_a_venv_that_could_not_be_made_is_not_named_by_a_missing_lock(tmp_path: Path) -> None:
    found = claim(context(tmp_path, "venv", realized_one=False), make_verdict("fail", "digest"))
    assert "a venv that could not be made" in found["text"] and "None" not in found["text"]


def test_an_image_that_could_not_be_had_is_not_named_by_a_missing_id(tmp_path: Path) -> None:
    """The digest stage failed (the registry lost the pinned digest): no image ID to shorten."""
    found = claim(context(tmp_path, "container", realized_one=False), make_verdict("fail", "digest"))
    assert "Rebuilt in the reference environment: an image that could not be had, on " in found["text"], found["text"]
    assert "?" not in found["text"] and "()" not in found["text"]


def test_what_was_compared_follows_the_stages_that_passed(tmp_path: Path) -> None:
    verdict = make_verdict("pass")
    found = claim(context(tmp_path), verdict)
    assert found["compared"][:2] == ["input batch digests of steps 1-80", "bitwise digests of model_state, head.weight"]
    assert "Compared: input batch digests of steps 1-80; bitwise digests of model_state, head.weight." in found["text"]
    for stage in verdict["stages"]:
        if stage["name"] in ("batches", "model-state"):
            stage["status"] = "skipped"
    found = claim(context(tmp_path), verdict)
    assert found["compared"] == [] and "Compared: the run started and reached its steps." in found["text"]


def test_a_resumed_run_compares_the_steps_after_its_checkpoint(tmp_path: Path) -> None:
    record = copy.deepcopy(RECORD)
    record["contract"]["steps"] = {"start": 40, "count": 10}
    found = claim(context(tmp_path, record=record), make_verdict("pass"))
    assert found["compared"][0] == "input batch digests of steps 41-50"
    assert "steps after 50 were not compared" in found["not_covered"]


def test_step_tests_are_described_with_their_tolerance(tmp_path: Path) -> None:
    verdict = make_verdict("pass")
    verdict["tests"] = [
        {"test": "exact step values", "quantities": ["loss", "grad_norm"], "abs": 0.0, "rel": 0.0, "compared": 160, "passed": True},
        {"test": "step tolerance", "quantities": ["loss"], "abs": 1e-6, "rel": 0.001, "compared": 160, "passed": True},
    ]
    compared = claim(context(tmp_path), verdict)["compared"]
    assert "loss/grad_norm exactly at 160 (step, rank) points" in compared
    assert "loss within 1e-06 + 0.001*|ref| at 160 (step, rank) points" in compared


def test_a_prediction_interval_is_described_with_its_level_bounds_and_n(tmp_path: Path) -> None:
    verdict = make_verdict("pass")
    verdict["tests"] = [
        {
            "test": "t prediction interval (one rebuild seed)",
            "metric": "val_loss",
            "alpha": 0.05,
            "n": 5,
            "m": 1,
            "interval": [0.951032201, 0.9776556814],
            "value": 0.962,
            "passed": True,
        }
    ]
    compared = claim(context(tmp_path), verdict)["compared"]
    assert compared[-1] == "val_loss against its predeclared 95 % prediction interval [0.951032, 0.977656] (t-based, n=5 reference seeds, m=1)"


def test_a_prediction_interval_level_is_not_rounded_away(tmp_path: Path) -> None:
    verdict = make_verdict("pass")
    verdict["tests"] = [
        {"test": "t prediction interval (one rebuild seed)", "metric": "val_loss", "alpha": 0.025, "n": 8, "m": 1, "interval": [1.0, 2.0], "passed": True}
    ]
    assert "val_loss against its predeclared 97.5 % prediction interval" in claim(context(tmp_path), verdict)["compared"][-1]


def test_a_welch_tost_is_described_with_its_margin_alpha_n_and_m(tmp_path: Path) -> None:
    verdict = make_verdict("pass")
    verdict["tests"] = [
        {
            "test": "Welch TOST equivalence",
            "metric": "val_loss",
            "equivalent": True,
            "difference": 0.001,
            "ci_low": -0.01,
            "ci_high": 0.012,
            "p_value": 0.001,
            "df": 6.3,
            "alpha": 0.05,
            "margin": 0.1,
            "n": 5,
            "m": 3,
            "passed": True,
            "values": [0.96, 0.97, 0.95],
        }
    ]
    assert claim(context(tmp_path), verdict)["compared"][-1] == "val_loss by Welch TOST within ±0.1 (α=0.05, n=5, m=3)"


def test_the_machine_names_the_cpu_kernels_and_gpus(tmp_path: Path) -> None:
    text = claim(context(tmp_path, machine={**MACHINE, "cpu_capability": "default", "mkl_cbwr": "COMPATIBLE"}), make_verdict("pass"))["text"]
    assert "on CPU (x86_64, torch CPU kernels default, MKL_CBWR COMPATIBLE), Linux 6.1" in text
    text = claim(context(tmp_path, machine={**MACHINE, "gpu_models": ["NVIDIA H100 80GB HBM3"], "backend": "nccl"}), make_verdict("pass"))["text"]
    assert "on NVIDIA H100 80GB HBM3 (x86_64), Linux 6.1, torch 2.13.0, 2 rank(s) over nccl" in text


def test_the_limits_name_container_retention_lifetime_and_envelope(tmp_path: Path) -> None:
    record = copy.deepcopy(RECORD)
    record["container"] = {"used": False, "reason": "runs where reprogate is installed"}
    record["dataset"] = {"inline": {"retention": {"expires": "2027-06-30"}}}
    record["contract"]["lifetime"] = {"expires": "2027-12-31"}
    limits = claim(context(tmp_path, "venv", venv_identity("requirements.txt", "sha256:00"), record=record), make_verdict("pass"))["not_covered"]
    assert "no container: runs where reprogate is installed" in limits
    assert "exact reproduction expires with the dataset's retention on 2027-06-30" in limits
    assert "the contract holds until 2027-12-31" in limits
    assert "hardware and software outside the envelope (GPUs none: CPU only, framework torch 2.13, world sizes [2])" in limits


def test_the_retention_of_a_manifest_file_is_read_from_the_repository(tmp_path: Path) -> None:
    (tmp_path / "data.manifest.yaml").write_text("retention: {expires: '2028-01-01'}\n")
    record = copy.deepcopy(RECORD)
    record["dataset"] = {"manifest": {"path": "data.manifest.yaml", "digest": "canonical-v1:sha256:" + "0" * 64}}
    assert (
        "exact reproduction expires with the dataset's retention on 2028-01-01" in claim(context(tmp_path, record=record), make_verdict("pass"))["not_covered"]
    )
    record["dataset"] = {"manifest": {"path": "missing.manifest.yaml"}}
    assert not any("retention" in item for item in claim(context(tmp_path, record=record), make_verdict("pass"))["not_covered"])


def _name_digest(name: str) -> str:
    return "sha256:" + hashlib.sha256(name.encode()).hexdigest()


def test_a_placement_like_the_reference_adds_no_topology_limit(tmp_path: Path) -> None:
    record = copy.deepcopy(RECORD)
    record["host"] = {"hostname_sha256": _name_digest("node-a")}
    record["execution"]["rank_mapping"] = [{"rank": 0, "node": 0, "local_rank": 0}, {"rank": 1, "node": 0, "local_rank": 1}]
    found = claim(context(tmp_path, record=record, machine={**MACHINE, "placement": {"0": "node-a", "1": "node-a"}}), make_verdict("pass"))
    assert not any(item.startswith("topology changed") for item in found["not_covered"])
    assert "; ranks on 1 node(s) (rank 0 on node-a, rank 1 on node-a), started by local" in found["text"]
    assert found["placement"] == {
        "nodes": ["node-a"],
        "ranks": [{"rank": 0, "node": "node-a", "node_index": 0}, {"rank": 1, "node": "node-a", "node_index": 0}],
        "ranks_per_node": {"node-a": 2},
        "changes": [],
    }


def test_a_placement_that_differs_lists_the_topology_changes(tmp_path: Path) -> None:
    record = copy.deepcopy(RECORD)
    record["host"] = {"hostname_sha256": _name_digest("reference-node")}
    record["execution"]["rank_mapping"] = [{"rank": 0, "node": 0}, {"rank": 1, "node": 0}]
    found = claim(context(tmp_path, record=record, machine={**MACHINE, "placement": {0: "node-a", 1: "node-b"}, "launcher": "slurm"}), make_verdict("pass"))
    assert "topology changed against the reference: rank-remap, node-change (rank 1 ran on node 1 (node-b), the reference's on node 0)" in found["not_covered"]
    assert "ranks on 2 node(s) (rank 0 on node-a, rank 1 on node-b), started by slurm" in found["text"]
    assert found["placement"]["changes"] == ["rank-remap", "node-change"]
    assert found["placement"]["ranks_per_node"] == {"node-a": 1, "node-b": 1}


def test_without_a_placement_the_claim_has_none(tmp_path: Path) -> None:
    found = claim(context(tmp_path), make_verdict("pass"))
    assert "placement" not in found and "ranks on" not in found["text"]


def test_the_claim_is_valid_where_the_verdict_schema_puts_it(tmp_path: Path) -> None:
    from jsonschema import Draft202012Validator

    record = copy.deepcopy(RECORD)
    record["host"] = {"hostname_sha256": _name_digest("elsewhere")}
    ctx = context(tmp_path, record=record, machine={**MACHINE, "placement": {0: "node-a", 1: "node-a"}})
    for verdict in (make_verdict("pass"), make_verdict("fail", "steps")):
        verdict["claim"] = claim(ctx, verdict)
        assert not list(Draft202012Validator(load_schema("Verdict")["properties"]["claim"]).iter_errors(verdict["claim"]))


def test_a_two_sample_t_is_described_with_its_false_fail_rate_power_and_seeds(tmp_path: Path) -> None:
    verdict = make_verdict("pass")
    verdict["tests"] = [
        {
            "test": "two-sample t on the means (pooled, two-sided)",
            "metric": "val_loss",
            "alpha": 0.05,
            "n": 5,
            "m": 3,
            "difference": 0.001,
            "limit": 0.0081,
            "passed": True,
            "seeds": [11, 12, 13],
            "seed_source": "fresh",
            "power": {"sigma": 0.0044, "minimum_detectable_shift": 0.0108, "at_power": 0.8, "shift": 0.0193, "power": 0.9962},
        }
    ]
    found = claim(context(tmp_path), verdict)
    assert found["compared"][-1] == (
        "val_loss by a two-sided two-sample t on the means, |difference| within 0.0081 (pooled, α=0.05 false-fail rate, n=5, m=3; "
        "catches a shift of 0.0108 with 80 % power, the declared 0.0193 with 99.62 %); metric judged on fresh seed(s) 11, 12, 13, "
        "none of which the reference ran (drawn from the judging contract's digest)"
    )
    assert not any("fresh seed(s)" in limit for limit in found["not_covered"])
