"""`reprogate image resolve|verify` and `reprogate dockerfile pins`."""

from __future__ import annotations

from pathlib import Path

import click

from reprogate.cli.common import finish


@click.group()
def image() -> None:
    """Resolve and verify container images by digest over the registry API."""


@image.command("resolve")
@click.argument("refs", nargs=-1, required=True)
@click.option("--platform", default=None, help="For a multi-platform index, also resolve this platform's manifest (e.g. linux/amd64).")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True, help="Output format.")
@click.option("--timeout", type=click.FloatRange(min=0.1), default=10.0, show_default=True, help="Seconds per request.")
@click.option("--retries", type=click.IntRange(min=0), default=3, show_default=True, help="Retries on 429, 5xx and connection errors.")
def image_resolve(refs: tuple[str, ...], platform: str | None, fmt: str, timeout: float, retries: int) -> None:
    """Print the manifest digest(s) a reference resolves to."""
    from reprogate.images.command import RegistryClient, resolve_command

    finish(lambda: resolve_command(list(refs), platform, fmt, RegistryClient(timeout=timeout, retries=retries)), fmt, "image resolve")


@image.command("verify")
@click.argument("record", type=click.Path(dir_okay=False, exists=True, path_type=Path))
@click.option("--pull", is_flag=True, help="Also pull by digest through the Docker engine and confirm RepoDigests.")
@click.option("--timeout", type=click.FloatRange(min=0.1), default=10.0, show_default=True, help="Seconds per request.")
@click.option("--retries", type=click.IntRange(min=0), default=3, show_default=True, help="Retries on 429, 5xx and connection errors.")
def image_verify(record: Path, pull: bool, timeout: float, retries: int) -> None:
    """Check that a record's pinned image and base images still exist."""
    from reprogate.images.command import RegistryClient, verify_record

    finish(lambda: verify_record(record, pull, RegistryClient(timeout=timeout, retries=retries)), "text", "image verify")


@click.group()
def dockerfile() -> None:
    """Dockerfile helpers."""


@dockerfile.command("pins")
@click.argument("path", type=click.Path(dir_okay=False, exists=True, path_type=Path))
@click.option("--write", is_flag=True, help="Rewrite literal FROM references to image:tag@sha256:... (atomically, comments kept).")
def dockerfile_pins(path: Path, write: bool) -> None:
    """List each FROM with the digest it resolves to."""
    from reprogate.images.command import dockerfile_pins as run

    finish(lambda: run(path, write), "text", "dockerfile pins")
