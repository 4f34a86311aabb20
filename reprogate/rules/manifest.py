"""A dataset manifest must be internally consistent before anything is verified against it."""

from __future__ import annotations

from typing import Any, Iterator

from reprogate.datasets import manifest_digest
from reprogate.datasets.names import UnsafeName, check_name
from reprogate.core.diagnostics import Diagnostic
from reprogate.rules.base import RuleContext, get, items


def manifest_findings(ctx: RuleContext, manifest: Any, at: tuple[Any, ...]) -> Iterator[Diagnostic]:
    algorithm = get(manifest, "algorithm")
    names: dict[str, int] = {}
    for section in ("shards", "files"):
        for i, entry in items(get(manifest, section)):
            name = get(entry, "name")
            if isinstance(name, str):
                try:
                    check_name(name)
                except UnsafeName as exc:
                    yield ctx.finding(at + (section, i, "name"), f"unsafe shard name {exc}", "manifest-unsafe-name", "shard names are relative POSIX paths inside the dataset root")
    for i, shard in items(get(manifest, "shards")):
        checksum, name = get(shard, "checksum"), get(shard, "name")
        if isinstance(algorithm, str) and isinstance(checksum, str) and not checksum.startswith(algorithm + ":"):
            yield ctx.finding(at + ("shards", i, "checksum"), f"checksum {checksum.split(':')[0]}: does not match the manifest's algorithm {algorithm}", "manifest-algorithm-mismatch")
        if isinstance(name, str):
            if name in names:
                yield ctx.finding(at + ("shards", i, "name"), f"shard {name!r} is listed twice (entries {names[name]} and {i})", "manifest-duplicate-shard")
            names[name] = i
    own = get(manifest, "digest")
    if isinstance(own, str) and isinstance(manifest, dict) and own.startswith("canonical-v1:"):
        actual = manifest_digest(manifest)
        if actual != own:
            yield ctx.finding(at + ("digest",), "the manifest's digest does not match its content", "manifest-digest-mismatch", f"the content's digest is {actual}")


def manifest_consistent(ctx: RuleContext) -> Iterator[Diagnostic]:
    yield from manifest_findings(ctx, ctx.data, ())


def inline_manifest_consistent(ctx: RuleContext) -> Iterator[Diagnostic]:
    inline = get(ctx.data, "dataset", "inline")
    if isinstance(inline, dict):
        yield from manifest_findings(ctx, inline, ("dataset", "inline"))
