"""Dates after which exact reproduction is no longer promised.

Reported as warnings: an expired date does not make the record wrong, but every claim made from
it must say that exact reproduction expired; `validate --strict` turns them into failures for
repositories that want old records retired.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterator
from typing import Any

from reprogate.core.diagnostics import Diagnostic, Severity
from reprogate.rules.base import RuleContext, get
from reprogate.rules.files import addressed_manifest


def _expired(ctx: RuleContext, value: Any) -> datetime.date | None:
    if not isinstance(value, str):
        return None
    try:
        when = datetime.date.fromisoformat(value)
    except ValueError:
        return None  # the schema reports malformed dates
    return when if when < ctx.today else None


def dataset_retention_current(ctx: RuleContext) -> Iterator[Diagnostic]:
    manifest = addressed_manifest(ctx)
    when = _expired(ctx, get(manifest, "retention", "expires"))
    if when is None:
        return
    inline = ctx.record.dataset is not None and ctx.record.dataset.inline
    where = ("dataset", "inline", "retention", "expires") if inline else ("dataset", "manifest")
    yield ctx.finding(
        where,
        f"dataset retention expired on {when.isoformat()}: the addressed bytes may be gone, so exact reproduction is no longer promised",
        "retention-expired",
        "re-pin the data and record a new reference run, or retire this record",
        Severity.WARNING,
    )


def manifest_retention_current(ctx: RuleContext) -> Iterator[Diagnostic]:
    when = _expired(ctx, get(ctx.data, "retention", "expires"))
    if when is not None:
        yield ctx.finding(
            ("retention", "expires"), f"retention expired on {when.isoformat()}: the shards may be gone", "retention-expired", "", Severity.WARNING
        )


def contract_lifetime_current(ctx: RuleContext) -> Iterator[Diagnostic]:
    when = _expired(ctx, ctx.record.contract.lifetime_expires if ctx.record.contract is not None else None)
    if when is not None:
        yield ctx.finding(
            ("contract", "lifetime", "expires"),
            f"the contract expired on {when.isoformat()} and needs review",
            "contract-expired",
            "review the envelope and extend lifetime.expires, or retire the record",
            Severity.WARNING,
        )
