"""`reprogate dataset manifest|verify|from-dvc`."""

from __future__ import annotations

from pathlib import Path

import click

from reprogate.cli.common import finish, format_option


@click.group()
def dataset() -> None:
    """Build, verify or import dataset manifests (shards by size and checksum)."""


@dataset.command("manifest")
@click.argument("root", type=click.Path(file_okay=False, exists=True, path_type=Path))
@click.option(
    "-o",
    "--output",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="Manifest file to write (atomically): .jsonl (JSON Lines, for large datasets), .json or .yaml.",
)
@click.option("--include", multiple=True, help="Glob of files to take (repeatable; default all). Without / it matches names at any depth.")
@click.option("--exclude", multiple=True, help="Glob of files to leave out (repeatable).")
@click.option("--algorithm", type=click.Choice(["sha256", "blake3"]), default="sha256", show_default=True, help="blake3 needs the blake3 extra.")
@click.option("--jobs", type=click.IntRange(min=1), default=None, help="Hashing threads (default: number of cores).")
@click.option("--id", "manifest_id", default=None, help="Dataset id (default: --base's id, else the folder name).")
@click.option("--version", "manifest_version", default=None, help="Dataset version.")
@click.option("--namespace", default=None, help="Where the shards live for readers (s3://..., https://..., a folder).")
@click.option("--file", "side_files", multiple=True, metavar="ROLE=PATH", help="A side file under ROOT, e.g. tokenizer=tok/tokenizer.json (repeatable).")
@click.option(
    "--base",
    type=click.Path(dir_okay=False, exists=True, path_type=Path),
    default=None,
    help="Previous manifest whose hand-written fields (split, filtering, retention...) are kept.",
)
@click.option("-q", "--quiet", is_flag=True, help="No progress bar.")
def dataset_manifest(
    root: Path,
    output: Path,
    include: tuple[str, ...],
    exclude: tuple[str, ...],
    algorithm: str,
    jobs: int | None,
    manifest_id: str | None,
    manifest_version: str | None,
    namespace: str | None,
    side_files: tuple[str, ...],
    base: Path | None,
    quiet: bool,
) -> None:
    """Hash every shard under ROOT and write a manifest."""
    from reprogate.datasets.command import manifest_command

    finish(
        lambda: manifest_command(
            root, output, list(include), list(exclude), algorithm, jobs, quiet, manifest_id, manifest_version, namespace, list(side_files), base
        ),
        "text",
        "dataset manifest",
    )


@dataset.command("verify")
@click.argument("manifest", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--root", default=None, help="Folder or http(s) URL the shard names are relative to (default: the manifest's namespace, else its folder).")
@format_option()
@click.option("--jobs", type=click.IntRange(min=1), default=None, help="Hashing threads (default: number of cores).")
@click.option("--timeout", type=click.FloatRange(min=0.1), default=30.0, show_default=True, help="Seconds to wait for a remote before retrying.")
@click.option("--retries", type=click.IntRange(min=0), default=3, show_default=True, help="Retries for a remote that fails or does not answer.")
@click.option(
    "--max-time",
    type=click.FloatRange(min=1),
    default=6 * 3600.0,
    show_default=True,
    help="Seconds all remote requests of the verification may take together; shards not checked by then are unreachable (exit 3).",
)
@click.option("--keep-going", is_flag=True, help="Compute checksums even when sizes already differ.")
@click.option("-q", "--quiet", is_flag=True, help="No progress bar.")
def dataset_verify(
    manifest: Path, root: str | None, fmt: str, jobs: int | None, timeout: float, retries: int, max_time: float, keep_going: bool, quiet: bool
) -> None:
    """Check shards against a manifest: sizes first, then checksums."""
    from reprogate.datasets.command import verify_command

    finish(lambda: verify_command(manifest, root, fmt, jobs, timeout, retries, keep_going, quiet, max_time), fmt, "dataset verify")


@dataset.command("from-dvc")
@click.argument("dvc_file", type=click.Path(dir_okay=False, exists=True, path_type=Path))
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False, path_type=Path), help="Manifest file to write (atomically).")
@click.option("--id", "manifest_id", default=None, help="Dataset id (default: the .dvc file's stem or the dvc.lock's folder).")
@click.option(
    "--stage",
    default=None,
    help=(
        "dvc.lock: take the DVC-managed inputs of this stage (default: the pipeline's "
        "inputs that .dvc files track). Stage outputs such as a model are never data."
    ),
)
def dataset_from_dvc(dvc_file: Path, output: Path, manifest_id: str | None, stage: str | None) -> None:
    """Make a manifest from DVC's dvc.lock or FILE.dvc, without re-hashing."""
    from reprogate.datasets.command import from_dvc_command

    finish(lambda: from_dvc_command(dvc_file, output, manifest_id, stage), "text", "dataset from-dvc")
