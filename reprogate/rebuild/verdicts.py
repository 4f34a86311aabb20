"""Reading a verdict back: `report` renders it, `attest` states it, `github status` posts its
terminal state and its check run.

A verdict file arrives from another job (an artifact, a runner's disk), so it is treated as
input: read with a size bound, parsed (a key twice in one object refused, core/json_input.py),
held to schemas/verdict.schema.json and built into the frozen `Verdict` it was written from
(rebuild/verdict.py `Verdict.from_json`). Anything else (missing, empty, not JSON, another shape)
is a UsageError (exit 2) naming the file and the field, and the status poster turns exactly that
into an `error` state rather than leaving a check pending. Nothing past these two functions reads
a verdict's JSON.
"""

from __future__ import annotations

from pathlib import Path

from reprogate.core.json_input import parse_json_bytes, read_bounded
from reprogate.rebuild.verdict import Verdict

MAX_VERDICT_BYTES = 16 * 1024 * 1024


def read_verdict(path: Path) -> Verdict:
    """The verdict in the file at `path`, read bounded and held to its schema."""
    return parse_verdict(read_bounded(path, MAX_VERDICT_BYTES, "the verdict", "a reprogate verdict"), path)


def parse_verdict(raw: bytes, path: Path) -> Verdict:
    """The verdict in `raw` (the bytes of the file at `path`), held to its schema: for a caller
    that must also know the exact bytes it judged (`attest` names their digest)."""
    return Verdict.from_json(parse_json_bytes(raw, str(path), "the verdict"), str(path))
