"""The one form of "now" reprogate writes into records, captures, verdicts and reports.

Whole seconds in UTC with a `Z` (2024-05-01T12:00:00Z): what the schemas' date-time format accepts,
what sorts as text, and the same in every file, so two documents' times compare by eye.
"""

from __future__ import annotations

import datetime


def utc_now() -> str:
    """Now, in UTC, to the second, as `YYYY-MM-DDTHH:MM:SSZ`."""
    return datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z")


__all__ = ["utc_now"]
