"""The line of a file a change is about: the lock pin, the FROM line, the manifest entry, the
workflow key. detect's SARIF places each result there (code scanning shows it on that line of the
pull request's diff), at the head revision, or at the base for what the head removed.

Found from the file itself, after the detectors have judged it: a Dockerfile's stage (its FROM,
or the RUN line of the stage that installs the package), a YAML or JSON document's key (the
change's subject read as a path, `[]` meaning any list entry, the one holding the changed value
first), else the first line naming the subject (a package's name, as a requirement or a lock
entry writes it). 0 when nothing in the file says where.
"""

from __future__ import annotations

import re
from typing import Any

from reprogate.core.documents import DocumentError, load_text
from reprogate.detect.base import Change
from reprogate.detect.dockerfile import DockerfileError, Stage, stages
from reprogate.detect.framework import is_dockerfile
from reprogate.detect.versions import Versions

_STAGE = re.compile(r"\((stage [^)]*)\)")
_PLACE = re.compile(r"^CUDA \((.+?)(?:: [^:()]+)?\)$")


def line_of(v: Versions, change: Change) -> int:
    """The 1-based line `change` is about in `v` (head side; base side for a removal), or 0."""
    side = "old" if change.kind == "removed" or v.new is None else "new"
    text = v.text(side)
    if not text:
        return 0
    found = 0
    if is_dockerfile(v.name):
        found = _dockerfile_line(text, change)
    elif v.name.endswith((".yaml", ".yml", ".json")):
        found = _document_line(text, v.path, change, side)
    return found or _text_line(text, change)


def _stage_of(change: Change, found: list[Stage]) -> Stage | None:
    match = _STAGE.search(change.subject) or _STAGE.search(f"({change.group})")
    key = match.group(1) if match else None
    return next((s for s in found if s.key == key), None)


def _dockerfile_line(text: str, change: Change) -> int:
    try:
        found = stages(text)[1]
    except DockerfileError:
        return 0
    stage = _stage_of(change, found)
    subject = change.subject.split(" (", 1)[0] if change.subject.startswith(("FROM", "COPY", "CUDA")) else change.subject
    if stage is not None and subject in ("FROM", "CUDA"):
        return stage.line
    words = _words(change)
    for candidate in [stage] if stage is not None else found:
        for (command, heredocs, _), line in zip(candidate.runs, candidate.run_lines, strict=True):
            body = " ".join((command, *heredocs)).lower()
            if any(word in body for word in words):
                return line
    return stage.line if stage is not None else 0


def _words(change: Change) -> list[str]:
    """What a line about the change would hold: the changed value, the subject's own name."""
    subject = change.subject.split(" (", 1)[0].strip().lower()
    if subject == "cuda wheels":
        return ["/cu1", "+cu1", "cu1", "cuda"]
    values = [value.lower() for value in (change.new if change.kind != "removed" else change.old, change.old) if value]
    return [w for w in (*values, subject) if w and len(w) > 1]


def _document_line(text: str, path: str, change: Change, side: str) -> int:
    try:
        doc = load_text(text, path, "json" if path.endswith(".json") else "yaml")
    except DocumentError:
        return 0
    place = change.subject
    match = _PLACE.match(place)
    if match:
        place = match.group(1)
    value = change.new if side == "new" else change.old
    found = _walk(doc.data, place, value or "")
    return doc.locate(tuple(found)).line if found else 0


def _walk(data: Any, rest: str, value: str) -> list[Any] | None:
    """The path to the place `rest` names (`jobs.build.runs-on`, `jobs[].container.image`):
    at a mapping the longest key that starts `rest`, at `[]` each entry, the one holding `value` first."""
    if not rest:
        return []
    if rest.startswith("[]") and isinstance(data, list):
        tail = rest[2:].removeprefix(".")
        tried = [(i, _walk(item, tail, value)) for i, item in enumerate(data)]
        reached: list[tuple[int, list[Any]]] = [(i, found) for i, found in tried if found is not None]
        holding = [(i, found) for i, found in reached if value and value in str(_at(data[i], found))]
        chosen = holding or reached
        return [chosen[0][0], *chosen[0][1]] if chosen else None
    if isinstance(data, dict):
        for key in sorted((k for k in data if isinstance(k, str) and rest.startswith(k)), key=len, reverse=True):
            tail = rest[len(key) :]
            if tail and not tail.startswith((".", "[")):
                continue
            found = _walk(data[key], tail.removeprefix("."), value)
            if found is not None:
                return [key, *found]
    return None


def _at(data: Any, path: list[Any]) -> Any:
    for part in path:
        data = data[part]
    return data


def _named(subject: str) -> re.Pattern[str]:
    """A line naming `subject` as a package or entry: its name with `-`, `_` and `.` alike, not inside another word."""
    parts = "[-_.]".join(map(re.escape, re.split(r"[-_.]+", subject)))
    return re.compile(r"(?i)(?:^|[\s\"'=\[/(,])" + parts + r"(?:$|[\s\"'=<>!~;\[\]@,:)])")


def _text_line(text: str, change: Change) -> int:
    """The first line naming the subject (`torch==2.5.1`, `name = "torch"`, a manifest's
    `- name: shards/x`; for `shard shards/x` its last word), the one also holding the changed
    value first; else the first line holding the changed value."""
    subject = change.subject.split(" (", 1)[0].strip()
    lines = text.splitlines()
    value = (change.new if change.kind != "removed" else change.old) or ""
    token = value.split(" ")[0].lstrip("=<>!~")
    if subject.startswith("--"):
        flagged = [n for n, line in enumerate(lines, 1) if subject in line and not line.lstrip().startswith("#")]
        if flagged:
            return flagged[0]
    elif subject and not subject.startswith(("CUDA", "FROM", "jobs")):
        for name in dict.fromkeys((subject, subject.rsplit(" ", 1)[-1])):
            pattern = _named(name)
            named = [n for n, line in enumerate(lines, 1) if pattern.search(line) and not line.lstrip().startswith("#")]
            with_value = [n for n in named if token and token in lines[n - 1]]
            if with_value or named:
                return (with_value or named)[0]
    holding = [n for n, line in enumerate(lines, 1) if token and token in line]
    return holding[0] if holding else 0
