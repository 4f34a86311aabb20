"""Globs with `**`: the one translation of a pattern into a regex on POSIX paths.

Validate (which files are records), detect (which changed paths a record or watch glob covers)
and datasets (which files under a root are shards) all match globs; one translation means a
pattern names the same files for each of them.
"""

from __future__ import annotations

import functools
import re


@functools.lru_cache(maxsize=512)
def glob_to_regex(pattern: str) -> re.Pattern[str]:
    """Translate a glob with `**` (any depth, including none) into an anchored regex on POSIX paths."""
    out, i = "", 0
    while i < len(pattern):
        c = pattern[i]
        if pattern.startswith("**/", i):
            out += "(?:.*/)?"
            i += 3
            continue
        if pattern.startswith("**", i):
            out += ".*"
            i += 2
            continue
        if c == "*":
            out += "[^/]*"
        elif c == "?":
            out += "[^/]"
        elif c == "[":
            end = pattern.find("]", i + 1)
            if end == -1:
                out += re.escape(c)
            else:
                body = pattern[i + 1 : end]
                out += "[" + ("^" + body[1:] if body.startswith("!") else body) + "]"
                i = end
        else:
            out += re.escape(c)
        i += 1
    return re.compile(out + r"\Z")
