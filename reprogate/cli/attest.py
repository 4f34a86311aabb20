"""`reprogate attest` (a verdict as an in-toto reproduction statement) and `reprogate badge`."""

from __future__ import annotations

from pathlib import Path

import click

from reprogate.cli.common import finish

_NONCE_HELP = "Refuse a verdict that does not carry this nonce (the gate's dispatch nonce, as rebuild --nonce wrote it)."
_RUN_HELP = "Refuse a verdict made in another workflow run (pass ${{ github.run_id }})."


@click.command()
@click.argument("verdict", type=click.Path(dir_okay=False, exists=True, path_type=Path))
@click.option(
    "--record",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Where the rebuilt record is now (default: the verdict's record.path, relative to the working folder); its digest must be the verdict's.",
)
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=None, help="Write the statement here (default: print it).")
@click.option(
    "--predicate-out",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Also write the predicate alone here (actions/attest predicate-path).",
)
@click.option(
    "--subjects-out",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Also write the subjects as a shasum checksums file here (actions/attest subject-checksums).",
)
@click.option(
    "--allow-failed",
    is_flag=True,
    help="Write the statement of a rebuild that did not reproduce (its predicate says not-reproduced or inconclusive); without it that is exit 1.",
)
@click.option("--nonce", envvar="REPROGATE_NONCE", default=None, help=_NONCE_HELP)
@click.option("--run-id", default=None, help=_RUN_HELP)
def attest(
    verdict: Path,
    record: Path | None,
    out: Path | None,
    predicate_out: Path | None,
    subjects_out: Path | None,
    allow_failed: bool,
    nonce: str | None,
    run_id: str | None,
) -> None:
    """Write an in-toto Statement v1 of a rebuild verdict (predicate https://reprogate.dev/reproduction/v1).

    Its subjects are the record and the rebuild record beside the verdict (rebuild-record.yaml),
    by SHA-256; its predicate the bounded claim. Exit 2 for a file that is not a verdict, 1 for a
    verdict that did not pass (unless --allow-failed) or whose files do not match it.
    """
    from reprogate.attest.command import AttestOptions, attest_command

    options = AttestOptions(record, out, predicate_out, subjects_out, allow_failed, nonce, run_id)
    finish(lambda: attest_command(verdict, options), "text", "attest")


@click.command()
@click.argument("verdicts", nargs=-1, required=True, type=click.Path(dir_okay=False, path_type=Path))
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=None, help="Write the badge JSON here (default: print it).")
@click.option("--label", default="reproduction", show_default=True, help="The badge's left-hand text.")
@click.option("--nonce", envvar="REPROGATE_NONCE", default=None, help=_NONCE_HELP)
@click.option("--run-id", default=None, help=_RUN_HELP)
@click.option(
    "--rebuild-result",
    type=click.Choice(["success", "failure", "cancelled", "skipped"]),
    default=None,
    help="The rebuild job's own result (${{ needs.rebuild.result }}): anything but success beside passing verdicts is inconclusive.",
)
def badge(verdicts: tuple[Path, ...], out: Path | None, label: str, nonce: str | None, run_id: str | None, rebuild_result: str | None) -> None:
    """Write shields.io endpoint JSON from verdicts: reproduced (green), not reproduced, inconclusive.

    Several verdicts (one rebuild's records) make one badge, judged as the gate's status is; a
    VERDICT path that does not exist counts as a missing verdict (inconclusive).
    """
    from reprogate.attest.command import badge_command, expected_run

    finish(lambda: badge_command(list(verdicts), out, label, expected_run(nonce, run_id), rebuild_result), "text", "badge")
