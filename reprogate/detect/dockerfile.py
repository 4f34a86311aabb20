"""Reading a Dockerfile the way BuildKit does, far enough to know which images it builds on and
what its RUN lines run.

Instructions, continuation lines, comments inside continuations and the escape directive come
from dockerfile-parse (the parser OSBS builds with). Two things it does not do are done here:
heredocs (`RUN <<EOF ... EOF`, whose body lines would otherwise read as instructions) and
BuildKit's variable scoping and expansion: ARGs before the first FROM are global and may use
earlier ones; FROM sees only those; inside a stage an `ARG NAME` without a value takes the global
value, ENV persists into stages built on this one, and `${VAR:-default}`, `${VAR-default}`,
`${VAR:+alt}`, `${VAR+alt}` nest. An image reference that needs a build argument without a
default is *unresolved*: what it names is decided by `--build-arg` at build time, so it is
reported as such, never as the literal text.
"""

from __future__ import annotations

import fnmatch
import io
import re
from dataclasses import dataclass, field

HEREDOC_INSTRUCTIONS = ("RUN", "COPY", "ADD")
_HEREDOC = re.compile(r"^<<(-?)(['\"]?)([A-Za-z0-9_.-]+)\2$")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_TEMPLATE = re.compile(r"\{\{.*?\}\}")
MAX_NESTING = 64  # `${A:-${B:-...}}` inside each other; BuildKit's own limit is the Go stack, far beyond any real file
MAX_EXPANDED = 64 * 1024  # characters one word may grow by expanding: `ARG B=$A$A` thirty times over is 2^30 of them
MAX_TRIMMED = 1024  # the longest value `${V%pattern}` and its kin are applied to (each cut is a glob match: quadratic)


class DockerfileError(ValueError):
    """A Dockerfile reprogate will not expand (a variable nested past MAX_NESTING, a word that
    grows past MAX_EXPANDED, a trim of a value past MAX_TRIMMED); the message names the line. A
    ValueError, so every reader that counts an unparseable file as changed does."""


@dataclass(frozen=True)
class ImageRef:
    name: str
    tag: str | None
    digest: str | None

    @classmethod
    def parse(cls, ref: str) -> ImageRef:
        name, _, digest = ref.partition("@")
        last = name.rsplit("/", 1)[-1]
        tag = None
        if ":" in last:
            name, tag = name.rsplit(":", 1)
        return cls(name, tag, digest or None)

    def __str__(self) -> str:
        return self.name + (f":{self.tag}" if self.tag else "") + (f"@{self.digest}" if self.digest else "")


@dataclass(frozen=True)
class Instruction:
    word: str  # upper case: FROM, ARG, RUN ...
    value: str  # the arguments, continuation lines joined, comments dropped
    line: int  # first line, 1-based
    heredocs: tuple[str, ...] = ()  # bodies of `<<EOF` documents, in order


@dataclass
class Stage:
    """One FROM and what follows it, with the scope its RUN lines see."""

    index: int  # 1-based position among FROM lines
    name: str | None  # the `AS name`
    written: str  # the image expression as written
    image: ImageRef | None  # the image, when the FROM names one and it resolves
    parent: str | None = None  # the earlier stage this one builds on
    unresolved: tuple[str, ...] = ()  # build arguments without a default that the reference needs
    platform: str | None = None
    runs: list[tuple[str, tuple[str, ...], dict[str, str | None]]] = field(default_factory=list)  # (command, heredocs, scope)
    copies_from: list[tuple[str, ImageRef]] = field(default_factory=list)  # COPY --from=<image> (not a stage)
    args: dict[str, str | None] = field(default_factory=dict)  # ARGs declared in the stage, with values
    env: dict[str, str] = field(default_factory=dict)
    line: int = 0  # the FROM's line, 1-based
    run_lines: list[int] = field(default_factory=list)  # the first line of each of `runs`
    copied: list[tuple[tuple[str, ...], str]] = field(default_factory=list)  # COPY/ADD from the build context: (sources, destination)

    def context_file(self, path: str) -> str | None:
        """The build-context file a COPY or ADD of this stage put at `path` (the last one to
        write there), or None: `-r /tmp/requirements/x.txt` is `requirements/x.txt` of the repository."""
        for sources, destination in reversed(self.copied):
            if len(sources) == 1 and not destination.endswith("/") and path == destination:
                return sources[0]
            folder = destination.rstrip("/") + "/"
            if path.startswith(folder):
                rest = path[len(folder) :]
                named = [s for s in sources if s.rstrip("/").rsplit("/", 1)[-1] == rest]
                return named[0] if len(named) == 1 else None
        return None

    @property
    def key(self) -> str:
        return f"stage {self.name}" if self.name else f"stage #{self.index}"


@dataclass(frozen=True)
class From:
    key: str  # the stage name, or "stage #N"
    image: ImageRef
    platform: str | None


# --- instructions -----------------------------------------------------------------------------


def _heredoc_names(value: str) -> list[tuple[str, bool]]:
    from dockerfile_parse.util import WordSplitter

    try:
        words = list(WordSplitter(value).split(dequote=False))
    except (ValueError, IndexError):  # an unbalanced quote: no heredoc can be recognised in it
        return []
    names = []
    for i, word in enumerate(words):
        if word is None:  # the splitter's type allows it; a word of a split string is never None
            continue
        if word in ("<<", "<<-") and i + 1 < len(words):
            word = word + (words[i + 1] or "")
        if match := _HEREDOC.match(word):
            names.append((match.group(3), match.group(1) == "-"))
    return names


def instructions(text: str) -> list[Instruction]:
    """The instructions of a Dockerfile, heredoc bodies attached to their instruction."""
    from dockerfile_parse import DockerfileParser

    # An empty line inside a continuation is skipped by BuildKit, but ends the instruction in
    # dockerfile-parse; as a comment line (which both skip) the line numbers stay the same.
    if "{{" in text:  # a Jinja/Go template of a Dockerfile: its expressions are values decided when it is rendered
        text = _TEMPLATE.sub("${TEMPLATE_VALUE}", text)
    lines = ["#\n" if not line.strip() else line if line.endswith("\n") else line + "\n" for line in text.splitlines()]
    bodies: dict[int, tuple[str, ...]] = {}
    while True:
        structure = DockerfileParser(fileobj=io.BytesIO("".join(lines).encode("utf-8"))).structure  # type: ignore[arg-type]  # the stub says IO[str]; dockerfile-parse reads fileobj "rb", as bytes
        pending = next(
            (s for s in structure if s["instruction"] in HEREDOC_INSTRUCTIONS and s["startline"] not in bodies and _heredoc_names(s["value"])),
            None,
        )
        if pending is None:
            break
        at, found = pending["endline"] + 1, []
        for name, strip_tabs in _heredoc_names(pending["value"]):
            body = []
            while at < len(lines):
                line = lines[at]
                lines[at] = "#\n"
                at += 1
                if (line.lstrip("\t") if strip_tabs else line).rstrip("\r\n") == name:
                    break
                body.append(line)
            found.append("".join(body))
        bodies[pending["startline"]] = tuple(found)
    return [
        Instruction(s["instruction"], s["value"].strip(), s["startline"] + 1, bodies.get(s["startline"], ()))
        for s in structure
        if s["instruction"] != "COMMENT"
    ]


# --- variables --------------------------------------------------------------------------------


class _Expander:
    """BuildKit's word expansion: quotes removed, `\\` escapes, `$VAR` and `${VAR<op>word}`."""

    def __init__(self, scope: dict[str, str | None], keep_quotes: bool = False, keep_unknown: bool = False) -> None:
        self.scope, self.keep_quotes, self.keep_unknown = scope, keep_quotes, keep_unknown
        self.unresolved: set[str] = set()
        self.depth = 0

    def expand(self, word: str) -> str:
        self.depth += 1
        try:
            if self.depth > MAX_NESTING:
                raise DockerfileError(f"a variable's default or alternative nests more than {MAX_NESTING} deep (${{A:-${{B:-...}}}})")
            return self._expand(word)
        finally:
            self.depth -= 1

    def _expand(self, word: str) -> str:
        out, i, quote, size, limit = [], 0, None, 0, MAX_EXPANDED + len(word)  # a long literal (a RUN script) is no bomb
        while i < len(word):
            if size > limit:
                raise DockerfileError(f"a word expands to more than {MAX_EXPANDED:,} characters (variables that repeat each other)")
            ch = word[i]
            if ch == "\\" and quote != "'" and i + 1 < len(word):
                out.append(word[i : i + 2] if self.keep_quotes else word[i + 1])
                i += 2
            elif ch in "'\"" and quote in (None, ch):
                quote = None if quote == ch else ch
                if self.keep_quotes:
                    out.append(ch)
                i += 1
            elif ch == "$" and quote != "'" and i + 1 < len(word):
                text, i = self._variable(word, i + 1)
                out.append(text)
                size += len(text)
            else:
                out.append(ch)
                i += 1
            size += 1
        if size > limit:
            raise DockerfileError(f"a word expands to more than {MAX_EXPANDED:,} characters (variables that repeat each other)")
        return "".join(out)

    def _variable(self, word: str, i: int) -> tuple[str, int]:
        if word[i] != "{":
            match = _NAME.match(word, i)
            if not match:
                return "$", i
            return self._value(match.group(0), "$" + match.group(0)), match.end()
        match = _NAME.match(word, i + 1)
        if not match:
            return "$", i
        name, at = match.group(0), match.end()
        depth, end = 1, at
        while end < len(word) and depth:
            depth += {"{": 1, "}": -1}.get(word[end], 0)
            end += 1
        inner = word[at : end - 1]
        literal = word[i - 1 : end]
        for op in (":-", ":+", ":?", "-", "+", "?"):
            if inner.startswith(op):
                operand = inner[len(op) :]
                value = self.scope.get(name)
                is_set, non_empty = name in self.scope and value is not None, bool(value)
                if op in (":-", "-"):
                    use_default = not non_empty if op == ":-" else not is_set
                    return (self.expand(operand) if use_default else str(value)), end
                if op in (":+", "+"):
                    use_alt = non_empty if op == ":+" else is_set
                    return (self.expand(operand) if use_alt else ""), end
                return self._value(name, literal), end
        for op in ("%%", "%", "##", "#", "//", "/"):
            if inner.startswith(op):
                value = self.scope.get(name)
                if value is None:
                    return self._value(name, literal), end
                return _trimmed(value, op, self.expand(inner[len(op) :])), end
        return self._value(name, literal), end  # ${NAME}

    def _value(self, name: str, literal: str) -> str:
        value = self.scope.get(name)
        if value is None:
            self.unresolved.add(name)
            return literal if self.keep_unknown else ""
        return value

    def placeholders(self, word: str) -> str:
        """The word with known variables expanded and unknown ones written `${NAME}`, whatever
        their spelling: `$BASE` and `${BASE}` are one reference."""
        self.keep_unknown = True
        text = self.expand(word)
        for name in self.unresolved:
            text = re.sub(rf"\$(?:{name}\b|\{{{name}\}})", "${" + name + "}", text)
        return text


def _trimmed(value: str, op: str, operand: str) -> str:
    """The shell's (and BuildKit's) `${V%pat}`, `${V%%pat}`, `${V#pat}`, `${V##pat}`,
    `${V/pat/rep}` and `${V//pat/rep}`, with glob patterns: `${CUDA_VERSION%.*}` is 12.1 of 12.1.1."""
    if len(value) > MAX_TRIMMED:
        raise DockerfileError(f"${{...{op}...}} is applied to a value of {len(value):,} characters (at most {MAX_TRIMMED:,} are trimmed)")

    if op in ("/", "//"):
        pattern, _, replacement = operand.partition("/")
        if not pattern:
            return value
        regex = fnmatch.translate(pattern).removesuffix("\\Z").removeprefix("(?s:").removesuffix(")")
        return re.sub(regex, lambda _: replacement, value, count=0 if op == "//" else 1)
    cuts = range(len(value) + 1)
    if op.startswith("%"):  # from the end: the shortest (%) or longest (%%) match
        ends = sorted(cuts, reverse=op == "%")
        return next((value[:i] for i in ends if fnmatch.fnmatchcase(value[i:], operand)), value)
    starts = sorted(cuts, reverse=op == "##")
    return next((value[i:] for i in starts if fnmatch.fnmatchcase(value[:i], operand)), value)


def expand(word: str, scope: dict[str, str | None]) -> tuple[str, set[str]]:
    """A word with its variables expanded and quotes removed, and the variables it needed that have no value."""
    expander = _Expander(scope)
    return expander.expand(word), expander.unresolved


def substitute(command: str, scope: dict[str, str | None]) -> str:
    """A shell command with the build's ARG/ENV values put in, quotes and unknown variables kept
    (the shell sets those at run time)."""
    return _Expander(scope, keep_quotes=True, keep_unknown=True).expand(command)


def _assignments(value: str) -> list[tuple[str, str | None]]:
    """`A=1 B="two words" C` -> [(A, '1'), (B, '"two words"'), (C, None)], values still quoted."""
    from dockerfile_parse.util import WordSplitter

    pairs = []
    for word in WordSplitter(value).split(dequote=False):
        if word is None:  # the splitter's type allows it; a word of a split string is never None
            continue
        name, sep, default = word.partition("=")
        pairs.append((name, default if sep else None))
    return pairs


def _env_pairs(value: str) -> list[tuple[str, str]]:
    from dockerfile_parse.util import WordSplitter

    words = list(WordSplitter(value).split(dequote=False))
    if words and "=" not in (words[0] or ""):  # legacy `ENV NAME value with spaces`
        name, _, rest = value.partition(" ")
        return [(name, rest.strip())]
    return [(name, default or "") for name, default in _assignments(value)]


# --- stages -----------------------------------------------------------------------------------


def _from_parts(value: str) -> tuple[str | None, str | None, str | None]:
    """FROM [--platform=P] image [AS name] -> (image, name, platform)."""
    words = value.split()
    platform = None
    while words and words[0].startswith("--"):
        flag = words.pop(0)
        if flag.startswith("--platform="):
            platform = flag.split("=", 1)[1]
    if not words:
        return None, None, platform
    name = words[2] if len(words) >= 3 and words[1].lower() == "as" else None
    return words[0], name, platform


_CUDA_IMAGE_TAG = re.compile(r"^(\d+\.\d+(?:\.\d+)?)-")


def _image_env(image: ImageRef) -> dict[str, str]:
    """What a well-known base image sets in its ENV that RUN lines read: NVIDIA's CUDA images
    set CUDA_VERSION to the CUDA of their tag (`nvidia/cuda:12.1.1-devel-ubuntu22.04`)."""
    match = _CUDA_IMAGE_TAG.match(image.tag or "")
    if image.name.rsplit("/", 2)[-2:] == ["nvidia", "cuda"] and match:
        return {"CUDA_VERSION": match.group(1)}
    return {}


def stages(text: str) -> tuple[dict[str, str | None], list[Stage]]:
    """The global build arguments and every stage, with images resolved as BuildKit would."""
    global_args: dict[str, str | None] = {}
    found: list[Stage] = []
    by_name: dict[str, Stage] = {}
    current: Stage | None = None
    scope: dict[str, str | None] = {}
    for ins in instructions(text):
        try:
            current, scope = _stage_step(ins, global_args, found, by_name, current, scope)
        except DockerfileError as exc:
            raise DockerfileError(f"line {ins.line}: {ins.word}: {exc}") from None
    return global_args, found


def _stage_step(
    ins: Instruction, global_args: dict[str, str | None], found: list[Stage], by_name: dict[str, Stage], current: Stage | None, scope: dict[str, str | None]
) -> tuple[Stage | None, dict[str, str | None]]:
    """One instruction's effect on the stages: the stage it leaves current and that stage's scope."""
    if ins.word == "ARG":
        for name, default in _assignments(ins.value):
            if current is None:
                global_args[name] = expand(default, global_args)[0] if default is not None else None
            else:
                value = expand(default, scope)[0] if default is not None else global_args.get(name)
                current.args[name] = value
                scope[name] = value
    elif ins.word == "FROM":
        written, alias, platform = _from_parts(ins.value)
        if written is None:
            return current, scope
        resolved, missing = expand(written, global_args)
        stage = Stage(len(found) + 1, alias, written, None, platform=expand(platform, global_args)[0] if platform else None, line=ins.line)
        parent = by_name.get(resolved.lower())
        if parent is not None:
            stage.parent = parent.key
            stage.env = dict(parent.env)
        elif missing or not resolved:
            stage.unresolved = tuple(sorted(missing)) or ("(empty)",)
            stage.written = _Expander(global_args).placeholders(written)
        elif resolved.lower() != "scratch":
            stage.image = ImageRef.parse(resolved)
            stage.env.update(_image_env(stage.image))
        found.append(stage)
        if alias:
            by_name[alias.lower()] = stage
        return stage, dict(stage.env)
    elif current is None:
        return current, scope
    elif ins.word == "ENV":
        for name, value in _env_pairs(ins.value):
            current.env[name] = scope[name] = expand(value, scope)[0]
    elif ins.word == "RUN":
        command = " ".join(w for w in ins.value.split(" ") if not w.startswith(("--mount=", "--network=", "--security=")))
        current.runs.append((command.strip(), ins.heredocs, dict(scope)))
        current.run_lines.append(ins.line)
    elif ins.word in ("COPY", "ADD"):
        words = ins.value.split()
        for word in words:
            if word.startswith("--from=") and ins.word == "COPY":
                source = expand(word.split("=", 1)[1], scope)[0]
                if source and source.lower() not in by_name and not source.isdigit():
                    current.copies_from.append((source, ImageRef.parse(source)))
        paths = [expand(w, scope)[0] for w in words if not w.startswith("--")]
        if len(paths) >= 2 and not any(w.startswith("--from=") for w in words) and not ins.value.lstrip().startswith("["):
            current.copied.append((tuple(paths[:-1]), paths[-1]))
    return current, scope


def from_lines(text: str) -> list[From]:
    """Every FROM that names an image, keyed by its stage name or position among such FROMs."""
    out: list[From] = []
    for stage in stages(text)[1]:
        if stage.image is not None:
            out.append(From(f"stage {stage.name}" if stage.name else f"stage #{len(out) + 1}", stage.image, stage.platform))
    return out
