"""Records layer: run records added, removed or changed, and promotions to baseline."""

from __future__ import annotations

from typing import Any

from reprogate.detect.base import Change, DetectContext
from reprogate.detect.versions import Versions

LAYER = "records"


def matches(v: Versions) -> bool:
    return v.name.endswith((".yaml", ".yml", ".json"))


def diff(v: Versions, ctx: DetectContext) -> list[Change]:
    if not v.mentions(b"runrecord") or v.kind() != "RunRecord":
        return []
    try:
        old, new = v.data("old"), v.data("new")
    except ValueError as exc:
        return [Change(LAYER, v.path, "unparseable", detail=f"cannot be parsed ({exc}); counted as changed")]
    if old == new:
        return []
    for which, side in (("base", old), ("head", new)):
        if side is not None and not isinstance(side, dict):  # a link (its blob is the target's name) or another document
            return [
                Change(LAYER, v.path, "unparseable", detail=f"is not a run record at the {which} (a link, or a document of another shape); counted as changed")
            ]
    metadata = (new or old or {}).get("metadata")
    name = str(metadata.get("name", v.path)) if isinstance(metadata, dict) else v.path
    changes = [Change(LAYER, v.path, "added" if old is None else ("removed" if new is None else "changed"), name)]
    promoted_before, promoted_after = _promoted(old), _promoted(new)
    if promoted_after and not promoted_before:
        changes.append(Change(LAYER, v.path, "promoted", name, detail="promoted to baseline"))
    if ctx.reference_record and v.path == ctx.reference_record:
        changes.append(Change(LAYER, v.path, "reference", name, detail="the pinned reference record changed"))
    return changes


def _promoted(data: dict[str, Any] | None) -> bool:
    baseline = (data or {}).get("baseline")
    return isinstance(baseline, dict) and bool(baseline.get("promoted"))
