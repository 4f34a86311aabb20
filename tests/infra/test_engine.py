"""The container test infrastructure works: Podman's Docker API, the locally built images, the
registry round trip by digest, bind mounts, loopback networking for gloo, a clean environment."""

from __future__ import annotations

import io
import json
import textwrap
from pathlib import Path

import docker
import pytest
from support.engine import Engine, TestImage, pull, run_to_end
from support.registry import Registry

GLOO_ALL_REDUCE = textwrap.dedent(
    """
    import os, socket, sys
    import torch, torch.distributed as dist, torch.multiprocessing as mp

    def rank(r, port):
        dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=r, world_size=2)
        t = torch.full((4,), float(r + 1))
        dist.all_reduce(t)
        dist.destroy_process_group()
        with open(f"/work/rank{r}.json", "w") as out:
            out.write(repr(t.tolist()))

    if __name__ == "__main__":
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        mp.start_processes(rank, args=(port,), nprocs=2, start_method="fork")  # children share the parent's torch import
    """
)


def run(engine: Engine, image: TestImage, command: list[str], **options: object) -> str:
    return run_to_end(engine, image.reference, command, **options)


def test_engine_answers_the_docker_api(podman_engine: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    version = podman_engine.client.version()
    assert "Podman Engine" in [component["Name"] for component in version["Components"]]
    monkeypatch.setenv("DOCKER_HOST", podman_engine.docker_host)
    assert docker.from_env().ping()


def test_the_image_holds_the_pinned_torch(podman_engine: Engine, torch_image: TestImage) -> None:
    printed = run(podman_engine, torch_image, ["python", "-c", "import torch, numpy, yaml; print(torch.__version__)"]).strip()
    assert printed == torch_image.packages["torch"]
    assert printed.split("+")[0] == "2.13.0"


def test_the_interpreter_has_its_native_modules_and_a_shell(podman_engine: Engine, tiny_image: TestImage) -> None:
    script = "import ssl, sqlite3, ctypes, json, sys; print(json.dumps([sys.executable, sys.prefix, sys.version.split()[0], sqlite3.sqlite_version]))"
    executable, prefix, version, _ = json.loads(run(podman_engine, tiny_image, ["python", "-c", script]))
    assert (executable, prefix, version) == (tiny_image.python, "/opt/venv", tiny_image.python_version)
    assert run(podman_engine, tiny_image, ["/bin/sh", "-c", "echo $((6 * 7)); exit 0"]).strip() == "42"


def test_pulled_by_digest_from_the_local_registry(podman_engine: Engine, image_registry: Registry, tiny_image: TestImage) -> None:
    assert image_registry.inspect_digest(f"reprogate-test/tiny@{tiny_image.digest}") == tiny_image.digest
    image = podman_engine.client.images.get(tiny_image.reference)
    assert image.id == tiny_image.image_id
    assert tiny_image.reference in image.attrs["RepoDigests"]
    # The same digest pulled again resolves to the same image; a digest the registry lacks is an error.
    assert pull(podman_engine, tiny_image.repository, tiny_image.digest) == tiny_image.image_id
    with pytest.raises(RuntimeError, match="manifest unknown|not found|unknown"):
        pull(podman_engine, tiny_image.repository, "sha256:" + "0" * 64)


def test_a_bind_mounted_work_folder_is_writable(podman_engine: Engine, tiny_image: TestImage, tmp_path: Path) -> None:
    (tmp_path / "input.txt").write_text("from the host\n")
    script = "import pathlib; w = pathlib.Path('/work'); (w / 'out').mkdir(); (w / 'out' / 'result.txt').write_text((w / 'input.txt').read_text().upper())"
    run(podman_engine, tiny_image, ["python", "-c", script], volumes={str(tmp_path): {"bind": "/work", "mode": "rw"}})
    assert (tmp_path / "out" / "result.txt").read_text() == "FROM THE HOST\n"


def test_gloo_all_reduce_between_two_processes_in_one_container(podman_engine: Engine, torch_image: TestImage, tmp_path: Path) -> None:
    """On the default network (the container's own loopback); ``network_mode="host"`` works too."""
    (tmp_path / "gloo.py").write_text(GLOO_ALL_REDUCE)
    options = {"volumes": {str(tmp_path): {"bind": "/work", "mode": "rw"}}, "working_dir": "/work", "environment": {"OMP_NUM_THREADS": "1"}}
    run(podman_engine, torch_image, ["python", "gloo.py"], **options)
    assert [(tmp_path / f"rank{r}.json").read_text() for r in (0, 1)] == ["[3.0, 3.0, 3.0, 3.0]"] * 2


def test_the_container_sees_the_given_environment_and_nothing_of_the_host(
    podman_engine: Engine, tiny_image: TestImage, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REPROGATE_HOST_ONLY", "must-not-leak")
    seen = json.loads(run(podman_engine, tiny_image, ["python", "-c", "import json, os; print(json.dumps(dict(os.environ)))"], environment={"SEED": "7"}))
    assert seen["SEED"] == "7"
    assert "REPROGATE_HOST_ONLY" not in seen
    # What is there besides SEED: the image's own variables and the few Podman always sets.
    assert set(seen) - {"SEED"} <= {"PATH", "VIRTUAL_ENV", "LANG", "HOSTNAME", "HOME", "TERM", "container"}


def test_exit_status_and_logs_come_back_through_the_api(podman_engine: Engine, tiny_image: TestImage) -> None:
    container = podman_engine.client.containers.run(tiny_image.reference, ["/bin/sh", "-c", "echo to-stderr >&2; exit 3"], detach=True)
    try:
        assert container.wait(timeout=60)["StatusCode"] == 3
        assert container.logs(stdout=False, stderr=True).decode().strip() == "to-stderr"
    finally:
        container.remove(force=True)


def test_a_dockerfile_builds_on_the_test_image(podman_engine: Engine, tiny_image: TestImage) -> None:
    dockerfile = f"FROM {tiny_image.reference}\nRUN python -c \"open('/built.txt', 'w').write('built')\"\nENV BUILT=yes\n"
    image, _ = podman_engine.client.images.build(fileobj=io.BytesIO(dockerfile.encode()), tag="localhost/reprogate-test/built:smoke", rm=True)
    try:
        assert image.id != tiny_image.image_id
        assert run(podman_engine, tiny_image, ["sh", "-c", "test -e /built.txt || echo absent"]).strip() == "absent"
        out = run_to_end(podman_engine, image.id, ["sh", "-c", 'cat /built.txt; echo " $BUILT"'])
        assert out.strip() == "built yes"
    finally:
        podman_engine.client.images.remove(image.id, force=True)


def test_the_podman_cli_shares_the_engine_storage(podman_engine: Engine, tiny_image: TestImage) -> None:
    done = podman_engine.podman("run", "--rm", tiny_image.reference, "python", "-c", "print('cli')")
    assert done.stdout.strip() == "cli"
    listed = podman_engine.podman("images", "--format", "{{.ID}}", "--no-trunc").stdout.split()
    assert tiny_image.image_id.removeprefix("sha256:") in [line.removeprefix("sha256:") for line in listed]
