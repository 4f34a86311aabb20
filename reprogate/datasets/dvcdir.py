"""DVC's directory hash, so a DVC directory output can be verified without DVC installed.

DVC 3 records a directory as `md5: <hex>.dir`: the md5 of the JSON list of its files, each
`{"md5": <file md5>, "relpath": <posix path>}`, sorted by relpath and serialized with Python's
json.dumps(sort_keys=True) (dvc_data/hashfile/tree.py, Tree.as_bytes).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from reprogate.datasets.hashing import hash_files


def directory_listing(folder: Path) -> list[str]:
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())


def dvc_directory_md5(folder: Path, jobs: int | None = None) -> tuple[int, int, str]:
    """(total bytes, number of files, "md5:<hex>") of a folder as DVC 3 hashes it."""
    names = directory_listing(folder)
    digests = hash_files([folder / n for n in names], "md5", jobs)
    entries = [{"md5": d.checksum.split(":", 1)[1], "relpath": n} for n, d in zip(names, digests, strict=True)]
    payload = json.dumps(entries, sort_keys=True).encode("utf-8")
    return sum(d.size for d in digests), len(names), "md5:" + hashlib.md5(payload, usedforsecurity=False).hexdigest()
