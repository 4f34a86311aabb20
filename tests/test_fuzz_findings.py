"""Every input issue 32's fuzzing found crashing a reader, minimised, through the real command:
the documented exit code (2 for input that cannot be used, 1 for a check that failed, 0 where
the command reports the file as a finding), a message that names the file and the field or line,
and never a traceback. And what any crash left in a command now ends as: exit 4, an internal
error with a request to report it, never 1 ("check failed") that a gate would read as a verdict;
the status for a rebuild that crashed is `error`.

The harnesses that found them are tests/fuzz/ (tests/fuzz/test_harnesses.py runs them briefly,
tools/fuzz for longer).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from support import EXAMPLES, REPO, edit_record, git
from support.gate import FakeGitHub, bump_lock, pr_event, require_octokit, statuses
from support.verdicts import make_verdict

from reprogate.cli import main
from reprogate.core.canonical import file_digest
from reprogate.core.diagnostics import ExitCode
from reprogate.github.verdicts import terminal

HEADER = "apiVersion: reprogate/v1\nkind: DatasetManifest\nid: D-1\nversion: '1'\nalgorithm: sha256\n"


def reprogate(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """The installed command as a workflow runs it: a process, its exit code and its output."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("REPROGATE_TRACEBACK", None)
    return subprocess.run([sys.executable, "-m", "reprogate", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


def said(done: subprocess.CompletedProcess[str]) -> str:
    out = done.stdout + done.stderr
    assert "Traceback" not in out, out
    return out


# 1. dataset verify on shards that are not complete objects: the schema speaks first -----------


@pytest.mark.parametrize(
    ("shards", "field", "why"),
    [
        ("shards:\n- {name: a}\n", "shards[0].checksum", "required field 'checksum' is missing"),  # was KeyError: 'checksum'
        ("shards:\n-\n", "shards[0]", "must be of type object"),  # was TypeError
        ("shards: 5\n", "shards", "must be of type array"),  # was TypeError
    ],
)
def test_dataset_verify_checks_the_shape_of_shards_first(tmp_path: Path, shards: str, field: str, why: str) -> None:
    (tmp_path / "m.yaml").write_text(HEADER + shards)
    done = reprogate("dataset", "verify", "m.yaml", cwd=tmp_path)
    out = said(done)
    assert done.returncode == ExitCode.USAGE, out
    assert "m.yaml:" in out and field in out and why in out, out
    assert "nothing was verified" in out


# 2. + 5. detect on a Dockerfile nested past the bound, and on lock files of the wrong shape -----


def _repo_with(tmp_path: Path, base: dict[str, str], head: dict[str, str]) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    for files in (base, head):
        for name, text in files.items():
            (repo / name).write_text(text)
        git(repo, "add", "-A")
        git(repo, "commit", "-qm", "c")
    return repo


NESTED_FROM = "FROM " + "${A:-" * 600 + "x" + "}" * 600 + "\n"  # was RecursionError


def test_detect_bounds_a_nested_dockerfile_variable(tmp_path: Path) -> None:
    repo = _repo_with(tmp_path, {"Dockerfile": "FROM python:3.11\n"}, {"Dockerfile": NESTED_FROM})
    done = reprogate("detect", "--base", "HEAD~1", "--head", "HEAD", cwd=repo)
    out = said(done)
    assert done.returncode == ExitCode.OK, out  # detect reports the file as changed (a rebuild is required)
    assert "Dockerfile: cannot be parsed (line 1: FROM: a variable's default or alternative nests more than 64 deep" in out, out
    assert "rebuild required: yes" in out


def test_dockerfile_pins_refuses_a_nested_from_naming_file_and_line(tmp_path: Path) -> None:
    (tmp_path / "Dockerfile").write_text("ARG X=1\n" + NESTED_FROM)
    done = reprogate("dockerfile", "pins", "Dockerfile", cwd=tmp_path)
    out = said(done)
    assert done.returncode == ExitCode.USAGE, out
    assert "Dockerfile: line 2: FROM: a variable's default or alternative nests more than 64 deep" in out, out


DOUBLING = "ARG A0=xx\n" + "".join(f"ARG A{i}=${{A{i - 1}}}${{A{i - 1}}}\n" for i in range(1, 40)) + "FROM python:${A39}\n"  # 2^40 characters
LONG_TRIM = "ARG V=" + "a" * 40_000 + "\nFROM python:${V%%*b}\n"  # each of 40,001 cuts a glob match: minutes


@pytest.mark.parametrize(
    ("text", "why"),
    [
        (DOUBLING, "line 17: ARG: a word expands to more than 65,536 characters"),
        (LONG_TRIM, "line 2: FROM: ${...%%...} is applied to a value of 40,000 characters"),
    ],
    ids=["doubling", "long-trim"],
)
def test_detect_bounds_what_dockerfile_variables_expand_to(tmp_path: Path, text: str, why: str) -> None:
    """Found while fuzzing for issue 32: a memory bomb and a quadratic trim, neither a crash but
    each a gate that never answers."""
    repo = _repo_with(tmp_path, {"Dockerfile": "FROM python:3.11\n"}, {"Dockerfile": text})
    done = reprogate("detect", "--base", "HEAD~1", "--head", "HEAD", cwd=repo)
    out = said(done)
    assert done.returncode == ExitCode.OK, out
    assert f"Dockerfile: cannot be parsed (head: {why}" in out, out


# Each minimised lock file: (name, well-formed text of the wrong shape, the field the message names)
WRONG_SHAPES = [
    ("uv.lock", "package = 5\n", "package: expected a list, found a number"),
    ("uv.lock", "[[package]]\nname = 1\n", "package[0].name: expected a string, found a number"),
    ("uv.lock", '[[package]]\nname = "a"\nwheels = [1]\n', "package[0].wheels[0]: expected a table, found a number"),
    ("uv.lock", '[[package]]\nname = "a"\nsdist = "x"\n', "package[0].sdist: expected a table, found a string"),
    ("uv.lock", '[[package]]\nname = "p"\nsource = { editable = "." }\ndependencies = "a"\n', "package[0].dependencies: expected a list, found a string"),
    ("poetry.lock", '[[package]]\nversion = "1"\n', "package[0].name: missing"),
    ("poetry.lock", '[[package]]\nname = "a"\nfiles = [{hash = 5}]\n', "package[0].files[0].hash: expected a string, found a number"),
    ("poetry.lock", '[[package]]\nname = "a"\ngroups = "main"\n', "package[0].groups: expected a list, found a string"),
    ("Pipfile.lock", '{"default": {"a": 5}}', "default.a: expected a table, found a number"),
    ("Pipfile.lock", "[1]", "the document: expected a table, found a list"),
    ("Pipfile.lock", '{"default": {"a": {"hashes": 5}}}', "default.a.hashes: expected a list, found a number"),
    ("conda-lock.yml", "package:\n- hash: 5\n  name: a\n", "package[0].hash: expected a table, found a number"),
    ("conda-lock.yml", "package: [1]\n", "package[0]: expected a table, found a number"),
    ("environment.yml", "dependencies: 5\n", "dependencies: expected a list, found a number"),
]


@pytest.mark.parametrize(("name", "text", "why"), WRONG_SHAPES, ids=[f"{n}-{i}" for i, (n, _, _) in enumerate(WRONG_SHAPES)])
def test_detect_names_the_field_of_a_lock_file_of_the_wrong_shape(tmp_path: Path, name: str, text: str, why: str) -> None:
    repo = _repo_with(tmp_path, {"README.md": "x\n"}, {name: text})
    done = reprogate("detect", "--base", "HEAD~1", "--head", "HEAD", cwd=repo)
    out = said(done)
    assert done.returncode == ExitCode.OK, out
    assert f"{name}: cannot be parsed (head: {why})" in out, out


def test_capture_keeps_the_source_section_and_names_the_unreadable_lock_file(tmp_path: Path) -> None:
    repo = _repo_with(tmp_path, {"requirements.txt": "click==8.1.7\n"}, {"uv.lock": "[[package]]\nname = 1\n"})
    done = reprogate("capture", "--no-framework", "-o", "capture.json", cwd=repo)
    out = said(done)
    assert done.returncode == ExitCode.OK, out
    assert "note: source: lock file uv.lock cannot be parsed (package[0].name: expected a string, found a number)" in out, out
    source = json.loads((repo / "capture.json").read_text())["source"]
    assert source.get("present") is not False, source
    assert source["commit"] == git(repo, "rev-parse", "HEAD")
    assert {f["path"] for f in source["lock_files"]} == {"requirements.txt", "uv.lock"}
    assert next(f for f in source["lock_files"] if f["path"] == "uv.lock")["checksum"] == file_digest(repo / "uv.lock")


# 3. compare when a step's loss is not a number ------------------------------------------------


@pytest.mark.parametrize("loss", ['"x"', "[1]", "true"])
def test_compare_refuses_a_loss_that_is_not_a_number(tmp_path: Path, loss: str) -> None:
    (tmp_path / "ref.jsonl").write_text('{"type": "step", "step": 1, "rank": 0, "loss": 1.0}\n')
    (tmp_path / "new.jsonl").write_text(f'{{"type": "step", "step": 1, "rank": 0, "loss": {loss}}}\n')  # was ValueError / TypeError
    done = reprogate("compare", "ref.jsonl", "new.jsonl", cwd=tmp_path)
    out = said(done)
    assert done.returncode == ExitCode.USAGE, out
    assert f"new.jsonl:1: loss is a number, not {loss}" in out, out


def test_compare_refuses_a_step_event_without_a_step(tmp_path: Path) -> None:
    """Found by tests/fuzz/fuzz_traces.py while fuzzing for issue 32 (KeyError: 'step' in compare.step_events)."""
    (tmp_path / "ref.jsonl").write_text('{"type": "step", "step": 1, "rank": 0, "loss": 1.0}\n')
    (tmp_path / "new.jsonl").write_text('{"type": "step", "rank": 0, "loss": 1.0}\n')
    done = reprogate("compare", "ref.jsonl", "new.jsonl", cwd=tmp_path)
    out = said(done)
    assert done.returncode == ExitCode.USAGE, out
    assert "new.jsonl:1: a step event has no step" in out, out


# 4. rebuild when the reference trace holds a line that is not an event ------------------------


@pytest.mark.parametrize(
    ("line", "why"), [("[1]", "line 4: a trace line is a JSON object, not a list"), ('{"type": "step", "step": "2"}', 'line 4: step is an integer, not "2"')]
)
def test_rebuild_stops_at_artifacts_on_a_reference_trace_that_is_not_a_trace(tmp_path: Path, line: str, why: str) -> None:
    project = tmp_path / "project"
    shutil.copytree(EXAMPLES, project)
    trace = project / "tiny" / "reference" / "trace.jsonl"
    trace.write_text("".join(trace.read_text().splitlines(keepends=True)[:3]) + line + "\n")  # was AttributeError / TypeError in the sort key
    edit_record(project / "tiny" / "records" / "tiny.yaml", lambda r: r["reference"]["trace"].update(checksum=file_digest(trace)))
    done = reprogate("rebuild", "tiny/records/tiny.yaml", "--out", str(tmp_path / "out"), cwd=project)
    out = said(done)
    assert done.returncode == ExitCode.USAGE, out
    assert f"cannot read the reference trace tiny/reference/trace.jsonl: {why}" in out, out
    verdict = json.loads((tmp_path / "out" / "verdict.json").read_text())
    assert (verdict["diagnosis"], verdict["exit_code"]) == ("artifacts", 2)


# 6. report on a verdict without record.name (the schema allows it) ----------------------------


def test_report_names_a_record_without_a_name_by_its_path(tmp_path: Path) -> None:
    verdict = make_verdict("fail", "steps")
    del verdict["record"]["name"]  # was KeyError: 'name'
    (tmp_path / "verdict.json").write_text(json.dumps(verdict))
    done = reprogate("report", "verdict.json", cwd=tmp_path)
    out = said(done)
    assert done.returncode == ExitCode.FAILED, out  # the verdict says fail
    assert out.startswith("## ❌ Reproduction failed: `records/tiny.yaml` (bitwise contract)"), out


# A crash anywhere is exit 4, never 1 -----------------------------------------------------------


def test_a_crash_in_a_command_is_an_internal_error_exit_4(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No input crashes a command any more (above), so the crash is made here: the command
    function raises what a bug would; finish is the real one."""

    def crash(*_args: object, **_kwargs: object) -> None:
        return {}["checksum"]  # a KeyError, as issue 32's findings raised

    monkeypatch.setattr("reprogate.validate.command.validate", crash)
    monkeypatch.delenv("REPROGATE_TRACEBACK", raising=False)
    (tmp_path / "r.yaml").write_text("kind: RunRecord\n")
    result = CliRunner().invoke(main, ["validate", str(tmp_path / "r.yaml")])
    assert result.exit_code == ExitCode.INTERNAL == 4, result.output
    assert "Traceback" not in result.output
    first, second = result.output.strip().splitlines()[-2:]
    assert first.startswith("reprogate validate: internal error (exit 4): KeyError: 'checksum' at "), first
    assert "tests/test_fuzz_findings.py" not in first  # only reprogate's own frames are named
    assert "please report it at https://github.com/reprogate/reprogate/issues" in second


def test_reprogate_traceback_prints_the_traceback_of_a_crash(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("reprogate.validate.command.validate", lambda *a, **k: 1 / 0)
    monkeypatch.setenv("REPROGATE_TRACEBACK", "1")
    result = CliRunner().invoke(main, ["validate", str(tmp_path)])
    assert result.exit_code == 4
    assert "Traceback (most recent call last)" in result.output and "ZeroDivisionError" in result.output


def test_the_status_of_a_rebuild_that_crashed_is_error_not_failure() -> None:
    """A crash (exit 4) writes no verdict and fails the rebuild job: the status job sees the
    verdict missing and the job failed, and posts `error` (inconclusive), never `failure`."""
    state = terminal([], [], ["records/tiny.yaml"], job_problem="the rebuild job ended failure")
    assert state.state == "error" and "inconclusive" in state.description


def test_the_gate_posts_error_when_it_crashes_judging_a_head(
    run_gate: Callable[..., Result], github: FakeGitHub, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The gate's own required check after a crash while judging (the assessment raises what a
    bug would): `error`, not `failure` and not left absent or pending; the job exits 4."""
    require_octokit()
    base, head = bump_lock(repo)

    def crash(*_args: object, **_kwargs: object) -> None:
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr("reprogate.github.gate.assess", crash)
    result = run_gate(pr_event("opened", base, head))
    assert result.exit_code == ExitCode.INTERNAL, result.output
    assert statuses(github) == [("reprogate/reproduction", "error")]
    assert github.statuses[0]["description"].startswith("reprogate crashed while judging this head (internal error, exit 4)")
    assert "internal error (exit 4): RecursionError" in result.output


# 7. (issue 39) SARIF when a message quotes a file name that is not UTF-8 ------------------------


def _strings(node: object) -> list[str]:
    if isinstance(node, dict):
        return [s for key, value in node.items() for s in (key, *_strings(value))]
    if isinstance(node, list):
        return [s for value in node for s in _strings(value)]
    return [node] if isinstance(node, str) else []


def test_a_sarif_message_quoting_a_name_that_is_not_utf8_stays_valid_unicode(tmp_path: Path) -> None:
    """`validate --format sarif` on a folder named with a byte that is not UTF-8: the message
    that quotes it carried a lone surrogate (`\\udcff`, which strict JSON readers refuse); now
    the byte, `\\xff`. tests/fuzz/fuzz_sarif.py found it (the minimised input: a message `\\udcff\\x00`)."""
    from reprogate.core.diagnostics import Diagnostic
    from reprogate.output.sarif import sarif_log

    minimised = sarif_log("validate", [Diagnostic("*/tm\udcff.yaml", "\udcff\x00", "schema")], base=tmp_path, root=tmp_path)
    assert minimised["runs"][0]["results"][0]["message"]["text"] == "\\xff\x00"
    folder = os.fsdecode(b"d\xffir")
    try:
        (tmp_path / folder).mkdir()
    except (OSError, UnicodeEncodeError):
        pytest.skip("this filesystem keeps no file name that is not UTF-8")
    done = reprogate("validate", "--format", "sarif", folder, cwd=tmp_path)
    log = json.loads(said(done))
    assert done.returncode == ExitCode.USAGE
    for text in _strings(log):
        text.encode("utf-8")  # a lone surrogate raises UnicodeEncodeError
    assert any("d\\xffir" in r["message"]["text"] for r in log["runs"][0]["results"])


# 8. (issue 39) .reprogate.yaml: a bracket a regex cannot take, a records glob out of the repository


def _configured(tmp_path: Path, body: str) -> Path:
    (tmp_path / ".git").mkdir()
    (tmp_path / ".reprogate.yaml").write_text("apiVersion: reprogate/v1\nkind: Config\n" + body)
    (tmp_path / "files.json").write_text(json.dumps([{"filename": "records/a.yaml", "status": "modified"}, {"filename": "z-a", "status": "added"}]))
    return tmp_path


@pytest.mark.parametrize("glob", ["[]", "[z-a]", "[!]", "x[a\\]"])
def test_a_glob_with_a_bracket_a_regex_cannot_take_is_matched_not_a_crash(tmp_path: Path, glob: str) -> None:
    """A watch, ignore or records glob with `[]`, a backwards range or a trailing backslash in a
    bracket made `detect` and `validate` exit 4 (re.error); the `[` is now a character.
    tests/fuzz/fuzz_config.py's glob mutation reaches it."""
    root = _configured(tmp_path, f"records: ['{glob}']\nwatch:\n  framework: ['{glob}']\n  ignore: ['{glob}']\n")
    detected = reprogate("detect", "--files-from", "files.json", cwd=root)
    assert detected.returncode == ExitCode.OK, said(detected)
    validated = reprogate("validate", cwd=root)
    assert validated.returncode == ExitCode.USAGE and f"no file matches {glob!r}" in said(validated)


@pytest.mark.parametrize("glob", ["/*/**/*.yaml", "../**/*.yaml", "records/../../*.yaml"])
def test_a_records_glob_that_leaves_the_repository_is_refused_not_walked(tmp_path: Path, glob: str) -> None:
    """`records: ['/*./**-**0{']` had `validate` with no paths walk the whole machine (a slow
    unit of tests/fuzz/fuzz_config.py: 20 s, and a pull request's .reprogate.yaml could have it
    read and report on files outside the checkout); now the configuration is refused, naming the glob."""
    (tmp_path / "repo").mkdir()
    root = _configured(tmp_path / "repo", f"records: ['records/*.yaml', '{glob}']\n")
    done = reprogate("validate", cwd=root)
    out = said(done)
    assert done.returncode == ExitCode.FAILED, out
    assert "records[1]" in out and "reaches outside the repository" in out and "document(s) checked, 0" in out


# 9. (issue 39) a status GitHub lists with a state that is not a string --------------------------


@pytest.mark.parametrize("state", [{}, [], {"a": 1}])
def test_a_listed_status_whose_state_is_not_a_string_is_malformed_not_a_crash(state: object) -> None:
    """GET …/statuses answering `"state": {}` raised TypeError (unhashable, exit 4) in the set
    lookup; now MalformedStatus, GitHub misbehaving (exit 3). tests/fuzz/fuzz_answers.py found it."""
    from reprogate.github.statuses import MalformedStatus, from_api

    with pytest.raises(MalformedStatus) as raised:
        from_api({"state": state, "context": "reprogate/reproduction"})
    assert raised.value.exit_code == ExitCode.INFRA


# 10. (issue 39) a check run annotation's message of characters that take more than a byte -------


def test_an_annotation_message_is_cut_to_64_kb_of_utf8_not_64000_characters() -> None:
    """A stage detail of 39,408 characters, most of three bytes, went out as a 118,224-byte
    annotation message (GitHub takes 64 KB and refuses the request: the run completed without
    its report). tests/fuzz/fuzz_payloads.py found it; the message is now cut in bytes, on a
    character boundary."""
    from reprogate.github.checks import ANNOTATION_MESSAGE_LIMIT, Annotation, batches

    message = Annotation("records/tiny.yaml", "€" * 30_000).to_json()["message"]
    assert len(message.encode("utf-8")) <= ANNOTATION_MESSAGE_LIMIT <= 64 * 1024
    assert message.endswith("…") and set(message[:-1]) == {"€"}
    short = Annotation("records/tiny.yaml", "€" * 100).to_json()["message"]
    assert short == "€" * 100
    assert all(len(n["message"].encode("utf-8")) <= ANNOTATION_MESSAGE_LIMIT for part in batches([Annotation("a", "𝄞" * 20_000)] * 3) for n in part)
