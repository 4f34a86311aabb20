"""config: the configuration the run reads is the one the record pins (canonical hash, so a
reformatted file still matches; the byte checksum too when the record pins one)."""

from __future__ import annotations

from reprogate.core.canonical import CanonicalError, canonical_digest, file_digest
from reprogate.core.documents import DocumentError, load_document
from reprogate.rebuild.context import RebuildContext, StageResult, failed, passed


def config(ctx: RebuildContext) -> StageResult:
    path = ctx.section("job", "config", "path")
    pinned = ctx.section("job", "config", "hash")
    name = ctx.section("job", "config", "id") or path
    try:
        found = canonical_digest(load_document(ctx.workdir / path).data)
    except (DocumentError, CanonicalError, OSError) as exc:
        return failed(f"cannot read the configuration {path}: {exc}")
    if found != pinned:
        return failed(f"configuration {name} changed: its canonical hash is {found}, the record pins {pinned}", found=found)
    checksum = ctx.section("job", "config", "checksum")
    if checksum and file_digest(ctx.workdir / path) != checksum:
        return failed(f"configuration {path} was reformatted (same content, other bytes) and the record pins its bytes")
    return passed(f"configuration {name}: canonical hash matches")
