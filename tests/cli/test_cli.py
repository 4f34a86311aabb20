"""The command line as a user and a CI job meet it: output forms, exit codes, GitHub integration."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result
from support import EXAMPLES, REPO, edit_record, record_copies

from reprogate import __version__
from reprogate.cli import main

Cli = Callable[..., Result]


def break_drill(project: Path) -> Path:
    drill = project / "records" / "drill.yaml"
    text = drill.read_text()
    text = text.replace("  digest: sha256:04277a719cf148130961d05508089a23842a4c110231bc39afae52d94d48647c\n", "")
    text = text.replace("  dirty: false", "  dirty: no\n  dirtyy: 1")
    drill.write_text(text)
    return drill


def test_version(cli: Cli) -> None:
    result = cli("--version")
    assert result.exit_code == 0 and __version__ in result.output


def test_help_lists_every_command_with_a_description(cli: Cli) -> None:
    text = cli("--help").output
    for name, command in main.commands.items():
        summary = command.get_short_help_str(limit=200)
        assert summary, name
        assert f"  {name} " in text
    for name in ("validate", "capture", "preflight", "dataset", "image", "detect", "interval", "rebuild", "compare", "report", "gate", "github", "audit"):
        assert name in main.commands


def test_no_command_is_a_placeholder(cli: Cli) -> None:
    assert "not yet" not in cli("--help").output


def test_examples_validate(cli: Cli) -> None:
    result = cli("validate", str(EXAMPLES))
    assert result.exit_code == 0, result.output
    # the 10 of examples/ and tiny/, and each integration example's record, manifest and .reprogate.yaml (4 x 3)
    assert "22 document(s) checked, 22 valid" in result.output


def test_text_findings_are_file_line_col_field_message_with_hints(cli: Cli, project: Path) -> None:
    break_drill(project)
    result = cli("validate", "records/drill.yaml", cwd=project)
    assert result.exit_code == 1
    lines = result.output.splitlines()
    assert "records/drill.yaml:55:1  container.digest  required field 'digest' is missing" in lines
    assert any(line.startswith("    hint: a tag can move; pin the manifest digest") and "skopeo inspect" in line for line in lines)
    assert "records/drill.yaml:79:3  source.dirtyy  unknown field 'dirtyy'" in lines
    assert "    hint: did you mean 'dirty'?" in lines
    assert any("source.dirty  must be of type boolean" in line for line in lines)
    assert lines[-1].endswith("(3 error(s), 3 warning(s))")  # the illustrative drill cannot be rebuilt either


def test_exit_2_wins_over_exit_1_and_every_file_is_still_reported(cli: Cli, project: Path) -> None:
    break_drill(project)
    (project / "records" / "broken.yaml").write_text("apiVersion: reprogate/v1\nkind: [RunRecord\n")
    result = cli("validate", "records", cwd=project)
    assert result.exit_code == 2
    assert "records/broken.yaml:3:1  -  YAML syntax error" in result.output
    assert "container.digest" in result.output


def test_missing_path_and_empty_glob_are_usage_errors(cli: Cli, project: Path) -> None:
    missing = cli("validate", "nope.yaml", cwd=project)
    assert missing.exit_code == 2 and "nope.yaml" in missing.output, missing.output
    result = cli("validate", "records/*.yml", cwd=project)
    assert result.exit_code == 2 and "no file matches" in result.output


def test_globs_with_double_star(cli: Cli, project: Path) -> None:
    result = cli("validate", "**/*.yaml", cwd=project)
    assert result.exit_code == 0
    assert "17 document(s) checked" in result.output  # 11 records + 6 manifests (4 of them the integration examples'); the configs are hidden


def test_no_paths_uses_the_records_globs_of_reprogate_yaml(cli: Cli, project: Path) -> None:
    result = cli("validate", "-v", cwd=project / "records")
    assert result.exit_code == 0
    assert "tiny.yaml: ok (RunRecord)" in result.output and ".reprogate.yaml: ok (Config)" in result.output
    assert "drill.yaml:" in result.output  # listed with its warnings: the illustrative drill cannot be rebuilt


def test_no_paths_and_no_configuration_is_a_usage_error(cli: Cli, tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    result = cli("validate", cwd=tmp_path)
    assert result.exit_code == 2 and "no paths given" in result.output


def test_broken_configuration_is_reported_not_replaced_by_defaults(cli: Cli, project: Path) -> None:
    (project / ".reprogate.yaml").write_text("apiVersion: reprogate/v1\nkind: Config\nrecords: records/*.yaml\n")
    result = cli("validate", cwd=project)
    assert result.exit_code == 1 and "records" in result.output and "type array" in result.output


def test_folder_with_symlink_loop_terminates_with_a_warning(cli: Cli, project: Path) -> None:
    os.symlink("..", project / "records" / "up")
    os.symlink(project / "records", project / "records" / "again")
    result = cli("validate", "records", cwd=project)
    assert result.exit_code == 0, result.output
    assert "symlink loop" in result.output
    # `up` legitimately reaches the config, tiny/ (two records), the manifest, and the 4 integration examples (3 each)
    assert "22 document(s) checked" in result.output


def test_json_record_validates_and_reports_positions(cli: Cli, project: Path) -> None:
    from reprogate.core.documents import load_document

    data = load_document(project / "records" / "drill.yaml").data
    (project / "records" / "drill.json").write_text(json.dumps(data, indent=2))
    assert cli("validate", "records/drill.json", cwd=project).exit_code == 0
    data["seeds"]["global"] = "1234"
    (project / "records" / "drill.json").write_text(json.dumps(data, indent=2))
    result = cli("validate", "records/drill.json", cwd=project)
    assert result.exit_code == 1
    assert any(line.startswith("records/drill.json:") and "seeds.global  must be of type integer" in line for line in result.output.splitlines())


def test_other_yaml_is_skipped_not_failed(cli: Cli, project: Path) -> None:
    (project / "workflow.yaml").write_text("on: push\njobs: {}\n")
    (project / "deploy.yaml").write_text("apiVersion: apps/v1\nkind: Deployment\n")
    result = cli("validate", "workflow.yaml", "deploy.yaml", cwd=project)
    assert result.exit_code == 0
    assert "workflow.yaml: skipped, not a reprogate document" in result.output


def test_unknown_api_version_is_named(cli: Cli, project: Path) -> None:
    drill = project / "records" / "drill.yaml"
    drill.write_text(drill.read_text().replace("apiVersion: reprogate/v1", "apiVersion: reprogate/v7"))
    result = cli("validate", "records/drill.yaml", cwd=project)
    assert result.exit_code == 1
    assert "records/drill.yaml:9:1  apiVersion  unknown apiVersion 'reprogate/v7'; this reprogate reads 'reprogate/v1'" in result.output


def test_max_bytes_flag_raises_the_cap(cli: Cli, project: Path) -> None:
    small = cli("validate", "--max-bytes", "1000", "records/drill.yaml", cwd=project)
    assert small.exit_code == 2 and "--max-bytes" in small.output
    assert cli("validate", "--max-bytes", "100000", "records/drill.yaml", cwd=project).exit_code == 0


def test_json_format_is_machine_readable(cli: Cli, project: Path) -> None:
    break_drill(project)
    result = cli("validate", "--format", "json", "records", cwd=project)
    payload = json.loads(result.output)
    assert payload["valid"] is False and payload["exit_code"] == 1 == result.exit_code
    drill = next(f for f in payload["files"] if f["file"].endswith("drill.yaml"))
    assert drill["status"] == "invalid" and drill["kind"] == "RunRecord"
    assert {"file", "line", "col", "field", "severity", "code", "message", "hint"} <= set(drill["findings"][0])


def test_github_format_annotations_summary_and_outputs(cli: Cli, project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    summary, outputs = tmp_path / "summary.md", tmp_path / "outputs"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    monkeypatch.setenv("GITHUB_OUTPUT", str(outputs))
    break_drill(project)
    result = cli("validate", "--format", "github", "records/drill.yaml", cwd=project)
    assert result.exit_code == 1
    annotations = [line for line in result.output.splitlines() if line.startswith("::error ")]
    assert "::error file=records/drill.yaml,line=55,col=1,title=reprogate%3A container.digest::required field 'digest' is missing" in annotations[0]
    assert "| `records/drill.yaml` | 55:1 | `container.digest` | error |" in summary.read_text()
    assert "valid=false\n" in outputs.read_text() and "documents=1\n" in outputs.read_text()


def test_github_annotations_stay_within_the_per_step_limit(cli: Cli, project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path / "summary.md"))

    def change(r: dict[str, Any]) -> None:
        for i in range(25):
            r[f"unknown_{i}"] = i

    drill = project / "records" / "drill.yaml"
    edit_record(drill, change)
    result = cli("validate", "--format", "github", "records/drill.yaml", cwd=project)
    assert sum(line.startswith("::error ") for line in result.output.splitlines()) == 10
    assert "15 more finding(s) not annotated" in result.output
    stop = [line for line in result.output.splitlines() if line.startswith("::stop-commands::")]
    assert len(stop) == 1  # the overflow is printed inert
    assert (tmp_path / "summary.md").read_text().count("unknown field") == 25


def test_github_annotation_properties_are_escaped() -> None:
    from reprogate.output.workflow import annotation

    line = annotation("error", "50% done\nnext", "a,b:c.yaml", 3, 4, "t:1,2")
    assert line == "::error file=a%2Cb%3Ac.yaml,line=3,col=4,title=t%3A1%2C2::50%25 done%0Anext"


def test_digest_prints_what_validate_checks(cli: Cli) -> None:
    raw = cli("digest", str(EXAMPLES / "requirements.txt"))
    assert raw.output.split()[0] == "sha256:" + hashlib.sha256((EXAMPLES / "requirements.txt").read_bytes()).hexdigest()
    canonical = cli("digest", "--canonical", str(EXAMPLES / "config" / "c19.yaml"))
    assert canonical.output.split()[0] in (EXAMPLES / "records" / "drill.yaml").read_text()
    manifest = cli("digest", "--manifest", str(EXAMPLES / "data" / "d77.manifest.yaml"))
    assert manifest.output.split()[0] in (EXAMPLES / "records" / "drill.yaml").read_text()


def test_digest_of_unparseable_file_is_exit_2(cli: Cli, tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("a: [1\n")
    result = cli("digest", "--canonical", str(bad))
    assert result.exit_code == 2 and "bad.yaml:2:" in result.stderr


def run_installed(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "reprogate", *args], capture_output=True, text=True, cwd=cwd)


@pytest.mark.parametrize(
    ("content", "code", "finding"),
    [
        (b"\xff\xfe\x00k", 2, ":1:1  -  byte 0xff at offset 0 is not valid UTF-8"),
        (b"", 2, ":1:1  -  file is empty (or a pipe nobody writes to)"),
        (b"a: &a [*a]\n", 2, ":1:4  -  an alias refers to a node that contains it (recursive alias)"),
        (b"kind: RunRecord\nkind: RunRecord\n", 2, ":2:1  kind  duplicate key 'kind' (first at line 1, again at line 2)"),
        (b'{"kind": "RunRecord",}', 2, ":1:22  -  JSON syntax error: Expecting property name enclosed in double quotes"),
        (b"- just\n- a list\n", 0, ": skipped, not a reprogate document"),  # other YAML is skipped, never failed
    ],
    ids=["utf16", "empty", "recursive-alias", "duplicate", "bad-json", "list"],
)
def test_bad_input_is_its_one_exit_code_naming_the_file_never_a_traceback(tmp_path: Path, content: bytes, code: int, finding: str) -> None:
    """README, "Exit codes": 2 for input that cannot be read or parsed; the finding (the report,
    on stdout) names the file, its line and column; stderr stays empty."""
    path = tmp_path / ("r.json" if content.startswith(b"{") else "r.yaml")
    path.write_bytes(content)
    result = run_installed("validate", str(path))
    assert "Traceback" not in result.stderr + result.stdout, result.stderr
    assert result.returncode == code, result.stdout + result.stderr
    assert any(f"{path}{finding}" in line or f"/{path.name}{finding}" in line for line in result.stdout.splitlines()), result.stdout
    assert result.stderr == ""
    unreadable = "0 document(s) checked, 0 valid, 0 invalid, 1 unreadable (1 error(s), 0 warning(s))"
    assert result.stdout.splitlines()[-1] == (unreadable if code == 2 else "0 document(s) checked, 0 valid, 0 invalid, 1 skipped (0 error(s), 0 warning(s))")


def test_validate_imports_nothing_heavy() -> None:
    """Start-up cost on a GitHub-hosted runner: the core never loads torch, numpy, scipy or requests."""
    code = (
        "import sys\n"
        "from reprogate.cli import main\n"
        "try:\n    main(['validate', 'examples'])\nexcept SystemExit as e:\n    code = e.code\n"
        "heavy = sorted(m for m in ('torch', 'numpy', 'scipy', 'requests', 'pynvml', 'docker') if m in sys.modules)\n"
        "print('HEAVY', heavy, code)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    assert "HEAVY [] 0" in result.stdout, result.stdout + result.stderr


def test_a_reader_that_leaves_early_gets_no_complaint_and_the_verdict_stands(project: Path) -> None:
    """`reprogate validate | head`: the exit code is still the report's, and stderr stays clean."""
    record_copies(project, 300, invalid={7})  # some 300 KB of warnings, far more than a pipe holds; one invalid: exit 1
    github = {"GITHUB_OUTPUT": str(project / "outputs"), "GITHUB_STEP_SUMMARY": str(project / "summary.md")}
    for fmt in ("text", "github"):
        env = {**os.environ, **github} if fmt == "github" else None
        argv = [sys.executable, "-m", "reprogate", "validate", "many", "--format", fmt]
        proc = subprocess.Popen(argv, cwd=project, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        assert proc.stdout is not None and proc.stderr is not None
        first = proc.stdout.readline()
        proc.stdout.close()
        err = proc.stderr.read()
        assert proc.wait(timeout=120) == 1, err
        assert first.startswith(b"many/run-" if fmt == "text" else b"::") and err == b""
    # the step's outputs and summary are written all the same: a workflow that trims its log keeps its answer
    assert "valid=false" in (project / "outputs").read_text() and "run-007.yaml" in (project / "summary.md").read_text()
