"""Fuzz harness: lock and requirement files (requirements, uv, poetry, pipenv, conda-environment,
conda-lock, pyproject.toml), through each format's parser and through detect's framework and
driver detectors, as `detect` and `capture` read them.

Two kinds of input. Raw (first byte even): the first byte picks the file name, the rest is the
file. Structured (first byte odd): a fixture lock file, parsed, edited by the rest of the input
(harness.mutate: a member deleted or given a value of another kind) and written back in its own
syntax: a well-formed file of the wrong shape, which byte mutations of TOML rarely make.
Expected: LockFileError from a parser (its documented error), and nothing at all from a
detector (it reports an unparseable file as a change). Seeds: tests/fixtures/locks and the
detect corpora.
"""

from __future__ import annotations

import json
import math
from typing import Any

import tomllib
import yaml
from harness import FIXTURES, files, fuzz, instrumented, mutate, text

with instrumented():
    from reprogate.detect import DETECTORS
    from reprogate.detect.base import DetectContext
    from reprogate.detect.versions import Versions
    from reprogate.lockfiles import LockFileError, format_for

NAMES = ["requirements.txt", "uv.lock", "poetry.lock", "Pipfile.lock", "environment.yml", "conda-lock.yml", "pyproject.toml"]
CONTEXT = DetectContext(ignore_groups={"docs"})


def _name(path_name: str) -> str | None:
    if path_name in NAMES:
        return path_name
    found = format_for(path_name)
    return next((n for n in NAMES if found is not None and format_for(n) is found), None)


def _toml_value(value: Any) -> str | None:
    """TOML for a JSON-like value (inline tables and arrays; None has no spelling: left out)."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf") if math.isinf(value) else repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[" + ", ".join(v for v in (_toml_value(x) for x in value) if v is not None) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(str(k))} = {v}" for k, v in ((k, _toml_value(x)) for k, x in value.items()) if v is not None) + "}"
    return json.dumps(str(value))


def _written(name: str, data: Any) -> bytes:
    """`data` in the syntax of the file `name`."""
    if name.endswith((".lock", ".toml")) and name != "Pipfile.lock":
        table = data if isinstance(data, dict) else {"package": data}
        return "".join(f"{json.dumps(str(k))} = {v}\n" for k, v in ((k, _toml_value(x)) for k, x in table.items()) if v is not None).encode()
    if name == "Pipfile.lock":
        return json.dumps(data).encode()
    return yaml.safe_dump(data, allow_unicode=True).encode()


def _documents() -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    for path in files("locks/**/*", "detect-corpus*/**/*", under=FIXTURES):
        name = _name(path.name)
        if name is None or name == "requirements.txt":
            continue
        try:
            body = path.read_text()
            data = json.loads(body) if name == "Pipfile.lock" else yaml.safe_load(body) if name.endswith((".yml", ".yaml")) else tomllib.loads(body)
        except (ValueError, yaml.YAMLError):
            continue
        out.append((name, data))
    return out


DOCUMENTS = _documents()


def seeds() -> list[tuple[str, bytes]]:
    raw = []
    for path in files("locks/**/*", "detect-corpus*/**/*", under=FIXTURES):
        name = _name(path.name)
        if name is not None:
            raw.append((path.name, bytes([2 * NAMES.index(name)]) + path.read_bytes()))
    return raw + [(f"edit-{i}-{name}", bytes([1, i]) + bytes(range(16))) for i, (name, _) in enumerate(DOCUMENTS)]


def one(data: bytes) -> None:
    if len(data) < 2:
        return
    if data[0] & 1 and DOCUMENTS:
        name, document = DOCUMENTS[data[1] % len(DOCUMENTS)]
        body_bytes = _written(name, mutate(document, data[2:]))
    else:
        name, body_bytes = NAMES[(data[0] >> 1) % len(NAMES)], data[1:]
    body = text(body_bytes)
    if body is None:
        return
    module = format_for(name)
    if module is not None:
        try:
            module.parse(body)
        except LockFileError:
            pass
    versions = Versions(name, b"", body_bytes)
    for detector in DETECTORS.values():
        if detector.matches(versions):
            list(detector.diff(versions, CONTEXT))


if __name__ == "__main__":
    fuzz(one, seeds())
