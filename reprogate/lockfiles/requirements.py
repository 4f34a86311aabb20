"""pip requirements files, including pip-compile output with `--hash` lines."""

from __future__ import annotations

import re

from reprogate.lockfiles import Locked, LockFileError, normalize

FORMAT = "pip-requirements"
PATTERNS = ["requirements*.txt", "requirements*.in", "constraints*.txt"]
_REQ = re.compile(r"^(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[[^\]]*\])?\s*(?P<spec>[^;#]*)")
_HASH = re.compile(r"--hash[= ](?P<hash>[a-z0-9]+:[0-9a-fA-F]+)")


def _logical_lines(text: str) -> list[str]:
    out, current = [], ""
    for raw in text.splitlines():
        line = raw.split(" #", 1)[0] if not raw.lstrip().startswith("#") else ""
        if line.rstrip().endswith("\\"):
            current += line.rstrip()[:-1] + " "
            continue
        out.append(current + line)
        current = ""
    if current:
        out.append(current)
    return out


def parse(text: str) -> list[Locked]:
    found = []
    for number, line in enumerate(_logical_lines(text), 1):
        stripped = line.strip()
        if not stripped or stripped.startswith(("-", "#")) or "://" in stripped.split(" ")[0]:
            continue  # options (-r, -c, --index-url), comments, direct URLs
        match = _REQ.match(stripped)
        if not match:
            raise LockFileError(f"line {number}: cannot read requirement {stripped[:60]!r}")
        spec = match.group("spec").strip()
        pin = re.match(r"^={2,3}\s*([^\s,;]+)$", spec.split("--hash")[0].strip())
        hashes = frozenset(m.group("hash") for m in _HASH.finditer(stripped))
        found.append(Locked(normalize(match.group("name")), pin.group(1) if pin else None, hashes))
    return found
