"""A record is committed and shown in pull requests: it must never hold a credential."""

from __future__ import annotations

import json
from typing import Any, Iterator

from reprogate.core.diagnostics import Diagnostic
from reprogate.rules import RuleContext, rule
from reprogate.core.redact import is_secret_name, looks_secret

_HINT = "remove it, rotate the credential, and keep secrets in the runner's secret store"


def _strings(node: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], str]]:
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _strings(value, path + (key,))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _strings(value, path + (i,))
    elif isinstance(node, str):
        yield path, node


def _may_hold_secret(data: Any) -> bool:
    """A quick screen of the whole document at once: none of the credential shapes can match
    across the quotes and separators JSON puts between values, so no match here means no value
    matches on its own (the common case), and the walk below is needed only when one might."""
    try:
        text = json.dumps(data, ensure_ascii=False)
    except (TypeError, ValueError):
        return True
    return looks_secret(text)


def no_secrets(ctx: RuleContext) -> Iterator[Diagnostic]:
    if _may_hold_secret(ctx.data):
        for path, value in _strings(ctx.data):
            if looks_secret(value):
                yield ctx.finding(path, "this value looks like a credential (token or private key); it is not shown here", "secret-in-record", _HINT)
    for section in ("env",):
        env = ctx.data.get("execution", {}).get(section) if isinstance(ctx.data.get("execution"), dict) else None
        if isinstance(env, dict):
            for name in env:
                if is_secret_name(name):
                    yield ctx.finding(("execution", section, name), f"environment variable {name} is named like a credential; records keep behaviour-changing variables only", "secret-in-record", _HINT)


for _kind in ("RunRecord", "DatasetManifest", "Config"):
    rule(_kind)(no_secrets)
