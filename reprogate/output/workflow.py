"""GitHub Actions workflow commands, step outputs and the step summary, written safely.

- Annotations escape their data and properties the way the runner decodes them, and show control
  and bidirectional-override characters as visible escapes, so a key or label from a pull request
  can neither start a new workflow command nor disguise itself.
- Lines that are not our own workflow commands are never read as commands: if any of them would
  begin with `::`, all of them are printed inside a `::stop-commands::<random>` block.
- Step outputs are declared in STEP_OUTPUTS (action.yml declares the same names; a test holds the
  two together); multi-line values use a random heredoc delimiter.
- GitHub shows at most 10 error and 10 warning annotations per step; a step summary over 1 MiB is
  refused, so what is appended is cut, at a line's end, to fit beside what the step holds already.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterable

ANNOTATIONS_PER_LEVEL = 10
SUMMARY_LIMIT = 1024 * 1024

# Every step output any command writes, with what it means. action.yml's `outputs:` lists the same.
STEP_OUTPUTS: dict[str, str] = {
    "valid": "validate: true when every record and manifest is valid",
    "documents": "validate: how many reprogate documents were checked",
    "drift": "validate: environment pins that no longer match the working tree, comma-separated",
    "layers": "detect/gate: watched layers the diff changes, comma-separated",
    "changed": "detect: true when any watched layer changed",
    "rebuild-required": "detect/gate: whether the pinned reference must be rebuilt",
    "records": "gate: the reference records a rebuild was dispatched for, comma-separated",
    "run-url": "gate: the dispatched rebuild run",
    "verdict": "rebuild: pass or fail",
    "diagnosis": "rebuild: the first stage that failed",
    "report-path": "rebuild: path of the Markdown report",
    "out-dir": "rebuild: the fresh folder holding verdict.json, report.md and rebuild-record.yaml (upload this one)",
    "ok": "dataset verify: true when every shard matches",
}

_BIDI = {0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A)}


class WorkflowCommand(str):
    """A line this module built as a workflow command; its data is already escaped."""


def visible(text: str) -> str:
    """Control characters (but tab) and bidirectional controls as visible escapes."""
    if text.isprintable():
        return text
    out = []
    for ch in text:
        code = ord(ch)
        if ch == "\t" or (ch.isprintable() and code not in _BIDI):
            out.append(ch)
        elif code < 0x100:
            out.append(f"\\x{code:02x}")
        else:
            out.append(f"\\u{code:04x}")
    return "".join(out)


def escape_data(text: str) -> str:
    return visible(text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A"))


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def annotation(level: str, message: str, file: str | None = None, line: int | None = None, col: int | None = None, title: str | None = None) -> WorkflowCommand:
    """One `::error file=…,line=…,col=…,title=…::message` workflow command."""
    if level not in ("error", "warning", "notice"):
        raise ValueError(f"unknown annotation level {level!r}")
    props = []
    if file:
        props.append(f"file={escape_property(file)}")
    if line:
        props.append(f"line={int(line)}")
    if col:
        props.append(f"col={int(col)}")
    if title:
        props.append(f"title={escape_property(title)}")
    head = f"::{level} {','.join(props)}" if props else f"::{level}"
    return WorkflowCommand(f"{head}::{escape_data(message)}")


def guard(lines: Iterable[str]) -> list[str]:
    """Lines ready to print in a workflow log: our own commands as they are; every other line
    made visible, and fenced by stop-commands where it would read as a command (lines already
    inside one of our own stop-commands blocks are inert and left alone)."""
    out: list[str] = []
    pending: list[str] = []
    closing: str | None = None  # the end marker of our own open stop-commands block

    def flush() -> None:
        if any(line.lstrip().startswith("::") for line in pending):
            token = secrets.token_hex(16)
            out.extend([f"::stop-commands::{token}", *pending, f"::{token}::"])
        else:
            out.extend(pending)
        pending.clear()

    for line in lines:
        if isinstance(line, WorkflowCommand):
            if closing is None:
                flush()
                if line.startswith("::stop-commands::"):
                    closing = f"::{line.removeprefix('::stop-commands::')}::"
            elif line == closing:
                closing = None
            out.append(line)
        elif closing is not None:
            out.append(visible(line))
        else:
            pending.append(visible(line))
    flush()
    return out


def stop_commands(lines: Iterable[str]) -> list[str]:
    """Wrap text so that GitHub does not read any of it as a workflow command."""
    token = secrets.token_hex(16)
    return [WorkflowCommand(f"::stop-commands::{token}"), *(visible(line) for line in lines), WorkflowCommand(f"::{token}::")]


def append_summary(markdown: str) -> bool:
    """Append to $GITHUB_STEP_SUMMARY, cut to stay under GitHub's 1 MiB for the whole step (what
    an earlier command in the same step wrote counts), at the end of a line; False if unset."""
    target = os.environ.get("GITHUB_STEP_SUMMARY")
    if not target:
        return False
    try:
        present = os.path.getsize(target)
    except OSError:
        present = 0
    data = markdown.encode("utf-8")
    room = SUMMARY_LIMIT - 1024 - present
    if len(data) > room:
        note = b"\n_(summary cut to fit GitHub's 1 MiB step-summary limit; the step log has everything)_\n"
        cut = data.rfind(b"\n", 0, max(room - len(note), 0))
        data = (data[: cut + 1] if cut >= 0 else b"") + note if room > len(note) else b""
    if data:
        _append(target, data)
    return True


def _append(target: str, data: bytes) -> None:
    """Append to a file the runner reads; a failure (a full disk) names the file."""
    try:
        with open(target, "ab") as fh:
            fh.write(data)
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror, target) from None


def set_outputs(values: dict[str, str]) -> bool:
    """Append name=value pairs to $GITHUB_OUTPUT (multi-line values with a random delimiter)."""
    unknown = sorted(set(values) - set(STEP_OUTPUTS))
    if unknown:
        raise ValueError(f"undeclared step output(s) {unknown}: add them to STEP_OUTPUTS and action.yml")
    target = os.environ.get("GITHUB_OUTPUT")
    if not target or not values:
        return False
    lines = []
    for name, value in values.items():
        if "\n" in value or "\r" in value:
            delimiter = f"ghadelimiter_{secrets.token_hex(8)}"
            lines.append(f"{name}<<{delimiter}\n{value}\n{delimiter}\n")
        else:
            lines.append(f"{name}={value}\n")
    _append(target, "".join(lines).encode("utf-8"))
    return True
