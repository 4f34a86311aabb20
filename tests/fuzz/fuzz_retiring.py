"""Fuzz harness: `audit --retiring`, a record's dataset manifest (the one the record's
dataset.manifest.path names, and the same file again as a manifest of the repository, another
copy), through the manifest's check at the boundary, the listing of its shards and what a
retirement of a local folder and of a URI prefix takes.

The input is the manifest's bytes (the first byte picks YAML, JSON or JSON Lines); half the YAML
inputs are an example manifest mutated structurally. The record is the tiny example's, in a copy
of examples/; no input reaches the network (no target names a registry, s3:// copies are not
asked). Expected: a ReprogateError (DocumentError) from reading; otherwise a report (a manifest
that cannot be listed is one of its refusals), never an exception. Seeds: the example manifests.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import yaml
from harness import EXAMPLES, files, fuzz, instrumented, structured

with instrumented():
    from reprogate.audit.retiring import parse_target, retiring
    from reprogate.core.errors import ReprogateError
    from reprogate.datasets.remote import Remote
    from reprogate.images.registry import RegistryClient

PROJECT = Path(tempfile.mkdtemp(prefix="reprogate-fuzz-retiring-")) / "examples"
shutil.copytree(EXAMPLES, PROJECT)
(PROJECT / ".git").mkdir()  # the repository root the record's paths are read from
RECORD = PROJECT / "tiny" / "records" / "tiny.yaml"
SUFFIXES = [".yaml", ".json", ".jsonl"]
FORMS = {suffix: PROJECT / "tiny" / "data" / f"fuzzed.manifest{suffix}" for suffix in SUFFIXES}
RECORDS = {suffix: PROJECT / "tiny" / "records" / f"fuzzed-{suffix[1:]}.yaml" for suffix in SUFFIXES}
for suffix, record in RECORDS.items():
    record.write_text(RECORD.read_text().replace("tiny/data/tiny.manifest.yaml", f"tiny/data/{FORMS[suffix].name}"))
MANIFESTS = [yaml.safe_load(p.read_text()) for p in files("**/*.manifest.yaml", under=EXAMPLES)]
TARGETS = [parse_target(str(PROJECT / "tiny" / "data")), parse_target("s3://example-datasets/")]
CLIENT, REMOTE = RegistryClient(timeout=0.5, retries=0), Remote(timeout=0.5, retries=0)  # nothing answers here: a copy at a URL is unconfirmed at once


def seeds() -> list[tuple[str, bytes]]:
    out = [(p.name, b"\x00" + p.read_bytes()) for p in files("**/*.manifest.yaml", under=EXAMPLES)]
    for data in MANIFESTS:
        header = {k: v for k, v in data.items() if k != "shards"}
        out.append(("m.jsonl", b"\x02" + "".join(json.dumps(line) + "\n" for line in [header, *data.get("shards", [])[:3]]).encode()))
    return out + [(f"structured-{i}", bytes([3, i]) + b"\x00" * 16) for i in range(len(MANIFESTS))]


def one(data: bytes) -> None:
    if not data:
        return
    suffix = SUFFIXES[(data[0] >> 1) % len(SUFFIXES)]
    document = structured(data, MANIFESTS) if suffix == ".yaml" else None
    if document is not None:
        FORMS[suffix].write_text(yaml.safe_dump(document, sort_keys=False))
    else:
        FORMS[suffix].write_bytes(data[1:])
    for target in TARGETS:
        try:
            retiring([RECORDS[suffix]], [FORMS[suffix]], target, [], CLIENT, REMOTE)
        except ReprogateError:
            pass


if __name__ == "__main__":
    fuzz(one, seeds())
