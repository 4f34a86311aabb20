"""A record is committed and shown in pull requests: it must never hold a credential."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from reprogate.core.diagnostics import Diagnostic
from reprogate.core.redact import is_secret_name, looks_secret
from reprogate.rules.base import RuleContext

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
    """A quick screen of the whole document at once: every string value joined by newlines, which
    no credential shape, registered value or URL credential can span (they stop at whitespace),
    so no match here means no value matches on its own (the common case): the walk with paths
    below is needed only when one might."""
    strings: list[str] = []
    stack = [data]
    while stack:
        node = stack.pop()
        if isinstance(node, str):
            strings.append(node)
        elif isinstance(node, dict):
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return looks_secret("\n".join(strings))


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
                    yield ctx.finding(
                        ("execution", section, name),
                        f"environment variable {name} is named like a credential; records keep behaviour-changing variables only",
                        "secret-in-record",
                        _HINT,
                    )
