"""`reprogate preflight`, `rebuild`, `interval`, `compare` and `report`."""

from __future__ import annotations

from pathlib import Path

import click

from reprogate.cli.common import finish, format_option


@click.command()
@click.option(
    "--world-size",
    type=click.IntRange(min=1),
    default=None,
    help="Local ranks to start (default: one per GPU, or 2 on a CPU). Ignored under torchrun, which sets WORLD_SIZE.",
)
@click.option("--backend", type=click.Choice(["gloo", "nccl"]), default=None, help="Collective backend (default: nccl with GPUs, else gloo).")
@click.option("--timeout", type=click.FloatRange(min=0.5), default=30.0, show_default=True, help="Seconds each stage may take.")
@click.option("--record", type=click.Path(dir_okay=False, exists=True, path_type=Path), default=None, help="Run record whose GPU UUIDs must be present.")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), default=None, help="Write the JSON result here (store it with the run).")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True, help="What to print.")
def preflight(world_size: int | None, backend: str | None, timeout: float, record: Path | None, output: Path | None, fmt: str) -> None:
    """Prove GPUs, framework op, process group and a tiny collective work."""
    from reprogate.rebuild.command import PreflightOptions, preflight_command

    finish(lambda: preflight_command(PreflightOptions(world_size, backend, timeout, record), output, fmt), fmt, "preflight")


@click.command()
@click.argument("record", type=click.Path(dir_okay=False, exists=True, path_type=Path))
@click.option(
    "--workdir", type=click.Path(file_okay=False, path_type=Path), default=None, help="Empty folder to rebuild in (kept afterwards); default a temporary one."
)
@click.option(
    "--out",
    "output_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Where verdict.json, report.md and rebuild-record.yaml are written: a folder that does not exist yet (or is empty), "
    "outside the checkout. Default: a new folder under $RUNNER_TEMP (or the temporary folder); its path is printed.",
)
@click.option(
    "--nonce",
    envvar="REPROGATE_NONCE",
    default=None,
    help="The nonce of the gate's dispatch (workflow input `nonce`), written into the verdict; `github status` accepts only a verdict with it.",
)
@click.option("--steps", type=click.IntRange(min=1), default=None, help="Compare at most this many steps (the entrypoint sees REPROGATE_MAX_STEPS).")
@click.option(
    "--seeds",
    type=click.IntRange(min=1, max=200),
    default=None,
    help="Runs (default: the contract's metric.rebuild_seeds, else 1): fresh seeds the metric is judged on (a bitwise or behavioral "
    "contract's first run replays the trace's seed); 1 uses the predeclared interval, 2+ the two-sample t. "
    "`reprogate interval RECORD --plan` says how many a shift needs.",
)
@click.option("--world-size", type=click.IntRange(min=1), default=None, help="Ranks to run (default the record's); must be inside the envelope.")
@click.option(
    "--environment",
    type=click.Choice(["reference", "candidate"]),
    default="reference",
    show_default=True,
    help="Realize what the record pins (reference) or what the checked-out tree declares (candidate: the pull request's lock file or Dockerfile).",
)
@click.option(
    "--realizer",
    type=click.Choice(["container", "venv", "current"]),
    default=None,
    help="How to get the environment (default from the record: job.environment.realizer, else container, else venv).",
)
@click.option(
    "--launcher",
    type=click.Choice(["local", "slurm", "kubernetes"]),
    default=None,
    help="Where ranks start (default from the record's execution.scheduler_name, else local).",
)
@click.option("--image", default=None, help="Run this image instead of the record's (container realizer; verified by the engine).")
@click.option(
    "--dataset-root",
    default=None,
    metavar="DIR|URL",
    help="Read the manifest's shards here instead of at its namespace (a copy, e.g. one audit --retiring found); checked by the same checksums.",
)
@click.option("--cache", type=click.Path(file_okay=False, path_type=Path), default=None, help="Where realized venvs are cached (default ~/.cache/reprogate).")
@click.option("--timeout", type=click.FloatRange(min=1), default=900.0, show_default=True, help="Seconds each seed's run may take.")
@click.option(
    "--allow-unsandboxed",
    is_flag=True,
    help=(
        "Run a rebuild that runs code other than the base's (a candidate environment, the pull request's project tree or pins) "
        "even where bubblewrap cannot sandbox it (an ephemeral runner); the claim says so."
    ),
)
@click.option(
    "--allow-source-builds",
    is_flag=True,
    help="Let a candidate venv build source distributions its lock file names (default wheels only: their build code would run on the runner).",
)
@click.option(
    "--contract-from",
    default=None,
    metavar="REV",
    help="Judge by the record's contract, seeds and reference as REV has them (the pull request's base; the gate's dispatch names it).",
)
@click.option("--dry-run", is_flag=True, help="Write what the launcher would submit (--launcher kubernetes: the manifests, into --out) and run nothing.")
@click.option("-q", "--quiet", is_flag=True, help="No progress line on stderr (there is none when stderr is no terminal, or with --format github or json).")
@format_option()
def rebuild(
    record: Path,
    workdir: Path | None,
    output_dir: Path | None,
    nonce: str | None,
    steps: int | None,
    seeds: int | None,
    world_size: int | None,
    environment: str,
    realizer: str | None,
    launcher: str | None,
    image: str | None,
    dataset_root: str | None,
    cache: Path | None,
    timeout: float,
    allow_unsandboxed: bool,
    allow_source_builds: bool,
    contract_from: str | None,
    dry_run: bool,
    quiet: bool,
    fmt: str,
) -> None:
    """Run the rebuild drill: stages in order, verdict, report and rebuild record."""
    from reprogate.rebuild.command import RebuildOptions, rebuild_command

    options = RebuildOptions(
        workdir=workdir,
        steps=steps,
        seeds=seeds,
        world_size=world_size,
        image=image,
        dataset_root=dataset_root,
        timeout=timeout,
        environment=environment,
        realizer=realizer,
        launcher=launcher,
        cache=cache,
        dry_run=dry_run,
        nonce=nonce,
        allow_unsandboxed=allow_unsandboxed,
        allow_source_builds=allow_source_builds,
        contract_from=contract_from,
    )
    finish(lambda: rebuild_command(record, options, output_dir, fmt, quiet), fmt, "rebuild")


@click.command()
@click.argument("record", type=click.Path(dir_okay=False, exists=True, path_type=Path))
@click.option("--alpha", type=float, default=None, help="Override contract.metric.alpha (a number in (0, 0.5]).")
@click.option(
    "--plan",
    "show_plan",
    is_flag=True,
    help=(
        "Print, for each number of reference and rebuild seeds, the shift caught and its GPU-hours, and the cheapest that catches "
        "the declared shift; the record is left unchanged."
    ),
)
@click.option("--gpu-hour-cost", type=float, default=None, help="With --plan: the price of one GPU-hour (any currency); the plan prices each rebuild with it.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True, help="With --plan: text for people, json for tools.")
def interval(record: Path, alpha: float | None, show_plan: bool, gpu_hour_cost: float | None, fmt: str) -> None:
    """Compute and store the seed-aware interval in a record, or plan the seeds a shift needs."""
    from reprogate.rebuild.command import interval_command, plan_command

    if show_plan:
        finish(lambda: plan_command(record, alpha, gpu_hour_cost, fmt), fmt, "interval")
    else:
        finish(lambda: interval_command(record, alpha), "text", "interval")


@click.command()
@click.argument("reference", type=click.Path(dir_okay=False, exists=True, path_type=Path))
@click.argument("rebuilt", nargs=-1, required=True, type=click.Path(dir_okay=False, exists=True, path_type=Path))
@click.option(
    "--tolerance", "tolerance", nargs=2, type=float, default=None, metavar="ABS REL", help="Compare losses within |a-b| <= ABS + REL*|b| (default: exactly)."
)
@click.option("--tensors", default="model_state", show_default=True, help="Comma-separated tensors compared bitwise (empty: none).")
@click.option("--first", type=int, default=1, show_default=True, help="First step compared.")
@click.option("--last", type=int, default=None, help="Last step compared (default: all).")
def compare(reference: Path, rebuilt: tuple[Path, ...], tolerance: tuple[float, float] | None, tensors: str, first: int, last: int | None) -> None:
    """Compare a reference trace with a new trace (one file, or one per rank)."""
    from reprogate.rebuild.command import compare_command

    finish(lambda: compare_command(reference, list(rebuilt), tolerance, [t for t in tensors.split(",") if t], first, last), "text", "compare")


@click.command()
@click.argument("verdict", type=click.Path(dir_okay=False, exists=True, path_type=Path))
@click.option("--format", "fmt", type=click.Choice(["markdown", "json"]), default="markdown", show_default=True, help="Output form.")
def report(verdict: Path, fmt: str) -> None:
    """Render a verdict as Markdown or JSON with its bounded claim."""
    from reprogate.rebuild.command import report_command

    finish(lambda: report_command(verdict, fmt), "text", "report")
