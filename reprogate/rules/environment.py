"""Environment pins that no longer match the working tree: drift, not an invalid record.

A record states facts about the reference run. Its lock files and build recipe say what the
reference ran in; a pull request may change them, and that change is exactly what the gate
rebuilds. So a lock file or Dockerfile that no longer matches its checksum is reported as
*environment drift* (a notice; `validate --strict` fails on it), while reference artifacts (the
project tree, configuration, dataset manifest, trace, checkpoints) must still match.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from reprogate.core.diagnostics import Diagnostic, Severity
from reprogate.core.record import BuildRecipe, LockFile, RunRecord
from reprogate.rules.base import RuleContext
from reprogate.rules.files import AddressError, bytes_digest, resolve

CODE = "environment-drift"
HINT = (
    "the gate rebuilds the reference in the environment the working tree declares (rebuild --environment candidate); a new reference run records the new pins"
)


def environment_pins(record: RunRecord) -> Iterator[tuple[tuple[Any, ...], LockFile | BuildRecipe]]:
    """(field path, pin) of every environment pin that names a repository file."""
    source = record.source
    if source is None:
        return
    for i, pin in enumerate(source.lock_files):
        yield ("source", "lock_files", i), pin
    if source.build_recipe is not None:
        yield ("source", "build_recipe"), source.build_recipe


def is_environment_pin(where: tuple[Any, ...]) -> bool:
    return where[:2] in (("source", "lock_files"), ("source", "build_recipe"))


def environment_pins_match(ctx: RuleContext) -> Iterator[Diagnostic]:
    for where, pin in environment_pins(ctx.record):
        rel, checksum = pin.path, pin.checksum
        if checksum is None or not checksum.startswith("sha256:"):
            continue  # the schema reports a malformed pin; a recipe without a checksum pins nothing here
        try:
            real = resolve(ctx, rel)
        except AddressError as exc:
            if exc.code == "file-missing":
                yield ctx.finding(where + ("path",), f"environment drift: {rel} is no longer in the working tree", CODE, HINT, Severity.NOTICE)
            else:
                yield ctx.finding(where + ("path",), exc.message, exc.code, exc.hint)
            continue
        actual = bytes_digest(ctx, real)
        if actual != checksum:
            yield ctx.finding(
                where + ("checksum",),
                f"environment drift: {rel} changed since the reference run (the record pins {checksum}, the file is {actual})",
                CODE,
                HINT,
                Severity.NOTICE,
            )
