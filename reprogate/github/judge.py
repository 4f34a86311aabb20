"""What a pull request changes, judged with the base revision's settings: the one assessment every
gate mode shares (compute annotates it, full and publish post it).

- records are validated at the head (the pull request's records must be valid), with the base's
  `records:` globs, so a pull request cannot hide a record by editing the globs;
- environment pins that no longer match (lock files, recipe) are drift: a reason to rebuild,
  never a reason to call the record invalid;
- `detect` reads the diff from git objects with the base's watch globs;
- the records to rebuild are those whose inputs (as the base has them) the diff reaches, plus the
  records with drift; a pull request that edits .reprogate.yaml needs a rebuild of the reference.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

from reprogate.core.config import Config
from reprogate.core.diagnostics import Diagnostic, Severity
from reprogate.detect.git import changed_files, read_blobs, resolve
from reprogate.detect.run import DetectResult, detect
from reprogate.github.contract_diff import ContractChange, contract_changes
from reprogate.github.revision import config_location, files_at, merge_base
from reprogate.github.touched import parse_record, prefixed, rebuild_digest, record_paths, touched_records
from reprogate.validate.runner import Options, validate

DRIFT = "environment-drift"


@dataclass(frozen=True)
class Assessment:
    """What the pull request changes, judged once per gate run and read by every later step."""

    config_rel: str
    config_changed: bool
    detection: DetectResult
    invalid: tuple[str, ...]  # every error, one line each
    invalid_records: tuple[str, ...]  # the records (paths) those errors are in, each once
    drift_findings: tuple[Diagnostic, ...]
    touched: tuple[str, ...]  # records to rebuild when a rebuild is required
    reference: str | None  # the configured reference record (repository-top path)
    references: tuple[str, ...]  # every record the base configuration names
    promoted: Mapping[str, str]  # record path -> digest at the head
    reasons: tuple[str, ...]  # why a rebuild is required (empty: it is not)
    contract_changes: Mapping[str, Sequence[ContractChange]]  # record path -> what the pull request changes in its contract

    @property
    def drift(self) -> list[str]:
        return [f"{d.path}:{d.field}" for d in self.drift_findings]


def assess(repo: Path, config_path: Path | None, config: Config, base: str, head: str, tree: Path | None = None) -> Assessment:
    """`tree` holds the head's files (the working tree, or the head materialized from git objects)."""

    top, rel = config_location(repo, config_path)
    prefix = os.path.dirname(rel)
    base, head = resolve(top, base), resolve(top, head)
    since = merge_base(top, base, head)
    changes = changed_files(top, since, head)
    changed = sorted({p for c in changes for p in (c.path, c.old_path) if p})
    detection = detect(top, since, head, config)

    base_paths = record_paths(config, prefix, files_at(top, base))
    base_blobs = read_blobs(top, [f"{base}:{p}" for p in base_paths])
    base_records = [parse_record(p, base_blobs.get(f"{base}:{p}")) for p in base_paths]
    promoted = sorted({c.path for c in detection.changes if c.layer == "records" and c.kind == "promoted"})
    head_wanted = sorted({p for p in base_paths if p in changed} | set(promoted))
    head_blobs = read_blobs(top, [f"{head}:{p}" for p in head_wanted])
    head_records = {p: parse_record(p, head_blobs.get(f"{head}:{p}")) for p in head_wanted}
    invalid: list[tuple[str, str]] = []  # (line, the record it is in)
    contracts: dict[str, list[ContractChange]] = {}
    for base_record in base_records:
        if base_record.data is not None and base_record.path in changed and head_blobs.get(f"{head}:{base_record.path}") is None:
            invalid.append(
                (
                    f"{base_record.path}: a run record the base holds is gone at the head (moved or deleted), so its pinned inputs would go "
                    "unwatched (retire or move a reference record in a pull request of its own, which a maintainer merges knowingly)",
                    base_record.path,
                )
            )
        if base_record.path in head_records:
            contract = contract_changes(base_record.data, head_records[base_record.path].data)
            if contract:
                contracts[base_record.path] = contract
    digests = {path: digest for path in promoted if (digest := rebuild_digest(head_records[path].data))}

    drift, head_invalid = _validate_head(config, (tree or top) / prefix if prefix else (tree or top), tree or top, changed)
    invalid += head_invalid
    touched = touched_records(base_records, head_records, changed, prefix)
    drifted = [p for p in dict.fromkeys(_top_path(d.path, tree or top) for d in drift) if p]

    reasons = []
    if detection.rebuild_required:
        reasons.append(f"watched layers changed ({', '.join(detection.layers) or 'reference record'})")
    if touched:  # what a record pins is watched whatever its name: a lock no detector knows, a repointed path, the record itself
        shown = "; ".join(list(touched.values())[:3]) + (f"; and {len(touched) - 3} more" if len(touched) > 3 else "")
        reasons.append(f"pinned inputs changed ({shown})")
    if rel in changed:
        reasons.append(f"{rel} changed")
    if drift:
        reasons.append(f"environment drift in {len(drifted) or len(drift)} record(s)")
    return Assessment(
        rel,
        rel in changed,
        detection,
        invalid=tuple(line for line, _ in invalid),
        invalid_records=tuple(dict.fromkeys(record for _, record in invalid)),
        drift_findings=tuple(drift),
        touched=tuple(dict.fromkeys([*touched, *drifted])),
        reference=prefixed(prefix, config.reference) if config.reference else None,
        references=tuple(base_paths),
        promoted=MappingProxyType(digests),
        reasons=tuple(reasons),
        contract_changes=MappingProxyType(contracts),
    )


def _validate_head(config: Config, folder: Path, tree: Path, changed: list[str]) -> tuple[list[Diagnostic], list[tuple[str, str]]]:
    """Validate the head's records there; in-repo shards the diff changed are hashed, whatever their
    size. The drift findings, and each error as (line, the record it is in)."""
    drift: list[Diagnostic] = []
    invalid: list[tuple[str, str]] = []
    if not config.records:
        return drift, invalid

    touched = frozenset((tree / path).resolve() for path in changed)
    report = validate([str(folder / glob) for glob in config.records], Options(root=folder, changed=touched))
    for f in report.files:
        for d in f.diagnostics:
            if d.code == DRIFT:
                drift.append(Diagnostic(_top_path(d.path, tree) or d.path, d.message, d.code, d.severity, d.location, d.field, d.hint))
            elif d.severity is Severity.ERROR:
                line = f"{_top_path(d.path, tree) or d.path}:{d.location.line} {d.field} {d.message}" + (f" ({d.hint})" if d.hint else "")
                invalid.append((line, _top_path(d.path, tree) or d.path))
    for d in report.problems:
        if d.severity is Severity.ERROR and d.code != "no-match":
            invalid.append((d.message, _top_path(d.path, tree) or d.path))
    return drift, invalid


def _top_path(display: str, tree: Path) -> str | None:
    """A validate display path (relative to the working folder) as a repository-top path."""
    try:
        return Path(os.path.abspath(display)).relative_to(tree.resolve()).as_posix()
    except ValueError:
        return None


__all__ = ["DRIFT", "Assessment", "assess"]
