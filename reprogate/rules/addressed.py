"""Files a record addresses by repository path must exist and still match their checksums.

This is the cheap half of artifact resolution: it runs in a pull request without network or GPU,
so a lock file edited without updating the record is caught before any rebuild is dispatched.
Remote artifacts (uri only) are resolved by `rebuild` and `audit`, not here.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from reprogate.core.canonical import CanonicalError, canonical_digest
from reprogate.core.diagnostics import Diagnostic, Severity
from reprogate.core.documents import DocumentError
from reprogate.core.history import config_changes
from reprogate.datasets import manifest_digest
from reprogate.rules.base import RuleContext
from reprogate.rules.environment import is_environment_pin
from reprogate.rules.files import AddressError, bytes_digest, file_stat, load_addressed, resolve

FileRefs = list[tuple[tuple[Any, ...], dict[str, Any]]]


def _file_refs(data: Any, path: tuple[Any, ...] = (), found: FileRefs | None = None) -> FileRefs:
    """Every object in the record that pairs a repository `path` with a `checksum`, in document
    order. Descends only into containers: most of a record is scalars, which cost nothing here."""
    found = [] if found is None else found
    if isinstance(data, dict):
        if isinstance(data.get("path"), str) and isinstance(data.get("checksum"), str):
            found.append((path, data))
        for key, value in data.items():
            if isinstance(value, (dict, list)):
                _file_refs(value, path + (key,), found)
    elif isinstance(data, list):
        for i, value in enumerate(data):
            if isinstance(value, (dict, list)):
                _file_refs(value, path + (i,), found)
    return found


def checksums_match(ctx: RuleContext) -> Iterator[Diagnostic]:
    """Reference artifacts by checksum; environment pins (lock files, recipe) are the
    environment-pins-match rule's: a mismatch there is drift, not an invalid record."""
    for where, ref in _file_refs(ctx.data):
        if is_environment_pin(where):
            continue
        if not ref["checksum"].startswith("sha256:"):
            continue  # the schema reports a malformed checksum
        try:
            real = resolve(ctx, ref["path"])
        except AddressError as exc:
            yield ctx.finding(where + ("path",), exc.message, exc.code, exc.hint)
            continue
        size = ref.get("bytes")
        actual_size = file_stat(ctx, real).st_size
        if isinstance(size, int) and not isinstance(size, bool) and actual_size != size:
            yield ctx.finding(
                where + ("bytes",),
                f"{ref['path']} is {actual_size:,} bytes, the record says {size:,}",
                "size-mismatch",
                "the file changed since the record was made",
            )
            continue
        actual = bytes_digest(ctx, real)
        if actual != ref["checksum"]:
            yield ctx.finding(
                where + ("checksum",),
                f"{ref['path']} does not match its checksum: the record pins {ref['checksum']}, the file is {actual}",
                "checksum-mismatch",
                f"if the change is intended, update the record: checksum: {actual}",
            )


def _canonical_check(ctx: RuleContext, where: tuple[Any, ...], rel: Any, pinned: Any, digest_of: Any, what: str) -> Iterator[Diagnostic]:
    if not isinstance(rel, str) or not isinstance(pinned, str) or not pinned.startswith("canonical-v1:"):
        return
    try:
        real = resolve(ctx, rel)
        doc = load_addressed(ctx, real)
        key = ("canonical", id(doc), digest_of)
        if key not in ctx.cache:  # documents are cached, so id(doc) is stable for the run
            ctx.cache[key] = digest_of(doc.data)
        actual = ctx.cache[key]
    except AddressError as exc:
        yield ctx.finding(where + ("path",), exc.message, exc.code, exc.hint)
        return
    except CanonicalError as exc:
        yield ctx.finding(where + ("path",), f"{rel} has no canonical form: {exc}", "no-canonical-form")
        return
    if actual != pinned:
        field = where[-1] if where else ""
        changed = f"{config_changes(ctx.root, rel, pinned, doc.data)}; " if what == "configuration" else ""
        yield ctx.finding(
            where + (("digest",) if field == "manifest" else ("hash",)),
            f"{what} {rel} does not match the record: {changed}pinned {pinned}, content is {actual}",
            "canonical-mismatch",
            f"if the change is intended, update the record to {actual}",
        )


def configuration_hash_matches(ctx: RuleContext) -> Iterator[Diagnostic]:
    """A data configuration's hash is its parsed content's; a configuration pinned from the trace
    (code) is checked against the reference trace's meta (trace_meta.py) and by its checksum."""
    config = ctx.record.job.config if ctx.record.job is not None else None
    if config is None:
        return
    if config.hash_of == "argv":
        return  # the entrypoint's arguments: rules/entrypoint.py
    if config.hash_of == "trace":
        if config.path is not None:
            try:
                resolve(ctx, config.path)
            except AddressError as exc:
                yield ctx.finding(("job", "config", "path"), exc.message, exc.code, exc.hint)
        return
    yield from _canonical_check(ctx, ("job", "config"), config.path, config.hash, canonical_digest, "configuration")
    yield from _configuration_is_data(ctx, config.path)


def _configuration_is_data(ctx: RuleContext, path: Any) -> Iterator[Diagnostic]:
    """A configuration that reads as one scalar (a Python file exec'd by a configurator, as
    nanoGPT's are, read as YAML) is pinned by a hash of its text taken as a string: the pin holds,
    and says nothing of the values the run used. Older records keep their meaning; this says so."""
    if not isinstance(path, str):
        return
    try:
        data = load_addressed(ctx, resolve(ctx, path)).data
    except AddressError:
        return  # reported by the hash check above
    if not isinstance(data, (dict, list)):
        yield ctx.finding(
            ("job", "config", "path"),
            f"{path} is not a mapping or a list (it reads as one {type(data).__name__}): its hash pins the text, not the values the run used",
            "configuration-not-data",
            CONFIGURATION_HINT,
            Severity.WARNING,
        )


CONFIGURATION_HINT = (
    "pin what the script ran with: pass the configuration it computes to Tracer(config=...) and pin its digest from the trace's meta "
    "(job.config.hash_of: trace, with the code's checksum; `reprogate init --config FILE.py` writes both), or pin a YAML or JSON file it reads"
)


def dataset_manifest_matches(ctx: RuleContext) -> Iterator[Diagnostic]:
    ref = ctx.record.dataset.manifest if ctx.record.dataset is not None else None
    if ref is None:
        return
    yield from _canonical_check(ctx, ("dataset", "manifest"), ref.path, ref.digest, _manifest_digest_of, "dataset manifest")
    if ref.path is not None and ref.id is not None:
        try:
            manifest = load_addressed(ctx, resolve(ctx, ref.path)).data
        except AddressError:
            return  # already reported above
        if isinstance(manifest, dict) and manifest.get("id") != ref.id:
            yield ctx.finding(
                ("dataset", "manifest", "id"), f"the record names dataset {ref.id!r}, the manifest is {manifest.get('id')!r}", "manifest-id-mismatch"
            )


def _manifest_digest_of(data: Any) -> str:
    if not isinstance(data, dict):
        raise CanonicalError("a dataset manifest is a mapping")
    try:
        return manifest_digest(data)
    except DocumentError as exc:  # a damaged line of a JSON Lines manifest
        first = exc.diagnostics[0]
        raise AddressError("addressed-unreadable", f"cannot read {first.path}:{first.location.line}: {first.message}") from None
