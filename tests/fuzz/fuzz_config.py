"""Fuzz harness: the repository's `.reprogate.yaml`, through the reader (the safe YAML loader,
the Config schema, the typed `Config` it builds) and what consumes a configuration that passed
it: the action's overrides, the record and watch globs made relative to the repository top,
`detect --files-from` on a pull request's file list (every watch, ignore and record glob
matched), the records a revision's files hold (`record_paths`), and (one input in 8) `validate`
with no paths, which finds the records by the configuration's globs and checks the
configuration itself (its reference record), in a copy of examples/.

Half the inputs (first byte odd) are the example configurations mutated structurally
(`harness.structured`: a member deleted or given a value of another kind, so the code behind the
schema is reached; and in half of those a glob made of the input's last bytes (each picking one of the characters globs are made of) added to a record,
watch or ignore list), the rest the bytes as they are. Expected: a ReprogateError (DocumentError,
exit 1 or 2; DetectError) and nothing else. Seeds: every .reprogate.yaml under examples/.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import yaml
from harness import EXAMPLES, files, fuzz, instrumented, structured, write_input

with instrumented():
    from reprogate.core.config import load_config, with_overrides
    from reprogate.core.errors import ReprogateError
    from reprogate.detect.pinned import record_paths
    from reprogate.detect.run import _rooted, detect_files
    from reprogate.validate.runner import Options, validate

CONFIGS = files("**/.reprogate.yaml", under=EXAMPLES)
DOCUMENTS = [yaml.safe_load(p.read_text()) for p in CONFIGS]
PROJECT = Path(tempfile.mkdtemp(prefix="reprogate-fuzz-config-")) / "examples"
shutil.copytree(EXAMPLES, PROJECT)
(PROJECT / ".git").mkdir()  # the repository root: the configuration is not looked for above it
TARGET = PROJECT / ".reprogate.yaml"
LISTED = sorted(p.relative_to(PROJECT).as_posix() for p in PROJECT.rglob("*") if p.is_file())[:300]
LISTING = PROJECT.parent / "files.json"  # GitHub's pulls/{n}/files, as `detect --files-from` reads it
LISTING.write_text(json.dumps([{"filename": name, "status": "modified"} for name in LISTED]))
ENV = {"REPROGATE_STATUS_CONTEXT": "ci/reproduction", "REPROGATE_REBUILD_LABEL": "rebuild"}
OPTIONS = Options(root=PROJECT)


def seeds() -> list[tuple[str, bytes]]:
    raw = [(f"{p.parent.name}.yaml", b"\x00" + p.read_bytes()) for p in CONFIGS]
    return raw + [(f"structured-{i}", bytes([1, i]) + b"\x00" * 16) for i in range(len(DOCUMENTS))]


GLOB_CHARACTERS = "*?[]!^-\\/.az09_ {"  # what a glob's syntax is made of, and a few plain characters
GLOB_LISTS = [("records",), ("watch", "framework"), ("watch", "dataset"), ("watch", "ignore")]


def with_glob(document: object, data: bytes) -> object:
    """The document with one more glob, made of the input's last bytes, in one of its glob lists:
    a glob is what a configuration mostly says, and a random value seldom is one."""
    if not isinstance(document, dict) or len(data) < 4:
        return document
    where = GLOB_LISTS[data[-1] % len(GLOB_LISTS)]
    glob = "".join(GLOB_CHARACTERS[b % len(GLOB_CHARACTERS)] for b in data[-min(len(data) - 3, 1 + data[-2] % 24) - 1 : -1])
    node = document
    for key in where[:-1]:
        node = node.setdefault(key, {}) if isinstance(node.get(key, {}), dict) else {}
    if isinstance(node, dict):
        globs = node.get(where[-1])
        node[where[-1]] = [*(globs if isinstance(globs, list) else []), glob]
    return document


def one(data: bytes) -> None:
    if len(data) < 2:
        return
    document = structured(data, DOCUMENTS)
    if document is not None and data[1] & 4:
        document = with_glob(document, data) if data[1] & 8 else with_glob(with_glob(document, data[:-2]), data)
    if not write_input(TARGET, document, data):
        return
    try:
        config = with_overrides(load_config(PROJECT), ENV)
    except ReprogateError:
        return
    rooted = _rooted(config, "sub/folder")
    record_paths(rooted, "sub/folder", LISTED)
    try:
        detect_files(LISTING, config)
        detect_files(LISTING, rooted)
    except ReprogateError:
        pass
    if data[-1] % 8 == 3:
        try:
            validate([], OPTIONS)
        except ReprogateError:
            pass


if __name__ == "__main__":
    os.chdir(PROJECT)  # validate with no paths starts from the current folder
    fuzz(one, seeds())
