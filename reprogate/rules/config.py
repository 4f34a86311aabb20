"""The repository configuration must point at a reference record that exists and is one."""

from __future__ import annotations

from collections.abc import Iterator

from reprogate.core.diagnostics import Diagnostic
from reprogate.rules.base import RuleContext, get
from reprogate.rules.files import AddressError, load_addressed, resolve


def reference_record_exists(ctx: RuleContext) -> Iterator[Diagnostic]:
    rel = get(ctx.data, "reference")
    if not isinstance(rel, str):
        return
    try:
        doc = load_addressed(ctx, resolve(ctx, rel))
    except AddressError as exc:
        yield ctx.finding(("reference",), f"reference record: {exc.message}", exc.code, exc.hint)
        return
    if get(doc.data, "kind") != "RunRecord":
        yield ctx.finding(("reference",), f"{rel} is not a run record (kind: {get(doc.data, 'kind')!r})", "reference-not-a-record")
