"""Hostile inputs against every command: no traceback, the documented exit code, a message that
names the file, and no hang.

Each command reads files of some shape (a record, a manifest, a verdict, a trace, an event, a
Dockerfile, a DVC file, a file list); each shape is given the inputs issue 13 found crashing or
hanging reprogate: an integer of 5,000 digits, `kind: [list]`, a lone surrogate in JSON, a NUL
and a 5,000-character path, a FIFO with no writer, bytes that are not UTF-8, an empty file, a
JSON value of the wrong type. Exit codes (README, "Exit codes"): 2 for input that cannot be read
or parsed, or that a command needs valid and is not; 1 when `validate` finds a readable document
breaking a rule; 3 when a machine fails (a full disk).

The cases run as real processes (`python -m reprogate`), four at a time, each with a time limit
that counts as a hang when passed; the session prints the tally the issue asks for.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest
from support import EXAMPLES, git

HANG_SECONDS = 60
BIG = "1" + "0" * 4999  # an integer of 5,000 digits


@dataclass(frozen=True)
class Case:
    command: str  # the family, for the tally
    args: tuple[str, ...]  # {input} is the hostile file
    shape: str
    hostile: str
    expected: int


@dataclass
class Outcome:
    code: int | None  # None: it hung
    output: str


RECORD = EXAMPLES / "tiny" / "records" / "tiny.yaml"  # valid, offline: no container, no remote artifact
CONFIG_PATH = "tiny/config/tiny.yaml"


def _record_text() -> str:
    return RECORD.read_text()


def _record_json() -> dict:
    import yaml

    return yaml.safe_load(_record_text())


Content = tuple[bytes | str | None, str]  # (bytes or text, None for a FIFO; file suffix)


def variants() -> dict[str, dict[str, Content]]:
    """Every hostile variant of every shape of input."""
    record = _record_json()
    verdict = _verdict()
    manifest = (EXAMPLES / "data" / "d77.manifest.yaml").read_text()
    return {
        "record": {
            "big-int-yaml": (_record_text().replace("  global: 1", f"  global: {BIG}"), ".yaml"),
            "big-int-json": (json.dumps(record).replace('"global": 1', f'"global": {BIG}'), ".json"),
            "kind-list": (_record_text().replace("kind: RunRecord", "kind: [RunRecord]"), ".yaml"),
            "surrogate": (json.dumps(record).replace('"tiny-markov-mlp"', '"\\ud800"'), ".json"),
            "nul-path": (json.dumps(record).replace(f'"{CONFIG_PATH}"', '"tiny/config/tiny\\u0000.yaml"'), ".json"),
            "long-path": (_record_text().replace(f"path: {CONFIG_PATH}", "path: " + "a/" * 2499 + "b"), ".yaml"),
            "fifo": (None, ".yaml"),
            "not-utf8": (b"apiVersion: reprogate/v1\nkind: RunRecord\nmetadata: {name: \xff\xfe}\n", ".yaml"),
            "empty": (b"", ".yaml"),
            "wrong-type": ("[1, 2, 3]", ".json"),
        },
        "verdict": {
            "big-int": (json.dumps(verdict).replace('"seconds": 1.0', f'"seconds": {BIG}'), ".json"),
            "surrogate": (json.dumps(verdict).replace('"tiny"', '"\\udfff"'), ".json"),
            "fifo": (None, ".json"),
            "wrong-type": ('{"kind": "Verdict", "stages": "all good"}', ".json"),
            "empty": (b"", ".json"),
        },
        "trace": {
            "big-int": ('{"type": "meta", "rank": 0, "seed": 1, "steps": 1, "world_size": 1}\n{"step": ' + BIG + ', "rank": 0, "loss": 1.0}\n', ".jsonl"),
            "surrogate": ('{"type": "meta", "rank": "\\ud800", "seed": 1}\n', ".jsonl"),
            "wrong-type": ('[1]\n"x"\n', ".jsonl"),
            "fifo": (None, ".jsonl"),
            "not-utf8": (b"\xff\xfe\n", ".jsonl"),
        },
        "event": {
            "big-int": (json.dumps(_event()).replace('"number": 2', f'"number": {BIG}'), ".json"),
            "surrogate": (json.dumps(_event()).replace('"octocat"', '"\\ud800"'), ".json"),
            "wrong-type": (json.dumps(dict(_event(), pull_request=[1])), ".json"),
            "fifo": (None, ".json"),
            "empty": (b"", ".json"),
        },
        "manifest": {
            "big-int": (manifest.replace("bytes: 268435456", f"bytes: {BIG}"), ".yaml"),
            "kind-list": (manifest.replace("kind: DatasetManifest", "kind: [DatasetManifest]"), ".yaml"),
            "nul-name": (
                json.dumps(
                    {
                        "apiVersion": "reprogate/v1",
                        "kind": "DatasetManifest",
                        "id": "x",
                        "version": "1",
                        "algorithm": "sha256",
                        "shards": [{"name": "a\u0000b", "bytes": 1, "checksum": "sha256:" + "0" * 64}],
                    }
                ),
                ".json",
            ),
            "fifo": (None, ".yaml"),
            "wrong-type": ("- 1\n- 2\n", ".yaml"),
        },
        "dvc": {
            "big-int": (f"outs:\n- md5: 0123456789abcdef0123456789abcdef.dir\n  size: {BIG}\n  nfiles: 2\n  path: data\n", ".dvc"),
            "wrong-type": ("outs: 7\n", ".dvc"),
            "fifo": (None, ".dvc"),
            "not-utf8": (b"outs:\n- path: \xff\n", ".dvc"),
        },
        "files": {
            "wrong-type": ('{"filename": "requirements.txt"}', ".json"),
            "surrogate": ('[{"filename": "\\ud800"}]', ".json"),
            "fifo": (None, ".json"),
            "big-int": (f'[{{"filename": "a", "changes": {BIG}}}]', ".json"),
        },
        "dockerfile": {
            "fifo": (None, ".Dockerfile"),
            "not-utf8": (b"FROM \xff\xfe\n", ".Dockerfile"),
            "nul": (b"FROM python:3.12\x00\n", ".Dockerfile"),
            "long-line": ("FROM " + "a" * 100_000 + "\n", ".Dockerfile"),
        },
        "config": {
            "kind-list": ("apiVersion: reprogate/v1\nkind: [Config]\n", ".yaml"),
            "big-int": (f"apiVersion: reprogate/v1\nkind: Config\nrecords: [{BIG}]\n", ".yaml"),
            "fifo": (None, ".yaml"),
        },
        "body": {
            "fifo": (None, ".md"),
            "not-utf8": (b"\xff\xfe", ".md"),
        },
    }


def materialize(case: Case, folder: Path) -> Path:
    """The case's hostile input, in its own folder (commands like interval write to their input)."""
    folder.mkdir(parents=True)
    if case.shape == "folder":
        target = folder / "data"
        target.mkdir()
        if case.hostile == "with-fifo":
            (target / "shard-000.bin").write_bytes(b"data")
            os.mkfifo(target / "shard-001.bin")
        return target
    content, suffix = variants()[case.shape][case.hostile]
    target = folder / f"{case.shape}-{case.hostile}{suffix}"
    if content is None:
        os.mkfifo(target)
    else:
        target.write_bytes(content.encode("utf-8") if isinstance(content, str) else content)
    return target


def _verdict() -> dict:
    from support.verdicts import make_verdict

    return make_verdict("pass")


def _event() -> dict:
    return {
        "action": "opened",
        "number": 2,
        "sender": {"login": "octocat"},
        "repository": {"full_name": "octo/repro", "default_branch": "main"},
        "pull_request": {"number": 2, "labels": [], "head": {"sha": "a" * 40, "repo": {"full_name": "octo/repro"}}, "base": {"sha": "b" * 40, "ref": "main"}},
    }


# command: (args, expected exit per hostile record where it is not 2). Commands that need a valid
# record (rebuild, audit) refuse the others with 2; validate reports a readable record breaking a
# rule with 1 and skips a file that is no reprogate document (0: pre-commit names every YAML
# file); digest, capture, interval and image verify read only what they need, so a bad path
# elsewhere in the record is not theirs to refuse (0).
RECORD_COMMANDS: dict[str, tuple[tuple[str, ...], dict[str, int]]] = {
    "validate": (("validate", "{input}"), {"kind-list": 1, "nul-path": 1, "long-path": 1, "wrong-type": 0}),
    "digest": (("digest", "--canonical", "{input}"), {"kind-list": 0, "nul-path": 0, "long-path": 0, "wrong-type": 0}),
    "capture --into": (("capture", "--into", "{input}", "--no-framework"), {"nul-path": 0, "long-path": 0}),
    "interval": (("interval", "{input}"), {"nul-path": 0, "long-path": 0}),
    "image verify": (("image", "verify", "{input}"), {"nul-path": 0, "long-path": 0}),
    "audit": (("audit", "{input}", "--timeout", "1", "--retries", "0"), {}),
    "rebuild": (("rebuild", "{input}", "--workdir", "{case}/rebuild-work", "--out", "{case}/out"), {}),
}
RECORD_VARIANTS = ("big-int-yaml", "big-int-json", "kind-list", "surrogate", "nul-path", "long-path", "fifo", "not-utf8", "empty", "wrong-type")


def cases() -> list[Case]:
    found = [Case(command, args, "record", v, overrides.get(v, 2)) for command, (args, overrides) in RECORD_COMMANDS.items() for v in RECORD_VARIANTS]
    found += [
        Case(command, (command, "{input}"), "verdict", v, 2)
        for command in ("report", "attest", "badge")
        for v in ("big-int", "surrogate", "fifo", "wrong-type", "empty")
    ]
    found += [Case("compare", ("compare", "{input}", "{input}"), "trace", v, 2) for v in ("big-int", "surrogate", "wrong-type", "fifo", "not-utf8")]
    found += [
        Case("dataset verify", ("dataset", "verify", "{input}"), "manifest", v, {"nul-name": 1}.get(v, 2))
        for v in ("big-int", "kind-list", "nul-name", "fifo", "wrong-type")
    ]
    found += [
        Case("dataset manifest --base", ("dataset", "manifest", "{project}/tiny/data", "-o", "{case}/out.yaml", "--base", "{input}"), "manifest", v, 2)
        for v in ("big-int", "fifo", "wrong-type")
    ]
    found += [
        Case("dataset manifest", ("dataset", "manifest", "{input}", "-o", "{case}/out.yaml"), "folder", "with-fifo", 0)
    ]  # the FIFO is skipped, not waited on
    found += [
        Case("dataset from-dvc", ("dataset", "from-dvc", "{input}", "-o", "{case}/dvc.yaml"), "dvc", v, 2)
        for v in ("big-int", "wrong-type", "fifo", "not-utf8")
    ]
    found += [Case("detect --files-from", ("detect", "--files-from", "{input}"), "files", v, 2) for v in ("wrong-type", "surrogate", "fifo", "big-int")]
    found += [
        Case("detect --config", ("detect", "--base", "HEAD", "--config", "{input}"), "config", v, {"kind-list": 1}.get(v, 2))
        for v in ("kind-list", "big-int", "fifo")
    ]
    found += [Case("dockerfile pins", ("dockerfile", "pins", "{input}"), "dockerfile", v, 2) for v in ("fifo", "not-utf8", "nul", "long-line")]
    found += [Case("gate", ("gate", "--repo", "{project}"), "event", v, 2) for v in ("big-int", "surrogate", "wrong-type", "fifo", "empty")]
    found += [
        Case("github status", ("github", "status", "--from-verdict", "{input}", "--sha", "c" * 40), "verdict", v, 0)
        for v in ("big-int", "surrogate", "fifo", "wrong-type", "empty")
    ]
    found += [Case("github comment", ("github", "comment", "--pr", "2", "--body-file", "{input}"), "body", v, 2) for v in ("fifo", "not-utf8")]
    found += [Case("validate", ("validate", "{input}"), "folder", "empty", 2)]
    found += [
        Case("validate", ("validate", "{input}"), "manifest", v, {"kind-list": 1, "nul-name": 1, "wrong-type": 0}.get(v, 2))
        for v in ("big-int", "kind-list", "nul-name", "fifo", "wrong-type")
    ]
    return found


CASES = cases()


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory, github_url: str | None) -> dict[Case, tuple[Outcome, Path]]:
    """Run every case once, four at a time (without the GitHub stand-in, those that do not need it)."""
    work = tmp_path_factory.mktemp("hostile")
    project = work / "project"
    shutil.copytree(EXAMPLES, project)
    git(project, "init", "-q", "-b", "main")
    git(project, "add", "-A")
    git(project, "commit", "-q", "-m", "base")
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "REPROGATE_"))},
        "GITHUB_REPOSITORY": "octo/repro",
        "GITHUB_TOKEN": "ghs_" + "HostileInputToken0123456789abcdef",
        "GITHUB_API_URL": github_url or "http://127.0.0.1:9",  # never reached: without a stand-in no case that needs it runs
        "GITHUB_EVENT_NAME": "pull_request",
        "REPROGATE_GITHUB_WRITE_INTERVAL": "0",
    }

    def run(numbered: tuple[int, Case]) -> tuple[Case, tuple[Outcome, Path]]:
        number, case = numbered
        folder = project / "hostile" / f"case-{number:03d}"  # inside the project: records find the files they address
        target = materialize(case, folder)
        args = [a.replace("{input}", str(target)).replace("{case}", str(folder)).replace("{project}", str(project)) for a in case.args]
        case_env = dict(env, GITHUB_EVENT_PATH=str(target)) if case.command == "gate" else env
        try:
            done = subprocess.run(
                [sys.executable, "-m", "reprogate", *args], cwd=project, env=case_env, capture_output=True, text=True, timeout=HANG_SECONDS, check=False
            )
            return case, (Outcome(done.returncode, done.stdout + done.stderr), target)
        except subprocess.TimeoutExpired as exc:
            return case, (Outcome(None, str(exc.stdout or "") + str(exc.stderr or "")), target)

    with ThreadPoolExecutor(max_workers=4) as pool:
        return dict(pool.map(run, [(n, c) for n, c in enumerate(CASES) if github_url is not None or c.command not in NEEDS_GITHUB]))


NEEDS_GITHUB = frozenset({"gate", "github status", "github comment"})  # the cases that talk to the API stand-in


@pytest.fixture(scope="module")
def github_url() -> Iterator[str | None]:
    """The URL of the OpenAPI-checked GitHub stand-in; None without GitHub's OpenAPI description
    (outside CI), when only the cases that need it skip."""
    from support.gate import octokit_available, require_octokit

    if not octokit_available():
        if os.environ.get("CI") == "true":
            require_octokit()  # a failure there, never a skip
        yield None
        return
    from support.github_api import FakeGitHub, OpenAPI, serve

    fake = FakeGitHub(OpenAPI(), "octo/repro")
    server, _ = serve(fake)
    yield fake.url
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize("case", CASES, ids=[f"{c.command}:{c.shape}:{c.hostile}" for c in CASES])
def test_hostile_input(case: Case, outcomes: dict[Case, tuple[Outcome, Path]]) -> None:
    if case not in outcomes:
        pytest.skip("needs the GitHub stand-in: @octokit/openapi is not installed (npm)")
    outcome, target = outcomes[case]
    assert outcome.code is not None, f"hung for {HANG_SECONDS} s"
    assert "Traceback" not in outcome.output, outcome.output
    assert outcome.code == case.expected, f"exit {outcome.code}, expected {case.expected}:\n{outcome.output}"
    if case.expected != 0:
        assert target.name in outcome.output, f"the message does not name {target.name}:\n{outcome.output}"


def test_tally(outcomes: dict[Case, tuple[Outcome, Path]], capsys: pytest.CaptureFixture[str]) -> None:
    """The figures issue 13 asks for (printed with -s); each must be zero."""
    hangs = [c for c, (o, _) in outcomes.items() if o.code is None]
    tracebacks = [c for c, (o, _) in outcomes.items() if "Traceback" in o.output]
    wrong = [c for c, (o, _) in outcomes.items() if o.code is not None and o.code != c.expected]
    with capsys.disabled():
        print(
            f"\nhostile inputs: {len(outcomes)} cases over {len({c.command for c in outcomes})} commands; "
            f"hangs {len(hangs)}, tracebacks {len(tracebacks)}, wrong exit codes {len(wrong)}"
        )
    assert (hangs, tracebacks, wrong) == ([], [], [])


def _full_disk_runs(tmp_path: Path) -> list[tuple[str, subprocess.CompletedProcess[str], Path]]:
    """Commands whose writes fail the way a full disk fails them: $GITHUB_OUTPUT and the step
    summary on /dev/full (ENOSPC), and output files past RLIMIT_FSIZE (EFBIG; Python ignores
    SIGXFSZ, so the write fails instead of killing the process)."""
    import resource

    def small_files() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (512, 512))

    base = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "REPROGATE_"))}
    out = tmp_path / "written.yaml"
    runs = []
    for name, args, env, limit, target in (
        (
            "validate to a full $GITHUB_OUTPUT",
            ("validate", "--format", "github", str(EXAMPLES / "records")),
            dict(base, GITHUB_OUTPUT="/dev/full"),
            None,
            Path("/dev/full"),
        ),
        (
            "validate to a full step summary",
            ("validate", "--format", "github", str(EXAMPLES / "records")),
            dict(base, GITHUB_STEP_SUMMARY="/dev/full"),
            None,
            Path("/dev/full"),
        ),
        ("dataset manifest to a full disk", ("dataset", "manifest", str(EXAMPLES / "tiny" / "data"), "-o", str(out)), base, small_files, out),
        ("capture to a full disk", ("capture", "--no-framework", "-o", str(out)), base, small_files, out),
    ):
        done = subprocess.run(
            [sys.executable, "-m", "reprogate", *args],
            env=env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=HANG_SECONDS,
            preexec_fn=limit,
            check=False,
        )
        runs.append((name, done, target))
    return runs


def test_a_full_disk_is_exit_3_naming_the_file_and_leaves_nothing_half_written(tmp_path: Path) -> None:
    for name, done, target in _full_disk_runs(tmp_path):
        output = done.stdout + done.stderr
        assert "Traceback" not in output, (name, output)
        assert done.returncode == 3, (name, done.returncode, output)
        assert str(target) in output, (name, output)
    assert not [p.name for p in tmp_path.iterdir()], "a failed write left a file behind"
