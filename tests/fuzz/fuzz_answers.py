"""Fuzz harness: GitHub's REST answers as the client parses them (github/client.py and what reads
its results): a status list (`statuses/from_api`, then the trust rules that read statuses:
latest, first_seen, across_bases, newer_rebuild), check runs listed and read as statuses
(`checks.as_statuses`, `ours`, `run_id_of`), the check-run creation answer, a pull request object
(the privileged half's `_subject_from_api`), a workflow run (`reproduction_verdict`), issue
events (`ApiApprovals`), a collaborator's permission, the dispatch and its run, comments and the
combined status; each with its HTTP status, a Link header (pagination: rel="next" on the API's
own origin only) and the rate-limit headers.

Half the inputs (first byte odd) are GitHub's own example answers of these operations (from the
OpenAPI description in .ci/npm, as the gate's tests; minimal ones of the same shape without it),
mutated structurally, with a Link header the input picks; the rest build the status, headers and
body from the bytes. Expected: a ReprogateError (GitHubUnreachable or MalformedStatus, exit 3: an
answer that is not GitHub's; GitHubError, a refusal; UsageError, a pull request of another
repository) and nothing else.
"""

from __future__ import annotations

import copy
import json
import sys
from collections.abc import Callable
from typing import Any

import atheris
from harness import REPO, fuzz, instrumented, structured

sys.path.insert(0, str(REPO / "tests"))
from support.github_api import OCTOKIT, OpenAPI

with instrumented():
    from reprogate.core.errors import ReprogateError
    from reprogate.core.http import Reply
    from reprogate.github import checks
    from reprogate.github.client import GitHubClient
    from reprogate.github.events import WorkflowRunEvent
    from reprogate.github.gate import MARKER, _subject_from_api
    from reprogate.github.statuses import Status
    from reprogate.github.trust import ApiApprovals, RebuildSource, across_bases, first_seen, latest, newer_rebuild, reproduction_verdict

REPOSITORY, SHA, BASE = "octo/repro", "a" * 40, "b" * 40
SERVER = "https://github.com"
EVENT = WorkflowRunEvent(REPOSITORY, "main", "completed", 17, "pull_request", SHA, "success")
SOURCE = RebuildSource(REPOSITORY, SERVER, "reprogate-rebuild.yml", "main", "reprogate/reproduction")
LINKED = Status(
    1,
    "success",
    "reprogate/reproduction",
    f"reproduced: record 0123456789ab; base {BASE[:12]}",
    f"{SERVER}/{REPOSITORY}/actions/runs/17",
    "2026-01-01T00:00:00Z",
    "github-actions[bot]",
)
STATUSES = [200, 201, 204, 301, 304, 400, 401, 403, 404, 409, 413, 422, 429, 500, 502, 503]
LINKS = [
    "",
    '<https://api.github.com/repos/octo/repro/commits/x/statuses?page=2>; rel="next", <https://api.github.com/x?page=9>; rel="last"',
    '<https://evil.example/steal?page=2>; rel="next"',
    '<http://[::1/x>; rel="next"',
    '<//api.github.com/x>; rel="next"',
    '<https://api.github.com:99999/x>; rel="next"',
    'rel="next"',
    "<>; rel=next",
]

# (operation, method, path): the request each reading operation makes, for its example answer
OPERATIONS: list[tuple[str, str, str, int]] = [
    ("statuses", "GET", f"/repos/{REPOSITORY}/commits/{SHA}/statuses", 200),
    ("check_runs", "GET", f"/repos/{REPOSITORY}/commits/{SHA}/check-runs", 200),
    ("create_check_run", "POST", f"/repos/{REPOSITORY}/check-runs", 201),
    ("pull_request", "GET", f"/repos/{REPOSITORY}/pulls/3", 200),
    ("workflow_run", "GET", f"/repos/{REPOSITORY}/actions/runs/17", 200),
    ("issue_events", "GET", f"/repos/{REPOSITORY}/issues/3/events", 200),
    ("permission", "GET", f"/repos/{REPOSITORY}/collaborators/someone/permission", 200),
    ("find_run", "GET", f"/repos/{REPOSITORY}/actions/workflows/reprogate-rebuild.yml/runs", 200),
    ("dispatch", "POST", f"/repos/{REPOSITORY}/actions/workflows/reprogate-rebuild.yml/dispatches", 200),
    ("comments", "GET", f"/repos/{REPOSITORY}/issues/3/comments", 200),
    ("combined_status", "GET", f"/repos/{REPOSITORY}/commits/{SHA}/status", 200),
    ("complete", "GET", f"/repos/{REPOSITORY}/commits/{SHA}/check-runs", 200),
]
MINIMAL: dict[str, Any] = {
    "statuses": [
        {
            "id": 1,
            "state": "success",
            "context": "reprogate/reproduction",
            "description": "d",
            "created_at": "2026-01-01T00:00:00Z",
            "creator": {"login": "github-actions[bot]"},
        }
    ],
    "check_runs": {
        "total_count": 1,
        "check_runs": [
            {
                "id": 5,
                "name": "reprogate/reproduction",
                "status": "queued",
                "external_id": "reprogate",
                "app": {"slug": "github-actions"},
                "output": {"title": "t"},
            }
        ],
    },
    "create_check_run": {"id": 5, "status": "queued"},
    "pull_request": {
        "state": "open",
        "head": {"sha": SHA, "repo": {"full_name": REPOSITORY}},
        "base": {"sha": BASE, "repo": {"full_name": REPOSITORY}},
        "labels": [{"name": "x"}],
    },
    "workflow_run": {
        "id": 17,
        "path": ".github/workflows/reprogate-rebuild.yml",
        "event": "workflow_dispatch",
        "head_branch": "main",
        "display_title": f"reprogate-{SHA[:12]}-x",
    },
    "issue_events": [{"event": "labeled", "label": {"name": "reprogate/rebuild"}, "actor": {"login": "someone"}, "created_at": "2026-02-01T00:00:00Z"}],
    "permission": {"permission": "write"},
    "find_run": {"total_count": 1, "workflow_runs": [{"id": 17, "display_title": "reprogate-x", "html_url": "https://github.com/r"}]},
    "dispatch": {"workflow_run_id": 17, "run_url": "https://api.github.com/r", "html_url": "https://github.com/r"},
    "comments": [{"id": 4, "body": MARKER, "user": {"login": "github-actions[bot]"}}],
    "combined_status": {"state": "success", "statuses": []},
}


def _examples() -> dict[str, Any]:
    """GitHub's example answer of each operation (the gate's tests answer with the same), the
    minimal one where the description is not installed."""
    found = dict(MINIMAL)
    if not (OCTOKIT / "openapi" / "generated" / "api.github.com.json").is_file():
        return found
    api = OpenAPI()
    for name, method, path, status in OPERATIONS:
        try:
            example = api.example(method, path, status)
        except (AssertionError, KeyError):
            continue
        if example is not None:
            found[name] = example
    return found


EXAMPLES = _examples()
found_check_runs = EXAMPLES.get("check_runs")
if isinstance(found_check_runs, dict):  # one run of ours among GitHub's example runs, so the reading reaches past `ours`
    runs = found_check_runs.get("check_runs") or []
    EXAMPLES["check_runs"] = {**found_check_runs, "check_runs": [*runs, *MINIMAL["check_runs"]["check_runs"]]}
EXAMPLES["complete"] = EXAMPLES["check_runs"]
NAMES = [name for name, *_ in OPERATIONS]
EXPECTED = {name: status for name, _, _, status in OPERATIONS}  # the status GitHub answers the operation with
DOCUMENTS = [EXAMPLES[name] for name in NAMES]


class Answering:
    """An HttpClient that answers the first request with the fuzzed reply, and any further one
    (the next page, the update after a create) with `then`."""

    def __init__(self, first: Reply, then: Reply) -> None:
        self.replies = [first]
        self.then = then

    def request(self, method: str, url: str, **_: Any) -> Reply:
        return self.replies.pop(0) if self.replies else self.then


def _statuses(client: GitHubClient) -> None:
    seen = client.statuses(REPOSITORY, SHA)
    latest(seen, "reprogate/reproduction", BASE)
    first_seen(seen, "reprogate/reproduction", BASE)
    across_bases(seen, "reprogate/reproduction", BASE, "success", "reproduced")
    newer_rebuild(seen, "reprogate/reproduction", BASE, 3, SERVER, REPOSITORY)


def _check_runs(client: GitHubClient) -> None:
    runs = client.check_runs(REPOSITORY, SHA, "reprogate/reproduction")
    seen = checks.as_statuses(runs)
    across_bases(seen, "reprogate/reproduction", BASE, "success", "reproduced")
    [checks.run_id_of(run) for run in runs if checks.ours(run)]


ACTIONS: dict[str, Callable[[GitHubClient], object]] = {
    "statuses": _statuses,
    "check_runs": _check_runs,
    "create_check_run": lambda c: checks.run_id_of(c.create_check_run(REPOSITORY, {"name": "reprogate/reproduction", "head_sha": SHA})),
    "pull_request": lambda c: _subject_from_api(c.pull_request(REPOSITORY, 3), EVENT, 3),
    "workflow_run": lambda c: reproduction_verdict(c, SOURCE, [LINKED], BASE, SHA),
    "issue_events": lambda c: ApiApprovals(c, REPOSITORY, 3, frozenset({"reprogate/rebuild"}), "2026-01-01T00:00:00Z").applied_by_writer("reprogate/rebuild"),
    "permission": lambda c: c.permission(REPOSITORY, "someone"),
    "find_run": lambda c: c.find_run(REPOSITORY, "reprogate-rebuild.yml", "reprogate-x", "2026-01-01T00:00:00Z"),
    "dispatch": lambda c: c.dispatch(REPOSITORY, "reprogate-rebuild.yml", "main", {"sha": SHA}),
    "comments": lambda c: c.upsert_comment(REPOSITORY, 3, MARKER, "report"),
    "combined_status": lambda c: c.combined_status(REPOSITORY, SHA),
    "complete": lambda c: checks.complete(
        c, REPOSITORY, SHA, "reprogate/reproduction", checks.CheckOutput("failure", "not reproduced", "report"), "github-actions[bot]"
    ),
}


def seeds() -> list[tuple[str, bytes]]:
    raw = [(f"raw-{name}", b"\x00" + bytes([i, 0, 0]) + json.dumps(MINIMAL.get(name, {})).encode()) for i, name in enumerate(NAMES)]
    return raw + [(f"example-{name}", bytes([1, i]) + bytes(range(16)) + bytes([i % len(LINKS)])) for i, name in enumerate(NAMES)]


def _reply(status: int, link: str, body: bytes, limited: bool) -> Reply:
    headers = {"Link": link} if link else {}
    if limited:
        headers.update({"x-ratelimit-remaining": "0", "x-ratelimit-reset": "1767225600"})
    return Reply(status, headers, body, "https://api.github.com/x")


def one(data: bytes) -> None:
    if len(data) < 3:
        return
    edited = structured(data, DOCUMENTS)
    if edited is not None:
        name = NAMES[data[1] % len(NAMES)]
        status = EXPECTED[name] if data[-1] & 0x80 == 0 else STATUSES[data[-1] % len(STATUSES)]
        first = _reply(status, LINKS[data[-1] % len(LINKS)], json.dumps(edited).encode(), data[-2] & 1 == 1)
    else:
        fdp = atheris.FuzzedDataProvider(data[1:])
        name = NAMES[fdp.ConsumeIntInRange(0, len(NAMES) - 1)]
        status = fdp.PickValueInList(STATUSES)
        link = fdp.PickValueInList(LINKS) if fdp.ConsumeBool() else fdp.ConsumeUnicodeNoSurrogates(fdp.ConsumeIntInRange(0, 120))
        first = _reply(
            status, link, fdp.ConsumeBytes(fdp.ConsumeIntInRange(0, 4096)) if fdp.ConsumeBool() else fdp.ConsumeBytes(fdp.remaining_bytes()), fdp.ConsumeBool()
        )
    then = Reply(
        200, {}, json.dumps(copy.deepcopy(EXAMPLES[name]) if name not in ("statuses", "issue_events", "comments") else []).encode(), "https://api.github.com/y"
    )
    client = GitHubClient("token", api_url="https://api.github.com", write_interval=0.0)
    client._http = Answering(first, then)  # type: ignore[assignment]
    try:
        ACTIONS[name](client)
    except ReprogateError:
        pass


if __name__ == "__main__":
    fuzz(one, seeds(), max_len=8192)
