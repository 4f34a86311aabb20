"""Fuzz harness: dataset manifests (YAML, JSON and JSON Lines), through `dataset verify`'s whole
path (load, schema, shard lines, sizes and checksums against a small local folder), as a pull
request's manifest reaches it.

The first byte picks the form (.yaml, .json, .jsonl); the root is always the local folder, so no
input reaches the network. Expected: a ReprogateError (and DocumentError, one) from the loader;
otherwise a verdict with findings, never an exception. Seeds: the example manifests.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import yaml
from harness import EXAMPLES, FIXTURES, files, fuzz, instrumented

with instrumented():
    from reprogate.core.errors import ReprogateError
    from reprogate.datasets.verify import VerifyOptions, verify

SUFFIXES = [".yaml", ".json", ".jsonl"]
FOLDER = Path(tempfile.mkdtemp(prefix="reprogate-fuzz-manifests-"))
ROOT = FOLDER / "root"
ROOT.mkdir()
(ROOT / "a").write_bytes(b"a")  # a shard named a: one byte
OPTIONS = VerifyOptions(root=str(ROOT), jobs=1, quiet=True, timeout=1.0, retries=0, max_time=1.0)


def seeds() -> list[tuple[str, bytes]]:
    """The example manifests as written, and each also as JSON and as JSON Lines (header line,
    then one shard a line, sorted by name), with a shard named like the root's file."""
    found = files("**/*.manifest.*", under=EXAMPLES) + files("**/*.manifest.*", under=FIXTURES)
    out = [(p.name, bytes([SUFFIXES.index(p.suffix)]) + p.read_bytes()) for p in found if p.suffix in SUFFIXES]
    for path in found:
        data = yaml.safe_load(path.read_text())
        if not isinstance(data, dict):
            continue
        shards = sorted(data.get("shards") or [], key=lambda s: s.get("name", ""))[:3]
        shards.insert(0, {"name": "a", "bytes": 1, "checksum": "sha256:" + "ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb"})
        out.append((f"{path.stem}.json", b"\x01" + json.dumps({**data, "shards": shards}, indent=1).encode()))
        header = {k: v for k, v in data.items() if k != "shards"}
        out.append((f"{path.stem}.jsonl", b"\x02" + "".join(json.dumps(line) + "\n" for line in [header, *shards]).encode()))
    return out


def one(data: bytes) -> None:
    if not data:
        return
    path = FOLDER / f"m{SUFFIXES[data[0] % len(SUFFIXES)]}"
    path.write_bytes(data[1:])
    try:
        verify(path, OPTIONS)
    except ReprogateError:
        pass


if __name__ == "__main__":
    fuzz(one, seeds())
