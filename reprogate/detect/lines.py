"""The line of a file a change is about: the lock pin, the FROM line, the manifest entry, the
workflow key. detect's SARIF places each result there (code scanning shows it on that line of the
pull request's diff), at the head revision, or at the base for what the head removed.

Found from the file itself, after the detectors have judged it: a Dockerfile's stage (its FROM,
or the RUN line of the stage that installs the package), a YAML or JSON document's key (the
change's subject read as a path, `[]` meaning any list entry, the one holding the changed value
first), else the first line naming the subject (a package's name, as a requirement or a lock
entry writes it). 0 when nothing in the file says where. A change whose detector already knows
its line (a requirements file's pins, from pip's parser) is not placed again (`detect.run`).
"""

from __future__ import annotations

import bisect
import re
from typing import Any

from reprogate.core.documents import DocumentError, load_text
from reprogate.detect.base import Change
from reprogate.detect.dockerfile import DockerfileError, Stage, stages
from reprogate.detect.framework import is_dockerfile
from reprogate.detect.versions import Versions

_STAGE = re.compile(r"\((stage [^)]*)\)")
_PLACE = re.compile(r"^CUDA \((.+?)(?:: [^:()]+)?\)$")


class Placer:
    """Finds the lines of one file's changes, each side read once: its text split into lines, its
    document parsed, its Dockerfile stages found, and an index of the names its lines hold, so a
    lock file bumping ten thousand pins is not scanned ten thousand times."""

    def __init__(self, versions: Versions) -> None:
        self.versions = versions
        self._sides: dict[str, _Side | None] = {}

    def line(self, change: Change) -> int:
        """The 1-based line `change` is about (head side; base side for a removal), or 0."""
        v = self.versions
        side_name = "old" if change.kind == "removed" or v.new is None else "new"
        side = self._side(side_name)
        if side is None:
            return 0
        found = 0
        if is_dockerfile(v.name):
            found = _dockerfile_line(side, change)
        elif v.name.endswith((".yaml", ".yml", ".json")):
            found = _document_line(side, v.path, change, side_name)
        return found or _text_line(side, change)

    def _side(self, which: str) -> _Side | None:
        if which not in self._sides:
            text = self.versions.text(which)
            self._sides[which] = _Side(text) if text else None
        return self._sides[which]


class _Side:
    """One revision of the file, parsed lazily and at most once."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.lines = text.splitlines()
        self._words: dict[str, list[int]] | None = None
        self._starts: list[int] = []
        self._stages: list[Stage] | None = None
        self._document: Any = _UNREAD

    def named(self, word: str) -> list[int]:
        """The uncommented lines holding `word` as one of their words (between characters
        `_named`'s pattern takes for delimiters; case and `-`, `_`, `.` alike), in order: every
        word of the file is indexed once, so each lookup costs what its own lines cost."""
        if self._words is None:
            lines = _normal(self.text).splitlines()
            starts = [0]
            for line in lines:
                starts.append(starts[-1] + len(line) + 1)
            words: dict[str, list[int]] = {}
            for found in _WORD.finditer("\n".join(lines)):
                words.setdefault(found.group(), []).append(found.start())
            self._words, self._starts = words, starts
        numbers = dict.fromkeys(bisect.bisect_right(self._starts, at) for at in self._words.get(_normal(word), ()))
        return [n for n in numbers if not self.lines[n - 1].lstrip().startswith("#")]

    def stages(self) -> list[Stage] | None:
        if self._stages is None:
            try:
                self._stages = stages(self.text)[1]
            except DockerfileError:
                return None
        return self._stages

    def document(self, path: str) -> Any:
        if self._document is _UNREAD:
            try:
                self._document = load_text(self.text, path, "json" if path.endswith(".json") else "yaml")
            except DocumentError:
                self._document = None
        return self._document


_UNREAD = object()
# every character either side of a name in `_named`'s pattern: a line split at them holds each
# name the pattern would find there as one of its words
_WORDS = re.compile(r"[\s\"'=\[\]/(),<>!~;@:]+")
_WORD = re.compile(r"[^\s\"'=\[\]/(),<>!~;@:]+")


_SEPARATORS = re.compile(r"[-_.]+")


def _normal(word: str) -> str:
    """A name as the pattern compares it: case and runs of `-`, `_`, `.` alike."""
    word = word.lower()
    return _SEPARATORS.sub("-", word) if "_" in word or "." in word or "--" in word else word


def line_of(v: Versions, change: Change) -> int:
    """The 1-based line `change` is about in `v` (head side; base side for a removal), or 0."""
    return Placer(v).line(change)


def _stage_of(change: Change, found: list[Stage]) -> Stage | None:
    match = _STAGE.search(change.subject) or _STAGE.search(f"({change.group})")
    key = match.group(1) if match else None
    return next((s for s in found if s.key == key), None)


def _dockerfile_line(side: _Side, change: Change) -> int:
    found = side.stages()
    if found is None:
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


def _document_line(revision: _Side, path: str, change: Change, side: str) -> int:
    doc = revision.document(path)
    if doc is None:
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


_SEPARATOR_TO_DASH = str.maketrans("_.", "--")
_BEFORE = frozenset("\"'=[/(,")  # and whitespace, as the pattern's \s
_AFTER = frozenset("\"'=<>!~;[]@,:)")


def _names(line: str, subject: str) -> bool:
    """Whether `line` names `subject` as `_named`'s pattern would find it, without compiling a
    pattern per subject (a lock file's ten thousand bumped pins are ten thousand subjects): both
    lower-cased with `_` and `.` as `-`, one character for one, then the name found between
    the characters the pattern takes for its edges."""
    folded = line.lower().translate(_SEPARATOR_TO_DASH)
    name = "-".join(part for part in re.split(r"[-_.]+", subject)).lower()
    if len(folded) != len(line) or not name or not name.isascii():
        return _named(subject).search(line) is not None  # a case fold that changes lengths: the pattern itself
    at = folded.find(name)
    while at != -1:
        end = at + len(name)
        if (at == 0 or folded[at - 1] in _BEFORE or folded[at - 1].isspace()) and (end == len(folded) or folded[end] in _AFTER or folded[end].isspace()):
            return True
        at = folded.find(name, at + 1)
    return False


def _text_line(side: _Side, change: Change) -> int:
    """The first line naming the subject (`torch==2.5.1`, `name = "torch"`, a manifest's
    `- name: shards/x`; for `shard shards/x` its last word), the one also holding the changed
    value first; else the first line holding the changed value."""
    subject = change.subject.split(" (", 1)[0].strip()
    lines = side.lines
    value = (change.new if change.kind != "removed" else change.old) or ""
    token = value.split(" ")[0].lstrip("=<>!~")
    if subject.startswith("--"):
        flagged = [n for n, line in enumerate(lines, 1) if subject in line and not line.lstrip().startswith("#")]
        if flagged:
            return flagged[0]
    elif subject and not subject.startswith(("CUDA", "FROM", "jobs")):
        for name in dict.fromkeys((subject, subject.rsplit(" ", 1)[-1])):
            named = [n for n in _candidates(side, name) if _names(lines[n - 1], name)]
            with_value = [n for n in named if token and token in lines[n - 1]]
            if with_value or named:
                return (with_value or named)[0]
    if not token:
        return 0
    return next((n for n, line in enumerate(lines, 1) if token in line), 0)


def _candidates(side: _Side, name: str) -> list[int]:
    """The lines that may name `name`: those holding its first word as a word of theirs (a line
    the pattern matches holds every word of the name so), from the index."""
    words = [word for word in _WORDS.split(name) if word]
    if not words:
        return [n for n, line in enumerate(side.lines, 1) if not line.lstrip().startswith("#")]
    return side.named(words[0])
