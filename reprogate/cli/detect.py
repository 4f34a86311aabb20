"""`reprogate detect`."""

from __future__ import annotations

from pathlib import Path

import click

from reprogate.cli.common import finish, format_option


@click.command()
@click.option("--base", default=None, help="Base revision (the pull request's base).")
@click.option("--head", default="HEAD", show_default=True, help="Head revision.")
@click.option("--repo", type=click.Path(file_okay=False, exists=True, path_type=Path), default=Path("."), show_default=True, help="The repository.")
@click.option(
    "--files-from",
    type=click.Path(dir_okay=False, exists=True, path_type=Path),
    default=None,
    help="A pull request's file list as GitHub's API returns it, when no clone is at hand.",
)
@click.option(
    "--config",
    "config_path",
    type=click.Path(dir_okay=False, exists=True, path_type=Path),
    default=None,
    help="The .reprogate.yaml to use (default: found from --repo upward).",
)
@format_option(sarif=True)
def detect(base: str | None, head: str, repo: Path, files_from: Path | None, config_path: Path | None, fmt: str) -> None:
    """Report which watched layers a diff changes, and how."""
    from reprogate.detect.command import detect_command

    finish(lambda: detect_command(repo, base, head, files_from, config_path, fmt), fmt, "detect")
