"""Dataset layer: manifests (id, shards added/removed/changed), DVC outputs, tokenizer and
vocabulary files."""

from __future__ import annotations

import fnmatch
import re
from typing import Any

from reprogate.detect.base import Change, DetectContext
from reprogate.detect.versions import Versions

LAYER = "dataset"
SIDE_FILES = ("tokenizer*.json", "tokenizer.model", "spiece.model", "*.spm", "vocab*.txt", "vocab*.json", "merges.txt", "special_tokens_map.json")


_SIDE_FILE = re.compile("|".join(fnmatch.translate(p) for p in SIDE_FILES))


def is_side_file(name: str) -> bool:
    return _SIDE_FILE.match(name) is not None


def matches(v: Versions) -> bool:
    return v.name.endswith((".dvc", ".yaml", ".yml", ".json")) or v.name == "dvc.lock" or is_side_file(v.name)


def _entries(v: Versions, which: str) -> dict[str, str] | None:
    """name -> identity (checksum, size) of what a manifest or DVC file records; None if neither."""
    is_dvc = v.name.endswith(".dvc") or v.name == "dvc.lock"
    if not is_dvc and not v.mentions(b"datasetmanifest"):
        return None  # not parsed: no manifest says nothing of its kind
    data = v.data(which)
    if is_dvc:
        if data is None:
            return {}
        outs = data.get("outs", []) if v.name.endswith(".dvc") else [o for s in (data.get("stages") or {}).values() for o in (s.get("outs") or [])]
        return {str(o.get("path")): f"md5:{o.get('md5')} ({o.get('size', '?')} bytes)" for o in outs if isinstance(o, dict)}
    if isinstance(data, dict) and data.get("kind") == "DatasetManifest":
        found = {f"shard {s['name']}": f"{s.get('checksum')} ({s.get('bytes')} bytes)" for s in data.get("shards", []) if isinstance(s, dict) and "name" in s}
        found.update({f"{f.get('role', 'file')} {f['name']}": str(f.get("checksum")) for f in data.get("files", []) if isinstance(f, dict) and "name" in f})
        found["manifest id"] = f"{data.get('id')} {data.get('version', '')}".strip()
        return found
    return None


def diff(v: Versions, ctx: DetectContext) -> list[Change]:
    if is_side_file(v.name):
        return [
            Change(LAYER, v.path, "changed", "tokenizer/vocabulary file", detail="content changed" if v.old and v.new else ("added" if v.new else "removed"))
        ]
    try:
        old, new = _entries(v, "old"), _entries(v, "new")
    except (ValueError, AttributeError, TypeError) as exc:
        if v.name.endswith(".dvc") or v.name == "dvc.lock" or v.kind() == "DatasetManifest":
            return [Change(LAYER, v.path, "unparseable", detail=f"cannot be parsed ({exc}); counted as changed")]
        return []
    if old is None and new is None:
        return []
    old, new = old or {}, new or {}
    changes: list[Any] = []
    for key in sorted(set(old) | set(new)):
        if old.get(key) == new.get(key):
            continue
        kind = "changed" if key in old and key in new else ("added" if key in new else "removed")
        changes.append(Change(LAYER, v.path, kind, key, old.get(key), new.get(key)))
    return changes
