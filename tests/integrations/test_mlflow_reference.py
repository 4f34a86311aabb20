"""A reference from a real MLflow tracking store: `reprogate init --from-mlflow`, then a rebuild.

The store is a sqlite database made by MLflow itself; the reference runs are the MLflow example
(examples/mlflow) run by hand as a team runs them — three seeds, each logging its flags, its
validation loss, the git commit and its trace — and init makes the record from the store without
running anything. The rebuild then reproduces the logged trace bitwise. What the store cannot
fill is refused with exit 2, naming the run and what is missing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import Result
from support import git
from support.examples import example_repository, load_record, require_module, stage, verdict

Cli = Callable[..., Result]
FLAGS = ["--lr", "0.01", "--steps", "8"]
ENTRYPOINT = "python train.py " + " ".join(FLAGS)
EXPERIMENT = "char-mlp"


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A repository with the example committed, and a sqlite tracking store holding its three
    reference runs (seeds 1, 2, 3), made by running the script with MLFLOW_TRACKING_URI."""
    require_module("mlflow")
    require_module("sqlalchemy")
    from mlflow import MlflowClient

    tmp = tmp_path_factory.mktemp("mlflow")
    repo = example_repository(tmp, "mlflow")
    uri = f"sqlite:///{tmp / 'mlflow.db'}"
    client = MlflowClient(tracking_uri=uri)
    client.create_experiment(EXPERIMENT, artifact_location=(tmp / "artifacts").as_uri())
    env = {**os.environ, "MLFLOW_TRACKING_URI": uri, "MLFLOW_EXPERIMENT_NAME": EXPERIMENT}
    env.pop("REPROGATE_SEED", None)
    env.pop("REPROGATE_TRACE_DIR", None)
    for seed in (1, 2, 3):
        done = subprocess.run(
            [sys.executable, "train.py", "--seed", str(seed), *FLAGS], cwd=repo / "train", env=env, capture_output=True, text=True, timeout=600
        )
        assert done.returncode == 0, done.stderr[-3000:]
    runs = client.search_runs([client.get_experiment_by_name(EXPERIMENT).experiment_id], order_by=["attributes.start_time ASC"])
    return {"repo": repo, "uri": uri, "client": client, "runs": [r.info.run_id for r in runs], "tmp": tmp}


def _fake_run(store: dict[str, Any], params: dict[str, str], metrics: dict[str, float]) -> str:
    """A run logged straight through MLflow's client, as another tool would: no training."""
    client = store["client"]
    run = client.create_run(client.get_experiment_by_name(EXPERIMENT).experiment_id, tags={"mlflow.source.git.commit": git(store["repo"], "rev-parse", "HEAD")})
    for key, value in params.items():
        client.log_param(run.info.run_id, key, value)
    for key, value in metrics.items():
        client.log_metric(run.info.run_id, key, value)
    client.set_terminated(run.info.run_id)
    return str(run.info.run_id)


def test_init_from_mlflow_makes_a_record_that_rebuilds(cli: Cli, store: dict[str, Any], tmp_path: Path) -> None:
    repo, client = store["repo"], store["client"]
    made = cli(
        "init",
        "train",
        "--from-mlflow",
        store["runs"][0],
        "--from-mlflow",
        store["runs"][1],
        "--from-mlflow",
        store["runs"][2],
        "--tracking-uri",
        store["uri"],
        "--entrypoint",
        ENTRYPOINT,
        "-y",
        cwd=repo,
    )
    assert made.exit_code == 0, made.output
    assert "the reference was imported from MLflow" in made.output
    record = load_record(repo)
    logged = {int(client.get_run(r).data.params["seed"]): client.get_run(r).data.metrics["val_loss"] for r in store["runs"]}
    assert record["reference"]["metric"] == {"name": "val_loss", "values": [{"seed": s, "value": logged[s]} for s in (1, 2, 3)]}, "final metrics per seed"
    assert record["seeds"]["global"] == 1 and record["contract"]["metric"]["interval"]["n"] == 3
    assert record["source"]["commit"] == client.get_run(store["runs"][0]).data.tags["mlflow.source.git.commit"] == git(repo, "rev-parse", "HEAD")
    assert record["host"]["present"] is False and record["devices"]["present"] is False, "the store does not say, so the record does not guess"
    assert record["job"]["config"]["argv"] == FLAGS
    trace = [json.loads(line) for line in (repo / "reference" / "train" / "trace.jsonl").read_text().splitlines()]
    assert next(e for e in trace if e["type"] == "meta")["seed"] == 1, "the logged trace of seed 1's run"
    # --seeds 1: the trace seed's replay only. The fresh seeds a rebuild draws follow the record's
    # digest, which holds MLflow's random run ids, so a test of them would fail α of its runs.
    rebuilt = cli("rebuild", "records/train.yaml", "--seeds", "1", "--out", str(tmp_path / "out"), cwd=repo)
    assert rebuilt.exit_code == 0, rebuilt.output
    assert stage(verdict(tmp_path / "out"), "model-state")["status"] == "pass"


def test_runs_found_by_experiment_and_filter(cli: Cli, store: dict[str, Any], tmp_path: Path) -> None:
    repo = store["repo"]
    found = cli(
        "init",
        "train",
        "--record",
        "records/filtered.yaml",
        "--name",
        "filtered",
        "--mlflow-experiment",
        EXPERIMENT,
        "--mlflow-filter",
        "params.lr = '0.01' and params.seed != '3'",
        "--tracking-uri",
        store["uri"],
        "--entrypoint",
        ENTRYPOINT,
        "-y",
        cwd=repo,
    )
    assert found.exit_code == 0, found.output
    record = yaml.safe_load((repo / "records" / "filtered.yaml").read_text())
    assert [v["seed"] for v in record["reference"]["metric"]["values"]] == [1, 2]


def _refused(cli: Cli, store: dict[str, Any], *args: str) -> str:
    result = cli("init", "train", "--name", "refused", "--tracking-uri", store["uri"], "--entrypoint", ENTRYPOINT, "-y", *args, cwd=store["repo"])
    assert result.exit_code == 2, result.output
    assert not (store["repo"] / "records" / "refused.yaml").exists()
    return result.output


def test_what_the_store_cannot_fill_is_refused_naming_the_run(cli: Cli, store: dict[str, Any]) -> None:
    client, first = store["client"], store["runs"][0]
    params = dict(client.get_run(first).data.params)
    no_seed = _fake_run(store, {k: v for k, v in params.items() if k != "seed"}, {"val_loss": 1.0})
    said = _refused(cli, store, "--from-mlflow", first, "--from-mlflow", no_seed)
    assert f"run {no_seed} has no parameter 'seed'" in said
    no_metric = _fake_run(store, {**params, "seed": "7"}, {"train_loss": 1.0})
    said = _refused(cli, store, "--from-mlflow", first, "--from-mlflow", no_metric)
    assert f"run {no_metric} (seed 7) logged no metric 'val_loss'" in said
    other_lr = _fake_run(store, {**params, "seed": "8", "lr": "0.02"}, {"val_loss": 1.0})
    said = _refused(cli, store, "--from-mlflow", first, "--from-mlflow", other_lr)
    assert "differ in parameter 'lr'" in said and other_lr in said
    untraced = _fake_run(store, {**params, "seed": "9"}, {"val_loss": 1.0})
    said = _refused(cli, store, "--from-mlflow", untraced)
    assert f"run {untraced} (seed 9, the one a rebuild replays) logged no trace" in said
    relabelled = _fake_run(store, {**params, "seed": "5"}, {"val_loss": 1.0})  # seed 1's trace, logged as seed 5's
    trace = store["tmp"] / "seed-1-trace"
    trace.mkdir()
    store["client"].download_artifacts(first, "reprogate", str(trace))
    for path in sorted((trace / "reprogate").glob("trace-rank*.jsonl")):
        store["client"].log_artifact(relabelled, str(path), "reprogate")
    said = _refused(cli, store, "--from-mlflow", relabelled)
    assert f"run {relabelled} logged seed=5, and its trace's meta (rank 0) says seed 1" in said
    said = _refused(cli, store, "--from-mlflow", first, "--entrypoint", "python train.py --lr 0.05 --steps 8")
    assert "the entrypoint says --lr 0.05" in said and "lr=0.01" in said
    extra = store["repo"] / "train" / "notes.txt"  # the project folder is no longer what the runs were made from
    extra.write_text("changed after the reference runs\n")
    try:
        said = _refused(cli, store, "--from-mlflow", first)
    finally:
        extra.unlink()
    assert "the runs were made at commit" in said and "the folder here is tree" in said and "added: notes.txt" in said
    store_inside = store["repo"] / "train" / "mlruns" / "0" / "meta.yaml"  # MLflow's default artifact root, made inside the project
    store_inside.parent.mkdir(parents=True)
    store_inside.write_text("artifact_location: mlruns/0\n")
    try:
        said = _refused(cli, store, "--from-mlflow", first)
    finally:
        subprocess.run(["rm", "-rf", str(store["repo"] / "train" / "mlruns")], check=True)
    assert "added: mlruns/0/meta.yaml" in said and "keep MLflow's store and artifacts outside train/ (they are in mlruns/)" in said
    said = _refused(cli, store, "--from-mlflow", "0" * 32)
    assert "0" * 32 in said
    said = _refused(cli, store, "--from-mlflow", first, "--from-mlflow", store["runs"][1], "--from-mlflow", first)
    assert f"run {first} is listed twice" in said, "not a record of fewer seeds than were named"
    twin = _fake_run(store, dict(params), {"val_loss": 1.0})  # seed 1 again
    said = _refused(cli, store, "--from-mlflow", first, "--from-mlflow", twin)
    assert f"runs {first} and {twin} logged the same seed 1" in said
    typo = store["tmp"] / "no-such" / "mlflow.db"
    said = _refused(cli, store, "--from-mlflow", first, "--tracking-uri", f"sqlite:///{typo}")
    assert f"there is no {typo}" in said and not typo.parent.exists(), "MLflow would have made an empty store there"


def test_a_second_init_of_the_same_runs_takes_the_manifest_the_first_wrote(tmp_path: Path) -> None:
    """The first init writes the dataset manifest into the project folder after checking it
    against the runs' commit; a second one (--force, to add a seed) must not refuse that folder
    for it, and must still refuse anything else that differs, naming it."""
    from reprogate.integrations.mlflow import LoggedRun, MlflowReferenceError, _commit

    repo = tmp_path / "repo"
    (repo / "train" / "data").mkdir(parents=True)
    (repo / "train" / "train.py").write_text("print('train')\n")
    (repo / "train" / "data" / "train.txt").write_text("abc\n")
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "the runs' commit")
    commit = git(repo, "rev-parse", "HEAD")
    runs = [LoggedRun("r1", 1, {}, {}, commit, ())]
    manifest = repo / "train" / "data" / "data.manifest.yaml"
    manifest.write_text("apiVersion: reprogate/v1\n")
    with pytest.raises(MlflowReferenceError, match="added: data/data.manifest.yaml"):
        _commit(runs, repo / "train", repo)
    found, notes = _commit(runs, repo / "train", repo, manifest)
    assert found == commit and "but for the dataset manifest data/data.manifest.yaml" in notes[0]
    (repo / "train" / "train.py").write_text("print('changed')\n")
    with pytest.raises(MlflowReferenceError, match="changed: train.py; added: data/data.manifest.yaml"):
        _commit(runs, repo / "train", repo, manifest)
