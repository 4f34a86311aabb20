"""`reprogate gate` and `reprogate github status|dispatch|comment`."""

from __future__ import annotations

from pathlib import Path

import click

from reprogate.cli.common import finish, format_option

publish_option = click.option(
    "--publish",
    type=click.Choice(["both", "check-run", "status"]),
    envvar="REPROGATE_PUBLISH",
    default="both",
    show_default=True,
    help="How the verdict is shown: a Check Run (report, annotations, link to the rebuild run), a commit status, or both, under the same name.",
)  # gate and github status: one option, the same choices and default


@click.command()
@click.option(
    "--repo",
    type=click.Path(file_okay=False, exists=True, path_type=Path),
    default=Path("."),
    show_default=True,
    help="The checked-out repository (fetch-depth: 0).",
)
@click.option(
    "--config",
    "config_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Where .reprogate.yaml lives (default: in --repo); it is always read as the base revision has it.",
)
@click.option(
    "--mode",
    type=click.Choice(["full", "compute", "publish"]),
    default="full",
    show_default=True,
    help="full: judge and post (one workflow, private repositories); compute: judge and annotate only, write --result-file "
    "(unprivileged pull_request workflow); publish: read the pull request number from --result-file and post (privileged workflow_run workflow).",
)
@click.option(
    "--result-file",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="compute: where to write the result for the privileged workflow; publish: the result to read.",
)
@click.option(
    "--dry-run",
    "event",
    is_flag=False,
    flag_value="",
    default=None,
    metavar="[EVENT_FILE]",
    help="Judge this webhook payload (or, with --from-git, a pull request of a revision range) here and print what the gate would post "
    "(statuses, dispatch, comment): no token, no network.",
)
@click.option(
    "--from-git",
    "from_git",
    default=None,
    metavar="BASE..HEAD",
    help="With --dry-run: the pull_request event of HEAD into BASE, built from this repository (a branch of it; --fork: from a fork).",
)
@click.option("--fork", is_flag=True, help="--from-git, --example-event: the head comes from a fork (no rebuild without a writer's label).")
@click.option(
    "--example-event",
    "example_event",
    is_flag=True,
    help="Print the pull_request payload --from-git builds (default range HEAD~1..HEAD), to edit and give to --dry-run; judge nothing.",
)
@click.option("--event-name", default="pull_request", show_default=True, help="--dry-run: the event the payload is (pull_request, merge_group, push).")
@click.option("--reader", is_flag=True, help="--dry-run: the label's sender has no write permission (default: a writer).")
@publish_option
@format_option("github")
def gate(
    repo: Path,
    config_path: Path | None,
    mode: str,
    result_file: Path | None,
    event: str | None,
    from_git: str | None,
    fork: bool,
    example_event: bool,
    event_name: str,
    reader: bool,
    publish: str,
    fmt: str,
) -> None:
    """Pull-request flow: validate, detect, dispatch, pending status."""
    from reprogate.github.command import DryRun, example_event_command, gate_command

    if example_event:
        finish(lambda: example_event_command(repo, from_git or "HEAD~1..HEAD", fork), "text", "gate")
    dry_run = None
    if event is not None or from_git is not None:
        dry_run = DryRun(Path(event) if event else None, event_name, not reader, from_git, fork)
    finish(lambda: gate_command(repo, config_path, fmt, mode, result_file, dry_run, publish), fmt, "gate")


@click.group()
def github() -> None:
    """Single GitHub operations: status, dispatch, comment (token from GITHUB_TOKEN)."""


@github.command("status")
@click.option(
    "--state", type=click.Choice(["pending", "success", "failure", "error"]), default=None, help="The state to post (or derive it with --from-verdict)."
)
@click.option(
    "--from-verdict",
    "verdicts",
    multiple=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="Post the one terminal state of the rebuild's verdicts (repeatable; error if any is missing or unreadable: the rebuild never finished).",
)
@click.option(
    "--expect-records",
    default=None,
    metavar="JSON",
    help="The records the rebuild was dispatched for (a JSON list); a record without a verdict makes the state error.",
)
@click.option("--description", default="", help="Status text (cut to GitHub's 140 characters).")
@click.option("--context", default=None, help="Status context (default from .reprogate.yaml: reprogate/reproduction).")
@click.option("--also-context", default=None, help="Post the same state on this context too (the baseline status of a promotion rebuild).")
@click.option("--sha", default=None, help="Commit (default GITHUB_SHA); with --from-verdict its records are read from git here to check the verdicts' digests.")
@click.option("--target-url", default=None, help="Link from the status (default: this workflow run).")
@click.option(
    "--nonce",
    envvar="REPROGATE_NONCE",
    default=None,
    help="With --from-verdict: the nonce the gate's dispatch carried (workflow input); a verdict without it is refused and the state is error.",
)
@click.option(
    "--rebuild-result",
    type=click.Choice(["success", "failure", "cancelled", "skipped"]),
    default=None,
    help="With --from-verdict: the rebuild job's own result (needs.rebuild.result); anything but success or failure, "
    "or a failure beside passing verdicts, is error.",
)
@click.option("--base", default=None, help="The base commit the pull request was judged against (dispatch input); named in the status.")
@click.option("--pr", type=click.IntRange(min=1), default=None, help="Also post the report, rendered here from the verdicts, as this pull request's comment.")
@publish_option
def github_status(
    state: str | None,
    verdicts: tuple[Path, ...],
    expect_records: str | None,
    description: str,
    context: str | None,
    also_context: str | None,
    sha: str | None,
    target_url: str | None,
    nonce: str | None,
    rebuild_result: str | None,
    base: str | None,
    pr: int | None,
    publish: str,
) -> None:
    """Set a commit status, or the one terminal state of a rebuild's verdicts (and the report comment)."""
    from reprogate.github.command import StatusRequest, status_command

    request = StatusRequest(
        state=state,
        verdicts=verdicts,
        description=description,
        context=context,
        sha=sha,
        target_url=target_url,
        pr=pr,
        expect_records=expect_records,
        also_context=also_context,
        nonce=nonce,
        rebuild_result=rebuild_result,
        base=base,
        publish=publish,
    )
    finish(lambda: status_command(request), "text", "github status")


@github.command("dispatch")
@click.option("--workflow", required=True, help="Workflow file name or id.")
@click.option("--ref", required=True, help="Branch to run the workflow definition from (use the default branch).")
@click.option("--input", "inputs", multiple=True, metavar="KEY=VALUE", help="Workflow input (repeatable, at most 25).")
def github_dispatch(workflow: str, ref: str, inputs: tuple[str, ...]) -> None:
    """Dispatch a workflow and print the run's URL when GitHub returns it."""
    from reprogate.github.command import dispatch_command

    finish(lambda: dispatch_command(workflow, ref, list(inputs)), "text", "github dispatch")


@github.command("comment")
@click.option("--pr", type=click.IntRange(min=1), required=True, help="Pull request number.")
@click.option("--body-file", type=click.Path(dir_okay=False, exists=True, path_type=Path), required=True, help="Markdown body.")
@click.option("--marker", default="<!-- reprogate:gate -->", show_default=True, help="Hidden marker that finds the comment again.")
def github_comment(pr: int, body_file: Path, marker: str) -> None:
    """Create or update the one reprogate comment on a pull request."""
    from reprogate.github.command import comment_command

    finish(lambda: comment_command(pr, body_file, marker), "text", "github comment")
