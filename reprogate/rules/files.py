"""The files a record addresses by repository path, resolved and read once per `validate` run.

Shared by the rules that read what a record names (checksums, environment pins, configuration,
shards, source tree, trace metadata): each of them refuses a path that leaves the repository the
same way, and a thousand records that address one lock file stat, hash and parse it once. The
cache lives in the RuleContext, so it lasts as long as one run. Rules live in their own modules;
this one holds no rule, so any rule module may import it without a loop.
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path
from typing import Any

from reprogate.core.canonical import file_digest
from reprogate.core.documents import Document, DocumentError, display_path
from reprogate.core.git import ignored_paths
from reprogate.datasets.manifests import load_manifest
from reprogate.rules.base import RuleContext


class AddressError(Exception):
    def __init__(self, code: str, message: str, hint: str = "") -> None:
        super().__init__(message)
        self.code, self.message, self.hint = code, message, hint


def resolve(ctx: RuleContext, rel: str, folder: bool = False) -> Path:
    """The file (or, with `folder`, the folder) a repository path names, refusing anything that
    leaves the repository.

    Remembered for the run (the cache lives as long as one `validate`): a thousand records that
    address the same lock file resolve it once, not a thousand times a dozen system calls."""
    key = ("resolve", ctx.root, rel, folder)
    if key not in ctx.cache:
        try:
            ctx.cache[key] = _resolve(ctx, rel, folder)
        except AddressError as exc:
            ctx.cache[key] = exc
    found: Path | AddressError = ctx.cache[key]
    if isinstance(found, AddressError):
        raise found
    return found


def file_stat(ctx: RuleContext, real: Path) -> os.stat_result:
    """The file's stat, once per run: its size and mtime key the digest and parse caches."""
    key = ("stat", real)
    if key not in ctx.cache:
        ctx.cache[key] = real.stat()
    st: os.stat_result = ctx.cache[key]
    return st


def _resolve(ctx: RuleContext, rel: str, folder: bool = False) -> Path:
    try:
        candidate = ctx.root / rel
        real, root = candidate.resolve(), ctx.root.resolve()
        if real != root and root not in real.parents:
            raise AddressError("path-outside-root", f"{rel[:200]!r} resolves outside the repository root {display_path(root)}")
        if not candidate.exists():
            rule = ignored_paths(ctx.root, [rel]).get(rel)
            if rule is not None:
                raise AddressError(
                    "file-ignored",
                    f"addressed file {rel[:200]!r} does not exist: it is ignored by .gitignore ({rule}), so it was never committed",
                    f"commit it where the record was made: git add -f {shlex.quote(rel)}",
                )
            hint = "commit the file, or fix the path (paths are relative to the repository root)"
            raise AddressError("file-missing", f"addressed file {rel[:200]!r} does not exist (looked in {display_path(root)})", hint)
        if folder and not real.is_dir():
            raise AddressError("not-a-folder", f"addressed path {rel[:200]!r} is not a folder")
        if not folder and not real.is_file():
            raise AddressError("not-a-file", f"addressed path {rel[:200]!r} is not a regular file")
    except (OSError, ValueError) as exc:  # a NUL in the path, a name too long for the file system
        raise AddressError("path-unusable", f"addressed path {rel[:200]!r} cannot be opened: {getattr(exc, 'strerror', None) or exc}") from None
    return real


def bytes_digest(ctx: RuleContext, real: Path) -> str:
    st = file_stat(ctx, real)
    key = ("sha256", str(real), st.st_size, st.st_mtime_ns)
    if key not in ctx.cache:
        ctx.cache[key] = file_digest(real)
    digest: str = ctx.cache[key]
    return digest


def load_addressed(ctx: RuleContext, real: Path) -> Document:
    """Parse an addressed YAML/JSON file once per run (many records may address one config)."""
    st = file_stat(ctx, real)
    key = ("doc", str(real), st.st_size, st.st_mtime_ns)
    if key not in ctx.cache:
        try:
            ctx.cache[key] = load_manifest(real, display_path(real), ctx.max_bytes)  # any YAML/JSON; .jsonl manifests stream
        except DocumentError as exc:
            ctx.cache[key] = exc
    value: Document | DocumentError = ctx.cache[key]
    if isinstance(value, DocumentError):
        first = value.diagnostics[0]
        raise AddressError("addressed-unreadable", f"cannot parse {display_path(real)}:{first.location.line}:{first.location.col}: {first.message}")
    return value


def addressed_manifest(ctx: RuleContext) -> dict[str, Any] | None:
    """The dataset manifest a record addresses (inline or by path), or None if unavailable."""
    dataset = ctx.record.dataset
    if dataset is None:
        return None
    if dataset.inline:  # a dataset manifest's body, which that kind's rules read as the manifest reader gives it
        inline: dict[str, Any] = ctx.data["dataset"]["inline"]
        return inline
    rel = dataset.manifest.path if dataset.manifest is not None else None
    if rel is None:
        return None
    try:
        data = load_addressed(ctx, resolve(ctx, rel)).data
    except (AddressError, OSError):
        return None
    return data if isinstance(data, dict) else None
