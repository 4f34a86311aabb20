"""Fuzz harness: Dockerfiles, through the instruction reader, BuildKit's variable expansion and
every detector that reads one (base images, CUDA facts, framework pins from RUN lines).

Expected: DockerfileError (a ValueError naming the line) from the reader; nothing from a
detector, which reports an unreadable Dockerfile as changed. Seeds: the Dockerfiles of
examples/ and of the detect corpora.
"""

from __future__ import annotations

from harness import EXAMPLES, FIXTURES, files, fuzz, instrumented, text

with instrumented():
    from reprogate.detect import DETECTORS
    from reprogate.detect.base import DetectContext
    from reprogate.detect.dockerfile import DockerfileError, from_lines
    from reprogate.detect.versions import Versions

CONTEXT = DetectContext()
BASE = b"FROM python:3.11-slim\nRUN pip install torch==2.3.0\n"


def seeds() -> list[tuple[str, bytes]]:
    found = files("**/*Dockerfile*", under=FIXTURES) + files("**/*Dockerfile*", under=EXAMPLES)
    return [(p.name, p.read_bytes()) for p in found] + [("nested", b"FROM ${A:-${B:-python}}:3.11\n")]


def one(data: bytes) -> None:
    body = text(data)
    if body is None:
        return
    try:
        from_lines(body)
    except DockerfileError:
        pass
    versions = Versions("Dockerfile", BASE, data)
    for detector in DETECTORS.values():
        if detector.matches(versions):
            list(detector.diff(versions, CONTEXT))


if __name__ == "__main__":
    fuzz(one, seeds())
