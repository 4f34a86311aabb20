"""Writing to a GitHub Actions run: annotations, step summary, step outputs.

GitHub shows at most 10 error and 10 warning annotations per step and 50 per job; a step summary
over 1 MiB is refused. These helpers escape what they print (so a value cannot inject a workflow
command) and keep within those limits; what does not fit goes to the summary.
"""

from __future__ import annotations

import os
import secrets
from typing import Iterable

ANNOTATIONS_PER_LEVEL = 10
SUMMARY_LIMIT = 1024 * 1024


def escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def annotation(level: str, message: str, file: str | None = None, line: int | None = None, col: int | None = None, title: str | None = None) -> str:
    """One `::error file=…,line=…,col=…,title=…::message` workflow command."""
    props = []
    if file:
        props.append(f"file={escape_property(file)}")
    if line:
        props.append(f"line={line}")
    if col:
        props.append(f"col={col}")
    if title:
        props.append(f"title={escape_property(title)}")
    head = f"::{level} {','.join(props)}" if props else f"::{level}"
    return f"{head}::{escape_data(message)}"


def stop_commands(lines: Iterable[str]) -> list[str]:
    """Wrap untrusted text so that GitHub does not read any of it as a workflow command."""
    token = secrets.token_hex(16)
    return [f"::stop-commands::{token}", *lines, f"::{token}::"]


def append_summary(markdown: str) -> bool:
    """Append to $GITHUB_STEP_SUMMARY, cut to stay under GitHub's 1 MiB; False if unset."""
    target = os.environ.get("GITHUB_STEP_SUMMARY")
    if not target:
        return False
    data = markdown.encode("utf-8")
    if len(data) > SUMMARY_LIMIT - 1024:
        note = "\n\n_(summary cut to fit GitHub's 1 MiB step-summary limit)_\n".encode()
        data = data[: SUMMARY_LIMIT - 1024 - len(note)].decode("utf-8", "ignore").encode() + note
    with open(target, "ab") as fh:
        fh.write(data)
    return True


def set_outputs(values: dict[str, str]) -> bool:
    """Append name=value pairs to $GITHUB_OUTPUT (multi-line values with a random delimiter)."""
    target = os.environ.get("GITHUB_OUTPUT")
    if not target:
        return False
    with open(target, "a", encoding="utf-8") as fh:
        for name, value in values.items():
            if "\n" in value:
                delimiter = f"ghadelimiter_{secrets.token_hex(8)}"
                fh.write(f"{name}<<{delimiter}\n{value}\n{delimiter}\n")
            else:
                fh.write(f"{name}={value}\n")
    return True
