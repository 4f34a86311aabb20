"""Fuzz harness: lock and requirement files (requirements, uv, poetry, pipenv, conda-environment,
conda-lock, pyproject.toml), through each format's parser and through detect's framework and
driver detectors, as `detect` and `capture` read them.

The first byte picks the file name; the rest is the file. Expected: LockFileError from a parser
(its documented error), and nothing at all from a detector (it reports an unparseable file as a
change). Seeds: tests/fixtures/locks and the detect corpora.
"""

from __future__ import annotations

from harness import FIXTURES, files, fuzz, instrumented, text

with instrumented():
    from reprogate.detect import DETECTORS
    from reprogate.detect.base import DetectContext
    from reprogate.detect.versions import Versions
    from reprogate.lockfiles import LockFileError, format_for

NAMES = ["requirements.txt", "uv.lock", "poetry.lock", "Pipfile.lock", "environment.yml", "conda-lock.yml", "pyproject.toml"]
BASE = {name: None for name in NAMES}
CONTEXT = DetectContext(ignore_groups={"docs"})


def seeds() -> list[tuple[str, bytes]]:
    out = []
    for path in files("locks/**/*", "detect-corpus*/**/*", under=FIXTURES):
        name = path.name if path.name in NAMES else next((n for n in NAMES if format_for(n) is format_for(path.name) and format_for(n)), None)
        if name is not None:
            out.append((path.name, bytes([NAMES.index(name)]) + path.read_bytes()))
    return out


def one(data: bytes) -> None:
    if not data:
        return
    name = NAMES[data[0] % len(NAMES)]
    body = text(data[1:])
    if body is None:
        return
    module = format_for(name)
    if module is not None:
        try:
            module.parse(body)
        except LockFileError:
            pass
    versions = Versions(name, b"", data[1:])
    for detector in DETECTORS.values():
        if detector.matches(versions):
            detector.diff(versions, CONTEXT)


if __name__ == "__main__":
    fuzz(one, seeds())
