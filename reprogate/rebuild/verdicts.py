"""Reading a verdict back: `report` renders it, `github status` posts its terminal state.

A verdict file arrives from another job (an artifact, a runner's disk), so it is treated as
input: read with a size bound, parsed, and checked against schemas/verdict.schema.json. Anything
else (missing, empty, not JSON, another shape) is a UsageError naming the file and the field, and
the status poster turns exactly that into an `error` state rather than leaving a check pending.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from reprogate.core.diagnostics import field_path
from reprogate.core.errors import UsageError
from reprogate.core.json_input import parse_json_bytes, read_bounded
from reprogate.core.schemas import validator

MAX_VERDICT_BYTES = 16 * 1024 * 1024


def read_verdict(path: Path) -> dict[str, Any]:
    """The verdict in the file at `path`, read bounded and held to its schema."""
    return parse_verdict(read_bounded(path, MAX_VERDICT_BYTES, "the verdict", "a reprogate verdict"), path)


def parse_verdict(raw: bytes, path: Path) -> dict[str, Any]:
    """The verdict in `raw` (the bytes of the file at `path`), held to its schema: for a caller
    that must also know the exact bytes it judged (`attest` names their digest)."""
    data = parse_json_bytes(raw, str(path), "the verdict")
    if not isinstance(data, dict) or data.get("kind") != "Verdict":
        raise UsageError(f"{path}: not a reprogate verdict (kind: Verdict)")
    errors = sorted(validator("Verdict").iter_errors(data), key=lambda e: list(e.absolute_path))
    if errors:
        first = errors[0]
        raise UsageError(
            f"{path}: {field_path(first.absolute_path) or '(top level)'}: {first.message[:300]}",
            hint="the verdict was not written by this reprogate, or was changed",
        )
    return data
