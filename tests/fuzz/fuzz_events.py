"""Fuzz harness: GitHub event payloads (GITHUB_EVENT_PATH), through the bounded JSON reader and
the typed event parser the gate starts from.

The first byte picks the event name (pull_request, merge_group, push, workflow_run,
pull_request_target, or another). Expected: a ReprogateError (UsageError naming the field) and
nothing else. Seeds: GitHub's own webhook examples where .ci/npm holds them (the gate's tests use
the same), and a minimal payload of each kind.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from harness import REPO, fuzz, instrumented, structured

with instrumented():
    from reprogate.core.errors import ReprogateError
    from reprogate.github.events import parse_event, read_payload

NAMES = ["pull_request", "merge_group", "push", "workflow_run", "pull_request_target", "issue_comment"]
EXAMPLES_INDEX = REPO / ".ci" / "npm" / "node_modules" / "@octokit" / "webhooks-examples" / "api.github.com" / "index.json"
FOLDER = Path(tempfile.mkdtemp(prefix="reprogate-fuzz-events-"))
SHA = "a" * 40
MINIMAL = {
    "pull_request": {
        "action": "opened",
        "number": 2,
        "repository": {"full_name": "o/r", "default_branch": "main"},
        "pull_request": {"number": 2, "base": {"sha": SHA, "repo": {"full_name": "o/r"}}, "head": {"sha": SHA, "repo": {"full_name": "o/r"}}, "labels": []},
        "sender": {"login": "octocat"},
    },
    "merge_group": {"action": "checks_requested", "merge_group": {"head_sha": SHA, "base_sha": SHA}, "repository": {"full_name": "o/r"}},
    "push": {"ref": "refs/heads/main", "before": SHA, "after": SHA, "repository": {"full_name": "o/r", "default_branch": "main"}},
    "workflow_run": {"action": "completed", "workflow_run": {"id": 1, "head_sha": SHA, "conclusion": "success"}, "repository": {"full_name": "o/r"}},
}


DOCUMENTS = list(MINIMAL.items())


def seeds() -> list[tuple[str, bytes]]:
    """Payloads as bytes (first byte even: read raw; it and the 0x80 bit pick the event name and
    whether GITHUB_REPOSITORY is set), and structured seeds (odd: a minimal payload edited)."""
    out = [(name, bytes([2 * NAMES.index(name)]) + json.dumps(payload).encode()) for name, payload in MINIMAL.items()]
    out += [(f"edit-{name}", bytes([1, i]) + bytes(range(16))) for i, (name, _) in enumerate(DOCUMENTS)]
    if EXAMPLES_INDEX.is_file():
        for entry in json.loads(EXAMPLES_INDEX.read_text()):
            if entry.get("name") in NAMES:
                for i, example in enumerate(entry.get("examples", [])[:2]):
                    out.append((f"{entry['name']}-{i}", bytes([2 * NAMES.index(entry["name"])]) + json.dumps(example).encode()))
    return out


def one(data: bytes) -> None:
    if not data:
        return
    edited = structured(data, [payload for _, payload in DOCUMENTS])
    name = DOCUMENTS[data[1] % len(DOCUMENTS)][0] if edited is not None else NAMES[(data[0] >> 1) % len(NAMES)]
    path = FOLDER / "event.json"
    path.write_bytes(data[1:] if edited is None else json.dumps(edited).encode())
    try:
        parse_event(name, read_payload(path), "" if data[0] & 0x80 else "o/r", str(path))
    except ReprogateError:
        pass


if __name__ == "__main__":
    fuzz(one, seeds(), max_len=32768)
