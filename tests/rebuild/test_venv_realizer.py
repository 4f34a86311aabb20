"""The venv realizer on a project whose record pins a real lock file (uv pip compile output).

The story of a lock-file pull request: the reference environment rebuilds and passes; the PR
bumps numpy in requirements.txt; the candidate rebuild installs the bump (the rebuild record
shows it), and because NumPy 2 computes the learning-rate schedule in float32 (NEP 50), the
first step whose numbers differ is named. The reference trace is made here, in the venv the
lock realizes, so the test does not depend on the machine that wrote any fixture.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import Result
from support import FIXTURES, git
from support.locked import locked_record
from support.verdicts import typed

from reprogate.core.canonical import file_digest
from reprogate.core.record import read_record
from reprogate.rebuild.report import markdown

Cli = Callable[..., Result]
SOURCE = FIXTURES / "projects" / "locked"


def _record(repo: Path) -> dict[str, Any]:
    lock = {"path": "requirements.txt", "checksum": file_digest(repo / "requirements.txt"), "format": "pip-requirements"}
    return locked_record(repo, "locked-regression", {"used": False, "reason": "the environment is the lock file, realized with uv"}, {"lock_files": [lock]})


def _reference_trace(repo: Path, record: dict[str, Any], cache: Path) -> Path:
    """Run the project once, as two ranks in the venv the lock realizes: the reference."""
    from reprogate.rebuild.inject import runtime_folder
    from reprogate.rebuild.launchers.local import free_port, torchrun_environment
    from reprogate.rebuild.ranks import rank_environment
    from reprogate.rebuild.realizers.base import RealizeRequest
    from reprogate.rebuild.realizers.venv import VenvRealizer

    work = repo.parent / "reference-work"
    work.mkdir()
    runtime = runtime_folder(work / "runtime")
    realized = VenvRealizer().realize(RealizeRequest(read_record(record), repo, work, "reference", cache, runtime))
    env = rank_environment(record["execution"]["env"], work, runtime)
    trace_dir = work / "trace"
    port = free_port()
    procs = [
        realized.spawn(
            ["python", "train.py", "--config", "../config.yaml"],
            {**env, **torchrun_environment(r, r, 2, 2, 0, "127.0.0.1", port), "REPROGATE_TRACE_DIR": str(trace_dir)},
            repo / "project",
            work / f"rank{r}.log",
        )
        for r in range(2)
    ]
    deadline = time.monotonic() + 600  # two ranks that cannot meet (no loopback) must not hang the session
    while any(p.poll() is None for p in procs) and time.monotonic() < deadline:
        time.sleep(0.05)
    for proc in procs:
        proc.kill()  # a no-op for a rank that ended
    assert all(p.poll() == 0 for p in procs), (work / "rank0.log").read_text()
    target = repo / "reference" / "trace.jsonl"
    target.parent.mkdir()
    target.write_bytes(b"".join(p.read_bytes() for p in sorted(trace_dir.glob("trace-rank*.jsonl"))))
    return target


@pytest.fixture(scope="module")
def locked_template(tmp_path_factory: pytest.TempPathFactory, venv_cache: Path) -> Path:
    """A git repository holding the locked project, its record and its reference trace (made
    once per module: the reference run is the slow part)."""
    repo = tmp_path_factory.mktemp("locked") / "repo"
    shutil.copytree(SOURCE, repo)
    record = _record(repo)
    trace = _reference_trace(repo, record, venv_cache)
    record["reference"] = {"trace": {"path": "reference/trace.jsonl", "checksum": file_digest(trace)}}
    record["software"] = {"present": True, "packages": {"numpy": "1.26.4"}}  # as capture lists it (abridged)
    (repo / "records").mkdir()
    (repo / "records" / "locked.yaml").write_text(yaml.safe_dump(record, sort_keys=False))
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "reference")
    return repo


@pytest.fixture
def locked(tmp_path: Path, locked_template: Path) -> Path:
    """A copy of the locked repository a test may change."""
    repo = tmp_path / "repo"
    shutil.copytree(locked_template, repo, symlinks=True)
    return repo


def rebuild(cli: Cli, repo: Path, cache: Path, *args: str) -> tuple[Result, dict[str, Any], dict[str, Any]]:
    out = repo.parent / "out"
    shutil.rmtree(out, ignore_errors=True)  # the last run's: rebuild writes only into a fresh folder
    result = cli("rebuild", str(repo / "records" / "locked.yaml"), "--out", str(out), "--cache", str(cache), *args)
    verdict = json.loads((out / "verdict.json").read_text()) if (out / "verdict.json").exists() else {}
    record = yaml.safe_load((out / "rebuild-record.yaml").read_text()) if (out / "rebuild-record.yaml").exists() else {}
    return result, verdict, record


def test_reference_environment_rebuilds_and_passes(cli: Cli, locked: Path, venv_cache: Path) -> None:
    result, verdict, record = rebuild(cli, locked, venv_cache)
    assert result.exit_code == 0, result.output
    assert verdict["environment"]["realizer"] == "venv" and verdict["environment"]["cache"] == "hit"
    assert next(s for s in verdict["stages"] if s["name"] == "digest")["status"] == "pass"
    assert record["software"]["packages"]["numpy"] == "1.26.4"
    assert record["metadata"]["rebuild_of"]["environment"] == "reference"
    assert verdict["rebuild_record"]["checksum"] == file_digest(Path(verdict["rebuild_record"]["path"]))


def test_a_numpy_bump_is_installed_by_the_candidate_rebuild_and_its_first_divergence_named(cli: Cli, locked: Path, venv_cache: Path) -> None:
    shutil.copyfile(locked / "requirements-numpy2.txt", locked / "requirements.txt")
    git(locked, "commit", "-qam", "bump numpy to 2.4.6")
    result, verdict, record = rebuild(cli, locked, venv_cache, "--environment", "candidate")
    assert record.get("software", {}).get("packages", {}).get("numpy") == "2.4.6", f"the candidate environment is the PR's lock file\n{result.output}"
    assert verdict["environment"]["lock_digest"] == file_digest(locked / "requirements.txt")
    assert result.exit_code == 1 and verdict["diagnosis"] == "model-state", result.output
    detail = next(s["detail"] for s in verdict["stages"] if s["name"] == "model-state")
    assert detail.startswith("step 5,"), detail  # the first step the trace digests the model state
    row = next(r for r in verdict["environment"]["compared"] if r["what"] == "package numpy")
    assert (row["reference"], row["rebuilt"], row["same"]) == ("1.26.4", "2.4.6", False)
    assert "| package numpy | 1.26.4 | ≠ 2.4.6 |" in (locked.parent / "out" / "report.md").read_text()


def test_the_reference_lock_comes_from_history_when_the_pr_changed_it(cli: Cli, locked: Path, venv_cache: Path) -> None:
    shutil.copyfile(locked / "requirements-numpy2.txt", locked / "requirements.txt")
    git(locked, "commit", "-qam", "bump numpy to 2.4.6")
    result, verdict, record = rebuild(cli, locked, venv_cache, "--environment", "reference")
    assert result.exit_code == 0, result.output
    assert verdict["environment"]["lock_from"].startswith("commit ") and record["software"]["packages"]["numpy"] == "1.26.4"


def test_the_reference_environment_is_refused_when_no_history_holds_its_lock(cli: Cli, locked: Path, venv_cache: Path) -> None:
    shutil.rmtree(locked / ".git")
    (locked / ".reprogate.yaml").write_text("records: [records/*.yaml]\n")  # marks the repository root without git
    shutil.copyfile(locked / "requirements-numpy2.txt", locked / "requirements.txt")
    result, verdict, _ = rebuild(cli, locked, venv_cache, "--environment", "reference")
    assert result.exit_code == 2 and verdict["diagnosis"] == "digest"
    assert "no commit in this repository's history" in next(s["detail"] for s in verdict["stages"] if s["name"] == "digest")


def test_a_lock_uv_cannot_install_is_exit_2_with_uvs_message(cli: Cli, locked: Path, venv_cache: Path) -> None:
    lock = locked / "requirements.txt"
    lock.write_text("numpy==0.0.424242\n")
    result, verdict, _ = rebuild(cli, locked, venv_cache, "--environment", "candidate")
    assert result.exit_code == 2 and verdict["diagnosis"] == "digest"
    assert "numpy" in next(s["detail"] for s in verdict["stages"] if s["name"] == "digest")


def test_a_poetry_lock_is_refused_before_anything_installs(cli: Cli, locked: Path, venv_cache: Path) -> None:
    record_path = locked / "records" / "locked.yaml"
    record = yaml.safe_load(record_path.read_text())
    (locked / "poetry.lock").write_text("# poetry\n")
    record["source"]["lock_files"] = [{"path": "poetry.lock", "checksum": file_digest(locked / "poetry.lock"), "format": "poetry"}]
    record_path.write_text(yaml.safe_dump(record, sort_keys=False))
    result, verdict, _ = rebuild(cli, locked, venv_cache)
    assert result.exit_code == 2 and "uv cannot install" in next(s["detail"] for s in verdict["stages"] if s["name"] == "digest")


def test_uv_is_given_pips_indexes(monkeypatch: pytest.MonkeyPatch) -> None:
    from reprogate.rebuild.realizers.venv import index_arguments, pip_index_settings

    env = {k: v for k, v in os.environ.items() if not k.startswith(("UV_", "PIP_"))}
    args = index_arguments({**env, "PIP_FIND_LINKS": "/srv/wheels", "PIP_EXTRA_INDEX_URL": "https://mirror.example/simple"})
    assert ["--find-links", "/srv/wheels"] == args[args.index("--find-links") : args.index("--find-links") + 2]
    assert "https://mirror.example/simple" in args
    assert pip_index_settings({**env, "UV_INDEX_URL": "https://uv.example/simple"}) == []
    air_gapped = index_arguments({**env, "PIP_NO_INDEX": "true", "PIP_FIND_LINKS": "/srv/wheels", "PIP_INDEX_URL": "https://mirror.example/simple"})
    assert air_gapped == ["--no-index", "--find-links", "/srv/wheels"], "pip's no-index holds for uv too"


def test_uvs_own_settings_win_and_are_spelled_as_arguments() -> None:
    from reprogate.rebuild.realizers.venv import index_arguments

    env = {k: v for k, v in os.environ.items() if not k.startswith(("UV_", "PIP_"))}
    uv_env = {
        **env,
        "PIP_FIND_LINKS": "/srv/pip-wheels",
        "UV_FIND_LINKS": "/srv/a,/srv/b",
        "UV_NO_INDEX": "true",
        "UV_INDEX": "one=https://a.example/simple https://b.example/simple",
    }
    assert index_arguments(uv_env) == [
        *("--index", "one=https://a.example/simple", "--index", "https://b.example/simple"),
        *("--find-links", "/srv/a", "--find-links", "/srv/b", "--no-index"),
    ]
    pip_only = index_arguments({**env, "UV_NO_INDEX": "0", "PIP_FIND_LINKS": "/srv/pip-wheels"})  # a false UV_NO_INDEX says nothing
    assert "/srv/pip-wheels" in pip_only and "--no-index" not in pip_only
    no_index = index_arguments({**env, "UV_NO_INDEX": "1", "PIP_FIND_LINKS": "/srv/pip-wheels"})  # not a location: pip's still hold
    assert no_index[-1] == "--no-index" and "/srv/pip-wheels" in no_index
    strategy = index_arguments({**env, "UV_INDEX_STRATEGY": "first-index", "PIP_EXTRA_INDEX_URL": "https://mirror.example/simple"})
    assert strategy[-2:] == ["--index-strategy", "first-index"] and "unsafe-best-match" not in strategy


def test_a_pip_conf_listing_one_index_a_line_gives_each_index(tmp_path: Path) -> None:
    from reprogate.rebuild.realizers.venv import index_arguments

    conf = tmp_path / "pip.conf"
    conf.write_text("[global]\nextra-index-url =\n    https://one.example/simple\n    https://two.example/simple\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("UV_", "PIP_"))}
    args = index_arguments({**env, "PIP_CONFIG_FILE": str(conf)})
    pairs = list(zip(args, args[1:], strict=False))
    assert ("--extra-index-url", "https://one.example/simple") in pairs and ("--extra-index-url", "https://two.example/simple") in pairs
    assert not any("\\n" in arg for arg in args)


def _bare_request(tmp_path: Path) -> Any:
    from reprogate.rebuild.realizers.base import RealizeRequest

    repo = tmp_path / "repo"
    shutil.copytree(SOURCE, repo)
    (tmp_path / "work").mkdir()
    return RealizeRequest(read_record(_record(repo)), repo, tmp_path / "work", "candidate", tmp_path / "cache", tmp_path / "runtime")


def test_the_seed_packages_come_from_the_runners_indexes_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, venv_cache: Path) -> None:
    """`uv venv --seed` ignores UV_NO_INDEX and UV_FIND_LINKS in its environment: unless the
    realizer spells them out, the seed comes from PyPI on a runner told to use only its mirror."""
    from reprogate.core.errors import InfrastructureError
    from reprogate.rebuild.realizers.venv import VenvRealizer

    empty = tmp_path / "empty-mirror"
    empty.mkdir()
    monkeypatch.setenv("UV_NO_INDEX", "1")
    monkeypatch.setenv("UV_FIND_LINKS", str(empty))
    with pytest.raises(InfrastructureError) as raised:  # the runner's mirror lacks the seed: not the lock's fault
        VenvRealizer().realize(_bare_request(tmp_path))
    assert "could not create a Python" in raised.value.message and "pip" in raised.value.message
    assert "the lock was not looked at" in raised.value.hint and raised.value.exit_code == 3
    assert f"--find-links {empty} --no-index" in (tmp_path / "work" / "logs" / "realize-venv.log").read_text()


def test_an_index_that_does_not_answer_is_infrastructure_not_a_bad_lock(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, venv_cache: Path) -> None:
    from reprogate.core.errors import InfrastructureError
    from reprogate.rebuild.launchers.local import free_port
    from reprogate.rebuild.realizers import venv

    for name in ("UV_NO_INDEX", "UV_FIND_LINKS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("UV_DEFAULT_INDEX", f"http://ci-bot:s3cr3t-index-pw@127.0.0.1:{free_port()}/simple")  # nothing listens there
    monkeypatch.setenv("UV_HTTP_RETRIES", "0")
    monkeypatch.setenv("UV_CACHE_DIR", str(tmp_path / "uv-cache"))  # no answer remembered from another run
    monkeypatch.setattr(venv, "NETWORK_PAUSE", 0.1)
    with pytest.raises(InfrastructureError) as raised:
        venv.VenvRealizer().realize(_bare_request(tmp_path))
    assert "a package index could not be reached (twice" in raised.value.message and raised.value.exit_code == 3
    log = (tmp_path / "work" / "logs" / "realize-venv.log").read_text()
    assert log.count(" venv --quiet --seed") == 2 and "trying once more" in log
    assert "s3cr3t-index-pw" not in log + raised.value.message, "the index's credentials reach neither the log nor the report"


def test_a_cached_venv_that_training_code_changed_is_not_reused(tmp_path: Path) -> None:
    from reprogate.rebuild.realizers.venv import COMPLETE, _intact, fingerprint

    venv = tmp_path / "venv"
    (venv / "lib").mkdir(parents=True)
    module = venv / "lib" / "numpy_shim.py"
    module.write_text("VALUE = 1\n")
    (venv / COMPLETE).write_text(json.dumps({"lock": "requirements.txt", "fingerprint": fingerprint(venv)}))
    assert _intact(venv)
    before = module.stat()
    module.write_text("VALUE = 2\n")  # same size, and the modification time put back as it was
    os.utime(module, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert not _intact(venv)


def evil_sdist(folder: Path, marker: Path) -> Path:
    """A source distribution whose setup.py records the environment it was built in."""

    setup = (
        f"import json, os\nopen({str(marker)!r}, 'w').write(json.dumps(dict(os.environ)))\nfrom setuptools import setup\nsetup(name='evil', version='1.0')\n"
    )
    from support.archives import sdist

    return sdist(folder / "evil-1.0.tar.gz", {"evil-1.0/setup.py": setup, "evil-1.0/PKG-INFO": "Metadata-Version: 2.1\nName: evil\nVersion: 1.0\n"})


def test_a_candidate_lock_naming_an_sdist_is_refused_without_running_its_build(
    cli: Cli, locked: Path, venv_cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pull request's lock names `evil @ file:///…tar.gz` (with its hash): its setup.py would
    run on the runner, with the runner's variables, outside the ranks' sandbox. Wheels only."""
    import hashlib

    marker = tmp_path / "built-with.json"
    sdist = evil_sdist(tmp_path, marker)
    digest = hashlib.sha256(sdist.read_bytes()).hexdigest()
    lock = locked / "requirements.txt"
    lock.write_text(lock.read_text() + f"evil @ {sdist.as_uri()} \\\n    --hash=sha256:{digest}\n")
    git(locked, "commit", "-qam", "add a package from an sdist")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY")
    result, verdict, _ = rebuild(cli, locked, venv_cache, "--environment", "candidate")
    assert result.exit_code == 2 and verdict["diagnosis"] == "digest", result.output
    assert not marker.exists(), "the sdist's build code ran"
    detail = next(s["detail"] for s in verdict["stages"] if s["name"] == "digest")
    assert "evil" in (detail + next(s.get("log_tail", "") for s in verdict["stages"] if s["name"] == "digest")), detail


def test_uv_and_build_backends_get_no_runner_secret_and_no_runner_home(tmp_path: Path) -> None:
    from reprogate.rebuild.realizers.venv import build_environment

    runner = {
        "PATH": "/usr/bin",
        "HOME": "/home/runner",
        "AWS_SECRET_ACCESS_KEY": "k",
        "HF_TOKEN": "hf_x",
        "UV_INDEX_URL": "https://mirror/simple",
        "PIP_FIND_LINKS": "/wheels",
        "LC_ALL": "C.UTF-8",
        "SSL_CERT_FILE": "/etc/ssl/cert.pem",
    }
    env = build_environment(runner, tmp_path / "work", tmp_path / "work" / "uv-cache", credentials=True)
    assert "AWS_SECRET_ACCESS_KEY" not in env and "HF_TOKEN" not in env
    assert env["HOME"] == str(tmp_path / "work" / "home") and env["UV_CACHE_DIR"] == str(tmp_path / "work" / "uv-cache")
    # index locations reach uv as arguments (index_arguments), never as variables a build backend inherits
    assert "UV_INDEX_URL" not in env and "PIP_FIND_LINKS" not in env and env["LC_ALL"] == "C.UTF-8"
    assert env["SSL_CERT_FILE"] == "/etc/ssl/cert.pem" and env["UV_LINK_MODE"] == "copy"


def without_package(lock: str, name: str) -> str:
    """The lock with one package's pin (its line, hashes and `# via` lines) taken out."""
    out: list[str] = []
    skipping = False
    for line in lock.splitlines(keepends=True):
        if not line.startswith((" ", "\t")):
            skipping = line.lower().startswith(f"{name}==")
        if not skipping:
            out.append(line)
    return "".join(out)


def test_a_lock_missing_a_dependency_is_a_defect_of_the_lock_not_of_the_runner(cli: Cli, locked: Path, venv_cache: Path) -> None:
    """A user's lock of top-level pins only: the venv holds torch but not typing-extensions, so
    `import torch` fails in the rank. That is the lock's to fix (exit 1, and how), never exit 3
    ("fix the runner")."""
    lock = locked / "requirements.txt"
    lock.write_text(without_package(lock.read_text(), "typing-extensions"))
    assert "typing-extensions==" not in lock.read_text() and "torch==" in lock.read_text()
    git(locked, "commit", "-qam", "a lock that forgets a dependency")
    result, verdict, _ = rebuild(cli, locked, venv_cache, "--environment", "candidate")
    assert result.exit_code == 1 and verdict["diagnosis"] == "preflight" and verdict["infrastructure"] is False, result.output
    detail = next(s["detail"] for s in verdict["stages"] if s["name"] == "preflight")
    assert "No module named 'typing_extensions'" in detail and "the venv made from requirements.txt cannot import typing_extensions" in detail
    assert "re-lock with `uv pip compile --generate-hashes`, it lacks typing_extensions" in detail
    stage = next(s for s in verdict["stages"] if s["name"] == "preflight")
    assert stage["cause"] == "lock-file"
    forward = markdown(typed(verdict)).split("### Way forward\n\n", 1)[1].split("\n\n", 1)[0]
    assert "runner, not the change" not in forward and "lock file is incomplete, not the runner" in forward, "the advice follows the diagnosis"
