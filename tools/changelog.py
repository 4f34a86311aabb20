#!/usr/bin/env python3
"""CHANGELOG.md in Keep a Changelog form: check it, and print one release's notes.

    python tools/changelog.py check [--version X.Y.Z]   the form (exit 1 naming each problem)
    python tools/changelog.py notes X.Y.Z               that release's section, for the GitHub release

The form: a `# Changelog` title; a head that states Semantic Versioning and what counts as
breaking; an optional `## [Unreleased]` first; then `## [X.Y.Z] - YYYY-MM-DD` sections, newest
first; inside each, only `### Added`, `Changed`, `Deprecated`, `Removed`, `Fixed`, `Security`,
each at most once and in that order; a link reference at the bottom for every section.

Which version the tree is: the newest released section names the package's version, unless the
Unreleased section holds changes (then the tree is ahead of that release, and its version may
already be the next one). So a tree that fills Unreleased, or one that renames it to the next
release and bumps `__version__` to match, both pass; a release tag whose version has no section,
or a bump with nothing said for it, does not.

The release workflow runs this (markdown-it-py parses the Markdown; it is in the dev group).
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from markdown_it import MarkdownIt
from packaging.version import InvalidVersion, Version

KINDS = ("Added", "Changed", "Deprecated", "Removed", "Fixed", "Security")
UNRELEASED = "Unreleased"
RELEASE_HEADING = re.compile(r"^\[(?P<version>[^\]]+)\] - (?P<date>\d{4}-\d{2}-\d{2})$")
# the words the head must say: Semantic Versioning and each kind of breaking change
HEAD_TERMS = ("Keep a Changelog", "Semantic Versioning", "record semantics", "exit codes", "CLI flags", "action inputs")


@dataclass(frozen=True)
class Subsection:
    kind: str
    line: int  # 1-based line of its heading
    items: int  # list items directly in it


@dataclass(frozen=True)
class Section:
    """One `## [...]` section: its name (a version or Unreleased), date, lines and subsections."""

    name: str
    date: str | None
    line: int
    end: int  # 1-based line after its last line
    subsections: tuple[Subsection, ...]
    items: int
    problems: tuple[str, ...]


@dataclass(frozen=True)
class Changelog:
    title: str
    head: str
    sections: tuple[Section, ...]
    references: dict[str, str]  # lower-cased label -> URL
    lines: tuple[str, ...]

    @property
    def unreleased(self) -> Section | None:
        return next((s for s in self.sections if s.name == UNRELEASED), None)

    @property
    def releases(self) -> tuple[Section, ...]:
        return tuple(s for s in self.sections if s.name != UNRELEASED)


def parse(text: str) -> Changelog:
    """The changelog's structure, read from markdown-it's tokens (headings, list items, link references)."""
    env: dict[str, dict[str, dict[str, str]]] = {}
    tokens = MarkdownIt("commonmark").parse(text, env)
    lines = tuple(text.splitlines())
    title = ""
    heads: list[tuple[int, int, str]] = []  # (level, 0-based line, inline text)
    list_items: list[int] = []  # 0-based lines of top-level list items
    depth = 0
    for i, token in enumerate(tokens):
        if token.type == "heading_open" and token.map:
            heads.append((int(token.tag[1]), token.map[0], tokens[i + 1].content.strip()))
        elif token.type in ("bullet_list_open", "ordered_list_open"):
            depth += 1
        elif token.type in ("bullet_list_close", "ordered_list_close"):
            depth -= 1
        elif token.type == "list_item_open" and depth == 1 and token.map:
            list_items.append(token.map[0])
    if heads and heads[0][0] == 1:
        title = heads[0][2]
    level2 = [h for h in heads if h[0] == 2]
    head_end = level2[0][1] if level2 else len(lines)
    head = "\n".join(lines[heads[0][1] + 1 if heads else 0 : head_end])
    references_end = min((int(r["map"][0]) for r in env.get("references", {}).values() if "map" in r), default=len(lines))
    sections = []
    for n, (_, start, content) in enumerate(level2):
        end = level2[n + 1][1] if n + 1 < len(level2) else references_end
        sections.append(_section(content, start, end, [h for h in heads if h[0] == 3 and start < h[1] < end], [i for i in list_items if start < i < end]))
    references = {label.lower(): str(ref["href"]) for label, ref in env.get("references", {}).items()}
    return Changelog(title, head, tuple(sections), references, lines)


def _section(content: str, start: int, end: int, subheads: list[tuple[int, int, str]], items: list[int]) -> Section:
    problems: list[str] = []
    if content == f"[{UNRELEASED}]":
        name, date = UNRELEASED, None
    else:
        found = RELEASE_HEADING.match(content)
        if found is None:
            wrong = f"line {start + 1}: '## {content}' is neither '## [Unreleased]' nor '## [X.Y.Z] - YYYY-MM-DD'"
            return Section(content, None, start + 1, end + 1, (), len(items), (wrong,))
        name, date = found.group("version"), found.group("date")
        try:
            Version(name)
        except InvalidVersion:
            problems.append(f"line {start + 1}: {name!r} is not a version")
    subsections = []
    bounds = [h[1] for h in subheads] + [end]
    for n, (_, line, kind) in enumerate(subheads):
        subsections.append(Subsection(kind, line + 1, len([i for i in items if line < i < bounds[n + 1]])))
    kinds = [s.kind for s in subsections]
    for sub in subsections:
        if sub.kind not in KINDS:
            problems.append(f"line {sub.line}: '### {sub.kind}' is not one of {', '.join(KINDS)}")
    known = [k for k in kinds if k in KINDS]
    if len(set(known)) != len(known):
        problems.append(f"line {start + 1}: {name} repeats a subsection ({', '.join(k for k in known if known.count(k) > 1)}): one of each")
    elif known != sorted(known, key=KINDS.index):
        problems.append(f"line {start + 1}: {name}'s subsections are {', '.join(known)}; their order is {', '.join(KINDS)}")
    return Section(name, date, start + 1, end + 1, tuple(subsections), len(items), tuple(problems))


def check(changelog: Changelog, version: str) -> list[str]:
    """Every way the changelog breaks the form or disagrees with the package's `version`."""
    problems: list[str] = []
    if changelog.title != "Changelog":
        problems.append("the file does not open with '# Changelog'")
    problems += [f"the head (before the first section) does not say {term!r}" for term in HEAD_TERMS if term not in changelog.head]
    for section in changelog.sections:
        problems += section.problems
    names = [s.name for s in changelog.sections]
    if UNRELEASED in names and names.index(UNRELEASED) != 0:
        problems.append("'## [Unreleased]' is not the first section")
    if names.count(UNRELEASED) > 1:
        problems.append("more than one '## [Unreleased]'")
    releases = [s for s in changelog.releases if not s.problems]
    if not releases:
        return [*problems, "no released version"]
    for newer, older in zip(releases, releases[1:], strict=False):
        if Version(newer.name) <= Version(older.name):
            problems.append(f"line {newer.line}: {newer.name} is listed above {older.name}: newest first")
        if str(newer.date) < str(older.date):
            problems.append(f"line {newer.line}: {newer.name} is dated {newer.date}, before {older.name} ({older.date})")
    for section in releases:
        body = changelog.lines[section.line : section.end - 1]
        if not any(line.strip() and not line.startswith("#") for line in body):
            problems.append(f"line {section.line}: {section.name} says nothing")
        for sub in section.subsections:
            if sub.items == 0:
                problems.append(f"line {sub.line}: {section.name}'s '### {sub.kind}' is empty (leave out what a release did not do)")
    for section in changelog.sections:
        if section.name.lower() not in changelog.references:
            problems.append(f"line {section.line}: no link reference '[{section.name}]: ...' at the bottom")
    unused = sorted(set(changelog.references) - {s.name.lower() for s in changelog.sections})
    problems += [f"the link reference [{label}] names no section" for label in unused]
    top = releases[0].name
    unreleased = changelog.unreleased
    pending = unreleased is not None and any(s.items for s in unreleased.subsections)
    if not pending and Version(version) != Version(top):
        problems.append(
            f"the package is {version} but the newest release here is {top}: name the release ('## [{version}] - DATE') "
            "or, while changes are unreleased, list them under '## [Unreleased]'"
        )
    if pending and Version(version) < Version(top):
        problems.append(f"the package is {version}, older than the newest release here ({top})")
    return problems


def notes(changelog: Changelog, version: str) -> str:
    """The body of one release's section: what its GitHub release says."""
    section = next((s for s in changelog.releases if s.name == version), None)
    if section is None:
        raise KeyError(f"CHANGELOG.md has no '## [{version}] - DATE' section")
    return "\n".join(changelog.lines[section.line : section.end - 1]).strip("\n") + "\n"


def package_version(root: Path) -> str:
    """`__version__` of reprogate/__init__.py, read without importing the package."""
    found = re.search(r'^__version__ = "([^"]+)"$', (root / "reprogate" / "__init__.py").read_text(encoding="utf-8"), flags=re.M)
    if found is None:
        raise SystemExit("reprogate/__init__.py has no __version__ line")
    return found.group(1)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--file", type=Path, default=Path(__file__).resolve().parent.parent / "CHANGELOG.md")
    commands = parser.add_subparsers(dest="command", required=True)
    checking = commands.add_parser("check", help="check the form and the version")
    checking.add_argument("--version", help="the package's version (default: reprogate/__init__.py's)")
    noting = commands.add_parser("notes", help="print one release's section")
    noting.add_argument("version")
    args = parser.parse_args(argv)
    changelog = parse(args.file.read_text(encoding="utf-8"))
    if args.command == "notes":
        try:
            sys.stdout.write(notes(changelog, args.version))
        except KeyError as exc:
            print(f"{args.file.name}: {exc.args[0]}", file=sys.stderr)
            return 1
        return 0
    found = check(changelog, args.version or package_version(args.file.resolve().parent))
    for problem in found:
        print(f"{args.file.name}: {problem}", file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
