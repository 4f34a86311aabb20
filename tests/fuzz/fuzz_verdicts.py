"""Fuzz harness: verdict files, through the reader (bounded JSON, the verdict schema, the typed
`Verdict` it builds) and what consumes a verdict that passed it: the Markdown and JSON report
(`reprogate report`), the rebuild's text summary, the status job's terminal state and its check
run's annotations, and the statement's view of its environment.

Expected: a ReprogateError from the reader (UsageError naming the field); nothing from the
consumers, since the schema allows whatever reached them. Whatever the reader accepts reads back
as itself: its JSON builds the same value and writes the same JSON (a finding otherwise). Seeds: verdicts of the shape
`reprogate rebuild` writes (tests/support/verdicts.py), passing, failing and stopped.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

from harness import REPO, fuzz, instrumented, structured

sys.path.insert(0, str(REPO / "tests"))
from support.verdicts import STAGES, make_verdict

with instrumented():
    from reprogate.attest.statement import outcome
    from reprogate.core.errors import ReprogateError
    from reprogate.github.command import verdict_annotations
    from reprogate.github.verdicts import terminal
    from reprogate.rebuild.command import text_summary
    from reprogate.rebuild.report import markdown, render
    from reprogate.rebuild.verdict import Verdict
    from reprogate.rebuild.verdicts import read_verdict

FOLDER = Path(tempfile.mkdtemp(prefix="reprogate-fuzz-verdicts-"))


def verdicts() -> list[tuple[str, dict]]:
    out = [("pass", make_verdict())]
    out += [(f"fail-{stage}", make_verdict("fail", stage)) for stage in STAGES[::3]]
    out.append(("infrastructure", make_verdict("fail", "preflight", infrastructure=True, level="statistical")))
    nameless = make_verdict("fail", "steps")
    del nameless["record"]["name"]
    out.append(("nameless", nameless))
    return out


DOCUMENTS = [verdict for _, verdict in verdicts()]


def seeds() -> list[tuple[str, bytes]]:
    """Each verdict as bytes (first byte even: read raw), and as a structured seed (odd: the
    verdict of that index, edited by the rest of the input)."""
    raw = [(name, b"\x00" + json.dumps(verdict, indent=1).encode()) for name, verdict in verdicts()]
    return raw + [(f"edit-{name}", bytes([1, i]) + bytes(range(16))) for i, (name, _) in enumerate(verdicts())]


def one(data: bytes) -> None:
    if not data:
        return
    edited = structured(data, DOCUMENTS)
    path = FOLDER / "verdict.json"
    path.write_bytes(data[1:] if edited is None else json.dumps(edited).encode())
    try:
        verdict = read_verdict(path)
    except ReprogateError:
        return
    markdown(verdict)
    render(verdict, "json")
    render(verdict, "text")
    text_summary(verdict)
    terminal([verdict], [], [])
    outcome(verdict)
    verdict_annotations([verdict])
    written = verdict.to_json()
    again = Verdict.from_json(json.loads(json.dumps(written)), str(path))
    if again != verdict or again.to_json() != written:
        raise AssertionError("a verdict the reader accepted does not read back as itself")


if __name__ == "__main__":
    fuzz(one, seeds(), max_len=16384)
