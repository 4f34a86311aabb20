"""What `reprogate gate` and `reprogate github …` do with their arguments and the environment."""

from __future__ import annotations

import json
import os
from pathlib import Path

from reprogate.core.diagnostics import ExitCode
from reprogate.github.client import GitHubClient, GitHubError, GitHubUnreachable


def _client() -> GitHubClient:
    token = os.environ.get("REPROGATE_GITHUB_TOKEN") or os.environ.get("GITHUB_TOKEN") or ""
    if not token:
        raise GitHubError("no token: set GITHUB_TOKEN (the action passes its token input) ")
    return GitHubClient(token)


def _repository() -> str:
    repo = os.environ.get("GITHUB_REPOSITORY", "")
    if "/" not in repo:
        raise GitHubError("GITHUB_REPOSITORY (owner/name) is not set")
    return repo


def _run_url() -> str | None:
    server, repo, run = os.environ.get("GITHUB_SERVER_URL", "https://github.com"), os.environ.get("GITHUB_REPOSITORY"), os.environ.get("GITHUB_RUN_ID")
    return f"{server}/{repo}/actions/runs/{run}" if repo and run else None


def _guard(work) -> tuple[ExitCode, list[str]]:  # type: ignore[no-untyped-def]
    try:
        return work()
    except GitHubUnreachable as exc:
        return ExitCode.INFRA, [f"GitHub API unreachable: {exc}"]
    except GitHubError as exc:
        return ExitCode.USAGE if exc.status in (0, 401, 404, 422) else ExitCode.FAILED, [f"GitHub: {exc}"]


def gate_command(repo: Path, config_path: Path | None, fmt: str) -> tuple[ExitCode, list[str]]:
    from reprogate.core.config import from_data, load_config, with_overrides
    from reprogate.detect.git import DetectError
    from reprogate.core.documents import DocumentError, load_document
    from reprogate.output import workflow as actions
    from reprogate.github.gate import Event, run_gate

    def work() -> tuple[ExitCode, list[str]]:
        try:
            config = from_data(load_document(config_path).data, config_path) if config_path else load_config(repo)
            config = with_overrides(config, dict(os.environ))
            event = Event.from_env(dict(os.environ))
            result = run_gate(event, config, repo, _client(), os.environ.get("GITHUB_SERVER_URL", "https://github.com"))
        except DocumentError as exc:
            return ExitCode.USAGE, [f"{exc.diagnostics[0].path}: {exc.diagnostics[0].message}"]
        except DetectError as exc:
            return ExitCode.USAGE, [f"reprogate gate: {exc}"]
        if fmt == "github":
            actions.set_outputs(result.outputs)
            actions.append_summary("### reprogate gate\n\n" + "\n".join(f"- {m}" for m in result.messages) + "\n")
        if fmt == "json":
            return result.code, [json.dumps({"exit_code": int(result.code), "messages": result.messages, "outputs": result.outputs}, indent=2)]
        return result.code, result.messages

    return _guard(work)


def status_command(state: str | None, verdict_path: Path | None, description: str, context: str | None, sha: str | None, target_url: str | None, report: Path | None, pr: int | None) -> tuple[ExitCode, list[str]]:
    from reprogate.core.config import load_config
    from reprogate.github.gate import MARKER, post_verdict

    def work() -> tuple[ExitCode, list[str]]:
        client, repo = _client(), _repository()
        commit = sha or os.environ.get("GITHUB_SHA", "")
        ctx = context or os.environ.get("REPROGATE_STATUS_CONTEXT") or load_config(Path(".")).status_context
        url = target_url or _run_url()
        if verdict_path is not None and not verdict_path.exists():
            client.create_status(repo, commit, "error", ctx, "the rebuild produced no verdict (cancelled, timed out or crashed): inconclusive", url)
            return ExitCode.OK, [f"{ctx} = error on {commit[:12]}: no verdict at {verdict_path}"]
        if verdict_path is not None:
            verdict = json.loads(verdict_path.read_text(encoding="utf-8"))
            posted = post_verdict(client, repo, commit, verdict, ctx, url)
        elif state is None:
            return ExitCode.USAGE, ["give --state or --from-verdict"]
        else:
            client.create_status(repo, commit, state, ctx, description or state, url)
            posted = state
        lines = [f"{ctx} = {posted} on {commit[:12]}"]
        if report is not None and report.exists():
            if pr is None:
                return ExitCode.USAGE, ["--comment-report needs --pr"]
            client.upsert_comment(repo, pr, MARKER, report.read_text(encoding="utf-8"))
            lines.append(f"report posted on #{pr}")
        return ExitCode.OK, lines

    return _guard(work)


def dispatch_command(workflow: str, ref: str, inputs: list[str]) -> tuple[ExitCode, list[str]]:
    def work() -> tuple[ExitCode, list[str]]:
        pairs = dict(item.split("=", 1) for item in inputs if "=" in item)
        if len(pairs) != len(inputs) or len(pairs) > 25:
            return ExitCode.USAGE, ["inputs are KEY=VALUE, at most 25"]
        run = _client().dispatch(_repository(), workflow, ref, pairs)
        return ExitCode.OK, [run.get("html_url") or "dispatched (the server did not return the run; find it by its run-name)"]

    return _guard(work)


def comment_command(pr: int, body_file: Path, marker: str) -> tuple[ExitCode, list[str]]:
    def work() -> tuple[ExitCode, list[str]]:
        comment = _client().upsert_comment(_repository(), pr, marker, body_file.read_text(encoding="utf-8"))
        return ExitCode.OK, [str(comment.get("html_url", "comment updated"))]

    return _guard(work)
