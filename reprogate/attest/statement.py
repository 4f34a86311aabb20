"""The reproduction statement: an in-toto Statement v1 about one rebuild verdict.

Its subjects are the two files a reproduction is about, by SHA-256 of their bytes: the record that
was rebuilt (where the verdict names it) and the rebuild's own record (rebuild-record.yaml, beside
verdict.json). Its predicate (`PREDICATE_TYPE`, schemas/reproduction-predicate.schema.json) is the
bounded claim: the contract level and envelope, the environment realized (image or lock digest),
the seeds, what was compared, by which test and tolerance, the verdict, the runner, and what binds
it to the gate's judgement (the dispatch's nonce, the run, the record digest).

Every value comes from the verdict file and the two files it names; nothing is taken from the
machine `attest` runs on. Before anything is said, the files are tied together: the record's
digest must be the verdict's (so the record was not changed since), the rebuild record's SHA-256
the one the verdict names, and, when the caller knows them, the nonce and run the verdict's.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import Any

from reprogate.core.documents import DEFAULT_MAX_BYTES, load_text
from reprogate.core.errors import CheckFailed, UsageError
from reprogate.core.frozen import thaw
from reprogate.core.json_input import read_bounded
from reprogate.core.shapes import table
from reprogate.github.touched import rebuild_digest
from reprogate.github.verdicts import terminal
from reprogate.rebuild.run_binding import RunBinding
from reprogate.rebuild.verdict import Verdict
from reprogate.rebuild.verdict_environment import VerdictEnvironment
from reprogate.rebuild.verdicts import MAX_VERDICT_BYTES, parse_verdict

STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
PREDICATE_TYPE = "https://reprogate.dev/reproduction/v1"
# the gate's state for a verdict -> what the statement and the badge call it
OUTCOMES = {"success": "reproduced", "failure": "not-reproduced", "error": "inconclusive"}

# verdict.environment key -> predicate key, by section; only values of the declared type are carried
_IMAGE = {"image_id": "id", "digest_verified_by_engine": "digest", "image_source": "source", "built_from": "builtFrom"}
_LOCK = {"lock_file": "file", "lock_digest": "digest", "lock_format": "format", "lock_from": "from"}
_RUNNER_TEXT = {
    "machine": "machine",
    "os": "os",
    "python": "python",
    "torch": "torch",
    "driver": "driver",
    "cpu_model": "cpuModel",
    "cpu_capability": "cpuCapability",
    "mkl_cbwr": "mklCbwr",
    "launcher": "launcher",
    "backend": "backend",
}
_BINDING = {"nonce": "nonce", "id": "runId", "attempt": "runAttempt", "repository": "repository", "base": "base"}  # verdict.run key -> predicate key


@dataclass(frozen=True)
class Subject:
    """One file the statement is about: its name and the SHA-256 of its bytes."""

    name: str
    sha256: str

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "digest": {"sha256": self.sha256}}


@dataclass(frozen=True)
class Expected:
    """What the caller knows of the run a verdict must come from (None: not checked)."""

    nonce: str | None = None
    run_id: str | None = None


@dataclass(frozen=True)
class Statement:
    subjects: tuple[Subject, ...]
    predicate: Mapping[str, Any]

    @property
    def outcome(self) -> str:
        return str(self.predicate["verdict"]["outcome"])

    def to_json(self) -> dict[str, Any]:
        return {"_type": STATEMENT_TYPE, "subject": [s.to_json() for s in self.subjects], "predicateType": PREDICATE_TYPE, "predicate": dict(self.predicate)}

    def checksums(self) -> str:
        """The subjects in the shasum format `actions/attest` reads (subject-checksums), so the
        statement it signs names the same files with the same digests as this one."""
        return "".join(f"{s.sha256}  {s.name}\n" for s in self.subjects)


def outcome(verdict: Verdict) -> str:
    """reproduced, not-reproduced or inconclusive: the state the gate would post for this one verdict."""
    return OUTCOMES[terminal([verdict], [], []).state]


def _subject_name(text: str, what: str) -> str:
    """A path as a subject's name: normalized, '/'-separated, one line (the checksums file is line by line)."""
    if not text or any(ord(c) < 0x20 or ord(c) == 0x7F for c in text):
        raise UsageError(f"{what} {text[:100]!r} cannot name a subject: empty or with a control character")
    return PurePath(os.path.normpath(text)).as_posix()


def _record(verdict: Verdict, given: Path | None) -> tuple[Subject, dict[str, Any]]:
    """The record the verdict is about, checked against its digest; its subject and its data."""
    named = verdict.record.path
    path = given if given is not None else Path(named)
    raw = read_bounded(path, DEFAULT_MAX_BYTES, "the record the verdict names", "a run record")
    try:
        text = raw.removeprefix(b"\xef\xbb\xbf").decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UsageError(f"{path}: the record is not UTF-8 ({exc.reason})") from None
    data = load_text(text, str(path), "json" if path.suffix.lower() == ".json" else "yaml").data
    if not isinstance(data, dict):
        raise UsageError(f"{path}: not a run record (a mapping at the top level)")
    if rebuild_digest(data) != verdict.record.digest:
        raise CheckFailed(
            f"{path}: its digest is not the verdict's record.digest: the record was changed after the rebuild (or is another record)",
            hint="attest the verdict with the record as it was rebuilt (check out the commit the rebuild ran on; --record names its path)",
        )
    return Subject(_subject_name(named, "the verdict's record.path"), hashlib.sha256(raw).hexdigest()), data


def _rebuild_record(verdict: Verdict, verdict_path: Path) -> Subject:
    """rebuild-record.yaml beside the verdict (an artifact moves both together), its SHA-256 the verdict's."""
    ref = verdict.rebuild_record
    if ref is None:
        raise UsageError(f"{verdict_path}: the verdict names no rebuild record (rebuild_record), so there is nothing to pair the record with")
    name = PurePath(ref.path).name
    path = verdict_path.parent / _subject_name(name, "the verdict's rebuild_record.path")
    raw = read_bounded(path, DEFAULT_MAX_BYTES, "the rebuild record the verdict names", "a rebuild record")
    digest = hashlib.sha256(raw).hexdigest()
    if ref.checksum != f"sha256:{digest}":
        raise CheckFailed(
            f"{path}: its SHA-256 is not the verdict's rebuild_record.checksum: it is not the rebuild record this verdict was written with",
            hint="keep verdict.json and rebuild-record.yaml of one rebuild together (the rebuild's out-dir, uploaded as one artifact)",
        )
    return Subject(name, digest)


def files_problem(verdict: Verdict, verdict_path: Path) -> str | None:
    """Why the verdict is not about the files it names, or None: the record at its path (from
    the working directory: the checkout of the rebuilt commit) must have its record digest, and
    the rebuild record beside it its checksum. The badge believes a pass only then, as the
    statement does."""
    try:
        _record(verdict, None)
        _rebuild_record(verdict, verdict_path)
    except (CheckFailed, UsageError) as exc:
        return exc.message
    return None


def check_binding(verdict: Verdict, path: Path, expected: Expected) -> None:
    run = verdict.run
    if expected.nonce is not None and run.nonce != expected.nonce:
        raise CheckFailed(f"{path}: the verdict does not carry this dispatch's nonce (--nonce): it was not made by this dispatch's rebuild")
    if expected.run_id is not None and run.run_id != expected.run_id:
        raise CheckFailed(f"{path}: the verdict was made in run {str(run.run_id)[:20]}, not in run {expected.run_id} (--run-id)")


def _texts(env: VerdictEnvironment, keys: Mapping[str, str]) -> dict[str, Any]:
    """The facts `keys` names that are strings, under their predicate names."""
    return {out: value for key, out in keys.items() if (value := env.text(key)) is not None}


def _environment(env: VerdictEnvironment) -> dict[str, Any]:
    found: dict[str, Any] = {"requested": env.requested}
    found.update(_texts(env, {"realizer": "realizer", "sandbox": "sandbox"}))
    image = _texts(env, _IMAGE)
    if (digests := env.strings("repo_digests")) is not None:
        image["repoDigests"] = list(digests)
    if image:
        found["image"] = image
    if lock := _texts(env, _LOCK):
        found["lock"] = lock
    return found


def _runner(verdict: Verdict) -> dict[str, Any]:
    env = verdict.environment
    found: dict[str, Any] = {"tool": verdict.tool, "startedAt": verdict.started_at, "seconds": verdict.seconds}
    found.update(_texts(env, _RUNNER_TEXT))
    for key, out in (("world_size", "worldSize"), ("nodes", "nodes")):
        if (count := env.count(key)) is not None:
            found[out] = count
    for key, out in (("gpu_models", "gpuModels"), ("nodes_used", "nodesUsed")):
        if (values := env.strings(key)) is not None:
            found[out] = list(values)
    if verdict.claim.placement is not None:
        found["placement"] = thaw(verdict.claim.placement)
    return found


def _predicate(verdict: Verdict, record: Mapping[str, Any], verdict_digest: str) -> dict[str, Any]:
    ref, claim = verdict.record, verdict.claim
    said: dict[str, Any] = {
        "result": "pass" if verdict.passed else "fail",
        "outcome": outcome(verdict),
        "diagnosis": verdict.diagnosis,
        "exitCode": verdict.exit_code,
        "infrastructure": verdict.infrastructure,
    }
    if verdict.first_difference is not None:
        said["firstDifference"] = verdict.first_difference.to_json()
    said["digest"] = {"sha256": verdict_digest}
    contract: dict[str, Any] = {"level": ref.level}
    declared = table(record, "contract")
    for key in ("envelope", "steps"):
        if isinstance(declared.get(key), dict):
            contract[key] = declared[key]
    return {
        "verdict": said,
        "record": ref.to_json(),
        "contract": contract,
        "environment": _environment(verdict.environment),
        "seeds": verdict.seeds.to_json(),
        "compared": list(claim.compared),
        "tests": [t.to_json() for t in verdict.tests],
        "claim": {"replayed": claim.replayed, "text": claim.text, "notCovered": list(claim.not_covered)},
        "runner": _runner(verdict),
        "binding": {"recordDigest": ref.digest, **_binding(verdict.run)},
    }


def _binding(run: RunBinding) -> dict[str, str]:
    """The run the verdict names, under the predicate's names (only what it names)."""
    return {_BINDING[key]: value for key, value in run.as_json().items()}


def make_statement(verdict_path: Path, record_path: Path | None = None, expected: Expected = Expected()) -> Statement:
    """The statement about the verdict at `verdict_path`; the record is read where the verdict
    names it (relative to the working folder) unless `record_path` says where it is now."""
    raw = read_bounded(verdict_path, MAX_VERDICT_BYTES, "the verdict", "a reprogate verdict")
    verdict = parse_verdict(raw, verdict_path)
    check_binding(verdict, verdict_path, expected)
    record, data = _record(verdict, record_path)
    rebuilt = _rebuild_record(verdict, verdict_path)
    if rebuilt.name == record.name:
        raise UsageError(f"{verdict_path}: the record and the rebuild record have one name ({record.name}); subjects must differ")
    return Statement((record, rebuilt), _predicate(verdict, data, hashlib.sha256(raw).hexdigest()))


__all__ = ["OUTCOMES", "PREDICATE_TYPE", "STATEMENT_TYPE", "Expected", "Statement", "Subject", "check_binding", "make_statement", "outcome"]
