"""Dockerfile reading (instructions, heredocs, BuildKit ARG scoping), pip install lines, CUDA of
images and wheels, and which file names detect watches."""

from __future__ import annotations

import pytest

from reprogate.detect import cuda
from reprogate.detect.dockerfile import stages
from reprogate.detect.framework import is_dockerfile
from reprogate.detect.pip_commands import installs

DOCKERFILE = """\
# syntax=docker/dockerfile:1
ARG CUDA_VERSION=12.4.1
ARG UBUNTU
ARG BASE_IMAGE=${CUDA_VERSION:+"nvidia/cuda:${CUDA_VERSION}-cudnn-devel-ubuntu${UBUNTU:-22.04}"}
ARG BASE_IMAGE=${BASE_IMAGE:-"ubuntu:22.04"}
ARG FROM_IMAGE_NAME
FROM ${BASE_IMAGE} AS build
ARG CUDA_VERSION
ARG TORCH=2.4.0
# RUN pip install commented-out==1.0
RUN pip install --no-cache-dir \\

    # a comment inside the continuation
    torch==${TORCH}+cu124 --index-url https://download.pytorch.org/whl/cu124 && \\
    echo from because eof
RUN <<EOF
set -e
# pip install in-a-comment
pip install -r requirements-dev.txt 'numpy<2' > /dev/null 2>&1
EOF
RUN python3 <<EOF
print("pip install not-shell")
EOF
COPY --from=ghcr.io/astral-sh/uv:0.5.31 /uv /bin/
FROM build AS final
FROM $FROM_IMAGE_NAME AS ci
"""


def test_global_args_nest_and_stages_resolve_like_buildkit() -> None:
    args, found = stages(DOCKERFILE)
    assert args["BASE_IMAGE"] == "nvidia/cuda:12.4.1-cudnn-devel-ubuntu22.04"
    build, final, ci = found
    assert str(build.image) == "nvidia/cuda:12.4.1-cudnn-devel-ubuntu22.04" and build.args["CUDA_VERSION"] == "12.4.1"
    assert final.image is None and final.parent == "stage build"
    assert ci.image is None and ci.unresolved == ("FROM_IMAGE_NAME",) and ci.written == "${FROM_IMAGE_NAME}"
    assert [str(ref) for _, ref in build.copies_from] == ["ghcr.io/astral-sh/uv:0.5.31"]


def test_a_blank_cuda_version_selects_the_other_base() -> None:
    _, found = stages(DOCKERFILE.replace("ARG CUDA_VERSION=12.4.1", "ARG CUDA_VERSION="))
    assert str(found[0].image) == "ubuntu:22.04"


def test_pip_installs_come_from_shell_words_only() -> None:
    _, found = stages(DOCKERFILE)
    seen = [(i.name or i.label, i.text) for command, heredocs, scope in found[0].runs for i in installs(command, heredocs, scope)]
    assert seen == [
        ("torch", "torch==2.4.0+cu124"),
        ("--index-url", "https://download.pytorch.org/whl/cu124"),
        ("-r", "requirements-dev.txt"),
        ("numpy", "numpy<2"),
    ]


@pytest.mark.parametrize(
    ("ref", "version", "driver"),
    [
        ("nvidia/cuda:12.8.0-devel-ubuntu24.04", "12.8.0", "570.26"),
        ("nvcr.io/nvidia/pytorch:24.05-py3", "12.4.1", "R545"),
        ("mosaicml/pytorch:2.7.0_cu128-python3.12-ubuntu22.04", "12.8", "570.26"),
        ("pytorch/pytorch:2.4.0-cuda12.4-cudnn9-devel", "12.4", "550.54.14"),
        ("vllm/vllm-openai:v0.10.2-cu130", "13.0", "580.65.06"),
    ],
)
def test_cuda_and_minimum_driver_of_images(ref: str, version: str, driver: str) -> None:
    name, _, tag = ref.rpartition(":")
    found = cuda.of_image(name, tag)
    assert found is not None and (found.version, found.driver) == (version, driver)


def test_cuda_of_wheels_indexes_and_args() -> None:
    assert cuda.of_wheel_version("2.4.0+cu121").version == "12.1"
    assert cuda.of_wheel_file("https://x/flash_attn-2.7.4.post1+pt270cu128cxx11abiTRUE-cp312-cp312-linux_x86_64.whl").version == "12.8"
    assert cuda.of_index("https://download.pytorch.org/whl/nightly/cu121").version == "12.1"
    assert cuda.of_arg("CUDA", "128").version == "12.8" and cuda.of_arg("CUDA_VERSION", "12.6.3").version == "12.6.3"
    assert cuda.of_image("ubuntu", "22.04") is None and cuda.of_wheel_version("2.4.0") is None
    assert cuda.of_image("nvcr.io/nvidia/nemo", "25.02") == cuda.Cuda("", "NGC nemo 25.02", None)  # a release, CUDA not in the table


@pytest.mark.parametrize(
    ("old", "new", "moves"),
    [
        ("nvidia/cuda:12.1.0-devel-ubuntu22.04", "nvidia/cuda:12.1.1-devel-ubuntu22.04", False),  # 12.1 Update 1 needs 530.30.02 too
        ("nvidia/cuda:12.4.0-devel-ubuntu22.04", "nvidia/cuda:12.4.1-devel-ubuntu22.04", True),  # 550.54.14 -> 550.54.15
        ("nvcr.io/nvidia/pytorch:24.01-py3", "nvcr.io/nvidia/pytorch:24.02-py3", False),  # CUDA 12.3.2 both, R545
        ("nvcr.io/nvidia/tritonserver:22.12-py3", "nvidia/cuda:11.8.0-devel-ubuntu22.04", False),  # NGC 22.12 is CUDA 11.8.0, R520
        ("nvcr.io/nvidia/tensorrt:22.12-py3", "nvcr.io/nvidia/tensorrt:24.02-py3", True),  # R520 -> R545
    ],
)
def test_a_cuda_change_is_a_driver_change_only_where_the_minimum_driver_moves(old: str, new: str, moves: bool) -> None:
    before, after = (cuda.of_image(*ref.rsplit(":", 1)) for ref in (old, new))
    assert before is not None and after is not None and before.driver and after.driver
    assert cuda.same_floor(before.driver, after.driver) is not moves


@pytest.mark.parametrize("name", ["Dockerfile", "Dockerfile_trtllm", "Dockerfile-base-next", "Dockerfile.rocm", "train.Dockerfile", "Containerfile"])
def test_files_named_as_dockerfiles_are_dockerfiles(name: str) -> None:
    assert is_dockerfile(name)


@pytest.mark.parametrize("name", ["Dockerfile.md", "build_dockerfile.py", ".dockerignore", "docker-compose.yml"])
def test_notes_and_scripts_about_dockerfiles_are_not(name: str) -> None:
    assert not is_dockerfile(name)


def test_every_watched_name_passes_the_fast_name_filter() -> None:
    from reprogate.detect import detectors
    from reprogate.detect.run import _MAYBE_WATCHED
    from reprogate.detect.versions import Versions

    names = ["requirements.txt", "requirements/cuda.in", "constraints.txt", "uv.lock", "poetry.lock", "Pipfile.lock", "environment.yml",
             "conda-lock.yml", "pyproject.toml", "Dockerfile_x", "x.dockerfile", "Containerfile", "a.yaml", "b.yml", "c.json", "d.dvc",
             "dvc.lock", "tokenizer.model", "spiece.model", "m.spm", "vocab.txt", "merges.txt", "README.md", "main.py", "setup.cfg"]  # fmt: skip
    for name in names:
        watched = any(module.matches(Versions(name, None, None)) for module in detectors())
        assert not watched or _MAYBE_WATCHED.match(name.rsplit("/", 1)[-1]), name


def test_a_hash_inside_a_word_is_not_a_comment() -> None:
    """`git+https://...#egg=pkg` keeps the rest of the line: the index after it is read."""
    found = installs("pip install git+https://github.com/org/pkg#egg=pkg --extra-index-url https://download.pytorch.org/whl/cu126 # a comment", (), {})
    assert [(i.label, i.text) for i in found if i.label] == [
        ("path or URL", "git+https://github.com/org/pkg#egg=pkg"),
        ("--extra-index-url", "https://download.pytorch.org/whl/cu126"),
    ]


def test_shell_variables_set_in_a_run_line_and_trimmed_reach_the_pip_arguments() -> None:
    text = (
        "FROM nvidia/cuda:12.1.1-devel-ubuntu22.04\n"
        "RUN CUDA_MM=${CUDA_VERSION%.*} && \\\n"
        "    pip install torch --extra-index-url=\"https://download.pytorch.org/whl/cu${CUDA_MM//'.'/''}/\"\n"
    )
    [stage] = stages(text)[1]
    assert stage.env["CUDA_VERSION"] == "12.1.1"  # what NVIDIA's CUDA images set in their ENV
    command, heredocs, scope = stage.runs[0]
    [index] = [i for i in installs(command, heredocs, scope) if i.label]
    assert index.text == "https://download.pytorch.org/whl/cu121/"


@pytest.mark.parametrize(
    "word, value",
    [("${V%.*}", "12.1"), ("${V%%.*}", "12"), ("${V#*.}", "1.1"), ("${V##*.}", "1"), ("${V//./}", "1211"), ("${V/./-}", "12-1.1"), ("${U%.*}", "")],
)
def test_shell_trims_and_replacements(word: str, value: str) -> None:
    from reprogate.detect.dockerfile import expand

    assert expand(word, {"V": "12.1.1"})[0] == value


def test_pip_through_conda_run_and_cuda_in_a_dashed_tag() -> None:
    found = installs("conda run -n peft --no-capture-output pip install mslk --index-url https://download.pytorch.org/whl/cu132", (), {})
    assert [(i.name or i.label, i.text) for i in found] == [("mslk", "mslk"), ("--index-url", "https://download.pytorch.org/whl/cu132")]
    assert cuda.of_image("registry.example/hpcaitech/pytorch-cuda", "2.5.1-12.4.1").version == "12.4.1"
    assert cuda.of_image("registry.example/hpcaitech/pytorch", "2.5.1-12.4.1") is None  # no CUDA in the name: the tag's versions are not read
