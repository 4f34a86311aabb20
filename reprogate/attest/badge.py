"""The badge: shields.io endpoint JSON (https://shields.io/badges/endpoint-badge) from verdicts.

Its message is the gate's one judgement of the verdicts (`github.verdicts.terminal`, the state the
status job would post): reproduced only when every verdict passed and the rebuild job succeeded,
not reproduced when one found a difference or could not use its input, inconclusive when the
infrastructure stopped one, a verdict is missing or the job was cancelled. Only reproduced is ever
green.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from reprogate.attest.statement import OUTCOMES
from reprogate.core.errors import UsageError
from reprogate.github.verdicts import terminal
from reprogate.rebuild.verdict import Verdict

COLORS = {"reproduced": "brightgreen", "not-reproduced": "red", "inconclusive": "orange"}
MESSAGES = {"reproduced": "reproduced", "not-reproduced": "not reproduced", "inconclusive": "inconclusive"}
MAX_LABEL = 64


def badge(
    verdicts: Sequence[Verdict],
    missing: Sequence[str] = (),
    label: str = "reproduction",
    job_problem: str | None = None,
    refused: Sequence[str] = (),
) -> dict[str, Any]:
    """The endpoint JSON for these verdicts (one rebuild's records together). A verdict that never
    arrived (`missing`), one that is not about the files it names (`refused`:
    attest.statement.files_problem) or a rebuild job that did not end as its verdicts say
    (`job_problem`, github.binding.job_problem) makes it inconclusive, as it makes the status `error`."""
    if not label or len(label) > MAX_LABEL or any(ord(c) < 0x20 or ord(c) == 0x7F for c in label):
        raise UsageError(f"--label: 1 to {MAX_LABEL} printable characters")
    said = OUTCOMES[terminal(verdicts, [], list(missing), list(refused), job_problem=job_problem).state]
    return {"schemaVersion": 1, "label": label, "message": MESSAGES[said], "color": COLORS[said]}


__all__ = ["COLORS", "MESSAGES", "badge"]
