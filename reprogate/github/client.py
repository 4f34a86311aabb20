"""A small GitHub REST client that keeps to GitHub's documented contract.

- `Accept: application/vnd.github+json` and an explicit `X-GitHub-Api-Version`.
- Timeouts on every request; 5xx retried with exponential backoff; primary and secondary rate
  limits honoured (Retry-After, x-ratelimit-remaining/-reset, else 60 s then backoff), bounded.
- Writes beyond the first few of a run are spaced at least `write_interval` seconds apart
  (GitHub asks clients making many writes to wait a second between them;
  ../shared/reference/github.md §3); a gate's handful of writes goes out at once.
- Pagination through the Link header.
- The token is never printed: under Actions it is masked (`::add-mask::`) before anything else,
  and errors quote GitHub's message, never request headers.
- Size limits: a status description is cut to 140 characters, a comment body to 65,536.
"""

from __future__ import annotations

import os
import re
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Iterator
from urllib.parse import quote

API_VERSION = "2022-11-28"
DESCRIPTION_LIMIT = 140
COMMENT_LIMIT = 65_536
RETRY_STATUS = {500, 502, 503, 504}


class GitHubError(Exception):
    def __init__(self, message: str, status: int = 0) -> None:
        super().__init__(message)
        self.status = status


class GitHubUnreachable(GitHubError):
    """The API could not be reached, or kept failing, after the allowed retries (exit 3)."""


def cut(text: str, limit: int, marker: str = "…") -> str:
    return text if len(text) <= limit else text[: limit - len(marker)] + marker


@dataclass
class GitHubClient:
    token: str
    api_url: str = field(default_factory=lambda: os.environ.get("GITHUB_API_URL", "https://api.github.com"))
    timeout: float = 20.0
    retries: int = 4
    backoff: float = 1.0
    write_interval: float = field(default_factory=lambda: float(os.environ.get("REPROGATE_GITHUB_WRITE_INTERVAL", "1.0")))
    max_wait: float = 300.0  # longest single rate-limit wait before giving up
    write_burst: int = 5  # writes sent without spacing before write_interval applies
    calls: int = 0
    writes: int = 0
    _last_write: float = 0.0
    _session: Any = None

    def __post_init__(self) -> None:
        if self.token and os.environ.get("GITHUB_ACTIONS") == "true":
            sys.stdout.write(f"::add-mask::{self.token}\n")
            sys.stdout.flush()

    @property
    def session(self) -> Any:
        if self._session is None:
            import requests

            self._session = requests.Session()
            self._session.headers.update({"Accept": "application/vnd.github+json", "X-GitHub-Api-Version": API_VERSION, "User-Agent": "reprogate"})
            if self.token:
                self._session.headers["Authorization"] = f"Bearer {self.token}"
        return self._session

    def _wait_for_limits(self, response: Any, attempt: int) -> float | None:
        """Seconds to wait before retrying, or None if the response is final."""
        status = response.status_code
        headers = response.headers
        if status in RETRY_STATUS:
            return self.backoff * 2**attempt
        if status in (403, 429):
            retry_after = headers.get("retry-after")
            if retry_after and retry_after.isdigit():
                return float(retry_after)
            if headers.get("x-ratelimit-remaining") == "0" and headers.get("x-ratelimit-reset", "").isdigit():
                return max(0.0, float(headers["x-ratelimit-reset"]) - time.time()) + 1
            text = response.text.lower()
            if "secondary rate limit" in text or "abuse" in text:
                return 60.0 * 2**attempt
        return None

    def request(self, method: str, path: str, json: Any = None, params: dict[str, Any] | None = None, expect: tuple[int, ...] = (200, 201, 204)) -> Any:
        import requests

        url = path if path.startswith("http") else f"{self.api_url.rstrip('/')}{path}"
        last = ""
        for attempt in range(self.retries + 1):
            if method != "GET" and self.writes >= self.write_burst:
                pause = self._last_write + self.write_interval - time.monotonic()
                if pause > 0:
                    time.sleep(pause)
            try:
                self.calls += 1
                response = self.session.request(method, url, json=json, params=params, timeout=(min(self.timeout, 10.0), self.timeout))
            except (requests.ConnectionError, requests.Timeout) as exc:
                last = type(exc).__name__
                time.sleep(self.backoff * 2**attempt)
                continue
            finally:
                if method != "GET":
                    self._last_write = time.monotonic()
                    self.writes += 1
            if response.status_code in expect:
                return response
            wait = self._wait_for_limits(response, attempt)
            if wait is None or attempt == self.retries:
                if wait is not None:
                    raise GitHubUnreachable(f"{method} {path}: still HTTP {response.status_code} after {self.retries + 1} attempts", response.status_code)
                raise GitHubError(f"{method} {path}: HTTP {response.status_code}: {_message(response)}", response.status_code)
            if wait > self.max_wait:
                raise GitHubUnreachable(f"{method} {path}: rate limited for {wait:.0f} s, longer than the {self.max_wait:.0f} s allowed", response.status_code)
            last = f"HTTP {response.status_code}"
            time.sleep(wait)
        raise GitHubUnreachable(f"{method} {path}: {last} after {self.retries + 1} attempts")

    def paginate(self, path: str, params: dict[str, Any] | None = None) -> Iterator[Any]:
        url: str | None = path
        query = {"per_page": 100, **(params or {})}
        while url:
            response = self.request("GET", url, params=query)
            query = None  # the next link carries its own query
            data = response.json()
            yield from (data if isinstance(data, list) else data.get("workflow_runs", []))
            url = _next_link(response.headers.get("Link", ""))

    # operations ------------------------------------------------------------------------------------

    def create_status(self, repo: str, sha: str, state: str, context: str, description: str, target_url: str | None = None) -> Any:
        body: dict[str, Any] = {"state": state, "context": context, "description": cut(description, DESCRIPTION_LIMIT)}
        if target_url:
            body["target_url"] = target_url
        return self.request("POST", f"/repos/{repo}/statuses/{sha}", json=body, expect=(201,)).json()

    def combined_status(self, repo: str, ref: str) -> Any:
        return self.request("GET", f"/repos/{repo}/commits/{ref}/status").json()

    def dispatch(self, repo: str, workflow: str, ref: str, inputs: dict[str, str]) -> dict[str, Any]:
        """Start a workflow_dispatch run; the run's URL when the server returns it (200), else {}."""
        body = {"ref": ref, "inputs": inputs, "return_run_details": True}
        try:
            response = self.request("POST", f"/repos/{repo}/actions/workflows/{workflow}/dispatches", json=body, expect=(200, 204))
        except GitHubError as exc:
            if exc.status != 422:
                raise
            body.pop("return_run_details")  # GHES versions that do not know the flag
            response = self.request("POST", f"/repos/{repo}/actions/workflows/{workflow}/dispatches", json=body, expect=(200, 204))
        return response.json() if response.status_code == 200 and response.content else {}

    def find_run(self, repo: str, workflow: str, correlation: str, since: str) -> dict[str, Any] | None:
        """The dispatched run whose run-name carries the correlation id (for 204 answers)."""
        for run in self.paginate(f"/repos/{repo}/actions/workflows/{workflow}/runs", {"event": "workflow_dispatch", "created": f">={since}"}):
            if correlation in str(run.get("display_title", "")):
                return run
        return None

    def permission(self, repo: str, user: str) -> str:
        try:
            return str(self.request("GET", f"/repos/{repo}/collaborators/{quote(user, safe='')}/permission").json().get("permission", "none"))
        except GitHubError as exc:
            if exc.status == 404:
                return "none"
            raise

    def remove_label(self, repo: str, number: int, label: str) -> None:
        try:
            self.request("DELETE", f"/repos/{repo}/issues/{number}/labels/{quote(label, safe='')}", expect=(200,))
        except GitHubError as exc:
            if exc.status != 404:  # already gone
                raise

    def upsert_comment(self, repo: str, number: int, marker: str, body: str, author: str = "github-actions[bot]") -> dict[str, Any]:
        """Edit the one comment carrying `marker` by `author`, or create it."""
        text = cut(f"{marker}\n{body}", COMMENT_LIMIT, "\n\n…(cut to GitHub's 65,536-character limit)")
        for comment in self.paginate(f"/repos/{repo}/issues/{number}/comments"):
            if marker in str(comment.get("body", "")) and (comment.get("user") or {}).get("login") == author:
                return self.request("PATCH", f"/repos/{repo}/issues/comments/{comment['id']}", json={"body": text}).json()
        return self.request("POST", f"/repos/{repo}/issues/{number}/comments", json={"body": text}, expect=(201,)).json()


def _message(response: Any) -> str:
    try:
        return str(response.json().get("message", ""))[:300]
    except ValueError:
        return response.text[:300]


def _next_link(header: str) -> str | None:
    match = re.search(r'<([^>]+)>;\s*rel="next"', header)
    return match.group(1) if match else None
