"""`reprogate capacity`."""

from __future__ import annotations

from pathlib import Path

import click

from reprogate.cli.common import finish, format_option


@click.command()
@click.argument("record", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--cluster",
    required=True,
    metavar="FILE|slurm:PARTITION",
    help="The pool: a Cluster file (schemas/cluster.schema.json), or slurm:PARTITION to read the live partition with scontrol.",
)
@click.option(
    "--shared-bytes",
    "shared",
    default=None,
    metavar="SIZE",
    help="Shared storage a job gets for its dataset and checkpoint (100TB, 2TiB, bytes): what Slurm does not say; overrides a Cluster file's.",
)
@format_option()
def capacity(record: Path, cluster: str, shared: str | None, fmt: str) -> None:
    """Can a runner pool or Slurm partition honor the record's envelope? Requirement by requirement."""
    from reprogate.capacity.command import capacity_command

    finish(lambda: capacity_command(record, cluster, fmt, shared), fmt, "capacity")
