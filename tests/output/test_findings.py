"""Findings of `validate` as text, JSON and GitHub annotations (output/findings.py): the summary
counts, the JSON shape, the exit codes, annotations within GitHub's per-step limits and escaped as
the runner decodes workflow commands, and the step summary."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reprogate.core.diagnostics import Diagnostic, ExitCode, Location, Severity
from reprogate.output.emit import emit
from reprogate.output.findings import RENDERERS, annotate, format_line, render_github, render_json, render_text, summary_markdown
from reprogate.output.workflow import ANNOTATIONS_PER_LEVEL, WorkflowCommand
from reprogate.rules.environment import CODE as DRIFT_CODE
from reprogate.validate.runner import FileResult, Validation

SKIPPED = "not a reprogate document (no apiVersion or kind)"


def error(path: str = "records/a.yaml", message: str = "level must be one of bitwise, behavioral", field: str = "contract.level", **kw: object) -> Diagnostic:
    return Diagnostic(path, message, "schema", Severity.ERROR, Location(3, 5), field, **kw)  # type: ignore[arg-type]


def warning(path: str = "records/a.yaml", message: str = "the contract expires in 10 days", **kw: object) -> Diagnostic:
    return Diagnostic(path, message, "contract-expiring", Severity.WARNING, Location(7, 1), "contract.lifetime.expires", **kw)  # type: ignore[arg-type]


def mixed() -> Validation:
    """One invalid record (an error and a warning), one valid, one skipped YAML, one unreadable file."""
    return Validation(
        files=[
            FileResult("records/a.yaml", "RunRecord", [error(hint="use bitwise"), warning()], ExitCode.FAILED),
            FileResult("records/b.yaml", "RunRecord"),
            FileResult(".github/workflows/ci.yml", None, skipped=SKIPPED),
            FileResult(
                "records/broken.yaml",
                None,
                [Diagnostic("records/broken.yaml", "not YAML: mapping values are not allowed here", "parse", location=Location(2, 9))],
                ExitCode.USAGE,
            ),
        ]
    )


def test_a_finding_line_names_where_what_and_the_hint() -> None:
    assert format_line(error(hint="use bitwise")) == "records/a.yaml:3:5  contract.level  level must be one of bitwise, behavioral\n    hint: use bitwise"
    assert format_line(warning()) == "records/a.yaml:7:1  contract.lifetime.expires  warning: the contract expires in 10 days"
    assert format_line(Diagnostic("x.yaml", "empty", "empty")) == "x.yaml:1:1  -  empty"


def test_the_text_summary_counts_documents_findings_unreadable_and_skipped() -> None:
    result = render_text(mixed())
    assert result.code == ExitCode.USAGE, "an unreadable file is a usage error, worse than an invalid record"
    assert result.stdout[-1] == "2 document(s) checked, 1 valid, 1 invalid, 1 unreadable, 1 skipped (2 error(s), 1 warning(s))"
    # errors first (every file's), then warnings
    assert result.stdout[:3] == [format_line(error(hint="use bitwise")), format_line(mixed().files[3].diagnostics[0]), format_line(warning())]
    assert f".github/workflows/ci.yml: skipped, {SKIPPED}" in result.stdout
    assert not any(line.endswith("ok (RunRecord)") for line in result.stdout)


def test_verbose_text_also_lists_the_valid_files() -> None:
    lines = render_text(mixed(), verbose=True).stdout
    assert "records/b.yaml: ok (RunRecord)" in lines and f".github/workflows/ci.yml: skipped, {SKIPPED}" in lines
    assert "records/a.yaml: ok (RunRecord)" not in lines


def test_a_file_skipped_for_another_reason_is_only_listed_when_verbose() -> None:
    report = Validation(files=[FileResult("big.yaml", None, skipped="larger than the size limit")])
    assert render_text(report).stdout == ["0 document(s) checked, 0 valid, 0 invalid, 1 skipped (0 error(s), 0 warning(s))"]
    assert "big.yaml: skipped, larger than the size limit" in render_text(report, verbose=True).stdout


@pytest.mark.parametrize(
    "report, code",
    [
        (Validation(files=[FileResult("a.yaml", "RunRecord")]), ExitCode.OK),
        (Validation(files=[FileResult("a.yaml", "RunRecord", [warning()])]), ExitCode.OK),
        (Validation(files=[FileResult("a.yaml", "RunRecord", [warning()])], strict=True), ExitCode.FAILED),
        (Validation(files=[FileResult("a.yaml", "RunRecord", [error()], ExitCode.FAILED)]), ExitCode.FAILED),
        (Validation(problems=[Diagnostic("nothing.yaml", "no such file", "missing")]), ExitCode.USAGE),
        (Validation(problems=[Diagnostic("x", "just so you know", "note", Severity.WARNING)]), ExitCode.OK),
    ],
)
def test_every_format_exits_with_the_validations_code(report: Validation, code: ExitCode) -> None:
    for renderer in RENDERERS.values():
        assert renderer(report).code == code
    assert json.loads(render_json(report).stdout[0])["valid"] is (code == ExitCode.OK)


def test_the_json_shape() -> None:
    report = mixed()
    report.files.append(FileResult("odd.yaml", "?", [Diagnostic("odd.yaml", "unknown apiVersion 'reprogate/v9'", "unknown-api")], ExitCode.FAILED))
    report.files[1].diagnostics.append(
        Diagnostic("records/b.yaml", "environment.lock no longer matches", DRIFT_CODE, Severity.NOTICE, field="environment.lock")
    )
    report.problems.append(Diagnostic("missing.yaml", "no such file", "missing"))
    payload = json.loads(render_json(report).stdout[0])
    assert set(payload) == {"version", "valid", "exit_code", "summary", "problems", "drift", "files"}
    assert (payload["version"], payload["valid"], payload["exit_code"]) == (1, False, 2)
    assert payload["summary"] == "3 document(s) checked, 1 valid, 2 invalid, 1 environment drift, 1 unreadable, 1 skipped (4 error(s), 1 warning(s))"
    assert payload["problems"] == [
        {"file": "missing.yaml", "line": 1, "col": 1, "field": "", "severity": "error", "code": "missing", "message": "no such file", "hint": None}
    ]
    assert payload["drift"] == [{"file": "records/b.yaml", "field": "environment.lock", "message": "environment.lock no longer matches"}]
    files = {f["file"]: f for f in payload["files"]}
    assert [f["file"] for f in payload["files"]] == [f.path for f in report.files]
    assert files["records/a.yaml"]["status"] == "invalid" and files["records/a.yaml"]["kind"] == "RunRecord" and files["records/a.yaml"]["skipped"] is None
    assert files["records/a.yaml"]["findings"][0] == {
        "file": "records/a.yaml",
        "line": 3,
        "col": 5,
        "field": "contract.level",
        "severity": "error",
        "code": "schema",
        "message": "level must be one of bitwise, behavioral",
        "hint": "use bitwise",
    }
    assert files["records/b.yaml"]["status"] == "valid"
    assert files[".github/workflows/ci.yml"] == {"file": ".github/workflows/ci.yml", "kind": None, "status": "skipped", "skipped": SKIPPED, "findings": []}
    assert files["odd.yaml"]["kind"] is None and files["odd.yaml"]["status"] == "invalid"


def many(count: int, severity: Severity) -> list[Diagnostic]:
    return [Diagnostic(f"records/r{i}.yaml", f"{severity.value} {i}", "c", severity, Location(i + 1, 1), "f") for i in range(count)]


def test_annotations_are_capped_per_level_and_the_rest_printed_inert() -> None:
    findings = many(15, Severity.ERROR) + many(12, Severity.WARNING) + many(3, Severity.NOTICE)
    lines = annotate(findings)
    commands = [line for line in lines if isinstance(line, WorkflowCommand) and not line.startswith("::stop-commands::")][:-1]
    assert [c.split(" ", 1)[0] for c in commands] == ["::error"] * ANNOTATIONS_PER_LEVEL + ["::warning"] * ANNOTATIONS_PER_LEVEL + ["::notice"] * 3
    assert ANNOTATIONS_PER_LEVEL == 10
    note = lines.index("7 more finding(s) not annotated (GitHub shows 10 errors and 10 warnings per step); each one follows:")
    start, *inert, end = lines[note + 1 :]
    token = start.removeprefix("::stop-commands::")
    assert start.startswith("::stop-commands::") and len(token) == 32 and end == f"::{token}::"
    assert inert == [format_line(d) for d in findings[10:15] + findings[25:27]]


def test_an_overflowing_finding_with_a_hint_keeps_the_hint_on_its_own_line() -> None:
    findings = many(10, Severity.ERROR) + [Diagnostic("r.yaml", "one too many", "c", hint="fix it")]
    lines = annotate(findings)
    assert lines[-3:-1] == ["r.yaml:1:1  -  one too many", "    hint: fix it"]
    assert not any("\\x0a" in line for line in lines)


def test_annotation_text_is_escaped_as_the_runner_decodes_workflow_commands() -> None:
    d = Diagnostic("records/we,ird:name.yaml", "100% off\r\nnext line::set-output name=valid::true", "c", Severity.ERROR, Location(4, 2), "a::b,c", hint="x\ny")
    (line,) = annotate([d])
    assert line == (
        "::error file=records/we%2Cird%3Aname.yaml,line=4,col=2,title=reprogate%3A a%3A%3Ab%2Cc::"
        "100%25 off%0D%0Anext line::set-output name=valid::true (hint: x%0Ay)"
    )
    assert "\n" not in line and "\r" not in line


def test_an_annotation_shows_control_and_bidi_characters_escaped() -> None:
    (line,) = annotate([Diagnostic("r.yaml", "a\x00b\u202ec\x1b[31m", "c", field="k\u2066")])
    assert line == "::error file=r.yaml,line=1,col=1,title=reprogate%3A k\\u2066::a\\x00b\\u202ec\\x1b[31m"


def test_github_format_prints_annotations_then_the_summary_and_sets_the_outputs() -> None:
    report = mixed()
    report.files[1].diagnostics.append(Diagnostic("records/b.yaml", "drifted", DRIFT_CODE, Severity.NOTICE, field="environment.lock"))
    result = render_github(report)
    assert [line.split(" ", 1)[0] for line in result.stdout[:-1]] == ["::error", "::warning", "::notice", "::error"]
    assert result.stdout[-1] == "2 document(s) checked, 1 valid, 1 invalid, 1 environment drift, 1 unreadable, 1 skipped (2 error(s), 1 warning(s))"
    assert result.outputs == {"valid": "false", "documents": "2", "drift": "records/b.yaml:environment.lock"}
    assert render_github(Validation(files=[FileResult("a.yaml", "RunRecord")])).outputs == {"valid": "true", "documents": "1", "drift": ""}


def test_the_step_summary_lists_every_finding_in_a_table() -> None:
    findings = many(25, Severity.ERROR)
    findings.append(Diagnostic("p|q.yaml", "bad | value\r\n## injected", "c", Severity.WARNING, Location(2, 3), "x|y", hint="see docs"))
    text = summary_markdown("reprogate validate", False, "26 document(s) checked", findings)
    lines = text.split("\n")
    assert lines[:4] == ["### ❌ reprogate validate", "", "26 document(s) checked", ""]
    assert lines[4:6] == ["| file | line | field | severity | message |", "|---|---|---|---|---|"]
    rows = lines[6:-1]
    assert len(rows) == 26 and lines[-1] == "", "every finding, not only the annotated ones"
    assert rows[0] == "| `records/r0.yaml` | 1:1 | `f` | error | error 0 |"
    assert rows[-1] == "| `p\\|q.yaml` | 2:3 | `x\\|y` | warning | bad \\| value  ## injected — see docs |"
    assert summary_markdown("t", True, "ok", []) == "### ✅ t\n\nok\n\n"


def test_a_summary_over_githubs_limit_ends_with_whole_rows_and_says_how_many_it_leaves_out() -> None:
    from reprogate.output.workflow import SUMMARY_LIMIT

    findings = [Diagnostic(f"records/r{i}.yaml", "é" * 400, "c", Severity.ERROR, Location(i + 1, 1), "f") for i in range(2_000)]  # ~1.6 MB of rows
    text = summary_markdown("reprogate validate", False, "2000 document(s) checked", findings)
    lines = text.split("\n")
    rows = [line for line in lines if line.startswith("| `records/")]
    assert len(text.encode()) < SUMMARY_LIMIT and all(row.endswith(" |") for row in rows)
    assert 1_000 < len(rows) < 2_000
    assert lines[-2] == f"_{2_000 - len(rows)} more finding(s) are not in this table (GitHub takes 1 MiB of summary a step); the step log lists every one._"


def test_a_text_line_shows_control_characters_in_names_escaped() -> None:
    """A file named to look like the end of one finding and the start of a passing one cannot
    make a line of its own, nor send escape sequences to the terminal."""
    forged = Diagnostic("a.yaml:1:1  -  ok\nrecords/b\x1b[2K.yaml", "bad\rvalid", "c", field="k\u202e")
    line = format_line(forged)
    assert line == "a.yaml:1:1  -  ok\\x0arecords/b\\x1b[2K.yaml:1:1  k\\u202e  bad\\x0dvalid"
    assert "\n" not in line and "\x1b" not in line


def test_the_github_result_through_emit_writes_the_summary_and_outputs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GITHUB_OUTPUT", str(tmp_path / "output"))
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path / "summary.md"))
    report = Validation(
        files=[
            FileResult(
                "records/a.yaml", "RunRecord", many(12, Severity.ERROR) + [error(message="::add-mask::x\n::set-output name=valid::true")], ExitCode.FAILED
            )
        ]
    )
    out: list[str] = []
    emit(render_github(report), "github", out.append, out.append)
    commands, fenced, end = [], 0, None
    for line in out:
        if end is not None:
            fenced, end = fenced + 1, (None if line == end else end)
        elif line.startswith("::stop-commands::"):
            end = "::" + line.removeprefix("::stop-commands::") + "::"
        elif line.lstrip().startswith("::"):
            commands.append(line)
    assert len(commands) == 10 and all(c.startswith("::error file=records/r") for c in commands), "only our own ten annotations are commands"
    assert fenced == 4, "the three overflowing findings, a line each, and the fence's end"
    assert any(line.endswith("::add-mask::x\\x0a::set-output name=valid::true") for line in out), "the message's newline shown, not taken"
    assert (tmp_path / "output").read_text() == "valid=false\ndocuments=1\ndrift=\n"
    assert (tmp_path / "summary.md").read_text().count("| `records/") == 13


def test_the_summary_is_cut_at_a_line_end_to_fit_beside_what_the_step_already_wrote(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from reprogate.output.workflow import SUMMARY_LIMIT, append_summary

    target = tmp_path / "summary.md"
    target.write_bytes(b"x" * 900_000 + b"\n")  # an earlier command in the same step
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(target))
    rows = "".join(f"| row {i} | {'é' * 40} |\n" for i in range(10_000))
    assert append_summary(rows)
    written = target.read_bytes()[900_001:].decode()
    assert target.stat().st_size < SUMMARY_LIMIT
    *kept, blank, note, end = written.split("\n")  # a blank line ends the table before the note
    assert blank == "" and kept and all(line.startswith("| row ") and line.endswith(" |") for line in kept), "whole rows only"
    assert note.startswith("_(summary cut to fit GitHub's 1 MiB") and end == ""
    target.write_bytes(b"x" * (SUMMARY_LIMIT - 10))
    append_summary(rows)
    assert target.stat().st_size == SUMMARY_LIMIT - 10, "no room: nothing appended, rather than a summary GitHub refuses"


def test_summary_cells_escape_what_the_log_escapes_and_code_spans_hold_backticks() -> None:
    d = Diagnostic("a`b``c\x1b[2K\u202e.yaml", "m", "c", field="`k`")
    row = summary_markdown("t", False, "s", [d]).split("\n")[-2]
    assert row.startswith("| ```a`b``c\\x1b[2K\\u202e.yaml``` | 1:1 | `` `k` `` |"), row


def test_verbose_text_names_each_file_on_one_line(tmp_path: Path) -> None:
    forged = "m\n9 document(s) checked, 9 valid, 0 invalid (0 error(s), 0 warning(s))\n.yaml"
    report = Validation(files=[FileResult(forged, "DatasetManifest"), FileResult("h\n::error::x\n.yaml", None, skipped=SKIPPED)])
    lines = [line for entry in render_text(report, verbose=True).stdout for line in entry.split("\n")]
    assert lines[:2] == [
        "m\\x0a9 document(s) checked, 9 valid, 0 invalid (0 error(s), 0 warning(s))\\x0a.yaml: ok (DatasetManifest)",
        f"h\\x0a::error::x\\x0a.yaml: skipped, {SKIPPED}",
    ]
