"""Command line: parse arguments, call the module that does the work, print, set the exit code.

No logic lives here. Work modules are imported inside each command so `reprogate validate` on a
GitHub-hosted runner never pays for torch, NVML, scipy or requests.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from reprogate import __version__
from reprogate.diagnostics import ExitCode

FORMATS = click.Choice(["text", "json", "github"])


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, "--version", prog_name="reprogate")
def main() -> None:
    """Reproducible ML training runs as a release gate.

    Exit codes: 0 pass, 1 a check failed, 2 bad usage or unreadable input, 3 infrastructure
    (registry, API or device unreachable after retries).
    """


@main.command()
@click.argument("paths", nargs=-1)
@click.option("--format", "fmt", type=FORMATS, default="text", show_default=True, help="Output format.")
@click.option("--max-bytes", type=click.IntRange(min=1), default=None, help="Largest file read (default 16 MiB).")
@click.option("--root", type=click.Path(file_okay=False, exists=True, path_type=Path), default=None, help="Repository root for addressed paths (default: nearest folder with .reprogate.yaml or .git).")
@click.option("--strict", is_flag=True, help="Fail on warnings too (expired retention, dirty source without diff).")
@click.option("-v", "--verbose", is_flag=True, help="Also list files that passed or were skipped.")
def validate(paths: tuple[str, ...], fmt: str, max_bytes: int | None, root: Path | None, strict: bool, verbose: bool) -> None:
    """Check records and manifests: schema and semantic rules."""
    from reprogate.documents import DEFAULT_MAX_BYTES
    from reprogate.findings_output import RENDERERS, render_text
    from reprogate.validation import Options, validate as run

    report = run(list(paths), Options(max_bytes=max_bytes or DEFAULT_MAX_BYTES, root=root, strict=strict))
    if fmt == "text":
        render_text(report, click.echo, verbose)
    else:
        RENDERERS[fmt](report, click.echo)
    sys.exit(int(report.exit_code))


@main.command()
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False, exists=True, path_type=Path))
@click.option("--canonical", is_flag=True, help="Digest the parsed YAML/JSON in canonical-v1 form instead of the raw bytes.")
@click.option("--manifest", is_flag=True, help="Digest a dataset manifest the way a record pins it (canonical, without its own digest field).")
def digest(files: tuple[Path, ...], canonical: bool, manifest: bool) -> None:
    """Print the sha256: or canonical-v1: digest a record pins."""
    from reprogate.digests import digest_for

    code = ExitCode.OK
    for path in files:
        value, problem = digest_for(path, canonical=canonical or manifest, manifest=manifest)
        if problem:
            click.echo(f"{path}: {problem}", err=True)
            code = ExitCode.USAGE
        else:
            click.echo(f"{value}  {path}")
    sys.exit(int(code))


def _not_yet(name: str, summary: str, issue: int) -> click.Command:
    """A command that is listed so the CLI's shape is visible, and says plainly at run time that
    it does not work yet instead of pretending to."""

    @click.pass_context
    def run(ctx: click.Context, args: tuple[str, ...]) -> None:
        click.echo(f"reprogate {name}: not implemented in reprogate {__version__} yet (planned in issue #{issue}); nothing was done.", err=True)
        ctx.exit(int(ExitCode.USAGE))

    return click.Command(
        name,
        callback=run,
        params=[click.Argument(["args"], nargs=-1, type=click.UNPROCESSED)],
        help=f"[not yet implemented] {summary}",
        short_help=f"[not yet] {summary}",
        context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
        add_help_option=False,
    )


for _name, _summary, _issue in (
    ("capture", "Write the environment half of a record from this machine.", 4),
    ("preflight", "Prove GPUs, framework op, process group and a tiny collective work.", 4),
    ("dataset", "Build or verify a dataset manifest (manifest, verify, from-dvc).", 3),
    ("image", "Resolve image tags to manifest digests via the registry API.", 7),
    ("detect", "Report which watched layers a diff changes, and how.", 6),
    ("interval", "Compute and store the seed-aware interval in a record.", 5),
    ("rebuild", "Run the rebuild drill: stages in order, verdict and report.", 5),
    ("compare", "Compare a reference trace with a new trace.", 5),
    ("report", "Render a verdict as Markdown or JSON with its bounded claim.", 5),
    ("gate", "Pull-request flow: validate, detect, dispatch, pending status.", 8),
    ("github", "Single GitHub operations: status, dispatch, comment.", 8),
    ("audit", "Retention review: do addressed artifacts still resolve?", 7),
):
    main.add_command(_not_yet(_name, _summary, _issue))
