"""config: the configuration the run reads is the one the record pins (canonical hash, so a
reformatted file still matches; the byte checksum too when the record pins one).

A script configured on its command line (job.config.hash_of: argv) has its arguments pinned: here
the entrypoint's arguments are compared with them, flag by flag (with `--contract-from`, the
configuration is the base's and the entrypoint the head's, so a pull request that changes a flag
fails here, naming it).

A configuration written as code (job.config.hash_of: trace) has no values to hash before it runs:
here its bytes are checked against the checksum; the values it computed are checked after the
run, where `run` compares every rank's Tracer(config=...) digest with the pinned hash."""

from __future__ import annotations

import errno
import hashlib
from typing import Any

from reprogate.core.canonical import BYTES_PREFIX, CanonicalError, canonical_digest
from reprogate.core.documents import DEFAULT_MAX_BYTES, DocumentError, load_bytes
from reprogate.core.fileio import read_written_by_code
from reprogate.core.history import config_changes
from reprogate.rebuild.stages.base import StageResult, failed, passed
from reprogate.rebuild.state import RebuildJob, RebuildState
from reprogate.runtime.entry_command import EntryCommandError, arguments_digest, flag_changes, read_entry


def config(state: RebuildState) -> StageResult:
    job = state.job
    pin = job.job_section.config
    path, pinned = pin.path, pin.hash
    name = pin.id or path
    if pin.hash_of == "argv":
        return _arguments(job)
    try:
        raw = _as_copied(job, str(path))
    except OSError as exc:
        return failed(f"cannot read the configuration {path}: {exc.strerror or exc}")
    if pin.hash_of == "trace":
        return _code(job, raw, str(name))
    try:
        after = load_bytes(raw, str(path), "json" if str(path).lower().endswith(".json") else "yaml").data
        found = canonical_digest(after)
    except (DocumentError, CanonicalError) as exc:
        return failed(f"cannot read the configuration {path}: {exc}")
    if found != pinned:
        return failed(
            f"configuration {name} changed: {_what_changed(job, str(path), str(pinned), after)} (canonical hash {found}, the record pins {pinned})", found=found
        )
    checksum = pin.checksum
    if checksum and _bytes_digest(raw) != checksum:
        return failed(f"configuration {path} was reformatted (same content, other bytes) and the record pins its bytes")
    return passed(f"configuration {name}: canonical hash matches")


def _arguments(job: RebuildJob) -> StageResult:
    """The entrypoint's script arguments against the pinned ones (job.config.argv)."""
    pin = job.job_section.config
    if pin.argv is None:
        return failed("job.config says hash_of: argv and pins no argument list (job.config.argv)", exit_code=2)
    pinned = list(pin.argv)
    if pin.hash != arguments_digest(pinned):
        return failed(f"job.config.hash is not the digest of job.config.argv ({arguments_digest(pinned)}): the pin contradicts itself", exit_code=2)
    try:
        command = read_entry(list(job.job_section.entrypoint))
    except EntryCommandError as exc:
        return failed(f"the entrypoint cannot be read: {exc}", exit_code=2)
    if command.launcher == "other" or command.no_python:
        return failed("the configuration is the script's arguments (hash_of: argv), and the entrypoint runs no script to tell them from", exit_code=2)
    changes = flag_changes(pinned, command.arguments)
    if changes:
        return failed(f"configuration (the entrypoint's arguments) changed: {'; '.join(changes)}", found=arguments_digest(command.arguments))
    shown = " ".join(pinned) or "no arguments"
    return passed(f"configuration: the entrypoint's arguments are the pinned ones ({shown})")


def _as_copied(job: RebuildJob, path: str) -> bytes:
    """The configuration as the work folder holds it, read once, never through a link nor from
    anything but a regular file: this stage runs while the preflight's ranks wait for the run,
    and they can write into the work folder (a link to the runner's `~/.docker/config.json`
    would put its values into the verdict; a FIFO would never end)."""
    raw = read_written_by_code(job.workdir / path, DEFAULT_MAX_BYTES, within=job.workdir)
    if raw is None:
        raise OSError(errno.EFBIG, f"larger than {DEFAULT_MAX_BYTES:,} bytes")
    return raw


def _bytes_digest(raw: bytes) -> str:
    return BYTES_PREFIX + hashlib.sha256(raw).hexdigest()


def _code(job: RebuildJob, raw: bytes, name: str) -> StageResult:
    checksum = job.job_section.config.checksum
    found = _bytes_digest(raw)
    if checksum and found != checksum:
        return failed(f"configuration {name} (code) changed: its bytes are {found}, the record pins {checksum}", found=found)
    pinned = "its bytes match; " if checksum else ""
    return passed(f"configuration {name} is code: {pinned}the values it computes are compared after the run (each rank's Tracer(config=...) digest)")


def _what_changed(job: RebuildJob, path: str, pinned: str, after: Any) -> str:
    """The keys that differ from the pinned version, found in the repository's history."""
    return config_changes(job.root, path, pinned, after)
