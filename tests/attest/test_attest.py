"""The reproduction statement and the badge, made from real rebuilds of the tiny example: the
statement parses as an in-toto Statement v1 (the in-toto-attestation package), its subjects'
digests are the files' own, its predicate holds to schemas/reproduction-predicate.schema.json and
says the verdict honestly; a badge of anything but a reproduction is never green."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner, Result
from google.protobuf import json_format
from in_toto_attestation.v1 import statement_pb2
from in_toto_attestation.v1.statement import Statement
from jsonschema import Draft202012Validator, FormatChecker
from support import EXAMPLES, REPO, break_torch, edit_record
from support.verdicts import make_verdict

from reprogate.cli import main

if os.environ.get("CI") != "true":
    pytest.importorskip("torch")

RECORD = Path("tiny") / "records" / "tiny.yaml"
NONCE = "attest-test-nonce-0123456789"
PREDICATE_SCHEMA = json.loads((REPO / "schemas" / "reproduction-predicate.schema.json").read_text())
GREEN = {"brightgreen", "green", "success", "yellowgreen"}
WORKFLOWS = [REPO / "examples" / "workflows" / name for name in ("reference-rebuild.yml", "reference-rebuild-slurm.yml")]
ATTEST_SHA = "1e69f48acb82d1966a394da916b4c1698aa569d6"  # actions/attest v4.2.2


def invoke(cwd: Path, *args: str) -> Result:
    """`reprogate ARGS` in-process, from `cwd` (the verdict names its record relative to where the rebuild ran)."""
    here = Path.cwd()
    os.chdir(cwd)
    try:
        return CliRunner().invoke(main, list(args), catch_exceptions=False)
    finally:
        os.chdir(here)


@dataclass(frozen=True)
class Rebuilt:
    project: Path
    out: Path
    result: Result

    @property
    def verdict_path(self) -> Path:
        return self.out / "verdict.json"

    @property
    def verdict(self) -> dict[str, Any]:
        return json.loads(self.verdict_path.read_text())


def _rebuild(root: Path, name: str, change: Any = None) -> Rebuilt:
    project = root / name / "project"
    shutil.copytree(EXAMPLES, project)
    if change is not None:
        change(project)
    out = root / name / "out"
    result = invoke(project, "rebuild", str(RECORD), "--out", str(out), "--nonce", NONCE, "--format", "json")
    assert (out / "verdict.json").is_file(), result.output
    return Rebuilt(project, out, result)


def _change_lr(project: Path) -> None:
    config = project / "tiny" / "config" / "tiny.yaml"
    config.write_text(config.read_text().replace("lr: 0.01", "lr: 0.02"))


def _break_torch(project: Path) -> None:
    """A torch that fails to import on the ranks: the preflight cannot start (exit 3)."""
    break_torch(project, RECORD)


@pytest.fixture(scope="module")
def rebuilds(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Rebuilt]:
    """Three real rebuilds of the tiny example: one reproduces, one differs at config, one cannot start."""
    root = tmp_path_factory.mktemp("attest")
    found = {"pass": _rebuild(root, "pass"), "fail": _rebuild(root, "fail", _change_lr), "infra": _rebuild(root, "infra", _break_torch)}
    assert found["pass"].result.exit_code == 0 and found["pass"].verdict["verdict"] == "pass", found["pass"].result.output
    assert found["fail"].result.exit_code == 1 and found["fail"].verdict["diagnosis"] == "config"
    assert found["infra"].result.exit_code == 3 and found["infra"].verdict["infrastructure"] is True
    return found


@pytest.fixture
def copy_of(tmp_path: Path) -> Iterator[Any]:
    """A copy of one rebuild (project and out folder) that a test may change."""

    def make(rebuilt: Rebuilt) -> Rebuilt:
        target = tmp_path / rebuilt.project.parent.name
        shutil.copytree(rebuilt.project.parent, target)
        return Rebuilt(target / "project", target / "out", rebuilt.result)

    yield make


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def in_toto(text: str) -> Statement:
    """The statement as the in-toto-attestation package reads it: unknown fields refused, then validated."""
    proto = json_format.Parse(text, statement_pb2.Statement())
    statement = Statement.copy_from_pb(proto)
    statement.validate()
    return statement


def predicate_errors(predicate: Any) -> list[str]:
    validator = Draft202012Validator(PREDICATE_SCHEMA, format_checker=FormatChecker())
    return [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(predicate)]


def attest(rebuilt: Rebuilt, tmp_path: Path, *args: str) -> tuple[Result, dict[str, Any] | None]:
    out = tmp_path / "statement.json"
    out.unlink(missing_ok=True)
    result = invoke(rebuilt.project, "attest", str(rebuilt.verdict_path), "--out", str(out), *args)
    return result, (json.loads(out.read_text()) if out.exists() else None)


def test_the_predicate_schema_is_2020_12_and_documents_every_field() -> None:
    Draft202012Validator.check_schema(PREDICATE_SCHEMA)
    assert PREDICATE_SCHEMA["$id"].endswith("/reproduction-predicate.schema.json")


def test_a_passing_rebuild_attests_as_an_in_toto_statement_whose_digests_are_the_files(rebuilds: dict[str, Rebuilt], tmp_path: Path) -> None:
    rebuilt = rebuilds["pass"]
    predicate_file, subjects_file = tmp_path / "predicate.json", tmp_path / "subjects.sha256"
    result, statement = attest(rebuilt, tmp_path, "--nonce", NONCE, "--predicate-out", str(predicate_file), "--subjects-out", str(subjects_file))
    assert result.exit_code == 0, result.output
    assert statement is not None
    parsed = in_toto((tmp_path / "statement.json").read_text())
    assert parsed.pb.type == "https://in-toto.io/Statement/v1" and parsed.pb.predicate_type == "https://reprogate.dev/reproduction/v1"
    assert json_format.MessageToDict(parsed.pb) == statement  # nothing the in-toto schema does not know
    # the subjects, recomputed here from the files themselves
    record, rebuild_record = rebuilt.project / RECORD, rebuilt.out / "rebuild-record.yaml"
    assert [(s.name, dict(s.digest)) for s in parsed.pb.subject] == [
        (RECORD.as_posix(), {"sha256": sha256(record)}),
        ("rebuild-record.yaml", {"sha256": sha256(rebuild_record)}),
    ]
    verdict = rebuilt.verdict
    assert verdict["rebuild_record"]["checksum"] == "sha256:" + sha256(rebuild_record)
    # the predicate: the schema, and the values the verdict and the record hold
    predicate = statement["predicate"]
    assert predicate_errors(predicate) == []
    assert predicate["verdict"] == {
        "result": "pass",
        "outcome": "reproduced",
        "diagnosis": None,
        "exitCode": 0,
        "infrastructure": False,
        "digest": {"sha256": sha256(rebuilt.verdict_path)},
    }
    assert predicate["record"] == verdict["record"] and predicate["contract"]["level"] == "bitwise"
    declared = yaml.safe_load(record.read_text())["contract"]
    assert predicate["contract"]["envelope"] == declared["envelope"] and predicate["contract"]["steps"] == declared["steps"]
    assert predicate["environment"] == {"requested": "reference", "realizer": "current", "sandbox": verdict["environment"]["sandbox"]}
    assert predicate["seeds"] == verdict["seeds"] and predicate["tests"] == verdict["tests"]
    assert predicate["compared"] == verdict["claim"]["compared"] and "loss exactly at 160 (step, rank) points" in predicate["compared"]
    assert {t["test"]: t.get("abs") for t in predicate["tests"]}["exact step values"] == 0.0  # the tolerance, stated
    assert predicate["claim"] == {"replayed": True, "text": verdict["claim"]["text"], "notCovered": verdict["claim"]["not_covered"]}
    runner = predicate["runner"]
    assert runner["tool"] == verdict["tool"] and runner["startedAt"] == verdict["started_at"] and runner["worldSize"] == 2
    assert runner["torch"] == verdict["environment"]["torch"] and runner["launcher"] == "local" and runner["placement"] == verdict["claim"]["placement"]
    assert predicate["binding"] == {"recordDigest": verdict["record"]["digest"], "nonce": NONCE}
    # what actions/attest is given (predicate-path, subject-checksums) makes the same statement
    assert json.loads(predicate_file.read_text()) == predicate
    lines = subjects_file.read_text().splitlines()
    assert lines == [f"{sha256(record)}  {RECORD.as_posix()}", f"{sha256(rebuild_record)}  rebuild-record.yaml"]
    assert [{"name": n, "digest": {"sha256": d}} for d, n in (line.split("  ", 1) for line in lines)] == statement["subject"]


def test_without_out_the_statement_is_printed(rebuilds: dict[str, Rebuilt]) -> None:
    rebuilt = rebuilds["pass"]
    result = invoke(rebuilt.project, "attest", str(rebuilt.verdict_path))
    assert result.exit_code == 0
    assert in_toto(result.stdout).pb.subject[0].digest["sha256"] == sha256(rebuilt.project / RECORD)


def test_a_failed_rebuild_is_refused_unless_allowed_and_then_says_not_reproduced(rebuilds: dict[str, Rebuilt], tmp_path: Path) -> None:
    rebuilt = rebuilds["fail"]
    refused, written = attest(rebuilt, tmp_path)
    assert refused.exit_code == 1 and written is None
    assert "did not reproduce the record (not-reproduced); no statement written" in refused.output and "--allow-failed" in refused.output
    result, statement = attest(rebuilt, tmp_path, "--allow-failed")
    assert result.exit_code == 0 and statement is not None
    in_toto(json.dumps(statement))
    predicate = statement["predicate"]
    assert predicate_errors(predicate) == []
    assert predicate["verdict"]["result"] == "fail" and predicate["verdict"]["outcome"] == "not-reproduced"
    assert predicate["verdict"]["diagnosis"] == "config" and predicate["verdict"]["exitCode"] == 1
    assert predicate["claim"]["replayed"] is False and "NOT reproduced" in predicate["claim"]["text"]


def test_a_rebuild_that_could_not_start_is_inconclusive_never_reproduced(rebuilds: dict[str, Rebuilt], tmp_path: Path) -> None:
    rebuilt = rebuilds["infra"]
    assert attest(rebuilt, tmp_path)[0].exit_code == 1
    result, statement = attest(rebuilt, tmp_path, "--allow-failed")
    assert result.exit_code == 0 and statement is not None
    said = statement["predicate"]["verdict"]
    assert said["outcome"] == "inconclusive" and said["infrastructure"] is True and said["exitCode"] == 3 and said["diagnosis"] == "preflight"
    assert predicate_errors(statement["predicate"]) == []


@pytest.mark.parametrize(
    "content",
    [
        None,  # the record itself
        "",
        "{not json",
        json.dumps({"kind": "RunRecord"}),
        json.dumps({"apiVersion": "reprogate/v1", "kind": "Verdict", "verdict": "pass"}),  # a verdict's kind, not its shape
    ],
    ids=["a-record", "empty", "not-json", "another-kind", "verdict-missing-fields"],
)
def test_what_is_not_a_verdict_is_exit_2_naming_the_file(rebuilds: dict[str, Rebuilt], tmp_path: Path, content: str | None) -> None:
    rebuilt = rebuilds["pass"]
    target = rebuilt.project / RECORD
    if content is not None:
        target = tmp_path / "verdict.json"
        target.write_text(content)
    for command in ("attest", "badge"):
        result = invoke(rebuilt.project, command, str(target))
        assert result.exit_code == 2, (command, result.output)
        assert str(target) in result.output and "Traceback" not in result.output


def test_a_record_changed_after_the_rebuild_is_refused_but_a_promoted_one_is_not(rebuilds: dict[str, Rebuilt], copy_of: Any, tmp_path: Path) -> None:
    rebuilt = copy_of(rebuilds["pass"])
    record = rebuilt.project / RECORD
    original = record.read_text()
    edit_record(record, lambda r: r["contract"]["envelope"].update(world_sizes=[2, 4]))
    result, statement = attest(rebuilt, tmp_path)
    assert result.exit_code == 1 and statement is None and "changed after the rebuild" in result.output
    # a baseline section is what promotion adds: the verdict's digest leaves it out, the subject does not
    record.write_text(original + "baseline:\n  promoted_at: '2026-12-01T00:00:00Z'\n")
    result, statement = attest(rebuilt, tmp_path)
    assert result.exit_code == 0, result.output
    assert statement is not None and statement["subject"][0]["digest"]["sha256"] == sha256(record)


def test_the_rebuild_record_must_be_the_one_the_verdict_names(rebuilds: dict[str, Rebuilt], copy_of: Any, tmp_path: Path) -> None:
    rebuilt = copy_of(rebuilds["pass"])
    beside = rebuilt.out / "rebuild-record.yaml"
    beside.write_text(beside.read_text() + "# one more line\n")
    result, _ = attest(rebuilt, tmp_path)
    assert result.exit_code == 1 and "rebuild_record.checksum" in result.output
    beside.unlink()
    result, _ = attest(rebuilt, tmp_path)
    assert result.exit_code == 2 and "rebuild-record.yaml" in result.output and "Traceback" not in result.output


def test_the_record_is_found_where_the_verdict_names_it_or_where_record_says(rebuilds: dict[str, Rebuilt], copy_of: Any, tmp_path: Path) -> None:
    rebuilt = copy_of(rebuilds["pass"])
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    result = invoke(elsewhere, "attest", str(rebuilt.verdict_path))
    assert result.exit_code == 2 and "cannot read the record the verdict names" in result.output
    result = invoke(elsewhere, "attest", str(rebuilt.verdict_path), "--record", str(rebuilt.project / RECORD))
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["subject"][0]["name"] == RECORD.as_posix()  # the name is the verdict's, wherever the file lies


def test_a_verdict_of_another_dispatch_or_run_is_refused(rebuilds: dict[str, Rebuilt], tmp_path: Path) -> None:
    rebuilt = rebuilds["pass"]
    for args, said in ((("--nonce", "another-nonce-0123456789"), "nonce"), (("--run-id", "12345"), "run")):
        for command in ("attest", "badge"):
            result = invoke(rebuilt.project, command, str(rebuilt.verdict_path), *args)
            assert result.exit_code == 1 and said in result.output, (command, result.output)
    assert invoke(rebuilt.project, "attest", str(rebuilt.verdict_path), "--nonce", "short").exit_code == 2


def badge_of(rebuilt: Rebuilt, *more: Rebuilt) -> dict[str, Any]:
    result = invoke(rebuilt.project, "badge", *(str(r.verdict_path) for r in (rebuilt, *more)))
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_the_badge_of_real_verdicts_is_green_only_for_a_reproduction(rebuilds: dict[str, Rebuilt], tmp_path: Path) -> None:
    assert badge_of(rebuilds["pass"]) == {"schemaVersion": 1, "label": "reproduction", "message": "reproduced", "color": "brightgreen"}
    assert badge_of(rebuilds["fail"]) == {"schemaVersion": 1, "label": "reproduction", "message": "not reproduced", "color": "red"}
    assert badge_of(rebuilds["infra"]) == {"schemaVersion": 1, "label": "reproduction", "message": "inconclusive", "color": "orange"}
    assert badge_of(rebuilds["pass"], rebuilds["fail"])["message"] == "not reproduced"
    assert badge_of(rebuilds["pass"], rebuilds["infra"])["message"] == "inconclusive"
    out = tmp_path / "badge" / "reproduction.json"
    out.parent.mkdir()
    rebuilt = rebuilds["pass"]
    assert invoke(rebuilt.project, "badge", str(rebuilt.verdict_path), "--out", str(out), "--label", "tiny").exit_code == 0
    assert json.loads(out.read_text())["label"] == "tiny"
    assert invoke(rebuilt.project, "badge", str(rebuilt.verdict_path), "--label", "a\nb").exit_code == 2


@pytest.mark.parametrize("diagnosis", ["artifacts", "digest", "preflight", "dataset", "config", "envelope", "run", "batches", "model-state", "steps", "metric"])
@pytest.mark.parametrize("infrastructure", [False, True])
def test_no_verdict_that_failed_anywhere_shows_a_green_badge(tmp_path: Path, diagnosis: str, infrastructure: bool) -> None:
    """Every stage a rebuild can fail at, a difference or an infrastructure stop, alone or beside a pass."""
    paths = []
    for name, verdict in (("pass", make_verdict()), ("fail", make_verdict("fail", diagnosis, infrastructure))):
        paths.append(tmp_path / f"{name}.json")
        paths[-1].write_text(json.dumps(verdict))
    for given in ([paths[1]], paths):
        result = invoke(tmp_path, "badge", *map(str, given))
        assert result.exit_code == 0, result.output
        shown = json.loads(result.stdout)
        assert shown["color"] not in GREEN
        if given == [paths[1]]:  # beside it the made-up pass names no record here: that alone is inconclusive
            assert shown["message"] == ("inconclusive" if infrastructure else "not reproduced")


@pytest.mark.parametrize("spoil", ["record", "rebuild record"])
def test_a_badge_is_green_only_for_the_record_and_rebuild_record_its_pass_names(rebuilds: dict[str, Rebuilt], copy_of: Any, spoil: str) -> None:
    """Issue 38: a passing verdict beside a record changed since (a loosened contract, a new
    reference) or another rebuild record is not this record's reproduction; the badge was green."""
    rebuilt = copy_of(rebuilds["pass"])
    if spoil == "record":
        edit_record(rebuilt.project / RECORD, lambda r: r["contract"].update(level="startup"))
    else:
        (rebuilt.out / "rebuild-record.yaml").write_text((rebuilt.out / "rebuild-record.yaml").read_text() + "# another rebuild\n")
    result = invoke(rebuilt.project, "badge", str(rebuilt.verdict_path))
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["message"] == "inconclusive", spoil
    assert "not counted" in result.stderr and ("digest" in result.stderr or "SHA-256" in result.stderr)


def test_help_names_every_option() -> None:
    for command, options in (
        ("attest", ["--out", "--record", "--predicate-out", "--subjects-out", "--allow-failed", "--nonce", "--run-id"]),
        ("badge", ["--out", "--label"]),
    ):
        result = CliRunner().invoke(main, [command, "--help"])
        assert result.exit_code == 0 and all(option in result.output for option in options), result.output


def _jobs(path: Path) -> dict[str, Any]:
    return yaml.safe_load(path.read_text())["jobs"]


@pytest.mark.parametrize("workflow", WORKFLOWS, ids=lambda p: p.name)
def test_the_example_rebuild_signs_in_a_job_that_runs_no_pull_request_code(workflow: Path) -> None:
    """The rebuild job runs the pull request's training code: it never holds id-token or
    attestations. The attest job does, checks out the head only to read its records, attests only
    this dispatch's verdicts of this run, and signs with actions/attest pinned by SHA."""
    jobs = _jobs(workflow)
    assert jobs["rebuild"]["permissions"] == {"contents": "read"}
    job = jobs["attest"]
    assert job["needs"] == "rebuild" and job["permissions"] == {"contents": "read", "id-token": "write", "attestations": "write"}
    steps = job["steps"]
    made = next(s for s in steps if s.get("with", {}).get("command") == "attest")
    assert made["uses"].startswith("reprogate/reprogate@") and made["with"]["nonce"] == "${{ inputs.nonce }}"
    assert "--run-id=${{ github.run_id }}" in made["with"]["extra-args"]
    signed = next(s for s in steps if s.get("uses", "").startswith("actions/attest@"))
    assert signed["uses"] == f"actions/attest@{ATTEST_SHA}"
    assert signed["with"]["predicate-type"] == "https://reprogate.dev/reproduction/v1"
    assert {"subject-checksums", "predicate-path"} <= set(signed["with"])
    assert job["if"] == "needs.rebuild.result == 'success'"  # a statement is made of a passing rebuild only
    badge = jobs["badge"]
    assert badge["if"] == "always() && inputs.sha == github.sha" and badge["permissions"] == {"contents": "read"}  # the default branch's head only; read-only
    made = next(s for s in badge["steps"] if s.get("with", {}).get("command") == "badge")
    assert made["with"]["rebuild-result"] == "${{ needs.rebuild.result }}" and made["with"]["nonce"] == "${{ inputs.nonce }}"
