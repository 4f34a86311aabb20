"""`reprogate audit`."""

from __future__ import annotations

import click

from reprogate.cli.common import finish


@click.command()
@click.argument("paths", nargs=-1)
@click.option("--timeout", type=click.FloatRange(min=0.1), default=10.0, show_default=True, help="Seconds per request.")
@click.option("--retries", type=click.IntRange(min=0), default=2, show_default=True, help="Retries per request.")
@click.option("--sample", "size", type=click.IntRange(min=1), default=None, help="Audit this many records, chosen reproducibly (the monthly sample).")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the sample (use the month, e.g. 202611, so each month checks others).")
def audit(paths: tuple[str, ...], timeout: float, retries: int, size: int | None, seed: int) -> None:
    """Retention review: do addressed artifacts still resolve?"""
    from reprogate.audit.command import audit_command

    finish(lambda: audit_command(list(paths), timeout, retries, size, seed), "text", "audit")
