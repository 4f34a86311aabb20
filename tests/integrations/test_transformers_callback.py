"""The Hugging Face Trainer with `callbacks=[ReprogateCallback()]`, through init and rebuild.

The example (examples/transformers) is a one-layer GPT-2 built from a config (no download) on a
character dataset, run as `torchrun --nproc-per-node 2 train.py --lr ... --steps ...`: two gloo
CPU ranks under the Trainer's own DDP. init makes the reference, the rebuild reproduces it
bitwise, and a pull request that changes the learning rate is diagnosed at `config`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from click.testing import Result
from support import git
from support.examples import initialized, load_record, reference_events, repin_flag, require_module, stage, traced_steps, verdict

Cli = Callable[..., Result]
ENTRYPOINT = "torchrun --nproc-per-node 2 train.py --lr 3e-3 --steps 4"


def test_trainer_callback_traces_rebuilds_and_an_lr_change_fails_at_config(cli: Cli, tmp_path: Path) -> None:
    require_module("transformers")
    require_module("accelerate")
    repo = initialized(tmp_path, "transformers", "--entrypoint", ENTRYPOINT, "--seeds", "1,2")
    record = load_record(repo)
    assert record["job"]["entrypoint"] == ENTRYPOINT.split() and record["execution"]["world_size"] == 2, "torchrun's 2 ranks are the world size"
    assert record["job"]["config"]["argv"] == ["--lr", "3e-3", "--steps", "4"]
    assert record["contract"]["level"] == "bitwise" and record["contract"]["metric"]["name"] == "eval_loss"
    assert [v["seed"] for v in record["reference"]["metric"]["values"]] == [1, 2]

    events = reference_events(repo)
    metas = [e for e in events if e["type"] == "meta"]
    assert sorted(m["rank"] for m in metas) == [0, 1] and all(m["framework"] == "transformers" for m in metas)
    assert all(m["seed"] == 1 for m in metas), "TrainingArguments.seed came from REPROGATE_SEED"
    assert all(m["determinism"]["deterministic_algorithms"] for m in metas), "full_determinism for the bitwise contract"
    steps = traced_steps(events)
    assert sorted((e["step"], e["rank"]) for e in steps) == [(s, r) for s in range(1, 5) for r in (0, 1)], "every step of every rank"
    for event in steps:
        assert {"batch", "loss", "lr", "model_state"} <= set(event) and "grad_norm" in event["metrics"], event
        assert set(event["tensors"]) == {"transformer.wte.weight", "transformer.h.0.mlp.c_fc.weight"}
    by_rank = {(e["step"], e["rank"]): e for e in steps}
    assert by_rank[(1, 0)]["batch"] != by_rank[(1, 1)]["batch"], "each rank digests its own shard of the data"
    assert by_rank[(1, 0)]["model_state"] == by_rank[(1, 1)]["model_state"], "DDP keeps the ranks' models equal"
    assert [e["name"] for e in events if e["type"] == "metric"] == ["eval_loss"]

    rebuilt = cli("rebuild", "records/train.yaml", "--out", str(tmp_path / "pass"), cwd=repo)
    assert rebuilt.exit_code == 0, rebuilt.output
    assert all(stage(verdict(tmp_path / "pass"), name)["status"] == "pass" for name in ("batches", "model-state", "steps", "metric"))

    base = git(repo, "rev-parse", "HEAD")
    repin_flag(repo, "--lr", "3e-3", "1e-2")  # the pull request: another learning rate, re-pinned in the head's record
    judged = cli("rebuild", "records/train.yaml", "--contract-from", base, "--out", str(tmp_path / "lr"), cwd=repo)
    assert judged.exit_code == 1, judged.output
    found = verdict(tmp_path / "lr")
    assert found["diagnosis"] == "config" and "--lr 3e-3 -> 1e-2" in stage(found, "config")["detail"]
    assert stage(found, "run")["status"] == "not-run"
