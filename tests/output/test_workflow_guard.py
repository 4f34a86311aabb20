"""Issue 13: nothing printed in github format can start a workflow command or hide itself. Keys
and titles from a record (NUL, U+202E RIGHT-TO-LEFT OVERRIDE, newlines, `::`) are shown escaped
in annotations and fenced by stop-commands elsewhere."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import yaml
from click.testing import Result

from reprogate.output.emit import emit
from reprogate.output.result import CommandResult
from reprogate.output.workflow import annotation

Cli = Callable[..., Result]
EVIL_KEY = "x\u0000\u202e::set-output name=valid::true"


def commands_outside_fences(output: str) -> list[str]:
    """Lines the runner would read as workflow commands: `::` lines not inside a stop-commands block."""
    found, end = [], None
    for line in output.splitlines():
        if end is not None:
            if line == end:
                end = None
            continue
        if line.startswith("::stop-commands::"):
            end = "::" + line.removeprefix("::stop-commands::") + "::"
        elif line.startswith("::"):
            found.append(line)
    return found


def test_a_key_with_nul_and_bidi_override_is_escaped_in_the_annotation(cli: Cli, project: Path) -> None:
    record = yaml.safe_load((project / "records" / "startup.yaml").read_text())
    record[EVIL_KEY] = 1
    path = project / "records" / "evil.json"
    path.write_text(json.dumps(record))
    result = cli("validate", "--format", "github", str(path), cwd=project)
    assert result.exit_code == 1
    assert "\u202e" not in result.output and "\u0000" not in result.output
    commands = commands_outside_fences(result.output)
    assert commands and all(line.startswith(("::error ", "::warning ", "::notice ")) for line in commands), commands
    title = next(line for line in commands if "unknown" in line)
    assert "\\x00\\u202e%3A%3Aset-output name=valid%3A%3Atrue" in title


def test_annotation_data_and_properties_cannot_end_the_command() -> None:
    line = annotation("error", "a\nb\r::c", "f,i:le\u202e.yaml", 1, 2, "t\u0000")
    assert "\n" not in line and "\r" not in line
    assert line == "::error file=f%2Ci%3Ale\\u202e.yaml,line=1,col=2,title=t\\x00::a%0Ab%0D::c"


def test_every_plain_line_that_reads_as_a_command_is_fenced() -> None:
    printed: list[str] = []
    emit(CommandResult(0, ["fine", "label x\n::set-output name=rebuild-required::false", "::add-mask::oops"]), "github", printed.append, printed.append)
    assert commands_outside_fences("\n".join(printed)) == []
    assert "::set-output name=rebuild-required::false" in printed
