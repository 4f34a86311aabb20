"""A small GitHub REST client that keeps to GitHub's documented contract.

- `Accept: application/vnd.github+json` and an explicit `X-GitHub-Api-Version`.
- Timeouts, retries, deadline and body limits from the one HTTP policy (core/http.py); secondary
  rate limits (403/429 with Retry-After) are waited out up to 5 minutes, an exhausted primary limit
  is reported (exit 3) rather than slept through.
- Writes beyond the first few of a run are spaced at least `write_interval` seconds apart (GitHub
  asks clients making many writes to wait a second between them); a gate's handful goes out at once.
- Pagination through the Link header, only on the API's own origin (the token never leaves it).
- The token is never printed, not even as `::add-mask::` (which would put it into any captured
  stdout; the runner masks github.token and secrets itself), and errors quote GitHub's message,
  never request headers.
- Size limits: a status description is cut to 140 characters, a comment body to 65,536, a check
  run's output summary and text to 65,535 bytes (github/checks.py cuts them, saying so).
- Everything it sends that people read (a status description, a comment, a check run's title,
  summary and annotations) passes the one redactor (core/redact.py) on the way out.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, urlsplit

from reprogate.core.diagnostics import ExitCode
from reprogate.core.errors import InfrastructureError, ReprogateError
from reprogate.core.http import HttpClient, HttpPolicy, Reply, same_origin
from reprogate.core.redact import redact
from reprogate.github.statuses import Status, from_api

API_VERSION = "2022-11-28"
DESCRIPTION_LIMIT = 140
COMMENT_LIMIT = 65_536
# GitHub sends Retry-After with secondary rate limits on 403 as well as 429.
POLICY = HttpPolicy(read_timeout=20.0, deadline=90.0, retries=4, backoff=1.0, max_wait=300.0, retry_after_statuses=frozenset({403, 413, 429, 503}))


class GitHubError(ReprogateError):
    """GitHub refused a request. Bad token, unknown repository or invalid input are usage errors
    (exit 2); other refusals (no permission for this operation) fail the check (exit 1)."""

    def __init__(self, message: str, status: int = 0) -> None:
        super().__init__(message, exit_code=ExitCode.USAGE if status in (0, 401, 404, 422) else ExitCode.FAILED)
        self.status = status


class GitHubUnreachable(InfrastructureError):
    """The API could not be reached, kept failing, or rate-limited us for longer than we wait."""


def cut(text: str, limit: int, marker: str = "…") -> str:
    return text if len(text) <= limit else text[: limit - len(marker)] + marker


def cut_words(text: str, limit: int, marker: str = "…") -> str:
    """`text` within `limit` characters, cut at the end of a word (after a blank, a comma or a
    semicolon) so no path or name is left half-written; a word longer than the room is cut."""
    if len(text) <= limit:
        return text
    room = text[: max(0, limit - len(marker))]
    end = max(room.rfind(" "), room.rfind(","), room.rfind(";"))
    if end > 0:
        room = room[:end]
    return room.rstrip(" ,;:(") + marker


@dataclass
class GitHubClient:
    token: str
    api_url: str = field(default_factory=lambda: os.environ.get("GITHUB_API_URL", "https://api.github.com"))
    write_interval: float = field(default_factory=lambda: float(os.environ.get("REPROGATE_GITHUB_WRITE_INTERVAL", "1.0")))
    write_burst: int = 5  # writes sent without spacing before write_interval applies
    policy: HttpPolicy = POLICY
    calls: int = 0
    writes: int = 0
    _last_write: float = 0.0
    _http: HttpClient | None = None

    @property
    def http(self) -> HttpClient:
        if self._http is None:
            self._http = HttpClient(self.policy, headers={"Accept": "application/vnd.github+json", "X-GitHub-Api-Version": API_VERSION})
            if self.token:
                self._http.authorize(self.api_url, f"Bearer {self.token}")
        return self._http

    def request(self, method: str, path: str, json: Any = None, params: dict[str, Any] | None = None, expect: tuple[int, ...] = (200, 201, 204)) -> Reply:
        url = path if path.startswith("http") else f"{self.api_url.rstrip('/')}{path}"
        if not same_origin(url, self.api_url):
            raise GitHubUnreachable(f"refusing to follow {url.split('?')[0]}: it is not on {self.api_url} (the token stays with its host)")
        if method != "GET" and self.writes >= self.write_burst:
            pause = self._last_write + self.write_interval - time.monotonic()
            if pause > 0:
                time.sleep(pause)
        try:
            self.calls += 1
            reply = self.http.request(method, url, json=json, params=params)
        except InfrastructureError as exc:
            raise GitHubUnreachable(f"{method} {path}: {exc.message}") from None
        finally:
            if method != "GET":
                self._last_write = time.monotonic()
                self.writes += 1
        if reply.status in expect:
            return reply
        if reply.status in self.policy.retry_statuses:
            raise GitHubUnreachable(
                f"{method} {path}: still HTTP {reply.status} after {self.policy.retries + 1} attempts",
            )
        if reply.status in (403, 429) and reply.headers.get("x-ratelimit-remaining") == "0":
            raise GitHubUnreachable(f"{method} {path}: rate limit exhausted until {reply.headers.get('x-ratelimit-reset', 'its reset')} (epoch seconds)")
        message = _message(reply)
        if message is None:  # GitHub words every refusal as a JSON object with a message: this answer is not GitHub's
            raise GitHubUnreachable(f"{method} {path}: HTTP {reply.status} with a body that is not GitHub's error object")
        raise GitHubError(f"{method} {path}: HTTP {reply.status}: {message}", reply.status)

    def paginate(self, path: str, params: dict[str, Any] | None = None, key: str | None = None, max_pages: int = 100) -> Iterator[Any]:
        """Items of a paginated list (inside the object's `key` for answers that wrap it), following
        rel="next" links on the API's own origin for at most `max_pages` pages."""
        url: str | None = path
        query: dict[str, Any] | None = {"per_page": 100, **(params or {})}
        for _ in range(max_pages):
            if not url:
                return
            reply = self.request("GET", url, params=query)
            query = None  # the next link carries its own query
            data = reply.json()
            if key is not None and isinstance(data, dict):
                data = data.get(key)
            if not isinstance(data, list):
                raise GitHubUnreachable(f"GET {path}: the answer is {type(data).__name__}, not a list")
            if not all(isinstance(item, dict) for item in data):
                raise GitHubUnreachable(f"GET {path}: the answer lists something other than objects (GitHub's lists hold objects)")
            yield from data
            url = _next_link(reply.headers.get("Link", ""))
            if url is not None and not _is_url(url):
                raise GitHubUnreachable(f"GET {path}: the Link header's rel=\"next\" is not a URL ({cut(redact(url), 120)}); GitHub's links are absolute URLs")

    # operations ------------------------------------------------------------------------------------

    def create_status(self, repo: str, sha: str, state: str, context: str, description: str, target_url: str | None = None) -> dict[str, Any]:
        body: dict[str, Any] = {"state": state, "context": context, "description": cut(redact(description), DESCRIPTION_LIMIT)}
        if target_url:
            body["target_url"] = target_url
        return _object(self.request("POST", f"/repos/{repo}/statuses/{sha}", json=body, expect=(201,)))

    def create_check_run(self, repo: str, body: dict[str, Any]) -> dict[str, Any]:
        """POST /repos/{owner}/{repo}/check-runs (github/checks.py builds the body)."""
        return _object(self.request("POST", f"/repos/{repo}/check-runs", json=_redacted_output(body), expect=(201,)))

    def update_check_run(self, repo: str, check_run_id: int, body: dict[str, Any]) -> dict[str, Any]:
        """PATCH a check run: its status, conclusion, output; annotations given are appended."""
        return _object(self.request("PATCH", f"/repos/{repo}/check-runs/{int(check_run_id)}", json=_redacted_output(body), expect=(200,)))

    def check_runs(self, repo: str, ref: str, name: str) -> list[dict[str, Any]]:
        """The check runs named `name` on a commit (every one, not only the latest)."""
        return list(self.paginate(f"/repos/{repo}/commits/{ref}/check-runs", {"check_name": name, "filter": "all"}, key="check_runs"))

    def combined_status(self, repo: str, ref: str) -> dict[str, Any]:
        return _object(self.request("GET", f"/repos/{repo}/commits/{ref}/status"))

    def dispatch(self, repo: str, workflow: str, ref: str, inputs: dict[str, str]) -> dict[str, Any]:
        """Start a workflow_dispatch run; the run's URL when the server returns it (200), else {}."""
        body: dict[str, Any] = {"ref": ref, "inputs": inputs, "return_run_details": True}
        path = f"/repos/{repo}/actions/workflows/{quote(workflow, safe='')}/dispatches"
        try:
            reply = self.request("POST", path, json=body, expect=(200, 204))
        except GitHubError as exc:
            if exc.status != 422:
                raise
            body.pop("return_run_details")  # GHES versions that do not know the flag
            reply = self.request("POST", path, json=body, expect=(200, 204))
        return _object(reply) if reply.status == 200 and reply.body else {}

    def find_run(self, repo: str, workflow: str, correlation: str, since: str) -> dict[str, Any] | None:
        """The dispatched run whose run-name carries the correlation id (for 204 answers)."""
        path = f"/repos/{repo}/actions/workflows/{quote(workflow, safe='')}/runs"
        for run in self.paginate(path, {"event": "workflow_dispatch", "created": f">={since}"}, key="workflow_runs"):
            if correlation in str(run.get("display_title", "")):
                found: dict[str, Any] = run  # a workflow run object, as GitHub's API answers
                return found
        return None

    def permission(self, repo: str, user: str) -> str:
        """The user's permission on the repository (admin, maintain, write, triage, read, none)."""
        try:
            data = _object(self.request("GET", f"/repos/{repo}/collaborators/{quote(user, safe='')}/permission"))
        except GitHubError as exc:
            if exc.status == 404:
                return "none"
            raise
        permission = data.get("permission")  # admin, write, read or none (maintain -> write, triage -> read)
        return permission if isinstance(permission, str) else "none"

    def statuses(self, repo: str, ref: str) -> list[Status]:
        """Every status posted on a commit, newest first (the combined status keeps only the latest
        per context), each typed with its creator (github/statuses.py)."""
        return [from_api(item) for item in self.paginate(f"/repos/{repo}/commits/{ref}/statuses")]

    def pull_request(self, repo: str, number: int) -> dict[str, Any]:
        return _object(self.request("GET", f"/repos/{repo}/pulls/{number}"))

    def workflow_run(self, repo: str, run_id: int) -> dict[str, Any]:
        return _object(self.request("GET", f"/repos/{repo}/actions/runs/{run_id}"))

    def issue_events(self, repo: str, number: int) -> list[dict[str, Any]]:
        """The issue's events (labeled, unlabeled, ...), oldest first, each with its actor and time."""
        return list(self.paginate(f"/repos/{repo}/issues/{number}/events"))

    def remove_label(self, repo: str, number: int, label: str) -> None:
        try:
            self.request("DELETE", f"/repos/{repo}/issues/{number}/labels/{quote(label, safe='')}", expect=(200,))
        except GitHubError as exc:
            if exc.status != 404:  # already gone
                raise

    def upsert_comment(self, repo: str, number: int, marker: str, body: str, author: str = "github-actions[bot]") -> dict[str, Any]:
        """Edit the one comment carrying `marker` by `author`, or create it."""
        text = cut(f"{marker}\n{redact(body)}", COMMENT_LIMIT, "\n\n…(cut to GitHub's 65,536-character limit)")
        for comment in self.paginate(f"/repos/{repo}/issues/{number}/comments"):
            if marker in str(comment.get("body", "")) and (comment.get("user") or {}).get("login") == author and isinstance(comment.get("id"), int):
                return _object(self.request("PATCH", f"/repos/{repo}/issues/comments/{comment['id']}", json={"body": text}))
        return _object(self.request("POST", f"/repos/{repo}/issues/{number}/comments", json={"body": text}, expect=(201,)))


def _redacted_output(body: dict[str, Any]) -> dict[str, Any]:
    """A check run's body with the text people read (title, summary, text, annotations) redacted."""
    output = body.get("output")
    if not isinstance(output, dict):
        return body
    shown = {key: redact(value) if key in ("title", "summary", "text") and isinstance(value, str) else value for key, value in output.items()}
    if isinstance(output.get("annotations"), list):
        shown["annotations"] = [
            {key: redact(value) if key in ("message", "title", "raw_details") and isinstance(value, str) else value for key, value in note.items()}
            if isinstance(note, dict)
            else note
            for note in output["annotations"]
        ]
    return {**body, "output": shown}


def _object(reply: Reply) -> dict[str, Any]:
    """The body as a JSON object; anything else is GitHub misbehaving (exit 3), not a crash."""
    data = reply.json()
    if not isinstance(data, dict):
        raise GitHubUnreachable(f"GitHub answered HTTP {reply.status} with {type(data).__name__} where an object was expected")
    return data


def _message(reply: Reply) -> str | None:
    """GitHub's `message` of a refusal; None when the body is no JSON object (not JSON, nested too
    deep, another type), which no refusal of GitHub's is. An empty body says nothing, which is fine."""
    if not reply.body:
        return ""
    try:
        data = reply.json()
    except InfrastructureError:
        return None
    if not isinstance(data, dict):
        return None
    message = data.get("message", "")
    return (message if isinstance(message, str) else "")[:300]


def _is_url(text: str) -> bool:
    """An absolute http(s) URL with a host, as GitHub's pagination links are; `http://[::1/x` is not."""
    try:
        parts = urlsplit(text)
        parts.port  # noqa: B018 - raises ValueError on a port that is not a number
    except ValueError:
        return False
    return parts.scheme.lower() in ("http", "https") and bool(parts.hostname) and not any(c.isspace() or c == "\0" for c in text)


def _next_link(header: str) -> str | None:
    """The rel="next" target of a Link header (RFC 8288), parsed by requests."""
    from requests.utils import parse_header_links

    for link in parse_header_links(header) if header else []:
        if link.get("rel") == "next" and link.get("url"):
            return str(link["url"])
    return None
