"""`reprogate validate` and `reprogate digest`."""

from __future__ import annotations

from pathlib import Path

import click

from reprogate.cli.common import finish, format_option


@click.command()
@click.argument("paths", nargs=-1)
@format_option(sarif=True)
@click.option("--max-bytes", type=click.IntRange(min=1), default=None, help="Largest file read (default 16 MiB).")
@click.option(
    "--root",
    type=click.Path(file_okay=False, exists=True, path_type=Path),
    default=None,
    help="Repository root for addressed paths (default: nearest folder with .reprogate.yaml or .git).",
)
@click.option("--strict", is_flag=True, help="Fail on warnings and environment drift too.")
@click.option("-v", "--verbose", is_flag=True, help="Also list files that passed or were skipped.")
def validate(paths: tuple[str, ...], fmt: str, max_bytes: int | None, root: Path | None, strict: bool, verbose: bool) -> None:
    """Check records and manifests: schema and semantic rules."""
    from reprogate.validate.command import validate_command

    finish(lambda: validate_command(list(paths), fmt, max_bytes, root, strict, verbose), fmt, "validate")


@click.command()
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False, exists=True, path_type=Path))
@click.option("--canonical", is_flag=True, help="Digest the parsed YAML/JSON in canonical-v1 form instead of the raw bytes.")
@click.option("--manifest", is_flag=True, help="Digest a dataset manifest the way a record pins it (canonical, without its own digest field).")
def digest(files: tuple[Path, ...], canonical: bool, manifest: bool) -> None:
    """Print the sha256: or canonical-v1: digest a record pins."""
    from reprogate.validate.command import digest_command

    finish(lambda: digest_command(list(files), canonical, manifest), "text", "digest")
