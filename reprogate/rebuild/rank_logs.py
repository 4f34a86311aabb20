"""The training script's output, kept: every rank's log of the run copied into the out folder.

A rebuild runs its ranks in a work folder that is removed afterwards (unless --workdir names
one), so on a pass the training script's own output was gone with it. What each rank printed is
copied to `ranks/<run>/rankN.log` beside the verdict (`preflight` is the rank hosts that ran the
first seed; `seed-N` a later seed's), read with the no-follow reader (the code under test wrote
these files), through the one redactor, and cut to its last LOG_LIMIT bytes. The verdict's `logs`
names them, so the report does.
"""

from __future__ import annotations

from pathlib import Path

from reprogate.core.fileio import atomic_write, read_written_by_code
from reprogate.core.redact import redact

LOG_LIMIT = 4 * 1024 * 1024  # bytes kept of each rank's log (its end: where a failure shows)
MAX_LOGS = 512  # ranks x runs kept; a larger run keeps the first ones and says so in the report
FOLDER = "ranks"


def _tail(path: Path) -> str | None:
    """The log's last LOG_LIMIT bytes (a longer one starts with a line saying it was cut), None if unreadable."""
    try:
        size = path.lstat().st_size
        data = read_written_by_code(path, max(size, 0) + 1)
    except OSError:
        return None
    if data is None:
        return None
    text = data[-LOG_LIMIT:].decode("utf-8", "replace")
    return (f"[reprogate: the first {len(data) - LOG_LIMIT} bytes of this log are not kept]\n" if len(data) > LOG_LIMIT else "") + text


def keep_rank_logs(workdir: Path, out: Path) -> tuple[str, ...]:
    """Copy `workdir/runs/*/logs/rank*.log` to `out/ranks/...`; the paths written, relative to `out`."""
    kept: list[str] = []
    for log in sorted((workdir / "runs").glob("*/logs/rank*.log"))[:MAX_LOGS]:
        text = _tail(log)
        if text is None:
            continue
        rel = f"{FOLDER}/{log.parent.parent.name}/{log.name}"
        target = out / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(target, redact(text))
        kept.append(rel)
    return tuple(kept)
