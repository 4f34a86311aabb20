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
from dataclasses import dataclass, field
from pathlib import Path

from reprogate.core.config import Config
from reprogate.core.diagnostics import Diagnostic, Severity
from reprogate.detect.git import changed_files, read_blobs, resolve
from reprogate.detect.run import DetectResult, detect
from reprogate.github.contract_diff import ContractChange, contract_changes
from reprogate.github.revision import config_location, files_at, merge_base
from reprogate.github.touched import parse_record, prefixed, rebuild_digest, record_paths, touched_records
from reprogate.validate.runner import Options, validate

DRIFT = "environment-drift"


@dataclass
class Assessment:
    config_rel: str
    config_changed: bool
    detection: DetectResult
    invalid: list[str] = field(default_factory=list)  # every error, one line each
    invalid_records: list[str] = field(default_factory=list)  # the records (paths) those errors are in, each once
    drift_findings: list[Diagnostic] = field(default_factory=list)
    touched: list[str] = field(default_factory=list)  # records to rebuild when a rebuild is required
    reference: str | None = None  # the configured reference record (repository-top path)
    references: list[str] = field(default_factory=list)  # every record the base configuration names
    promoted: dict[str, str] = field(default_factory=dict)  # record path -> digest at the head
    reasons: list[str] = field(default_factory=list)  # why a rebuild is required (empty: it is not)
    contract_changes: dict[str, list[ContractChange]] = field(default_factory=dict)  # record path -> what the pull request changes in its contract

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
    found = Assessment(rel, rel in changed, detect(top, since, head, config))
    found.reference = prefixed(prefix, config.reference) if config.reference else None

    base_paths = record_paths(config, prefix, files_at(top, base))
    found.references = base_paths
    base_blobs = read_blobs(top, [f"{base}:{p}" for p in base_paths])
    base_records = [parse_record(p, base_blobs.get(f"{base}:{p}")) for p in base_paths]
    promoted = sorted({c.path for c in found.detection.changes if c.layer == "records" and c.kind == "promoted"})
    head_wanted = sorted({p for p in base_paths if p in changed} | set(promoted))
    head_blobs = read_blobs(top, [f"{head}:{p}" for p in head_wanted])
    head_records = {p: parse_record(p, head_blobs.get(f"{head}:{p}")) for p in head_wanted}
    for base_record in base_records:
        if base_record.data is not None and base_record.path in changed and head_blobs.get(f"{head}:{base_record.path}") is None:
            found.invalid.append(
                f"{base_record.path}: a run record the base holds is gone at the head (moved or deleted), so its pinned inputs would go "
                "unwatched (retire or move a reference record in a pull request of its own, which a maintainer merges knowingly)"
            )
            _invalid_record(found, base_record.path)
        if base_record.path in head_records:
            contract = contract_changes(base_record.data, head_records[base_record.path].data)
            if contract:
                found.contract_changes[base_record.path] = contract
    for path in promoted:
        digest = rebuild_digest(head_records[path].data)
        if digest:
            found.promoted[path] = digest

    _validate_head(found, config, (tree or top) / prefix if prefix else (tree or top), tree or top, changed)
    touched = touched_records(base_records, head_records, changed, prefix)
    drifted = [p for p in dict.fromkeys(_top_path(d.path, tree or top) for d in found.drift_findings) if p]
    found.touched = list(dict.fromkeys([*touched, *drifted]))

    if found.detection.rebuild_required:
        found.reasons.append(f"watched layers changed ({', '.join(found.detection.layers) or 'reference record'})")
    if touched:  # what a record pins is watched whatever its name: a lock no detector knows, a repointed path, the record itself
        shown = "; ".join(list(touched.values())[:3]) + (f"; and {len(touched) - 3} more" if len(touched) > 3 else "")
        found.reasons.append(f"pinned inputs changed ({shown})")
    if found.config_changed:
        found.reasons.append(f"{rel} changed")
    if found.drift_findings:
        found.reasons.append(f"environment drift in {len(drifted) or len(found.drift_findings)} record(s)")
    return found


def _validate_head(found: Assessment, config: Config, folder: Path, tree: Path, changed: list[str]) -> None:
    """Validate the head's records there; in-repo shards the diff changed are hashed, whatever their size."""
    if not config.records:
        return

    touched = frozenset((tree / path).resolve() for path in changed)
    report = validate([str(folder / glob) for glob in config.records], Options(root=folder, changed=touched))
    for f in report.files:
        for d in f.diagnostics:
            if d.code == DRIFT:
                found.drift_findings.append(Diagnostic(_top_path(d.path, tree) or d.path, d.message, d.code, d.severity, d.location, d.field, d.hint))
            elif d.severity is Severity.ERROR:
                found.invalid.append(f"{_top_path(d.path, tree) or d.path}:{d.location.line} {d.field} {d.message}" + (f" ({d.hint})" if d.hint else ""))
                _invalid_record(found, _top_path(d.path, tree) or d.path)
    for d in report.problems:
        if d.severity is Severity.ERROR and d.code != "no-match":
            found.invalid.append(d.message)
            _invalid_record(found, _top_path(d.path, tree) or d.path)


def _invalid_record(found: Assessment, path: str) -> None:
    if path not in found.invalid_records:
        found.invalid_records.append(path)


def _top_path(display: str, tree: Path) -> str | None:
    """A validate display path (relative to the working folder) as a repository-top path."""
    try:
        return Path(os.path.abspath(display)).relative_to(tree.resolve()).as_posix()
    except ValueError:
        return None


__all__ = ["DRIFT", "Assessment", "assess"]
