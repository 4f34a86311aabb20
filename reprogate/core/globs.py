"""Globs with `**`: the one translation of a pattern into a regex on POSIX paths.

Validate (which files are records), detect (which changed paths a record or watch glob covers)
and datasets (which files under a root are shards) all match globs; one translation means a
pattern names the same files for each of them.
"""

from __future__ import annotations

import functools
import re
import warnings


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
                group = "[" + ("^" + body[1:] if body.startswith("!") else body) + "]"
                if _is_class(group):
                    out += group
                    i = end
                else:  # `[]`, `[z-a]`, `[a\\]`: no set a regex takes, so the `[` is taken as a character
                    out += re.escape(c)
        else:
            out += re.escape(c)
        i += 1
    return re.compile(out + r"\Z")


@functools.lru_cache(maxsize=512)
def _is_class(group: str) -> bool:
    """Whether a bracket expression, as written into the regex, is one whole character set: the
    body goes in as it is, and an empty one, a range backwards or a trailing backslash would make
    the whole pattern fail to compile (exit 4 on a glob from .reprogate.yaml)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)  # `[[`: a possible nested set, still one set today
            re.compile(group)
    except re.error:
        return False
    return True
