"""Fuzz harness: run records, through `validate`'s whole path (the safe YAML loader with
positions, the schema, every semantic rule, the files a record addresses), as the tiny example's
record in a copy of examples/ so the addressed files resolve.

Expected: nothing; validate turns every problem of a record into findings (a ReprogateError is
tolerated as the command's refusal). Seeds: the example records.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from harness import EXAMPLES, files, fuzz, instrumented

with instrumented():
    from reprogate.core.errors import ReprogateError
    from reprogate.validate.runner import Options, validate

PROJECT = Path(tempfile.mkdtemp(prefix="reprogate-fuzz-records-")) / "examples"
shutil.copytree(EXAMPLES, PROJECT)
TARGET = PROJECT / "tiny" / "records" / "fuzzed.yaml"
OPTIONS = Options(root=PROJECT)


def seeds() -> list[tuple[str, bytes]]:
    return [(p.name, p.read_bytes()) for p in files("**/records/*.yaml", under=EXAMPLES)]


def one(data: bytes) -> None:
    TARGET.write_bytes(data)
    try:
        validate([str(TARGET)], OPTIONS)
    except ReprogateError:
        pass


if __name__ == "__main__":
    fuzz(one, seeds())
