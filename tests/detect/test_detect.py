"""`reprogate detect` between commits of real git repositories built from real tools' lock files."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result
from support import EXAMPLES, REPO, git

Cli = Callable[..., Result]
LOCKS = REPO / "tests" / "fixtures" / "locks"
DIGEST_A, DIGEST_B = "sha256:" + "a" * 64, "sha256:" + "b" * 64


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    for path in (LOCKS / "before").iterdir():
        shutil.copy(path, root / path.name)
    (root / "README.md").write_text("# project\n")
    (root / "Dockerfile").write_text(
        "ARG BASE=nvcr.io/nvidia/cuda\nARG TAG=12.4.1-runtime-ubuntu22.04\n"
        f"FROM --platform=linux/amd64 ${{BASE}}:${{TAG}}@{DIGEST_A} AS build\n"
        "RUN pip install --no-cache-dir torch==2.4.0 \\\n    numpy==1.26.4\nRUN apt-get install -y cuda-compat-12-4\nFROM build\n"
    )
    shutil.copytree(EXAMPLES / "data", root / "data")
    shutil.copytree(EXAMPLES / "records", root / "records")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "base")
    return root


def change(repo: Path, edit: Callable[[Path], None]) -> None:
    edit(repo)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "change")


def detect(cli: Cli, repo: Path, *args: str) -> dict[str, Any]:
    result = cli("detect", "--base", "HEAD~1", "--head", "HEAD", "--repo", str(repo), "--format", "json", *args)
    assert result.exit_code == 0, result.output + result.stderr
    return json.loads(result.output)


def found(report: dict[str, Any], layer: str) -> list[tuple[str, str, str | None, str | None, str | None]]:
    return [(c["path"], c["kind"], c.get("subject"), c.get("old"), c.get("new")) for c in report["changes"][layer]]


def test_a_bump_is_reported_per_package_for_every_lock_format(cli: Cli, repo: Path) -> None:
    change(repo, lambda r: [shutil.copy(p, r / p.name) for p in (LOCKS / "after").iterdir()])
    report = detect(cli, repo)
    assert report["rebuild_required"] is True and report["layers"] == ["framework"]
    changes = found(report, "framework")
    for lock in ("requirements.txt", "uv.lock", "poetry.lock", "Pipfile.lock"):
        assert (lock, "version", "six", "1.16.0", "1.17.0") in changes
    assert ("pyproject.toml", "version", "six", "==1.16.0", "==1.17.0") in changes
    assert all(subject == "six" for _, _, subject, _, _ in changes)  # packaging and docs-only markupsafe did not move


def requirement_blocks(text: str) -> tuple[list[str], list[list[str]]]:
    """pip-compile output as (header comment lines, one block of lines per requirement)."""
    header, blocks = [], []
    for line in text.splitlines():
        if line[:1].isalnum():
            blocks.append([line])
        elif blocks:
            blocks[-1].append(line)
        else:
            header.append(line)
    return header, blocks


def test_hash_only_change_is_an_artifact_change(cli: Cli, repo: Path) -> None:
    from reprogate.lockfiles import requirements

    first = requirements.parse((repo / "requirements.txt").read_text())[0]

    def rehash(r: Path) -> None:  # a re-uploaded artifact under the same version
        text = (r / "requirements.txt").read_text()
        at = text.index("--hash=sha256:") + len("--hash=sha256:")
        (r / "requirements.txt").write_text(text[:at] + "0" * 64 + text[at + 64 :])

    change(repo, rehash)
    assert found(detect(cli, repo), "framework") == [("requirements.txt", "artifacts", first.name, first.version, first.version)]


def test_reordering_comments_and_whitespace_are_not_changes(cli: Cli, repo: Path) -> None:
    def reorder(r: Path) -> None:
        header, blocks = requirement_blocks((r / "requirements.txt").read_text())
        assert len(blocks) >= 2
        body = "\n\n".join("\n".join(block) for block in reversed(blocks))
        (r / "requirements.txt").write_text("\n".join(header) + "\n# reordered by hand\n\n" + body + "\n")

    change(repo, reorder)
    report = detect(cli, repo)
    assert report["changes"]["framework"] == [] and report["rebuild_required"] is False


def test_from_digest_change_is_a_base_image_change_even_with_the_same_tag(cli: Cli, repo: Path) -> None:
    change(repo, lambda r: (r / "Dockerfile").write_text((r / "Dockerfile").read_text().replace(DIGEST_A, DIGEST_B)))
    changes = found(detect(cli, repo), "base-image")
    assert changes == [
        (
            "Dockerfile",
            "digest",
            "FROM (stage build) --platform=linux/amd64",
            f"nvcr.io/nvidia/cuda:12.4.1-runtime-ubuntu22.04@{DIGEST_A}",
            f"nvcr.io/nvidia/cuda:12.4.1-runtime-ubuntu22.04@{DIGEST_B}",
        )
    ]


def test_arg_default_change_moves_the_cuda_base_image(cli: Cli, repo: Path) -> None:
    change(repo, lambda r: (r / "Dockerfile").write_text((r / "Dockerfile").read_text().replace("TAG=12.4.1", "TAG=12.8.0")))
    report = detect(cli, repo)
    assert [c[1] for c in found(report, "base-image")] == ["tag"]
    driver = report["changes"]["driver"]
    assert [(c["kind"], c["subject"], c["old"], c["new"]) for c in driver] == [("cuda", "CUDA (stage build)", "12.4.1", "12.8.0")]
    assert driver[0]["detail"] == "minimum driver >= 550.54.15 (R550) -> >= 570.26 (R570)"  # 12.4 Update 1's own floor


def test_a_cuda_tag_that_moves_no_driver_floor_is_still_rebuilt_as_a_base_image(cli: Cli, repo: Path) -> None:
    """12.1.0 -> 12.1.1 needs the same driver (530.30.02): no driver change, but the image is another
    image, so the gate must still rebuild it (no green by omission)."""
    dockerfile = repo / "Dockerfile"
    change(repo, lambda r: dockerfile.write_text(dockerfile.read_text().replace("TAG=12.4.1", "TAG=12.1.0")))
    change(repo, lambda r: dockerfile.write_text(dockerfile.read_text().replace("TAG=12.1.0", "TAG=12.1.1")))
    report = detect(cli, repo)
    assert report["changes"]["driver"] == [] and [c[1] for c in found(report, "base-image")] == ["tag"]
    assert report["rebuild_required"] is True and "base-image" in report["layers"]


def test_pip_lines_in_dockerfiles_and_cuda_compat_pins(cli: Cli, repo: Path) -> None:
    change(
        repo,
        lambda r: (r / "Dockerfile").write_text(
            (r / "Dockerfile").read_text().replace("torch==2.4.0", "torch==2.5.0").replace("cuda-compat-12-4", "cuda-compat-12-8")
        ),
    )
    report = detect(cli, repo)
    assert ("Dockerfile", "version", "torch", "==2.4.0", "==2.5.0") in found(report, "framework")
    kinds = {(c[2], c[1]) for c in found(report, "driver")}
    assert ("cuda-compat-12-4", "removed") in kinds and ("cuda-compat-12-8", "added") in kinds


def test_manifest_shard_change_is_a_dataset_change(cli: Cli, repo: Path) -> None:
    def touch(r: Path) -> None:
        path = r / "data" / "d77.manifest.yaml"
        path.write_text(path.read_text().replace("bytes: 268435456\n", "bytes: 268435457\n"))

    change(repo, touch)
    report = detect(cli, repo)
    assert [(c[0], c[1], c[2]) for c in found(report, "dataset")] == [("data/d77.manifest.yaml", "changed", "shard shards/train-00000.jsonl.zst")]
    assert report["rebuild_required"] is True


def test_readme_change_requires_nothing(cli: Cli, repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    change(repo, lambda r: (r / "README.md").write_text("# project\n\nmore words\n"))
    outputs = tmp_path / "outputs"
    monkeypatch.setenv("GITHUB_OUTPUT", str(outputs))
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path / "summary.md"))
    result = cli("detect", "--base", "HEAD~1", "--repo", str(repo), "--format", "github")
    assert result.exit_code == 0 and "rebuild required: no" in result.output
    assert "changed=false\n" in outputs.read_text() and "rebuild-required=false\n" in outputs.read_text()
    assert "no rebuild needed" in (tmp_path / "summary.md").read_text()


def test_corrupted_lock_file_counts_as_changed_with_the_reason(cli: Cli, repo: Path) -> None:
    change(
        repo,
        lambda r: (r / "poetry.lock").write_text(
            (r / "poetry.lock").read_text().replace('[[package]]\nname = "packaging"', '[[package]\nname = "packaging"', 1)
        ),
    )
    changes = detect(cli, repo)["changes"]["framework"]
    assert changes[0]["path"] == "poetry.lock" and changes[0]["kind"] == "unparseable" and "head:" in changes[0]["detail"]


def test_docs_only_dependency_groups_are_ignored(cli: Cli, repo: Path) -> None:
    change(repo, lambda r: (r / "pyproject.toml").write_text((r / "pyproject.toml").read_text().replace("markupsafe==3.0.2", "markupsafe==3.0.3")))
    assert detect(cli, repo)["changes"]["framework"] == []


def test_records_driver_and_promotion(cli: Cli, repo: Path) -> None:
    def promote(r: Path) -> None:
        path = r / "records" / "bitwise.yaml"
        text = path.read_text().replace("driver_version: 580.82.07", "driver_version: 580.95.05")
        path.write_text(text + "baseline:\n  promoted: true\n  by: release-captain\n")

    change(repo, promote)
    report = detect(cli, repo)
    assert ("records/bitwise.yaml", "changed", "devices.driver_version", "580.82.07", "580.95.05") in found(report, "driver")
    assert {c[1] for c in found(report, "records")} == {"changed", "promoted"}


def test_image_references_in_compose_and_workflows(cli: Cli, repo: Path) -> None:
    def base(r: Path) -> None:
        (r / "compose.yaml").write_text("services:\n  train:\n    image: ghcr.io/org/train:v1\n")
        (r / ".github" / "workflows").mkdir(parents=True)
        (r / ".github" / "workflows" / "rebuild.yml").write_text(
            "on: workflow_dispatch\njobs:\n  rebuild:\n    runs-on: [self-hosted, gpu-r570]\n    container: ghcr.io/org/train:v1\n    steps: []\n"
        )

    change(repo, base)

    def bump(r: Path) -> None:
        (r / "compose.yaml").write_text("services:\n  train:\n    image: ghcr.io/org/train:v2\n")
        wf = r / ".github" / "workflows" / "rebuild.yml"
        wf.write_text(wf.read_text().replace("gpu-r570", "gpu-r580"))

    change(repo, bump)
    report = detect(cli, repo)
    assert ("compose.yaml", "tag", "services.train.image", "ghcr.io/org/train:v1", "ghcr.io/org/train:v2") in found(report, "base-image")
    assert (".github/workflows/rebuild.yml", "changed", "jobs.rebuild.runs-on", "self-hosted, gpu-r570", "self-hosted, gpu-r580") in found(report, "driver")


def test_dvc_outputs_and_tokenizer_files(cli: Cli, repo: Path) -> None:
    dvc = REPO / "tests" / "fixtures" / "dvc" / "project" / "data"

    def add(r: Path) -> None:
        shutil.copy(dvc / "images.dvc", r / "images.dvc")
        (r / "tokenizer.json").write_text('{"v": 1}')

    change(repo, add)

    def bump(r: Path) -> None:
        (r / "images.dvc").write_text((r / "images.dvc").read_text().replace("cac37f97533fc19c42f3e199f9468db9", "0" * 32))
        (r / "tokenizer.json").write_text('{"v": 2}')

    change(repo, bump)
    changes = found(detect(cli, repo), "dataset")
    assert ("images.dvc", "changed", "images") == changes[0][:3]
    assert ("tokenizer.json", "changed", "tokenizer/vocabulary file") == changes[1][:3]


def test_configured_globs_and_ignores(cli: Cli, repo: Path) -> None:
    def configure(r: Path) -> None:
        (r / ".reprogate.yaml").write_text("apiVersion: reprogate/v1\nkind: Config\nwatch:\n  framework: [env/*.txt]\n  ignore: [Dockerfile]\n")
        (r / "env").mkdir()
        (r / "env" / "extra.txt").write_text("a\n")

    change(repo, configure)
    change(repo, lambda r: ((r / "env" / "extra.txt").write_text("b\n"), (r / "Dockerfile").write_text("FROM scratch\n")))
    report = detect(cli, repo)
    assert found(report, "framework") == [("env/extra.txt", "changed", None, None, None)]
    assert report["changes"]["base-image"] == []


def test_missing_base_revision_says_how_to_fetch_it(cli: Cli, repo: Path, tmp_path: Path) -> None:
    shallow = tmp_path / "shallow"
    git(tmp_path, "clone", "-q", "--depth", "1", f"file://{repo}", str(shallow))
    result = cli("detect", "--base", "0" * 40, "--repo", str(shallow))
    assert result.exit_code == 2 and "fetch-depth: 0" in result.stderr


def test_pull_request_file_list_without_a_clone(cli: Cli, tmp_path: Path) -> None:
    listing = tmp_path / "files.json"
    listing.write_text(
        json.dumps(
            [
                {"filename": "uv.lock", "status": "modified"},
                {"filename": "docs/index.md", "status": "modified"},
                {"filename": "docker/Dockerfile", "status": "modified"},
                {"filename": "data/train.dvc", "status": "added"},
            ]
        )
    )
    result = cli("detect", "--files-from", str(listing), "--repo", str(tmp_path), "--format", "json")
    report = json.loads(result.output)
    assert report["layers"] == ["framework", "base-image", "dataset"] and report["rebuild_required"] is True
    assert "contents were not read" in report["notes"][0]


def test_json_output_matches_its_schema(cli: Cli, repo: Path, tmp_path: Path) -> None:
    change(repo, lambda r: [shutil.copy(p, r / p.name) for p in (LOCKS / "after").iterdir()])
    out = tmp_path / "detect.json"
    out.write_text(cli("detect", "--base", "HEAD~1", "--repo", str(repo), "--format", "json").output)
    assert cli("validate", str(out)).exit_code == 0


def test_build_system_requires_is_compared_in_its_own_group(cli: Cli, repo: Path) -> None:
    pyproject = repo / "pyproject.toml"
    change(repo, lambda r: pyproject.write_text(pyproject.read_text() + '\n[build-system]\nrequires = ["hatchling>=1.21", "six==1.16.0"]\n'))
    change(repo, lambda r: pyproject.write_text(pyproject.read_text().replace("hatchling>=1.21", "hatchling>=1.26")))
    changes = detect(cli, repo)["changes"]["framework"]
    assert [(c["subject"], c.get("group"), c["kind"], c["old"], c["new"]) for c in changes] == [("hatchling", "build-system", "version", ">=1.21", ">=1.26")]


def test_an_image_chosen_by_a_build_argument_without_default_is_reported_unresolved(cli: Cli, repo: Path) -> None:
    dockerfile = repo / "Dockerfile"
    change(repo, lambda r: dockerfile.write_text(dockerfile.read_text().replace("ARG BASE=nvcr.io/nvidia/cuda\n", "ARG BASE\n")))
    changes = detect(cli, repo)["changes"]
    assert [(c["kind"], c["subject"]) for c in changes["base-image"]] == [("unresolved", "FROM (stage build) --platform=linux/amd64")]
    assert "has no default" in changes["base-image"][0]["new"]
    assert [(c["kind"], c["subject"], c["old"], c["new"]) for c in changes["driver"]] == [
        ("cuda", "CUDA (stage build)", "12.4.1", "unresolved (the image is set by --build-arg BASE)")
    ]


def test_reusable_workflow_cuda_inputs_and_renamed_images_on_the_same_cuda(cli: Cli, repo: Path) -> None:
    wf = ".github/workflows/gpu.yml"

    def base(r: Path) -> None:
        (r / ".github" / "workflows").mkdir(parents=True)
        (r / wf).write_text(
            "on: push\njobs:\n  test:\n    uses: org/ci/.github/workflows/linux_job.yml@main\n"
            "    with:\n      runner: linux.g5.48xlarge.nvidia.gpu\n      gpu-arch-version: '12.4'\n"
            "  unit:\n    runs-on: [self-hosted, gpu]\n    container: mosaicml/pytorch:2.5.1_cu124-python3.11-ubuntu22.04\n"
            "    steps:\n      - uses: org/bench@v1\n        with:\n          fa4_image_cu130: ghcr.io/org/fa4:1\n"
        )

    change(repo, base)

    def bump(r: Path) -> None:
        text = (r / wf).read_text().replace("'12.4'", "'12.6'").replace("mosaicml/pytorch:", "mosaicml/llm-foundry:").replace("fa4:1", "fa4:2")
        (r / wf).write_text(text)

    change(repo, bump)
    report = detect(cli, repo)
    assert found(report, "driver") == [(wf, "changed", "jobs.test.with.gpu-arch-version", "12.4", "12.6")]  # the new image keeps CUDA 12.4
    images = {c[2] for c in found(report, "base-image")}
    assert "jobs.unit.container" in images and "jobs.unit.steps[].with.fa4_image_cu130" in images


MATRIX_WORKFLOW = """on: pull_request
jobs:
  gpu:
    runs-on: [self-hosted, gpu]
    strategy:
      matrix:
        include:
          - name: latest
            image: nvidia/cuda:{used}-devel-ubuntu22.04
            docs_image: nvidia/cuda:{unused}-devel-ubuntu22.04
    container:
      image: ${{{{ matrix.image }}}}
    steps:
      - run: pytest -k ${{{{ matrix.name }}}}
"""


def test_a_matrix_entry_the_job_never_reads_is_no_change(cli: Cli, repo: Path) -> None:
    """A matrix entry names an image the job never uses (`docs_image`): moving its CUDA changes
    nothing the job runs. The entry the job's container reads (`matrix.image`) still counts."""
    workflow = repo / ".github" / "workflows" / "gpu.yml"
    workflow.parent.mkdir(parents=True)
    change(repo, lambda r: workflow.write_text(MATRIX_WORKFLOW.format(used="12.4.1", unused="12.4.1")))
    change(repo, lambda r: workflow.write_text(MATRIX_WORKFLOW.format(used="12.4.1", unused="12.8.0")))
    report = detect(cli, repo)
    assert report["changes"]["driver"] == [] and report["changes"]["base-image"] == []
    change(repo, lambda r: workflow.write_text(MATRIX_WORKFLOW.format(used="12.8.0", unused="12.8.0")))
    report = detect(cli, repo)
    assert [c["subject"] for c in report["changes"]["base-image"]] == ["jobs.gpu.strategy.matrix.include[].image"]
    assert [c["subject"] for c in report["changes"]["driver"]] == ["CUDA (jobs.gpu.strategy.matrix.include[].image: nvidia/cuda)"]


def test_a_file_with_more_changes_than_are_listed_is_summarised_by_kind(cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Past LISTED_PER_FILE changes of one file and layer, detect lists the first ones and counts
    the rest by kind; the verdict (layers, rebuild_required) is the same as with all of them.
    The diff: text-generation-inference's move to torch 2.7 (tests/fixtures/detect-corpus)."""
    from reprogate.detect import run

    corpus = REPO / "tests" / "fixtures" / "detect-corpus" / "tgi-torch-2.7"
    repo = tmp_path / "tgi"
    shutil.copytree(corpus / "before", repo)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    shutil.copytree(corpus / "after", repo, dirs_exist_ok=True)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "torch 2.7")
    everything = detect(cli, repo)
    per_file: dict[str, list[str]] = {}
    for c in everything["changes"]["framework"]:
        per_file.setdefault(c["path"], []).append(c["kind"])
    assert everything["not_listed"] == {} and max(len(kinds) for kinds in per_file.values()) > 5
    monkeypatch.setattr(run, "LISTED_PER_FILE", 5)
    summarised = detect(cli, repo)
    assert (summarised["layers"], summarised["rebuild_required"]) == (everything["layers"], everything["rebuild_required"])
    listed: dict[str, list[str]] = {}
    for c in summarised["changes"]["framework"]:
        listed.setdefault(c["path"], []).append(c["kind"])
    assert listed == {path: kinds[:5] for path, kinds in per_file.items()}
    counted = {more["path"]: more for more in summarised["not_listed"]["framework"]}
    assert set(counted) == {path for path, kinds in per_file.items() if len(kinds) > 5}
    for path, more in counted.items():
        rest = per_file[path][5:]
        assert (more["listed"], more["more"], more["kinds"]) == (5, len(rest), {k: rest.count(k) for k in sorted(set(rest))})
    out = tmp_path / "detect.json"
    out.write_text(cli("detect", "--base", "HEAD~1", "--repo", str(repo), "--format", "json").output)
    assert cli("validate", str(out)).exit_code == 0
    text = cli("detect", "--base", "HEAD~1", "--repo", str(repo)).output
    path, more = next(iter(counted.items()))
    assert f"  {path}: {more['more']:,} more change(s) not listed" in text
