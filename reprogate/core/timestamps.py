"""One way to say "now" in what reprogate writes: UTC, whole seconds, a trailing Z (the form
the schemas' date-time fields and GitHub's API use)."""

from __future__ import annotations

import datetime


def utc_now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z")
