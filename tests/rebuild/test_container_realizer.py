"""The container realizer against a real engine (Podman's Docker API) and a real registry.

A project whose record pins an image by digest in a local docker-registry: the reference
environment is pulled by digest and the engine confirms it; a pull request's Dockerfile change is
built into a candidate image whose ID the rebuild record carries; a failing build, a digest the
registry no longer has, an unreachable registry and an absent engine each end where they should.
The reference trace is made here, inside the pinned image, so nothing depends on the machine that
wrote a fixture.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import Result
from support import FIXTURES, git
from support.locked import commit_with_reference, locked_record

from reprogate.core.canonical import file_digest
from reprogate.core.record import read_record

Cli = Callable[..., Result]
SOURCE = FIXTURES / "projects" / "locked"
DOCKERFILE = "FROM {image}\nENV REPROGATE_CANDIDATE=1\n"


def _record(repo: Path, image: Any) -> dict[str, Any]:
    registry, _, repository = image.repository.partition("/")
    recipe = {"path": "docker/Dockerfile", "checksum": file_digest(repo / "docker" / "Dockerfile")}
    return locked_record(repo, "contained-regression", {"registry": registry, "repository": repository, "digest": image.digest}, {"build_recipe": recipe})


def _reference(repo: Path, record: dict[str, Any], work: Path) -> Path:
    """Two ranks in two containers of the pinned image, sharing one loopback-only network: the reference."""
    from reprogate.rebuild.inject import runtime_folder
    from reprogate.rebuild.launchers.local import free_port, torchrun_environment
    from reprogate.rebuild.ranks import rank_environment
    from reprogate.rebuild.realizers.base import RankStart, RealizeRequest
    from reprogate.rebuild.realizers.container import ContainerRealizer

    shutil.copytree(repo, work / "tree")
    runtime = runtime_folder(work / "runtime")
    realized = ContainerRealizer().realize(RealizeRequest(read_record(record), work / "tree", work, "reference", work / "cache", runtime))
    env = rank_environment(record["execution"]["env"], work, runtime)
    trace = work / "trace"
    port = free_port()
    try:
        starts = [
            RankStart(
                r,
                ("python", "train.py", "--config", "../config.yaml"),
                {**env, **torchrun_environment(r, r, 2, 2, 0, "127.0.0.1", port), "REPROGATE_TRACE_DIR": str(trace)},
                work / f"rank{r}.log",
            )
            for r in range(2)
        ]
        ranks = list(realized.spawn_ranks(starts, work / "tree" / "project").values())  # one loopback-only network for both
        deadline = time.monotonic() + 300
        while any(rank.poll() is None for rank in ranks) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert [rank.poll() for rank in ranks] == [0, 0], (work / "rank0.log").read_text()[-2000:]
    finally:
        realized.close()
    target = repo / "reference" / "trace.jsonl"
    target.parent.mkdir()
    target.write_bytes(b"".join(p.read_bytes() for p in sorted(trace.glob("trace-rank*.jsonl"))))
    return target


@pytest.fixture(scope="module")
def contained_template(tmp_path_factory: pytest.TempPathFactory, podman_engine: Any, torch_image: Any) -> Path:
    repo = tmp_path_factory.mktemp("contained") / "repo"
    shutil.copytree(SOURCE, repo, ignore=shutil.ignore_patterns("requirements*"))
    (repo / "docker").mkdir()
    (repo / "docker" / "Dockerfile").write_text(DOCKERFILE.format(image=torch_image.reference))
    record = _record(repo, torch_image)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DOCKER_HOST", podman_engine.docker_host)
        trace = _reference(repo, record, tmp_path_factory.mktemp("contained-reference"))
    commit_with_reference(repo, record, trace)
    return repo


@pytest.fixture
def contained(tmp_path: Path, contained_template: Path, podman_engine: Any, monkeypatch: pytest.MonkeyPatch) -> Path:
    repo = tmp_path / "repo"
    shutil.copytree(contained_template, repo, symlinks=True)
    monkeypatch.setenv("DOCKER_HOST", podman_engine.docker_host)
    return repo


def rebuild(cli: Cli, repo: Path, *args: str) -> tuple[Result, dict[str, Any], dict[str, Any]]:
    out = repo.parent / "out"
    shutil.rmtree(out, ignore_errors=True)  # the last run's: rebuild writes only into a fresh folder
    shutil.rmtree(out, ignore_errors=True)
    result = cli("rebuild", str(repo / "records" / "contained.yaml"), "--out", str(out), *args)
    verdict = json.loads((out / "verdict.json").read_text()) if (out / "verdict.json").exists() else {}
    record = yaml.safe_load((out / "rebuild-record.yaml").read_text()) if (out / "rebuild-record.yaml").exists() else {}
    return result, verdict, record


def _stage(verdict: dict[str, Any], name: str) -> dict[str, Any]:
    return next(s for s in verdict["stages"] if s["name"] == name)


def test_the_pinned_image_is_pulled_by_digest_confirmed_by_the_engine_and_reproduces(cli: Cli, contained: Path, torch_image: Any) -> None:
    result, verdict, record = rebuild(cli, contained)
    assert result.exit_code == 0, result.output
    env = verdict["environment"]
    assert env["realizer"] == "container" and env["image_id"] == torch_image.image_id
    assert env["digest_verified_by_engine"] == torch_image.digest and "Podman" in env["engine"]
    assert record["container"]["image_id"] == torch_image.image_id and record["container"]["digest"] == torch_image.digest
    # what the image holds is told by rank 0 inside its container, not by this machine's Python
    assert env["inside"]["executable"] == torch_image.python and env["inside"]["python"] == torch_image.python_version
    assert record["software"]["packages"]["torch"] == torch_image.packages["torch"]
    assert f"inside: Python {torch_image.python_version}, torch {torch_image.packages['torch']}" in _stage(verdict, "preflight")["detail"]
    assert not (contained.parent / "out" / "logs" / "probe.log").exists(), "no container of its own for the probe"


def test_a_dockerfile_change_is_built_into_the_candidate_image_the_rebuild_runs(cli: Cli, contained: Path, torch_image: Any) -> None:
    dockerfile = contained / "docker" / "Dockerfile"
    dockerfile.write_text(dockerfile.read_text() + "RUN echo changed > /etc/reprogate-candidate\n")
    git(contained, "commit", "-qam", "change the Dockerfile")
    result, verdict, record = rebuild(cli, contained, "--environment", "candidate")
    assert result.exit_code == 0, result.output  # the change does not touch the numbers
    env = verdict["environment"]
    assert env["built_from"] == "docker/Dockerfile" and env["image_id"] != torch_image.image_id
    assert record["container"]["built_from"] == "docker/Dockerfile" and record["container"]["image_id"] == env["image_id"]
    assert "digest" not in record["container"]


def test_a_failing_build_fails_the_digest_stage_with_the_redacted_build_log(cli: Cli, contained: Path) -> None:
    token = "ghp_" + "Q" * 36
    (contained / "docker" / "Dockerfile").write_text((contained / "docker" / "Dockerfile").read_text() + f"RUN echo using {token} && exit 3\n")
    result, verdict, _ = rebuild(cli, contained, "--environment", "candidate")
    assert result.exit_code == 1 and verdict["diagnosis"] == "digest", result.output
    stage = _stage(verdict, "digest")
    assert "building docker/Dockerfile failed" in stage["detail"] and stage.get("log_tail")
    assert token not in json.dumps(verdict) and token not in result.output


def test_a_digest_the_registry_no_longer_has_fails_the_digest_stage(cli: Cli, contained: Path) -> None:
    record_path = contained / "records" / "contained.yaml"
    record = yaml.safe_load(record_path.read_text())
    record["container"]["digest"] = "sha256:" + "0" * 64
    record_path.write_text(yaml.safe_dump(record, sort_keys=False))
    result, verdict, _ = rebuild(cli, contained)
    assert result.exit_code == 1 and verdict["diagnosis"] == "digest", result.output
    assert "no longer has" in _stage(verdict, "digest")["detail"]


def test_an_unreachable_registry_is_exit_3(cli: Cli, contained: Path) -> None:
    """An image the engine does not hold, from a registry that does not answer: whether the digest
    still exists cannot be told, so the rebuild is inconclusive (exit 3), not a failure."""
    from support.daemons import free_port

    record_path = contained / "records" / "contained.yaml"
    record = yaml.safe_load(record_path.read_text())
    record["container"]["registry"] = f"127.0.0.1:{free_port()}"
    record["container"]["digest"] = "sha256:" + "1" * 64
    record_path.write_text(yaml.safe_dump(record, sort_keys=False))
    result, verdict, _ = rebuild(cli, contained)
    assert result.exit_code == 3 and verdict["diagnosis"] == "digest" and verdict["infrastructure"] is True, result.output


def test_an_absent_engine_is_exit_3_naming_docker_host(cli: Cli, contained: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path / 'no-engine.sock'}")
    result, verdict, _ = rebuild(cli, contained)
    assert result.exit_code == 3 and verdict["diagnosis"] == "digest"
    assert "DOCKER_HOST" in _stage(verdict, "digest")["detail"] or "no-engine.sock" in _stage(verdict, "digest")["detail"]


def test_the_engine_is_named_by_its_ping_and_spoken_to_in_the_api_version_both_sides_know(podman_engine: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """One /_ping tells the engine's API version and product (what the slow /version also says)."""
    import docker

    from reprogate.images.engine import connect

    monkeypatch.setenv("DOCKER_HOST", podman_engine.docker_host)
    connected = connect(30)
    told = podman_engine.client.version()
    assert connected.name == f"Podman Engine {told['Version']}"
    ours = tuple(map(int, str(docker.constants.DEFAULT_DOCKER_API_VERSION).split(".")))
    theirs = tuple(map(int, told["ApiVersion"].split(".")))
    assert tuple(map(int, connected.api_version.split("."))) == min(ours, theirs)
    assert connected.client.api.api_version == connected.api_version
    assert connected.client.images.list() is not None  # the negotiated client is usable


@pytest.mark.parametrize("recipe", ["../outside/Dockerfile", "/etc/Dockerfile", "link/Dockerfile"])
def test_a_candidate_recipe_outside_the_checkout_is_refused_before_the_engine_is_asked(tmp_path: Path, recipe: str) -> None:
    from reprogate.core.errors import UsageError
    from reprogate.rebuild.realizers.base import RealizeRequest
    from reprogate.rebuild.realizers.container import ContainerRealizer

    checkout, outside = tmp_path / "checkout", tmp_path / "outside"
    checkout.mkdir()
    outside.mkdir()
    (outside / "Dockerfile").write_text("FROM scratch\n")
    (checkout / "link").symlink_to(outside)
    data = {"source": {"build_recipe": {"path": recipe}}}
    request = RealizeRequest(read_record(data), checkout, tmp_path / "work", "candidate", tmp_path / "cache", tmp_path / "runtime")
    with pytest.raises(UsageError, match="resolves outside the checkout"):
        ContainerRealizer._build(None, request, recipe, tmp_path / "log")
