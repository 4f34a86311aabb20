"""`reprogate init`: options, and prompts for what was not given when a person is at a terminal."""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from reprogate.cli.common import finish
from reprogate.core.levels import LEVELS as CONTRACT_LEVELS

if TYPE_CHECKING:
    from reprogate.init.command import InitOptions
    from reprogate.output.result import CommandResult

LEVELS = click.Choice(CONTRACT_LEVELS)


def _seeds(text: str) -> list[int]:
    try:
        return [int(part) for part in text.replace(" ", "").split(",") if part]
    except ValueError:
        raise click.BadParameter(f"{text!r}: write integers separated by commas, e.g. 1,2,3", param_hint="--seeds") from None


def _finite(value: float | None, name: str) -> float | None:
    """click's FloatRange lets nan and inf through; a grid or margin of either means nothing."""
    import math

    if value is not None and not math.isfinite(value):
        raise click.BadParameter(f"{value!r}: write a finite number", param_hint=name)
    return value


def _detect(text: str) -> dict[str, float]:
    """`0.01` (the metric's units) or `2%` (a share of the reference mean)."""
    import math

    relative = text.strip().endswith("%")
    try:
        value = float(text.strip().rstrip("%").strip())
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value <= 0:
        raise click.BadParameter(f"{text!r}: write a positive number (0.01) or a share (2%)", param_hint="--detect")
    return {"relative": value / 100} if relative else {"absolute": value}


def _env(pairs: tuple[str, ...]) -> dict[str, str]:
    out = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise click.BadParameter(f"{pair!r}: write NAME=VALUE", param_hint="--env")
        out[name] = value
    return out


@click.command()
@click.argument("project", required=False, type=click.Path(file_okay=False, exists=True, path_type=Path), default=Path("."))
@click.option(
    "--record",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Where to write the record (default records/NAME.yaml at the repository root, outside PROJECT).",
)
@click.option("--name", default=None, help="The record's name (default the project folder's name).")
@click.option("--entrypoint", default=None, help="The command every rank runs, from PROJECT (default: python train.py [--config ...] if found).")
@click.option(
    "--config",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="The configuration file whose canonical hash is pinned (default: the one found in PROJECT); relative to PROJECT like the "
    "entrypoint, else to the current folder.",
)
@click.option(
    "--data",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="The data folder: its manifest is built (default: PROJECT/data if present); relative to PROJECT, else to the current folder.",
)
@click.option(
    "--manifest",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="The dataset manifest to pin (with --data: where to write it; default DATA/NAME.manifest.yaml).",
)
@click.option("--no-dataset", metavar="REASON", default=None, help="The run reads no dataset file (generated data): say why.")
@click.option("--level", type=LEVELS, default=None, help="The contract level (default bitwise when the trace digests the model state, else behavioral).")
@click.option("--seeds", "seeds_text", default=None, help="Reference seeds, comma-separated; the first is the rebuild's (default 1,2,3).")
@click.option("--world-size", type=click.IntRange(min=1), default=None, help="Ranks of the reference run, on this machine (default 1).")
@click.option("--metric", default=None, help="The evaluation metric the contract judges (default: the one the trace reports).")
@click.option("--direction", type=click.Choice(["lower", "higher"]), default="lower", show_default=True, help="Which way the metric is better.")
@click.option(
    "--fail-on",
    type=click.Choice(["any", "worse"]),
    default="any",
    show_default=True,
    help="worse: the metric's test is one-sided, only a rebuild worse than the reference (in --direction) fails; any: two-sided.",
)
@click.option("--tensors", default="model_state", show_default=True, help="Tensors a bitwise contract compares, comma-separated.")
@click.option(
    "--resolution",
    type=click.FloatRange(min=0),
    default=None,
    callback=lambda _ctx, _param, value: _finite(value, "--resolution"),
    help="The metric's evaluation grid (1/N for accuracy on N examples; default: the grid the reference values sit on, else 0).",
)
@click.option(
    "--detect",
    "detect_text",
    default=None,
    metavar="SHIFT",
    help="The shift of the metric the verdict must catch: a number (metric units) or a share like 2% (default: what 3 rebuild seeds catch).",
)
@click.option(
    "--margin",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    callback=lambda _ctx, _param, value: _finite(value, "--margin"),
    help="Judge several seeds by Welch TOST within this margin (test: equivalence).",
)
@click.option(
    "--realizer",
    type=click.Choice(["venv", "container", "current"]),
    default=None,
    help="The environment the reference runs in (default venv with a lock file, container with --image, else current).",
)
@click.option("--image", default=None, help="The image the reference runs in, REF@sha256:... (container realizer).")
@click.option("--env", "env_pairs", multiple=True, metavar="NAME=VALUE", help="A behaviour-changing variable every rank gets (execution.env; repeatable).")
@click.option(
    "--portable-cpu",
    is_flag=True,
    help="Pin CPU kernels every x86-64 CPU runs (OMP_NUM_THREADS=1, ATEN_CPU_CAPABILITY=default, MKL_CBWR=COMPATIBLE, ONEDNN_MAX_CPU_ISA=SSE41 on x86).",
)
@click.option("--timeout", type=click.FloatRange(min=1), default=900.0, show_default=True, help="Seconds each seed's run may take.")
@click.option("--cache", type=click.Path(file_okay=False, path_type=Path), default=None, help="Where realized venvs are cached (default ~/.cache/reprogate).")
@click.option("--force", is_flag=True, help="Replace an existing record (its reference is made again).")
@click.option(
    "--from-mlflow",
    "mlflow_runs",
    multiple=True,
    metavar="RUN_ID",
    help="Make the record from these MLflow runs (one per seed; repeatable) instead of running the seeds (pip install 'reprogate[mlflow]').",
)
@click.option(
    "--mlflow-experiment", default=None, metavar="NAME", help="Instead of --from-mlflow run ids: make the record from the runs of this experiment ..."
)
@click.option("--mlflow-filter", default="", metavar="FILTER", help="... that match this MLflow search filter, e.g. \"params.lr = '0.01'\".")
@click.option("--tracking-uri", default=None, metavar="URI", help="The MLflow tracking store (default $MLFLOW_TRACKING_URI).")
@click.option("--mlflow-seed-param", default="seed", show_default=True, help="The run parameter that holds the seed.")
@click.option("--mlflow-trace-path", default="reprogate", show_default=True, help="The artifact folder the runs logged their trace-rank*.jsonl in.")
@click.option("-y", "--yes", "no_prompt", is_flag=True, help="Never prompt, even at a terminal (use what was found).")
@click.option("-q", "--quiet", is_flag=True, help="No progress line on stderr while the manifest is hashed and the reference runs.")
def init(
    project: Path,
    record: Path | None,
    name: str | None,
    entrypoint: str | None,
    config: Path | None,
    data: Path | None,
    manifest: Path | None,
    no_dataset: str | None,
    level: str | None,
    seeds_text: str | None,
    world_size: int | None,
    metric: str | None,
    direction: str,
    fail_on: str,
    tensors: str,
    resolution: float | None,
    detect_text: str | None,
    margin: float | None,
    realizer: str | None,
    image: str | None,
    env_pairs: tuple[str, ...],
    portable_cpu: bool,
    timeout: float,
    cache: Path | None,
    force: bool,
    mlflow_runs: tuple[str, ...],
    mlflow_experiment: str | None,
    mlflow_filter: str,
    tracking_uri: str | None,
    mlflow_seed_param: str,
    mlflow_trace_path: str,
    no_prompt: bool,
    quiet: bool,
) -> None:
    """Write a complete record: capture, manifest, config hash, reference seeds, interval."""
    from reprogate.init.command import InitOptions, run_init

    options = InitOptions(
        project=project,
        record=record,
        name=name,
        entrypoint=shlex.split(entrypoint) if entrypoint else None,
        config=config,
        data=data,
        manifest=manifest,
        no_dataset=no_dataset,
        level=level,
        seeds=_seeds(seeds_text) if seeds_text else [1, 2, 3],
        world_size=world_size,
        metric=metric,
        direction=direction,
        fail_on=fail_on,
        tensors=[t for t in tensors.split(",") if t],
        resolution=resolution,
        detect=_detect(detect_text) if detect_text else None,
        margin=margin,
        realizer=realizer,
        image=image,
        env=_env(env_pairs),
        portable_cpu=portable_cpu,
        timeout=timeout,
        cache=cache,
        force=force,
        quiet=quiet,
    )
    interactive = at_terminal() and not no_prompt and not (mlflow_runs or mlflow_experiment)

    def work() -> CommandResult:
        if interactive:
            _ask(
                options,
                given={
                    "entrypoint": entrypoint,
                    "config": config,
                    "data": data or manifest or no_dataset,
                    "seeds": seeds_text,
                    "world_size": world_size,
                    "level": level,
                },
            )
        if mlflow_runs or mlflow_experiment:
            _import_mlflow(options, mlflow_runs, mlflow_experiment, mlflow_filter, tracking_uri, mlflow_seed_param, mlflow_trace_path, seeds_text)
        return run_init(options)

    finish(work, "text", "init")


def _import_mlflow(
    options: InitOptions,
    runs: tuple[str, ...],
    experiment: str | None,
    filter_text: str,
    tracking_uri: str | None,
    seed_param: str,
    trace_path: str,
    seeds_text: str | None,
) -> None:
    """--from-mlflow: the seeds, metric and reference come from the tracking store."""
    from reprogate.integrations.mlflow import MlflowQuery, import_into

    import_into(
        options, MlflowQuery(tracking_uri or "", tuple(runs), experiment, filter_text, seed_param, options.metric, trace_path), seeds_given=bool(seeds_text)
    )


def at_terminal() -> bool:
    """Prompts only for a person at a terminal: a job, a pipe or CI gets none, and never waits."""
    return sys.stdin.isatty()


def _starts_its_ranks(entrypoint: list[str]) -> bool:
    """A torchrun entrypoint says its world size itself (--nproc-per-node)."""
    from reprogate.runtime.entry_command import EntryCommandError, read_entry

    try:
        return read_entry(entrypoint).launcher == "torchrun"
    except EntryCommandError:
        return False


def _ask(options: InitOptions, given: dict[str, object]) -> None:
    """Prompt for what was not given, offering what the project folder holds as the default."""
    from reprogate.init.command import discover, layout

    root, project, _, _ = layout(options)
    found = discover(project, root)

    def shown(path: Path | None) -> str:
        return os.path.relpath(path) if path is not None else ""

    if given["entrypoint"] is None:
        default = found.entrypoint(project)
        options.entrypoint = shlex.split(click.prompt("Entrypoint (run in the project folder by every rank)", default=shlex.join(default) if default else None))
    if given["config"] is None:
        answer = click.prompt("Configuration file (empty: the entrypoint's arguments are the configuration)", default=shown(found.config), show_default=True)
        options.config = Path(answer) if answer.strip() else None
    if given["data"] is None:
        answer = click.prompt("Data folder (empty: the run reads no dataset file)", default=shown(found.data), show_default=True)
        if answer.strip():
            options.data = Path(answer)
        else:
            options.no_dataset = "the run reads no dataset file (said at reprogate init)"
    if given["world_size"] is None and not _starts_its_ranks(options.entrypoint or found.entrypoint(project) or []):
        options.world_size = click.prompt("Ranks (world size) of the reference run", default=1, type=click.IntRange(min=1))
    if given["seeds"] is None:
        options.seeds = _seeds(click.prompt("Reference seeds (the first is the one a rebuild runs)", default="1,2,3"))
    if given["level"] is None:
        answer = click.prompt("Contract level (empty: bitwise if the trace digests the model state, else behavioral)", default="", show_default=False)
        options.level = answer.strip() or None
