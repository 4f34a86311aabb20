"""What a rank's wrapper leaves in the shared logs folder on a cluster: its exit code
(`rank<R>.exit`, one integer) and where it ran (`rank<R>.place`, one JSON object naming its
node). The training code runs in the same pod or job step and can overwrite either file, so both
launchers read them here, once, into a plain value or None: a file that is not what the wrapper
writes is a rank that did not report, never a crash of the runner.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

MAX_EXIT_DIGITS = 10  # a process's status fits in 32 bits; more digits is no exit code
MAX_NODE_NAME = 253  # a DNS name, the longest a node is called by Kubernetes or Slurm


def parse_exit_code(text: str | None) -> int | None:
    """The integer the wrapper wrote (`$?`, or a negative signal number), else None."""
    value = (text or "").strip()
    digits = value.removeprefix("-")
    if not digits or len(digits) > MAX_EXIT_DIGITS or not digits.isascii() or not digits.isdigit():
        return None
    return int(value)


@dataclass(frozen=True)
class Placement:
    """Where a rank said it ran: its node, and on Slurm the job step that ran it."""

    node: str | None
    step: str | None = None  # a Slurm step id (digits): what `scancel JOB.STEP` is given


def _word(value: object, limit: int) -> str | None:
    if not isinstance(value, str) or not value or len(value) > limit or not value.isprintable() or value.strip() != value:
        return None
    return value


def parse_placement(text: str | None) -> Placement | None:
    """The place file's node and step, each None where it is not a plain name (a step: digits);
    None for a file that is not one JSON object."""
    try:
        data = json.loads(text or "")
    except (ValueError, RecursionError):
        return None
    if not isinstance(data, dict):
        return None
    step = _word(data.get("step"), MAX_EXIT_DIGITS)
    return Placement(_word(data.get("node"), MAX_NODE_NAME), step if step is not None and step.isascii() and step.isdigit() else None)
