"""What `reprogate gate` and `reprogate github …` do with their arguments and the environment."""

from __future__ import annotations

import json
import os
from pathlib import Path

from reprogate.core.diagnostics import ExitCode
from reprogate.core.errors import UsageError
from reprogate.github.client import GitHubClient
from reprogate.output.result import CommandResult


def client_from_env() -> GitHubClient:
    token = os.environ.get("REPROGATE_GITHUB_TOKEN") or os.environ.get("GITHUB_TOKEN") or ""
    if not token:
        raise UsageError("no token: set GITHUB_TOKEN (the action passes its token input)")
    return GitHubClient(token)


def repository_from_env() -> str:
    repo = os.environ.get("GITHUB_REPOSITORY", "")
    if "/" not in repo:
        raise UsageError("GITHUB_REPOSITORY (owner/name) is not set")
    return repo


def run_url_from_env() -> str | None:
    server, repo, run = os.environ.get("GITHUB_SERVER_URL", "https://github.com"), os.environ.get("GITHUB_REPOSITORY"), os.environ.get("GITHUB_RUN_ID")
    return f"{server}/{repo}/actions/runs/{run}" if repo and run else None


def gate_command(repo: Path, config_path: Path | None, fmt: str) -> CommandResult:
    from reprogate.core.config import load_config, with_overrides
    from reprogate.github.gate import Event, run_gate

    config = with_overrides(load_config(config_path if config_path is not None else repo), dict(os.environ))
    event = Event.from_env(dict(os.environ))
    result = run_gate(event, config, repo, client_from_env(), os.environ.get("GITHUB_SERVER_URL", "https://github.com"))
    if fmt == "json":
        return CommandResult(result.code, [json.dumps({"exit_code": int(result.code), "messages": result.messages, "outputs": result.outputs}, indent=2)])
    done = CommandResult(result.code, list(result.messages))
    if fmt == "github":
        done.outputs = dict(result.outputs)
        done.summary = "### reprogate gate\n\n" + "\n".join(f"- {m}" for m in result.messages) + "\n"
    return done


def status_command(state: str | None, verdict_path: Path | None, description: str, context: str | None, sha: str | None, target_url: str | None, report: Path | None, pr: int | None) -> CommandResult:
    from reprogate.core.config import load_config
    from reprogate.github.gate import MARKER, post_verdict

    if verdict_path is None and state is None:
        raise UsageError("give --state or --from-verdict")
    if report is not None and pr is None:
        raise UsageError("--comment-report needs --pr")
    client, repo = client_from_env(), repository_from_env()
    commit = sha or os.environ.get("GITHUB_SHA", "")
    ctx = context or os.environ.get("REPROGATE_STATUS_CONTEXT") or load_config(Path(".")).status_context
    url = target_url or run_url_from_env()
    if verdict_path is not None:
        from reprogate.rebuild.verdicts import read_verdict

        try:
            verdict = read_verdict(verdict_path)
        except UsageError as exc:  # missing, empty, not JSON, another shape: never leave the check pending
            why = "the rebuild produced no verdict (cancelled, timed out or crashed)" if not verdict_path.exists() else "the verdict cannot be read"
            client.create_status(repo, commit, "error", ctx, f"{why}: inconclusive", url)
            return CommandResult(ExitCode.OK, [f"{ctx} = error on {commit[:12]}: {exc.message}"])
        posted = post_verdict(client, repo, commit, verdict, ctx, url)
    else:
        assert state is not None
        client.create_status(repo, commit, state, ctx, description or state, url)
        posted = state
    lines = [f"{ctx} = {posted} on {commit[:12]}"]
    if report is not None and report.exists() and pr is not None:
        client.upsert_comment(repo, pr, MARKER, report.read_text(encoding="utf-8"))
        lines.append(f"report posted on #{pr}")
    return CommandResult(ExitCode.OK, lines)


def dispatch_command(workflow: str, ref: str, inputs: list[str]) -> CommandResult:
    pairs = dict(item.split("=", 1) for item in inputs if "=" in item)
    if len(pairs) != len(inputs) or len(pairs) > 25:
        raise UsageError("inputs are KEY=VALUE, at most 25")
    run = client_from_env().dispatch(repository_from_env(), workflow, ref, pairs)
    return CommandResult(ExitCode.OK, [str(run.get("html_url") or "dispatched (the server did not return the run; find it by its run-name)")])


def comment_command(pr: int, body_file: Path, marker: str) -> CommandResult:
    comment = client_from_env().upsert_comment(repository_from_env(), pr, marker, body_file.read_text(encoding="utf-8"))
    return CommandResult(ExitCode.OK, [str(comment.get("html_url", "comment updated"))])
