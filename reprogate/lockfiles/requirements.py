"""pip requirements files: pip-compile output with `--hash` lines, hand-written ranges, direct
URLs, `-r`/`-c` includes and index options.

Lines are read by pip-requirements-parser (pip's own requirements-file code: line joining,
comments, the option grammar, `name @ url` and `#egg=` URLs), and each requirement is normalised
with `packaging`, so `torch>=1.11,<2` and `torch<2, >=1.11` are one requirement and a change of
specifier, extras, marker or URL is a change. Parsed lines are cached by their text: the two
revisions of a file share most lines, and a pip-compile file has hundreds.
"""

from __future__ import annotations

import functools
import shlex
from dataclasses import dataclass
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


@functools.lru_cache(maxsize=65536)
def _line(line: str) -> tuple[str, Any]:
    """One logical line -> ("requirement", (name, requirement, version, hashes)) | ("option", [(label, value)]) |
    ("unnamed", (label, value)) | ("invalid", message). pip's parser builds a new option parser per
    line; one parser with fresh defaults per line reads the same grammar far faster."""
    import pip_requirements_parser as prp

    args, options = prp.break_args_options(line)
    plain = _plain(args, options)
    if plain is not None:
        return plain
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


def _plain(args: str, options: str) -> tuple[str, Any] | None:
    """The common line of a pip-compile file, `name[extras]<spec> ; marker --hash=... --hash=...`,
    read with packaging alone; None for anything else (URLs, paths, editables, other options),
    which goes through pip's grammar. --hash is the one per-requirement option here, with one
    value each, as pip defines it."""
    from packaging.requirements import InvalidRequirement, Requirement

    words = options.split()
    if not args or args[0] in "-./" or "://" in args or "/" in args or any(not w.startswith("--hash=") for w in words):
        return None
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


def read(text: str) -> Parsed:
    """Packages and options of a requirements file; LockFileError names the line of a bad one."""
    import pip_requirements_parser as prp

    packages: list[Locked] = []
    options: list[Option] = []
    for numbered in prp.preprocess(text):
        number, line = numbered
        if isinstance(numbered, prp.CommentLine) or not line.strip():
            continue
        kind, value = _line(line)
        if kind == "invalid":
            raise LockFileError(f"line {number}: {value}: {line.strip()[:80]!r}")
        if kind == "requirement":
            name, requirement, version, hashes = value
            packages.append(Locked(name, version, hashes, requirement=requirement))
        elif kind == "unnamed":
            options.append(Option(value[0], value[1], number))
        else:
            for label, values in value:
                for item in values if isinstance(values, list) else [values]:
                    options.append(Option(label, str(item) if item is not True else "", number))
    return Parsed(packages, options)


def parse(text: str) -> list[Locked]:
    return read(text).packages
