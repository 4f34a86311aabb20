"""A record is committed and shown in pull requests: it must never hold a credential."""

from __future__ import annotations

from typing import Any, Iterator

from reprogate.core.diagnostics import Diagnostic
from reprogate.rules.base import RuleContext
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


def no_secrets(ctx: RuleContext) -> Iterator[Diagnostic]:
    for path, value in _strings(ctx.data):
        if looks_secret(value):
            yield ctx.finding(path, "this value looks like a credential (token or private key); it is not shown here", "secret-in-record", _HINT)
    for section in ("env",):
        env = ctx.data.get("execution", {}).get(section) if isinstance(ctx.data.get("execution"), dict) else None
        if isinstance(env, dict):
            for name in env:
                if is_secret_name(name):
                    yield ctx.finding(("execution", section, name), f"environment variable {name} is named like a credential; records keep behaviour-changing variables only", "secret-in-record", _HINT)

