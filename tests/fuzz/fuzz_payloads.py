"""Fuzz harness: what `reprogate github status --publish both|check-run|status` sends GitHub, from
the verdict and report text that goes into it: the commit status (description), the check run's
create and updates (title, summary, annotations 50 per request) and the pull request comment,
built as the status job builds them (github/command.py: the verdicts' judgement, the report
rendered from them, their annotations), through the client's own redaction and cutting.

Half the inputs (first byte odd) are verdicts of the shape `reprogate rebuild` writes
(tests/support/verdicts.py), mutated structurally and read by the verdict reader; the rest build
the texts from the bytes (`FuzzedDataProvider`), a chunk repeated up to past GitHub's limits so
the cuts are reached. Expected: nothing raises, and every request is within GitHub's limits (a
status description 140 characters, a check run title 255, its summary and text 65,535 bytes of
UTF-8, at most 50 annotations a request, each with a path, a line from 1 and a message of at
most 64 KB, a comment 65,536 characters) and, where .ci/npm holds GitHub's OpenAPI description
(@octokit/openapi, as the gate's tests), valid against the operation's request schema; a
verdict the reader refuses (ReprogateError) is not posted. Anything else is a finding.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import atheris
from harness import REPO, fuzz, instrumented, structured

sys.path.insert(0, str(REPO / "tests"))
from support.github_api import OCTOKIT, OpenAPI
from support.verdicts import STAGES, make_verdict

with instrumented():
    from reprogate.core.errors import ReprogateError
    from reprogate.core.http import Reply
    from reprogate.github import checks
    from reprogate.github.client import COMMENT_LIMIT, DESCRIPTION_LIMIT, GitHubClient
    from reprogate.github.command import _report_body, verdict_annotations
    from reprogate.github.gate import MARKER
    from reprogate.github.trust import with_base
    from reprogate.github.verdicts import terminal
    from reprogate.rebuild.verdict import Verdict
    from reprogate.rebuild.verdicts import read_verdict

API = OpenAPI() if (OCTOKIT / "openapi" / "generated" / "api.github.com.json").is_file() else None
FOLDER = Path(tempfile.mkdtemp(prefix="reprogate-fuzz-payloads-"))
REPOSITORY, SHA, BASE = "octo/repro", "a" * 40, "b" * 40
URL = f"https://github.com/{REPOSITORY}/actions/runs/17"
STATES = ["success", "failure", "error", "pending"]
DOCUMENTS = [make_verdict(), *(make_verdict("fail", stage) for stage in STAGES[::3]), make_verdict("fail", "preflight", infrastructure=True)]


class Recorder(GitHubClient):
    """GitHub as the status job meets it on a fresh commit (no check run yet, no comment), keeping
    every request it is sent."""

    def __init__(self) -> None:
        super().__init__(token="", api_url="https://api.github.com", write_interval=0.0)
        self.sent: list[tuple[str, str, Any]] = []

    def request(self, method: str, path: str, json: Any = None, params: dict[str, Any] | None = None, expect: tuple[int, ...] = (200, 201, 204)) -> Reply:
        self.sent.append((method, path, json))
        if method == "GET":
            body: Any = {"total_count": 0, "check_runs": []} if path.endswith("/check-runs") else []
        else:
            body = {"id": 7, "html_url": URL}
        return Reply(201 if method == "POST" else 200, {}, _json(body).encode(), f"https://api.github.com{path}")


def _json(value: Any) -> str:
    return json.dumps(value)


def seeds() -> list[tuple[str, bytes]]:
    raw = [("texts", b"\x00" + bytes(range(64))), ("long", b"\x00\xff\xff\xff" + "é€𝄞 report ".encode() * 8)]
    return raw + [(f"verdict-{i}", bytes([1, i]) + bytes(range(16))) for i in range(len(DOCUMENTS))]


def _long(fdp: atheris.FuzzedDataProvider, most: int) -> str:
    """A text of the input's characters, its chunk repeated up to past `most` characters."""
    chunk = fdp.ConsumeUnicodeNoSurrogates(fdp.ConsumeIntInRange(0, 64))
    times = fdp.ConsumeIntInRange(1, most // max(1, len(chunk)) + 2) if fdp.ConsumeBool() else 1
    return chunk * times


def from_bytes(data: bytes) -> checks.CheckOutput:
    fdp = atheris.FuzzedDataProvider(data)
    state = fdp.PickValueInList(STATES)
    title = with_base(_long(fdp, 300), BASE) if fdp.ConsumeBool() else _long(fdp, 300)
    summary = _long(fdp, 70_000)
    notes = []
    for _ in range(fdp.ConsumeIntInRange(0, 3) * fdp.ConsumeIntInRange(0, 40)):
        path = fdp.ConsumeUnicodeNoSurrogates(20)
        line, column = fdp.ConsumeIntInRange(-3, 10**9), fdp.ConsumeIntInRange(-3, 300) if fdp.ConsumeBool() else None
        notes.append(checks.Annotation(path, _long(fdp, 66_000), fdp.PickValueInList(["failure", "warning", "notice", "fatal"]), line, column, _long(fdp, 300)))
    return checks.CheckOutput(state, title, summary, tuple(notes), URL if fdp.ConsumeBool() else None)


def from_verdict(verdict: Verdict, data: bytes) -> checks.CheckOutput:
    """The check as status_command builds it from one accepted verdict."""
    judged = terminal([verdict], [], [], [], None, BASE)
    notes = [f"note {i}: {data[-8:].hex()}" for i in range(data[-1] % 4)]
    return checks.CheckOutput(judged.state, judged.description, _report_body([verdict], notes, judged.description), tuple(verdict_annotations([verdict])), URL)


def _bytes(text: Any) -> int:
    return len(text.encode("utf-8")) if isinstance(text, str) else 0


def check(method: str, path: str, body: Any) -> None:
    """GitHub's limits on what it is sent, and its request schema."""
    if not isinstance(body, dict):
        return
    if "/statuses/" in path and len(body.get("description", "")) > DESCRIPTION_LIMIT:
        raise AssertionError(f"a status description of {len(body['description'])} characters (GitHub takes {DESCRIPTION_LIMIT})")
    if "/comments" in path and len(body.get("body", "")) > COMMENT_LIMIT:
        raise AssertionError(f"a comment of {len(body['body'])} characters (GitHub takes {COMMENT_LIMIT})")
    output = body.get("output")
    if isinstance(output, dict):
        if len(output.get("title", "")) > checks.TITLE_LIMIT:
            raise AssertionError(f"a check run title of {len(output['title'])} characters")
        for name in ("summary", "text"):
            if _bytes(output.get(name)) > checks.SUMMARY_LIMIT:
                raise AssertionError(f"a check run {name} of {_bytes(output.get(name))} bytes (GitHub takes {checks.SUMMARY_LIMIT})")
        notes = output.get("annotations") or []
        if len(notes) > checks.ANNOTATIONS_PER_REQUEST:
            raise AssertionError(f"{len(notes)} annotations in one request (GitHub takes {checks.ANNOTATIONS_PER_REQUEST})")
        for note in notes:
            if not note.get("path") or note.get("start_line", 0) < 1 or _bytes(note.get("message")) > 64 * 1024 or not note.get("message"):
                raise AssertionError(f"an annotation GitHub refuses: {json.dumps(note)[:300]}")
            if len(note.get("title", "")) > checks.TITLE_LIMIT:
                raise AssertionError(f"an annotation title of {len(note['title'])} characters")
    json.dumps(body).encode("utf-8")
    if API is not None:
        API.check_request(method, path, body)


def one(data: bytes) -> None:
    if len(data) < 2:
        return
    edited = structured(data, DOCUMENTS)
    if edited is None:
        out = from_bytes(data[1:])
    else:
        path = FOLDER / "verdict.json"
        path.write_text(json.dumps(edited))
        try:
            out = from_verdict(read_verdict(path), data)
        except ReprogateError:
            return
    client = Recorder()
    client.create_status(REPOSITORY, SHA, out.state if out.state in STATES else "error", "reprogate/reproduction", out.title, out.details_url)
    if out.state == "pending":
        checks.queue(client, REPOSITORY, SHA, "reprogate/reproduction", out)
    else:
        checks.complete(client, REPOSITORY, SHA, "reprogate/reproduction", out)
    client.upsert_comment(REPOSITORY, 1, MARKER, out.summary)
    for method, path, body in client.sent:
        check(method, path, body)


if __name__ == "__main__":
    fuzz(one, seeds(), max_len=8192)
