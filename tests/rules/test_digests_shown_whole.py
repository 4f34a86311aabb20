"""A checksum or canonical-hash mismatch shows both digests whole: a shortened pair can look equal."""

from __future__ import annotations

import datetime
from pathlib import Path

from reprogate.core.canonical import canonical_digest, file_digest
from reprogate.core.documents import load_document
from reprogate.validate.runner import Options, validate


def messages(record: Path, severity: str = "error") -> list[str]:
    report = validate([str(record)], Options(today=datetime.date.today()))
    return [d.message for f in report.files for d in f.diagnostics if d.severity.value == severity and d.code != "not-rebuildable"]


def test_a_changed_lock_file_names_both_checksums_whole(project: Path) -> None:
    lock = project / "requirements.txt"
    pinned = file_digest(lock)
    lock.write_text(lock.read_text() + "\n")
    # a lock file is an environment pin: drift, a notice, not an error (the record's other notices say other things)
    [message] = [m for m in messages(project / "records" / "drill.yaml", "notice") if "requirements.txt" in m]
    assert f"the record pins {pinned}, the file is {file_digest(lock)}" in message


def test_a_changed_configuration_names_both_hashes_whole(project: Path) -> None:
    config = project / "config" / "c19.yaml"
    pinned = canonical_digest(load_document(config).data)
    config.write_text(config.read_text().replace("layers: 32", "layers: 48"))
    [message] = messages(project / "records" / "drill.yaml")
    assert f"pinned {pinned}, content is {canonical_digest(load_document(config).data)}" in message
