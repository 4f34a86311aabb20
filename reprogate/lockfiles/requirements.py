r"""pip requirements files: pip-compile output with `--hash` lines, hand-written ranges, direct
URLs, `-r`/`-c` includes and index options.

Lines are read by pip-requirements-parser (pip's own requirements-file code: line joining,
comments, the option grammar, `name @ url` and `#egg=` URLs), and each requirement is normalised
with `packaging`, so `torch>=1.11,<2` and `torch<2, >=1.11` are one requirement and a change of
specifier, extras, marker or URL is a change. Parsed lines are cached by their text: the two
revisions of a file share most lines, and a pip-compile file has hundreds.

A file of ten thousand pins is read in a few tenths of a second: pip's line joining is applied
here where every line is in the shape pip-compile writes (`name==version \`, `--hash=...`
continuation lines, whole-line comments), which is where pip-requirements-parser spends most of
its time, and a `name==version` pin is read with packaging's name and specifier alone; any other
line, or a file with any line outside that shape, goes through pip-requirements-parser as before,
and tests hold the two paths to the same answer.
"""

from __future__ import annotations

import functools
import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass
from itertools import repeat
from operator import itemgetter
from optparse import Values
from typing import Any

from reprogate.lockfiles.base import Locked, LockFileError, normalize

FORMAT = "pip-requirements"
PATTERNS = ["*requirements*.txt", "*requirements*.in", "*constraints*.txt", "*constraints*.in", "*requirements/*.txt", "*requirements/*.in"]

# pip options a requirements file may carry that change what gets installed, with the label detect reports.
OPTION_LABELS = {
    "index_url": "--index-url",
    "extra_index_urls": "--extra-index-url",
    "find_links": "--find-links",
    "requirements": "-r",
    "constraints": "-c",
    "no_index": "--no-index",
    "pre": "--pre",
    "prefer_binary": "--prefer-binary",
    "only_binary": "--only-binary",
    "no_binary": "--no-binary",
}


@dataclass(frozen=True)
class Option:
    """A file-level option (`--index-url URL`, `-r base.txt`) or an unnamed requirement (`-e .`, a
    local path, a URL without `#egg=`): each is compared as a whole by its label and value."""

    label: str
    value: str
    line: int


@dataclass(frozen=True)
class Parsed:
    packages: list[Locked]
    options: list[Option]


def requirement_text(name: str, extras: Any, specifier: Any, url: str | None, marker: Any) -> str:
    """One requirement in a canonical spelling: sorted extras, packaging's specifier order."""
    text = name + (f"[{','.join(sorted(extras))}]" if extras else "")
    text += f" @ {url}" if url else str(specifier)
    return text + ((" ; " if url else "; ") + str(marker) if marker else "")  # PEP 508: a URL ends at whitespace


@functools.lru_cache(maxsize=1)
def _option_parser() -> Any:
    import pip_requirements_parser as prp

    return prp.build_parser()


def _read_line(line: str) -> tuple[str, Any]:
    """One logical line -> ("requirement", (name, requirement, version, hashes)) | ("option", [(label, value)]) |
    ("unnamed", (label, value)) | ("invalid", message). pip's parser builds a new option parser per
    line; one parser with fresh defaults per line reads the same grammar far faster."""
    args, options = break_args_options(line)
    plain = _plain(args, options)
    if plain is not None:
        return plain
    import pip_requirements_parser as prp

    parser = _option_parser()
    try:
        words = options.split() if not any(c in options for c in "'\"\\") else shlex.split(options)
        defaults = {k: list(v) if isinstance(v, list) else v for k, v in parser.defaults.items()}  # append options must not share lists
        opts, arguments = parser.parse_args(words, Values(defaults))
    except (prp.OptionParsingError, ValueError) as exc:
        return "invalid", str(exc).strip()
    parsed = prp.ParsedLine(requirement_string=args, options=opts, is_constraint=False, requirement_line=prp.RequirementLine(line=line), arguments=arguments)
    found: tuple[str, Any] = ("option", [])
    for item in prp.handle_line(parsed):
        if isinstance(item, prp.OptionLine):
            found = "option", [(OPTION_LABELS.get(k, f"--{k.replace('_', '-')}"), v) for k, v in sorted(item.options.items()) if k in OPTION_LABELS]
        elif isinstance(item, prp.ParsedRequirement):
            found = _requirement(item)
    return found


_line = functools.lru_cache(maxsize=65536)(_read_line)  # readers of one file at a time (see read_entries)


@functools.lru_cache(maxsize=1)
def _specifier() -> tuple[Callable[[str], Any], type[Exception]]:
    """packaging's Specifier, imported once (a pin is read in microseconds)."""
    from packaging.specifiers import InvalidSpecifier, Specifier

    return Specifier, InvalidSpecifier


# PEP 508's name: letters and digits, with `.`, `_` and `-` inside (packaging's own check, which
# costs packaging.utils' import, tags and sysconfig with it, to a command that reads one pin)
_NAME = re.compile(r"[A-Z0-9]|[A-Z0-9][A-Z0-9._-]*[A-Z0-9]", re.IGNORECASE)


def break_args_options(line: str) -> tuple[str, str]:
    """pip-requirements-parser's break_args_options without its loop over space-separated tokens:
    the options start at the first token that starts with `-`, which is the line's start or the
    first `-` after a space, and both halves are the line's own text around it."""
    if line.startswith("-"):
        return "", line
    at = line.find(" -")
    return (line, "") if at < 0 else (line[:at], line[at + 1 :])


def _pinned(args: str, words: list[str]) -> tuple[str, Any] | None:
    """`name==version` (the pin pip-compile writes) with PEP 508's name and packaging's Specifier,
    where Requirement's tokenizer costs ten times as much: the same name, requirement text and
    version as the Requirement path, or None for anything else (extras, markers, spaces, ranges)."""
    name, equals, version = args.partition("==")
    if not equals or not version or _NOT_PLAIN_PIN.search(args):
        return None
    if not _NAME.fullmatch(name):
        return None
    specifier_of, refused = _specifier()
    try:
        specifier = specifier_of("==" + version)
    except refused:
        return None
    lowered = name.lower()  # normalize(), without its substitution where it has none to make:
    name = normalize(name) if "_" in lowered or "." in lowered or "--" in lowered else lowered
    pinned = specifier.version if "*" not in specifier.version else None
    return "requirement", (name, name + str(specifier), pinned, frozenset(map(_HASH_VALUE, words)))


def _plain(args: str, options: str) -> tuple[str, Any] | None:
    """The common line of a pip-compile file, `name[extras]<spec> ; marker --hash=... --hash=...`,
    read with packaging alone; None for anything else (URLs, paths, editables, other options),
    which goes through pip's grammar. --hash is the one per-requirement option here, with one
    value each, as pip defines it."""
    words = options.split()
    if not args or args[0] in "-./" or "://" in args or "/" in args or not all(map(str.startswith, words, repeat("--hash="))):
        return None
    pinned = _pinned(args.strip(), words)
    if pinned is not None:
        return pinned
    from packaging.requirements import InvalidRequirement, Requirement

    try:
        requirement = Requirement(args)
    except InvalidRequirement:
        return None
    name = normalize(requirement.name)
    text = requirement_text(name, requirement.extras, requirement.specifier, None, requirement.marker)
    specs = list(requirement.specifier)
    version = specs[0].version if len(specs) == 1 and specs[0].operator in ("==", "===") and "*" not in specs[0].version else None
    return "requirement", (name, text, version, frozenset(w[len("--hash=") :] for w in words))


def _requirement(parsed: Any) -> tuple[str, Any]:
    import pip_requirements_parser as prp

    try:
        req = prp.build_req_from_parsedreq(parsed)
    except Exception as exc:  # noqa: BLE001 - the library raises bare Exceptions of several kinds for a bad line
        return "invalid", str(exc).strip() or type(exc).__name__
    url = req.link.url if req.link is not None else None
    if req.req is None or not req.name:
        return "unnamed", ("-e" if req.is_editable else "path or URL", url or parsed.requirement_string)
    name = normalize(req.name)
    url = req.req.url or url
    text = requirement_text(name, req.req.extras, req.req.specifier, url, req.req.marker or req.marker)
    if req.is_editable:
        text = f"-e {text}"
    specs = list(req.req.specifier)
    version = specs[0].version if len(specs) == 1 and specs[0].operator in ("==", "===") and "*" not in specs[0].version else None
    return "requirement", (name, text, version, frozenset(req.hash_options or ()))


_HASH_VALUE = itemgetter(slice(len("--hash="), None))  # `--hash=sha256:...` -> `sha256:...`, a C call per word

# Characters a `name==version` pin never holds: whitespace, extras, markers, URLs, other operators.
_NOT_PLAIN_PIN = re.compile(r"[\s\[\];@(),<>!~#'\"\\]")


def pip_compile_lines(text: str) -> list[tuple[int, str]] | None:
    """(line number, logical line) of each requirement or option line, as pip-requirements-parser's
    preprocess would give them, when every physical line is in pip-compile's shape: blank, a
    whole-line comment outside a continuation, or text without `#` (a trailing backslash joining
    it with the next line); None for any other file, which preprocess reads itself. The joining
    is pip's: the backslash is dropped, the pieces concatenated, the result stripped."""
    lines: list[tuple[int, str]] = []
    pieces: list[str] = []
    first = 0
    for number, line in enumerate(text.splitlines(), 1):
        if "#" in line:
            if pieces or not line.lstrip(" \t").startswith("#"):
                return None  # a comment inside a continuation, or after text: preprocess decides
            continue
        if line[:1] == "\\":
            return None  # pip strips every backslash at both ends: rare, and preprocess's to say
        if line[-1:] == "\\":
            if line[-2:] == "\\\\":
                return None
            if not pieces:
                first = number
            pieces.append(line[:-1])
        elif pieces:
            pieces.append(line)
            joined = "".join(pieces).strip()
            pieces = []
            if joined:
                lines.append((first, joined))
        else:
            line = line.strip()
            if line:
                lines.append((number, line))
    if pieces:
        joined = "".join(pieces).strip()
        if joined:
            lines.append((first, joined))
    return lines


def _logical_lines(text: str) -> list[tuple[int, str]]:
    """(line number, text) of each non-comment logical line of a requirements file."""
    fast = pip_compile_lines(text)
    if fast is not None:
        return fast
    import pip_requirements_parser as prp

    return [(number, line) for number, line in ((n.line_number, n.line) for n in prp.preprocess(text) if not isinstance(n, prp.CommentLine)) if line.strip()]


# (name, requirement, version or None, hashes, line) of one requirement line; the line is the
# 1-based number of its first physical line, where detect places a change of it
Entry = tuple[str, str, str | None, frozenset[str], int]


def read(text: str) -> Parsed:
    """Packages and options of a requirements file; LockFileError names the line of a bad one."""
    entries, options = read_entries(text)
    return Parsed([Locked(name, version, hashes, requirement=requirement) for name, requirement, version, hashes, _ in entries], options)


def read_entries(text: str, known: dict[str, tuple[str, Any]] | None = None) -> tuple[list[Entry], list[Option]]:
    """read() without a Locked per package: what detect compares, for files of ten thousand pins.
    `known` holds what each logical line read as, by its text, for the file's other revision, and
    goes with the caller's file: the module's own cache would keep ten thousand pins alive to the
    end of the process, where the interpreter's last collections scan every one of them."""
    entries: list[Entry] = []
    options: list[Option] = []
    for number, line in _logical_lines(text):
        if known is None:
            kind, value = _line(line)
        else:
            found = known.get(line)
            if found is None:
                found = known[line] = _read_line(line)
            kind, value = found
        if kind == "invalid":
            raise LockFileError(f"line {number}: {value}: {line.strip()[:80]!r}")
        if kind == "requirement":
            entries.append((*value, number))
        elif kind == "unnamed":
            options.append(Option(value[0], value[1], number))
        else:
            for label, values in value:
                for item in values if isinstance(values, list) else [values]:
                    options.append(Option(label, str(item) if item is not True else "", number))
    return entries, options


def parse(text: str) -> list[Locked]:
    return read(text).packages
