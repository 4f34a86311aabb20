"""`reprogate capture`."""

from __future__ import annotations

from pathlib import Path

import click

from reprogate.cli.common import finish


@click.command()
@click.option(
    "-o", "--output", type=click.Path(dir_okay=False, path_type=Path), default=None, help="Write the capture here (YAML, or JSON for .json); - for stdout."
)
@click.option(
    "--into",
    "record",
    type=click.Path(dir_okay=False, exists=True, path_type=Path),
    default=None,
    help="Fill the environment sections of this record, leaving a person's sections as written.",
)
@click.option("--image", default=None, help="The image this job runs, as REF@sha256:... (else REPROGATE_IMAGE, else the Docker engine).")
@click.option(
    "--root",
    type=click.Path(file_okay=False, exists=True, path_type=Path),
    default=Path("."),
    show_default=True,
    help="The project folder (a repository or a folder in one).",
)
@click.option("--no-framework", is_flag=True, help="Do not import torch (saves about a second; the software section then omits it).")
def capture(output: Path | None, record: Path | None, image: str | None, root: Path, no_framework: bool) -> None:
    """Write the environment half of a record from this machine."""
    from reprogate.capture.command import run_capture

    finish(lambda: run_capture(output, record, image, root, not no_framework), "text", "capture")
