"""The verdict reader (rebuild/verdicts.py, `Verdict.from_json`): a verdict file comes back as the
frozen value it was written from, or is refused naming the file and the field.

The round trip is held on the verdicts the tests make (tests/support/verdicts.py, an older
verdict's shape) and on verdicts drawn at random with every field set (a seeded generator: the
same cases on every run, many shapes each); tests/rebuild/test_stages_contract.py holds it on every
verdict the runner itself writes, and tests/fuzz/fuzz_verdicts.py on whatever passes the schema.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from support.verdicts import STAGES, make_verdict, typed

from reprogate.core.diagnostics import ExitCode
from reprogate.core.errors import ReprogateError, UsageError
from reprogate.github.verdicts import terminal
from reprogate.rebuild.comparisons import EXACT, PREDICTION, TOLERANCE, StatedTest
from reprogate.rebuild.run_binding import RunBinding
from reprogate.rebuild.step_figures import Figures, Point, Tolerance
from reprogate.rebuild.verdict import Claim, FileRef, RecordRef, SeedsUsed, StageRecord, StatedCause, Verdict
from reprogate.rebuild.verdict_environment import VerdictEnvironment
from reprogate.rebuild.verdicts import read_verdict

DIGEST = "canonical-v1:sha256:" + "ab" * 32


def _round_trip(verdict: Verdict) -> Verdict:
    return Verdict.from_json(json.loads(json.dumps(verdict.to_json())), "verdict.json")


@pytest.mark.parametrize(
    "data",
    [
        make_verdict(),
        make_verdict("fail", "steps"),
        make_verdict("fail", "preflight", infrastructure=True),
        make_verdict("fail", "digest", level="statistical"),
    ],
    ids=["pass", "fail", "infrastructure", "statistical"],
)
def test_a_verdict_the_tests_make_reads_back_as_itself(data: dict[str, Any]) -> None:
    verdict = typed(data)
    assert _round_trip(verdict) == verdict
    assert _round_trip(verdict).to_json() == verdict.to_json()


def _text(rng: random.Random) -> str:
    return "".join(rng.choice("abc xyz-_.:/`*<>|\n\u00fc\u202e") for _ in range(rng.randrange(0, 20)))


def _number(rng: random.Random) -> float:
    return rng.choice([0.0, 1.0, -2.5, 1e-9, 123456.789, rng.uniform(-1e3, 1e3)])


def _point(rng: random.Random, step: int) -> Point:
    return Point(step, rng.choice([None, 0, 3]), _number(rng), rng.choice([None, _number(rng)]))


def _figures(rng: random.Random) -> Figures | None:
    if rng.random() < 0.3:
        return None
    steps = rng.randrange(0, 5)
    drawn = tuple(_point(rng, s) for s in range(steps))
    judged = rng.choice(["exact", "tolerance", "not judged"])
    tolerance = None if judged == "not judged" else Tolerance(0.0, 0.0) if judged == "exact" else Tolerance(abs(_number(rng)), 0.01)
    some = [rng.choice([None, *drawn]) for _ in range(3)] if drawn else [None, None, None]
    span = (0, steps - 1) if steps else None
    return Figures("loss", judged, tolerance, rng.random() < 0.5, steps, span, steps, steps + rng.randrange(3), some[0], some[1], some[2], drawn)  # type: ignore[arg-type]


def _environment(rng: random.Random) -> VerdictEnvironment:
    facts: dict[str, Any] = {"requested": rng.choice(["reference", "candidate"]), "realizer": rng.choice(["venv", "container", "current"])}
    if rng.random() < 0.7:
        facts["code"] = {"ran": rng.choice(["base", "pull-request", "record"]), "detail": _text(rng), "environment_changed": True}
    facts.update({"nodes": rng.randrange(1, 4), "world_size": rng.randrange(1, 9), "gpu_models": [_text(rng)], "placement": {0: "n1", 1: "n2"}})
    facts["an_open_realizer_fact"] = {"nested": [1, {"deeper": None}], "flag": rng.random() < 0.5}
    facts["compared"] = [{"what": "Python", "reference": "3.12", "rebuilt": rng.choice(["3.12", ["3", "13"], None]), "same": rng.random() < 0.5}]
    return VerdictEnvironment(facts)


def _verdict(rng: random.Random) -> Verdict:
    failing = rng.choice([None, *STAGES])
    exit_code = 0 if failing is None else rng.choice([1, 2, 3])
    stages = []
    for name in STAGES:
        status = "fail" if name == failing else "not-run" if failing and STAGES.index(name) > STAGES.index(failing) else rng.choice(["pass", "skipped"])
        cause = rng.choice([None, "runner", "image"]) if status == "fail" else None
        stages.append(StageRecord(name, status, rng.uniform(0, 100), _text(rng), rng.choice(["", _text(rng)]), exit_code, cause))
    tests = tuple(
        StatedTest.from_json(
            rng.choice(
                [
                    {"test": EXACT, "quantities": ["loss"], "abs": 0.0, "rel": 0.0, "compared": 3, "first_outside": None, "passed": True},
                    {"test": TOLERANCE, "abs": _number(rng), "rel": 0.0, "max_deviation_rank": 1, "max_deviation": None, "passed": False},
                    {"test": PREDICTION, "metric": "val_loss", "alpha": 0.05, "interval": [0.9, 1.1], "power": {"sigma": 0.01}, "passed": rng.random() < 0.5},
                ]
            )
        )
        for _ in range(rng.randrange(0, 3))
    )
    cause = None
    if failing is not None and rng.random() < 0.5:
        cause = StatedCause("lr", "input", 3, 0, _number(rng), rng.choice([None, _number(rng), [1, 2]]), rng.choice([None, "exact", "tolerance"]), _text(rng))
    return Verdict(
        passed=failing is None,
        diagnosis=failing,
        exit_code=exit_code,
        record=RecordRef("records/" + _text(rng).replace("\n", ""), rng.choice([None, "tiny"]), DIGEST, rng.choice(["bitwise", "behavioral", "statistical"])),
        run=RunBinding(rng.choice([None, "n" * 16]), rng.choice([None, "123"]), None, rng.choice([None, "o/r"])),
        stages=tuple(stages),
        environment=_environment(rng),
        seeds=SeedsUsed((1, 2), (3,), rng.choice([None, (1,)]), rng.choice([None, "fresh", "replay"])),
        tests=tests,
        curves=rng.choice([{}, {"reference": [(0, 2.0), (1, 1.5)], "rebuilt": [(0, 2.0)]}]),
        started_at="2026-12-01T00:00:00Z",
        seconds=rng.uniform(0, 1e4),
        tool="reprogate test",
        claim=Claim(failing is None, _text(rng), (_text(rng),), (), rng.choice([None, {"nodes": ["n1"], "ranks": [{"rank": 0, "node": "n1"}]}])),
        rebuild_record=rng.choice([None, FileRef("out/rebuild-record.yaml", "sha256:" + "1" * 64)]),
        first_difference=cause,
        loss=_figures(rng),
        logs=rng.choice([(), ("ranks/run-1/rank0.log",)]),
        said_infrastructure=rng.choice([None, exit_code != ExitCode.INFRA]),
    )


@pytest.mark.parametrize("seed", range(40))
def test_any_verdict_reads_back_as_itself(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(10):
        verdict = _verdict(rng)
        read = _round_trip(verdict)
        assert read == verdict
        assert read.to_json() == json.loads(json.dumps(verdict.to_json())), "and writes what it was read from"
        assert read.infrastructure == verdict.infrastructure and terminal([read], [], []) == terminal([verdict], [], [])


def test_what_a_verdict_holds_cannot_be_changed_by_its_reader() -> None:
    verdict = _round_trip(_verdict(random.Random(7)))
    with pytest.raises(TypeError):
        verdict.environment.entries["realizer"] = "other"  # type: ignore[index]
    with pytest.raises(TypeError):
        verdict.curves["reference"] = []  # type: ignore[index]


def _write(tmp_path: Path, data: Any) -> Path:
    path = tmp_path / "verdict.json"
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return path


def test_a_verdict_of_an_older_reprogate_reads_with_what_it_lacks_filled_in(tmp_path: Path) -> None:
    read = read_verdict(_write(tmp_path, make_verdict("fail", "steps")))
    assert (read.exit_code, read.infrastructure, read.run, read.environment.entries, read.loss) == (1, False, RunBinding(), {}, None)
    assert read.seeds.metric is None and "metric" not in read.to_json()["seeds"], "what it never said stays unsaid"


@pytest.mark.parametrize(
    ("edit", "says"),
    [
        (lambda v: v.update(environment={"nodes": "two"}), "environment.nodes: 'two' is not of type 'integer'"),
        (lambda v: v.update(environment={"code": {"ran": "elsewhere", "detail": ""}}), "environment.code.ran: 'elsewhere' is not one of"),
        (lambda v: v.update(environment={"compared": [{"what": "Python"}]}), "environment.compared[0]: 'reference' is a required property"),
        (lambda v: v["stages"][0].update(status="green"), "stages[0].status"),
        (lambda v: v.update(kind="RunRecord"), "not a reprogate verdict (kind: Verdict)"),
    ],
)
def test_a_verdict_that_breaks_its_schema_is_refused_naming_the_file_and_field(tmp_path: Path, edit: Any, says: str) -> None:
    data = make_verdict()
    edit(data)
    path = _write(tmp_path, data)
    with pytest.raises(UsageError) as caught:
        read_verdict(path)
    assert caught.value.exit_code == ExitCode.USAGE and caught.value.message.startswith(f"{path}: ") and says in caught.value.message


def test_a_verdict_with_a_key_twice_or_no_verdict_at_all_is_unreadable(tmp_path: Path) -> None:
    text = json.dumps(make_verdict()).replace('"verdict": "pass"', '"verdict": "fail", "verdict": "pass"')
    for path in (_write(tmp_path, text), tmp_path / "absent.json"):
        with pytest.raises(ReprogateError) as caught:
            read_verdict(path)
        assert caught.value.exit_code == ExitCode.USAGE and str(path) in caught.value.message
    with pytest.raises(UsageError, match="holds the key 'verdict' twice"):
        read_verdict(_write(tmp_path, text))


def test_a_pass_that_says_the_infrastructure_stopped_it_is_still_read_as_saying_so(tmp_path: Path) -> None:
    """No rebuild writes infrastructure: true beside exit_code 0; a file that does keeps its claim,
    so the gate sees the contradiction and posts error (github.verdicts.contradicts_itself)."""
    data = make_verdict()
    data.update(infrastructure=True, exit_code=0)
    read = read_verdict(_write(tmp_path, data))
    assert read.infrastructure and read.to_json()["infrastructure"] is True
    assert terminal([read], [], []).state == "error"
