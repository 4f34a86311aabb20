"""`reprogate attest` and `reprogate badge`: a verdict as a reproduction statement or a badge."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from reprogate.attest.badge import badge
from reprogate.attest.statement import Expected, check_binding, files_problem, make_statement
from reprogate.core.diagnostics import ExitCode
from reprogate.core.errors import CheckFailed
from reprogate.core.fileio import atomic_write
from reprogate.github.binding import Expectation, job_problem
from reprogate.output.result import CommandResult
from reprogate.rebuild.run_binding import check_nonce
from reprogate.rebuild.verdict import Verdict
from reprogate.rebuild.verdicts import read_verdict


@dataclass(frozen=True)
class AttestOptions:
    record: Path | None = None  # where the record is now (default: where the verdict names it)
    out: Path | None = None  # the statement (default: stdout)
    predicate_out: Path | None = None  # the predicate alone (actions/attest predicate-path)
    subjects_out: Path | None = None  # the subjects as a checksums file (actions/attest subject-checksums)
    allow_failed: bool = False
    nonce: str | None = None
    run_id: str | None = None


def expected_run(nonce: str | None, run_id: str | None) -> Expected:
    """The run a verdict must come from, as the options give it (a malformed nonce is exit 2)."""
    return Expected(check_nonce(nonce), run_id or None)


def attest_command(verdict: Path, options: AttestOptions) -> CommandResult:
    statement = make_statement(verdict, options.record, expected_run(options.nonce, options.run_id))
    if statement.outcome != "reproduced" and not options.allow_failed:
        raise CheckFailed(
            f"{verdict}: the rebuild did not reproduce the record ({statement.outcome}); no statement written",
            hint="--allow-failed writes the statement anyway: its predicate says verdict.outcome "
            f"{statement.outcome}, and a consumer must read that, not only the signature",
        )
    text = json.dumps(statement.to_json(), indent=2) + "\n"
    written: list[str] = []
    for path, content in ((options.predicate_out, json.dumps(dict(statement.predicate), indent=2) + "\n"), (options.subjects_out, statement.checksums())):
        if path is not None:
            atomic_write(path, content)
            written.append(str(path))
    if options.out is None:
        return CommandResult(ExitCode.OK, [text.rstrip("\n")], [f"wrote {', '.join(written)}"] if written else [])
    atomic_write(options.out, text)
    return CommandResult(ExitCode.OK, stderr=[f"wrote {', '.join([str(options.out), *written])} ({statement.outcome})"])


def badge_command(verdicts: list[Path], out: Path | None, label: str, expected: Expected, rebuild_result: str | None) -> CommandResult:
    """A verdict file that is not there is missing (an inconclusive badge); one that is there must
    be a verdict; a passing one counts only when the record it names (in the checkout) has its
    record digest and its rebuild record beside it its checksum (inconclusive otherwise)."""
    read: list[Verdict] = []
    missing: list[str] = []
    refused: list[str] = []
    for path in verdicts:
        if not path.exists():
            missing.append(str(path))
            continue
        data = read_verdict(path)
        check_binding(data, path, expected)
        why = files_problem(data, path) if data.passed else None
        if why is not None:
            refused.append(f"{path}: not counted: {why}")
            continue
        read.append(data)
    problem = None
    if rebuild_result is not None:
        problem = job_problem(Expectation(expected.nonce, expected.run_id, rebuild_result, "", {}), all(v.passed for v in read))
    text = json.dumps(badge(read, missing, label, problem, refused)) + "\n"
    notes = [f"{path}: no verdict there (counted as missing: inconclusive)" for path in missing] + refused
    if out is None:
        return CommandResult(ExitCode.OK, [text.rstrip("\n")], notes)
    atomic_write(out, text)
    return CommandResult(ExitCode.OK, stderr=[*notes, f"wrote {out}"])
