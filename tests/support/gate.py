"""What the gate's tests share: the OpenAPI-held API stand-in as a fixture, a git repository made
from the example project, pull_request events built from GitHub's own webhook examples, and a
runner that invokes `reprogate gate` the way the action does (github format, GITHUB_* set).

tests/conftest.py loads this module as a plugin, so its fixtures (openapi, github, repo,
run_gate) reach every test, whichever subset runs. Importing it never skips: without GitHub's
OpenAPI description a plugin that skipped would take its fixtures with it, and every test using
one would error with "fixture not found" instead of skipping. The `openapi` fixture (and so
`github`) skips the test that needs it; modules that need it throughout call `require_octokit()`.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result

from support import EXAMPLES, REPO, git
from support.github_api import FakeGitHub, OpenAPI, serve, webhook

LOCKS = REPO / "tests" / "fixtures" / "locks"
TOKEN = "ghs_" + "TestTokenValue0123456789abcdefABCDEF"
REPOSITORY = "octo/repro"
REBUILD_WORKFLOW = "reference-rebuild.yml"


def octokit_available() -> bool:
    from support.github_api import OCTOKIT

    return (OCTOKIT / "openapi" / "generated" / "api.github.com.json").exists()


def require_octokit() -> None:
    """Skip the calling module without GitHub's OpenAPI description, except under CI=true."""
    if octokit_available():
        return
    if os.environ.get("CI") == "true":
        raise RuntimeError("@octokit/openapi is missing under CI=true; .ci/run must install it")
    pytest.skip("@octokit/openapi and @octokit/webhooks-examples are not installed (npm)", allow_module_level=True)


@pytest.fixture(scope="session")
def openapi() -> OpenAPI:
    require_octokit()
    return OpenAPI()


@pytest.fixture
def github(openapi: OpenAPI) -> Iterator[FakeGitHub]:
    fake = FakeGitHub(openapi, REPOSITORY)
    server, _ = serve(fake)
    yield fake
    server.shutdown()
    server.server_close()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """The example project as the default branch of a fresh repository, with a lock file no record pins."""
    root = tmp_path / "repo"
    shutil.copytree(EXAMPLES, root)
    shutil.copy(LOCKS / "before" / "requirements.txt", root / "requirements.lock.txt")
    (root / ".reprogate.yaml").write_text((root / ".reprogate.yaml").read_text() + f"rebuild:\n  workflow: {REBUILD_WORKFLOW}\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "base")
    return root


def commit(repo: Path, edit: Callable[[Path], Any]) -> tuple[str, str]:
    """Apply `edit` and commit it; (the commit before, the new commit)."""
    base = git(repo, "rev-parse", "HEAD")
    edit(repo)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "change")
    return base, git(repo, "rev-parse", "HEAD")


def bump_lock(repo: Path) -> tuple[str, str]:
    return commit(repo, lambda r: shutil.copy(LOCKS / "after" / "requirements.txt", r / "requirements.lock.txt"))


def docs_only(repo: Path) -> tuple[str, str]:
    return commit(repo, lambda r: (r / "NOTES.md").write_text("docs\n"))


def pr_event(
    action: str, base: str, head: str, *, fork: bool = False, labels: tuple[str, ...] = (), label: str | None = None, sender: str = "octocat", number: int = 2
) -> dict[str, Any]:
    try:
        event = webhook("pull_request", action)
    except IndexError:  # GitHub's examples have no `edited`: the opened payload with that action and GitHub's `changes` field
        event = dict(webhook("pull_request", "opened"), action=action, changes={"title": {"from": "before"}})
    pr = event["pull_request"]
    event["repository"]["full_name"] = REPOSITORY
    event["repository"]["default_branch"] = "main"
    event["number"] = pr["number"] = number
    pr["base"]["sha"], pr["head"]["sha"] = base, head
    pr["base"]["repo"]["full_name"] = REPOSITORY
    pr["head"]["repo"]["full_name"] = "someone/repro-fork" if fork else REPOSITORY
    pr["labels"] = [{"name": name} for name in labels]
    event["sender"]["login"] = sender
    if label:
        event["label"] = {"name": label}
    else:
        event.pop("label", None)
    return event


def gate_env(github: FakeGitHub, tmp_path: Path, name: str, event_path: Path) -> dict[str, str]:
    return {
        "GITHUB_EVENT_NAME": name,
        "GITHUB_EVENT_PATH": str(event_path),
        "GITHUB_REPOSITORY": REPOSITORY,
        "GITHUB_TOKEN": TOKEN,
        "GITHUB_API_URL": github.url,
        "GITHUB_ACTIONS": "true",
        "REPROGATE_GITHUB_WRITE_INTERVAL": "0",
        "GITHUB_OUTPUT": str(tmp_path / "outputs"),
        "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md"),
    }


@pytest.fixture
def run_gate(cli: Callable[..., Result], github: FakeGitHub, repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[..., Result]:
    """`reprogate gate --repo REPO [ARGS]` for an event, in github format; checks that the token
    never shows and that every request kept to GitHub's OpenAPI description."""

    def run(event: dict[str, Any], name: str = "pull_request", *args: str) -> Result:
        path = tmp_path / f"event-{len(github.requests)}-{os.urandom(2).hex()}.json"
        path.write_text(json.dumps(event))
        for key, value in gate_env(github, tmp_path, name, path).items():
            monkeypatch.setenv(key, value)
        result = cli("gate", "--repo", str(repo), *args)
        assert TOKEN not in result.output
        assert "contract violation" not in result.output, result.output
        assert "Traceback" not in result.output, result.output
        return result

    return run


def statuses(github: FakeGitHub, sha: str | None = None) -> list[tuple[str, str]]:
    return [(s["context"], s["state"]) for s in github.statuses if sha is None or s["sha"] == sha]


def dispatches(github: FakeGitHub) -> list[dict[str, Any]]:
    return [r[2] for r in github.requests if r[3] == "actions/create-workflow-dispatch"]


def trusted_run(github: FakeGitHub, head: str, run_id: int = 9001) -> str:
    """A run of the rebuild workflow dispatched on the default branch for `head` (its run-name
    carries the gate's correlation id, `reprogate-<head12>-…`, as the example workflow's does); its URL."""
    return github.add_run(run_id, path=f".github/workflows/{REBUILD_WORKFLOW}", title=f"reprogate rebuild reprogate-{head[:12]}-a1b2c3")


def status_env(github: FakeGitHub, sha: str, run_id: str | None = None) -> dict[str, str]:
    """The status job's environment: token, repository, the commit it posts on, its run."""
    env = {
        "GITHUB_REPOSITORY": REPOSITORY,
        "GITHUB_TOKEN": TOKEN,
        "GITHUB_API_URL": github.url,
        "GITHUB_SHA": sha,
        "REPROGATE_GITHUB_WRITE_INTERVAL": "0",
    }
    if run_id is not None:
        env["GITHUB_RUN_ID"] = run_id
    return env


@pytest.fixture
def post_status(cli: Callable[..., Result], github: FakeGitHub, monkeypatch: pytest.MonkeyPatch) -> Callable[..., Result]:
    """`reprogate github status ARGS` as the rebuild workflow's status job runs it: in a checkout
    of the head (`repo`), told the dispatch's nonce and the rebuild job's result."""
    from support.verdicts import NONCE

    def run(repo: Path, sha: str, *args: str, nonce: str | None = NONCE, result: str | None = "success", run_id: str | None = None) -> Result:
        for key, value in status_env(github, sha, run_id).items():
            monkeypatch.setenv(key, value)
        monkeypatch.delenv("GITHUB_RUN_ID", raising=False) if run_id is None else None
        bound = [*(["--nonce", nonce] if nonce else []), *(["--rebuild-result", result] if result else [])]
        done = cli("github", "status", *bound, *args, cwd=repo)
        assert "Traceback" not in done.output and TOKEN not in done.output, done.output
        return done

    return run
