"""`reprogate audit`."""

from __future__ import annotations

import click

from reprogate.cli.common import finish, format_option


@click.command()
@click.argument("paths", nargs=-1)
@format_option()
@click.option("--timeout", type=click.FloatRange(min=0.1), default=10.0, show_default=True, help="Seconds per request.")
@click.option("--retries", type=click.IntRange(min=0), default=2, show_default=True, help="Retries per request.")
@click.option("--sample", "size", type=click.IntRange(min=1), default=None, help="Audit this many records, chosen reproducibly (the monthly sample).")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the sample (use the month, e.g. 202611, so each month checks others).")
@click.option(
    "--retiring",
    "target",
    default=None,
    metavar="TARGET",
    help="Instead: which records lose an input if TARGET goes (registry host, host/namespace, image repository, URI prefix, folder, dataset ID[@VERSION]).",
)
@click.option(
    "--mirror",
    "mirrors",
    multiple=True,
    metavar="HOST[/PREFIX]",
    help="With --retiring: a registry that may hold the same image digests (asked now; it counts only if it serves them); repeatable.",
)
@click.option("--deep", is_flag=True, help="With --retiring: a file counts as a copy only when its checksum matches too (it is read); else its size.")
def audit(
    paths: tuple[str, ...], fmt: str, timeout: float, retries: int, size: int | None, seed: int, target: str | None, mirrors: tuple[str, ...], deep: bool
) -> None:
    """Retention review: do addressed artifacts still resolve? Or, with --retiring, what a retirement takes away."""
    from reprogate.audit.command import audit_command, retiring_command

    if target is not None and size is not None:
        raise click.UsageError("--sample and --retiring are two reviews; run them one at a time")
    if target is None and (mirrors or deep):
        raise click.UsageError(f"{'--mirror' if mirrors else '--deep'} only means something with --retiring TARGET")
    if target is not None:
        finish(lambda: retiring_command(list(paths), target, list(mirrors), timeout, retries, fmt, deep), fmt, "audit")
    finish(lambda: audit_command(list(paths), timeout, retries, size, seed, fmt), fmt, "audit")
