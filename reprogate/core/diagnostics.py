"""One shape for every finding reprogate reports, and the exit codes they map to.

Every command reports problems the same way (file, line, column, field path, message, hint) so
the text, JSON and GitHub formatters never need to know which check produced a finding.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any


class ExitCode(enum.IntEnum):
    """Process exit codes shared by all commands (see DESIGN.md, "Command line")."""

    OK = 0
    FAILED = 1  # a parseable input broke a rule, or a check did not pass
    USAGE = 2  # bad usage, or input that could not be read or parsed
    INFRA = 3  # a registry, API or device that could not be reached after retries
    INTERNAL = 4  # reprogate itself crashed (a bug): never read as "check failed" (cli/common.finish)


class Severity(str, enum.Enum):
    ERROR = "error"
    WARNING = "warning"
    NOTICE = "notice"


@dataclass(frozen=True)
class Location:
    """1-based line and column, as editors and GitHub annotations count them."""

    line: int = 1
    col: int = 1


@dataclass
class Diagnostic:
    """One finding about one file.

    `field` is the dotted path inside the document (`contract.metric.interval`), empty for
    findings about the file as a whole. `code` is a stable identifier tests and users can match
    on; `hint` says what to do about it.
    """

    path: str
    message: str
    code: str
    severity: Severity = Severity.ERROR
    location: Location = field(default_factory=Location)
    field: str = ""
    hint: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "file": self.path,
            "line": self.location.line,
            "col": self.location.col,
            "field": self.field,
            "severity": self.severity.value,
            "code": self.code,
            "message": self.message,
            "hint": self.hint or None,
        }


def field_path(parts: Iterable[Any]) -> str:
    """Render a JSON path as people write it: `execution.rank_mapping[3].node`."""
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out
