"""Reading FROM lines the way Docker does: continuations, global ARG defaults substituted,
--platform, multi-stage names (a FROM naming an earlier stage is not an image)."""

from __future__ import annotations

import re
from dataclasses import dataclass

_VAR = re.compile(r"\$\{(?P<braced>[A-Za-z_][A-Za-z0-9_]*)(?::?-(?P<default>[^}]*))?\}|\$(?P<bare>[A-Za-z_][A-Za-z0-9_]*)")


@dataclass(frozen=True)
class ImageRef:
    name: str
    tag: str | None
    digest: str | None

    @classmethod
    def parse(cls, ref: str) -> "ImageRef":
        name, _, digest = ref.partition("@")
        last = name.rsplit("/", 1)[-1]
        tag = None
        if ":" in last:
            name, tag = name.rsplit(":", 1)
        return cls(name, tag, digest or None)

    def __str__(self) -> str:
        return self.name + (f":{self.tag}" if self.tag else "") + (f"@{self.digest}" if self.digest else "")


@dataclass(frozen=True)
class From:
    key: str  # the stage name, or "stage N"
    image: ImageRef
    platform: str | None


def _instructions(text: str) -> list[tuple[str, str]]:
    out, current = [], ""
    for raw in text.splitlines():
        line = raw.strip()
        if not current and (not line or line.startswith("#")):
            continue
        if line.endswith("\\"):
            current += line[:-1] + " "
            continue
        current += line
        word, _, rest = current.strip().partition(" ")
        out.append((word.upper(), rest.strip()))
        current = ""
    if current.strip():
        word, _, rest = current.strip().partition(" ")
        out.append((word.upper(), rest.strip()))
    return out


def substitute(value: str, args: dict[str, str]) -> str:
    def replace(match: re.Match[str]) -> str:
        name = match.group("braced") or match.group("bare")
        return args.get(name) or (match.group("default") or "")

    return _VAR.sub(replace, value)


def from_lines(text: str) -> list[From]:
    """Every FROM that names an image, keyed by its stage name or position."""
    args: dict[str, str] = {}
    stages: set[str] = set()
    found: list[From] = []
    seen_from = False
    for word, rest in _instructions(text):
        if word == "ARG" and not seen_from:
            for part in rest.split():
                name, sep, default = part.partition("=")
                if sep:
                    args[name] = default.strip("'\"")
        if word != "FROM":
            continue
        seen_from = True
        tokens = rest.split()
        platform = None
        while tokens and tokens[0].startswith("--"):
            flag = tokens.pop(0)
            if flag.startswith("--platform="):
                platform = substitute(flag.split("=", 1)[1], args)
        if not tokens:
            continue
        image = substitute(tokens[0], args)
        stage = tokens[2] if len(tokens) >= 3 and tokens[1].lower() == "as" else None
        if image.lower() not in stages and image.lower() != "scratch":
            found.append(From(f"stage {stage}" if stage else f"stage #{len(found) + 1}", ImageRef.parse(image), platform))
        if stage:
            stages.add(stage.lower())
    return found


def run_lines(text: str) -> list[str]:
    return [rest for word, rest in _instructions(text) if word == "RUN"]
