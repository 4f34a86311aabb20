"""The packages a Dockerfile's RUN lines install with pip (or `uv pip`, `python -m pip`).

A RUN line is shell: it is split with `shlex` the way the shell would (quotes, `#` comments,
`&&`/`;`/`|` between commands), heredoc scripts line by line, after the build's ARG and ENV
values are put in. Only the arguments of an install command are read, each with `packaging`:
a requirement (`torch==2.4.0`, `"numpy<2"`, `flash-attn @ https://...`), an option that changes
what is installed (`--index-url`, `-r requirements.txt`, `--torch-backend cu126`), or a path or
URL. Words of other commands, comments and heredoc text that is not shell never become packages.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

from reprogate.detect.dockerfile import expand, substitute
from reprogate.lockfiles import normalize
from reprogate.lockfiles.requirements import requirement_text

_SEPARATORS = {"&&", "||", ";", "|", "&", "(", ")", ";;", "|&", "\n"}
_WRAPPERS = {"sudo", "env", "time", "nice", "nohup", "exec", "command", "eval", "then", "do", "else", "{", "!"}  # and shell keywords before a command
# pip/uv install options that take a value, and which of them change what gets installed.
_WITH_VALUE = {
    "-r", "--requirement", "-c", "--constraint", "-e", "--editable", "-i", "--index-url", "--extra-index-url", "-f",
    "--find-links", "-t", "--target", "--prefix", "--root", "--src", "--upgrade-strategy", "--platform",
    "--python-version", "--implementation", "--abi", "--only-binary", "--no-binary", "--progress-bar", "--cache-dir",
    "--log", "--timeout", "--retries", "--trusted-host", "--proxy", "--config-settings", "-C", "--global-option",
    "--install-option", "--exists-action", "--python", "-p", "--index-strategy", "--torch-backend", "--index",
    "--default-index", "--root-user-action", "--report", "--resolution", "--prerelease", "--override", "--group",
    "--extra", "--keyring-provider", "--build-constraint", "-b",
}  # fmt: skip
_TRACKED = {
    "-r": "-r", "--requirement": "-r", "-c": "-c", "--constraint": "-c", "-e": "-e", "--editable": "-e",
    "-i": "--index-url", "--index-url": "--index-url", "--default-index": "--index-url", "--extra-index-url": "--extra-index-url",
    "--index": "--extra-index-url", "-f": "--find-links", "--find-links": "--find-links", "--torch-backend": "--torch-backend",
    "--pre": "--pre", "--override": "--override", "--only-binary": "--only-binary", "--no-binary": "--no-binary",
}  # fmt: skip


@dataclass(frozen=True)
class Installed:
    """One argument of a pip install: a package (name set) or an option / path (name empty)."""

    name: str  # normalised package name; "" for an option or a path
    text: str  # the requirement as normalised, or the option's value
    version: str | None = None  # the exact pin, where `==` gives one
    label: str = ""  # for options: --index-url, -r, -e, path or URL ...


_MID_WORD_HASH = re.compile(r"(?<=\S)#")
_HASH_STAND_IN = "\x00"


def _words(command: str) -> list[str]:
    """The shell words of a command. A `#` starts a comment only at the start of a word, as in
    the shell (shlex would also start one inside `git+https://...#egg=pkg` and lose the rest of
    the line, an `--extra-index-url` with it)."""
    guarded = _MID_WORD_HASH.sub(_HASH_STAND_IN, command.replace(_HASH_STAND_IN, ""))
    lexer = shlex.shlex(guarded, posix=True, punctuation_chars=";&|()<>")
    lexer.whitespace_split = True
    lexer.commenters = "#"
    try:
        return [word.replace(_HASH_STAND_IN, "#") for word in lexer]
    except ValueError:  # an unbalanced quote: read it word by word without quoting
        return command.split()


def shell_commands(text: str) -> list[list[str]]:
    """The simple commands of a shell line, each as its words: what a RUN line runs, split at
    `;`, `&&`, `||`, `|` and parentheses, with the shell's comment rule."""
    return _commands(_words(text))


def _commands(words: list[str]) -> list[list[str]]:
    commands: list[list[str]] = []
    current: list[str] = []
    skip_next = False
    for word in words:
        if skip_next:
            skip_next = False
            continue
        if word in _SEPARATORS or (word and set(word) <= set(";&|()")):  # shlex joins `);` into one token
            commands.append(current)
            current = []
        elif set(word) <= set("<>&") and word:  # a redirection: drop a file-descriptor number before it and its target
            if current and current[-1].isdigit():
                current.pop()
            skip_next = True
        elif word != "$":
            current.append(word)
    commands.append(current)
    return [c for c in commands if c]


_ENV_RUNNERS = {"conda", "mamba", "micromamba"}
_ENV_RUNNER_VALUES = {"-n", "--name", "-p", "--prefix", "--cwd"}  # options of `conda run` that take a value


def _after_env_runner(words: list[str]) -> list[str]:
    """The command `conda run [options] COMMAND...` runs."""
    i = 0
    while i < len(words) and words[i].startswith("-"):
        i += 2 if words[i] in _ENV_RUNNER_VALUES else 1
    return words[i:]


def _install_arguments(command: list[str]) -> list[str] | None:
    """The words after `install` if this command is a pip install, else None."""
    words = list(command)
    while words:
        if "=" in words[0] and not words[0].startswith("-") or words[0] in _WRAPPERS:
            words.pop(0)  # FOO=bar pip install ..., sudo pip install ...
        elif words[0].rsplit("/", 1)[-1] in _ENV_RUNNERS and len(words) > 1 and words[1] == "run":
            words = _after_env_runner(words[2:])  # conda run -n peft pip install ...
        else:
            break
    if not words:
        return None
    program = words[0].rsplit("/", 1)[-1]
    if program.startswith("python") and len(words) > 2 and words[1] == "-m" and words[2] in ("pip", "uv"):
        words, program = words[2:], words[2]
    if program == "uv" and len(words) > 2 and words[1] == "pip":
        words = words[1:]
        program = "pip"
    if program.startswith("pip") and len(words) > 1 and words[1] == "install":  # pip, pip3, pip3.11, pipx
        return words[2:]
    return None


def parse_install(arguments: list[str]) -> list[Installed]:
    from packaging.requirements import InvalidRequirement, Requirement

    found: list[Installed] = []
    i = 0
    while i < len(arguments):
        word = arguments[i]
        i += 1
        if word.startswith("-"):
            option, _, inline = word.partition("=")
            if option.startswith("--") or len(option) == 2:
                value = inline
                if option in _WITH_VALUE and not inline:
                    value = arguments[i] if i < len(arguments) else ""
                    i += 1
            else:  # -rrequirements.txt
                option, value = option[:2], option[2:]
            if option in _TRACKED:
                found.append(Installed("", value, label=_TRACKED[option]))
            continue
        if word.endswith(".whl"):  # a wheel file: its name and version are in the file name
            wheel = _wheel(word)
            if wheel is not None:
                found.append(wheel)
                continue
        try:
            requirement = Requirement(word)
        except InvalidRequirement:
            found.append(Installed("", word, label="path or URL" if "/" in word or word.startswith(".") else "argument"))
            continue
        if "/" in word.split("@")[0] or word in (".", ".."):
            found.append(Installed("", word, label="path or URL"))
            continue
        name = normalize(requirement.name)
        specs = list(requirement.specifier)
        version = specs[0].version if len(specs) == 1 and specs[0].operator in ("==", "===") else None
        found.append(Installed(name, requirement_text(name, requirement.extras, requirement.specifier, requirement.url, requirement.marker), version))
    return found


def _wheel(word: str) -> Installed | None:
    from packaging.utils import InvalidWheelFilename, parse_wheel_filename

    try:
        name, version, _, _ = parse_wheel_filename(word.rsplit("/", 1)[-1])
    except InvalidWheelFilename:
        return None
    text = f"{name}=={version}" if "://" not in word else f"{name} @ {word}"
    return Installed(str(name), text, str(version))


def installs(command: str, heredocs: tuple[str, ...], scope: dict[str, str | None]) -> list[Installed]:
    """Everything pip installs in one RUN instruction (its heredoc scripts included)."""

    scripts = [command]
    interpreter = command.split()[0].rsplit("/", 1)[-1] if command.split() else ""
    if interpreter.startswith("<<") or interpreter in ("sh", "bash", "dash", "zsh"):  # a heredoc of another program is not shell
        for body in heredocs:
            scripts += body.replace("\\\n", " ").splitlines()
    found: list[Installed] = []
    for script in scripts:
        local: dict[str, str | None] = dict(scope)  # shell variables the script sets, for the commands after
        for words in shell_commands(substitute(script, scope)):
            if words and all(_ASSIGNMENT.match(word) for word in words):  # `CUDA_MM=${CUDA_VERSION%.*}`: sets, runs nothing
                for word in words:
                    name, _, value = word.partition("=")
                    local[name] = expand(value, local)[0]
                continue
            arguments = _install_arguments([expand(word, local)[0] if "$" in word else word for word in words])
            if arguments is not None:
                found += parse_install(arguments)
    return found


_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
