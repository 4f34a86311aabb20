"""A dataset manifest must be internally consistent before anything is verified against it.

A JSON Lines manifest is checked as it is read, a line at a time: each shard against the shard
schema, its name for safety and order (sorted, so a name listed twice is the one before it), its
checksum's algorithm, and the digest recomputed on the way. Memory stays flat at any size.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from reprogate.core.diagnostics import Diagnostic, Location, Severity
from reprogate.core.documents import Document
from reprogate.core.schema_check import schema_diagnostics
from reprogate.datasets import manifest_digest
from reprogate.datasets.digest import ManifestDigest
from reprogate.datasets.manifest_lines import ShardLines
from reprogate.datasets.manifests import LineDocument
from reprogate.datasets.names import UnsafeName, check_name
from reprogate.datasets.shard_checker import shard_checker
from reprogate.rules.base import RuleContext, get, items

MAX_STREAM_FINDINGS = 1000  # a manifest this broken is rebuilt, not read to the end
NAME_HINT = "shard names are relative POSIX paths inside the dataset root"
ORDER_HINT = "a JSON Lines manifest lists shards sorted by name (code-point order); rebuild it with `reprogate dataset manifest`"


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
                    yield ctx.finding(
                        at + (section, i, "name"),
                        f"unsafe shard name {exc}",
                        "manifest-unsafe-name",
                        "shard names are relative POSIX paths inside the dataset root",
                    )
    for i, shard in items(get(manifest, "shards")):
        checksum, name = get(shard, "checksum"), get(shard, "name")
        if isinstance(algorithm, str) and isinstance(checksum, str) and not checksum.startswith(algorithm + ":"):
            yield ctx.finding(
                at + ("shards", i, "checksum"),
                f"checksum {checksum.split(':')[0]}: does not match the manifest's algorithm {algorithm}",
                "manifest-algorithm-mismatch",
            )
        if isinstance(name, str):
            if name in names:
                yield ctx.finding(at + ("shards", i, "name"), f"shard {name!r} is listed twice (entries {names[name]} and {i})", "manifest-duplicate-shard")
            names[name] = i
    own = get(manifest, "digest")
    if isinstance(own, str) and isinstance(manifest, dict) and own.startswith("canonical-v1:"):
        actual = manifest_digest(manifest)
        if actual != own:
            yield ctx.finding(
                at + ("digest",), "the manifest's digest does not match its content", "manifest-digest-mismatch", f"the content's digest is {actual}"
            )


def stream_schema_diagnostics(doc: Document, kind: str) -> list[Diagnostic]:
    """Schema findings of a JSON Lines document's header (its shards are checked line by line by
    the manifest rule below); only dataset manifests are written as JSON Lines."""

    if kind != "DatasetManifest":
        return [Diagnostic(doc.path, f"a {kind} cannot be written as JSON Lines; only dataset manifests are", "jsonl-kind", location=Location(1, 1))]
    return schema_diagnostics(LineDocument(doc.path, {**doc.data, "shards": []}, doc.syntax, text=doc.text), kind)


def _at(text: str, key: str) -> int:
    at = text.find(f'"{key}":')
    return at + 1 if at >= 0 else 1


def _line_finding(path: str, line: int, text: str, key: str, message: str, code: str, hint: str = "") -> Diagnostic:
    """A finding about field `key` of the shard on `line` (shard index line - 2)."""
    return Diagnostic(path, message, code, Severity.ERROR, Location(line, _at(text, key)), f"shards[{line - 2}].{key}", hint)


def streamed_findings(ctx: RuleContext, lines: ShardLines) -> Iterator[Diagnostic]:
    data = ctx.data
    path = ctx.doc.path
    algorithm = data.get("algorithm")
    for i, entry in items(data.get("files")):
        name = get(entry, "name")
        if isinstance(name, str):
            try:
                check_name(name)
            except UnsafeName as exc:
                yield ctx.finding(("files", i, "name"), f"unsafe shard name {exc}", "manifest-unsafe-name", NAME_HINT)
    checker = shard_checker()
    digest = ManifestDigest({k: v for k, v in data.items() if k != "shards"})
    previous: str | None = None
    count = 0
    for line, text, shard in lines.numbered(strict=True):
        i = line - 2
        found: list[Diagnostic] = []
        if not checker.valid(shard):
            found.extend(checker.explain(path, i, line, text, shard))
        name, checksum = shard.get("name"), shard.get("checksum")
        if isinstance(name, str):
            try:
                check_name(name)
            except UnsafeName as exc:
                found.append(_line_finding(path, line, text, "name", f"unsafe shard name {exc}", "manifest-unsafe-name", NAME_HINT))
            if previous is not None and name == previous:
                why = f"shard {name!r} is listed twice (lines {line - 1} and {line})"
                found.append(_line_finding(path, line, text, "name", why, "manifest-duplicate-shard"))
            elif previous is not None and name < previous:
                why = f"shard {name!r} is out of order: it sorts before {previous!r} on line {line - 1}"
                found.append(_line_finding(path, line, text, "name", why, "manifest-order", ORDER_HINT))
            previous = name
        if isinstance(algorithm, str) and isinstance(checksum, str) and not checksum.startswith(algorithm + ":"):
            why = f"checksum {checksum.split(':')[0]}: does not match the manifest's algorithm {algorithm}"
            found.append(_line_finding(path, line, text, "checksum", why, "manifest-algorithm-mismatch"))
        digest.add(shard)
        count += len(found)
        yield from found
        if count >= MAX_STREAM_FINDINGS:
            why = f"stopped at line {line} after {count} findings; the rest of the manifest was not checked"
            yield Diagnostic(path, why, "manifest-too-broken", location=Location(line, 1))
            return
    own = data.get("digest")
    actual = digest.value()
    if isinstance(own, str) and own.startswith("canonical-v1:") and actual != own:
        yield ctx.finding(("digest",), "the manifest's digest does not match its content", "manifest-digest-mismatch", f"the content's digest is {actual}")


def manifest_consistent(ctx: RuleContext) -> Iterator[Diagnostic]:
    lines = get(ctx.data, "shards")
    if isinstance(lines, ShardLines):
        yield from streamed_findings(ctx, lines)
    else:
        yield from manifest_findings(ctx, ctx.data, ())


def inline_manifest_consistent(ctx: RuleContext) -> Iterator[Diagnostic]:
    dataset = ctx.record.dataset
    if dataset is not None and dataset.inline:  # the inline manifest itself is a dataset manifest's body, read as that kind's rules read one
        yield from manifest_findings(ctx, ctx.data["dataset"]["inline"], ("dataset", "inline"))
