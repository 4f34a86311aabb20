"""What every fuzz harness shares: where the seeds are, instrumenting reprogate, and starting
libFuzzer (through atheris) with a seed corpus.

A harness is a script: `python tests/fuzz/fuzz_traces.py [libFuzzer flags] [CORPUS...]`. Without a
corpus folder it writes its seeds (files from examples/ and tests/fixtures/) into a fresh
temporary one, and into an empty one given, so a run never adds generated inputs to the
repository and a kept corpus goes on from where it was. Each harness catches only
its family's own documented errors (a ReprogateError, a LockFileError, a TraceError...); anything
else is a finding: atheris prints the traceback and libFuzzer writes the input as `crash-*`
(under `-artifact_prefix=`). tests/fuzz/test_harnesses.py runs each for a few seconds in the
suite, `tools/fuzz` for as long as asked.
"""

from __future__ import annotations

import contextlib
import copy
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import atheris
import yaml

REPO = Path(__file__).resolve().parent.parent.parent
EXAMPLES = REPO / "examples"
FIXTURES = REPO / "tests" / "fixtures"
MAX_SEED_BYTES = 64 * 1024  # libFuzzer's -max_len follows the largest seed: small inputs run many times faster


@contextlib.contextmanager
def instrumented() -> Iterator[None]:
    """Imports inside are instrumented for coverage, reprogate's own modules only."""
    with atheris.instrument_imports(include=["reprogate"]):
        yield


def files(*globs: str, under: Path = REPO) -> list[Path]:
    """Seed files matching the globs under a folder, sorted, the large ones left out."""
    found = sorted({p for g in globs for p in under.glob(g) if p.is_file() and p.stat().st_size <= MAX_SEED_BYTES})
    return found


def fuzz(test_one: Callable[[bytes], None], seeds: Iterable[tuple[str, bytes]], max_len: int = 8192) -> None:
    """Start libFuzzer on `test_one`, with a temporary corpus of `seeds` unless one is given, and
    inputs up to `max_len` bytes unless -max_len= says otherwise (longer seeds are cut there:
    a shape bug needs a few lines, and small inputs run many times faster)."""
    args = list(sys.argv)
    if not any(a.startswith("-max_len=") for a in args[1:]):
        args.insert(1, f"-max_len={max_len}")
    folders = [a for a in args[1:] if not a.startswith("-")]
    if not folders:
        folders = [tempfile.mkdtemp(prefix="reprogate-fuzz-corpus-")]
        args.append(folders[0])
    corpus = Path(folders[0])
    if corpus.is_dir() and not any(corpus.iterdir()):  # a fresh corpus starts from the seeds; a kept one from what it holds
        for i, (name, data) in enumerate(seeds):
            (corpus / f"{i:04d}-{Path(name).name}"[:120]).write_bytes(data)
    atheris.Setup(args, test_one)
    atheris.Fuzz()


def text(data: bytes) -> str | None:
    """The input as the readers get it (UTF-8), or None: an undecodable file is refused before
    any parser sees it (core.documents, read_bounded), so it is not this harness's subject."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _value(fdp: atheris.FuzzedDataProvider, depth: int = 0) -> Any:
    """A JSON value of a kind the input picks: what a hand-edited or hostile file could hold."""
    kind = fdp.ConsumeIntInRange(0, 7 if depth < 3 else 5)
    if kind == 0:
        return None
    if kind == 1:
        return fdp.ConsumeBool()
    if kind == 2:
        return fdp.ConsumeInt(8)
    if kind == 3:
        return fdp.ConsumeRegularFloat()
    if kind in (4, 5):
        return fdp.ConsumeUnicodeNoSurrogates(fdp.ConsumeIntInRange(0, 40))
    if kind == 6:
        return [_value(fdp, depth + 1) for _ in range(fdp.ConsumeIntInRange(0, 3))]
    return {fdp.ConsumeUnicodeNoSurrogates(8): _value(fdp, depth + 1) for _ in range(fdp.ConsumeIntInRange(0, 3))}


def mutate(document: Any, data: bytes, edits: int = 4) -> Any:
    """`document` (JSON-like) with up to `edits` changes the input decides: a member deleted, or
    replaced by a value of another kind. Structure-aware: a schema-valid seed stays close to
    valid, so the code behind the schema is reached, where byte mutations of JSON rarely get."""
    fdp = atheris.FuzzedDataProvider(data)
    document = copy.deepcopy(document)
    for _ in range(fdp.ConsumeIntInRange(1, edits)):
        parent, key = None, None
        node = document
        while isinstance(node, (dict, list)) and node and fdp.ConsumeBool():
            keys = list(node) if isinstance(node, dict) else list(range(len(node)))
            key = keys[fdp.ConsumeIntInRange(0, len(keys) - 1)]
            parent, node = node, node[key]
        if parent is None:
            continue
        if fdp.ConsumeIntInRange(0, 3) == 0 and isinstance(parent, dict):
            del parent[key]
        else:
            parent[key] = _value(fdp)
    return document


def structured(data: bytes, documents: list[Any]) -> Any:
    """For an input whose first byte is odd: one of `documents` (the second byte picks it),
    mutated by the rest (`mutate`); for an even one, None (the harness reads the bytes raw)."""
    if len(data) < 2 or not data[0] & 1 or not documents:
        return None
    return mutate(documents[data[1] % len(documents)], data[2:])


DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)  # libyaml where it is built: the harness's own writing is not under test


def write_input(target: Path, document: Any, data: bytes) -> bool:
    """Write the input a harness reads: `document` (from `structured`) as YAML, flow style when
    the second byte says so, else the raw bytes after the first. False when the document cannot
    be written as YAML (nothing to test)."""
    if document is None:
        target.write_bytes(data[1:])
        return True
    try:
        target.write_text(yaml.dump(document, Dumper=DUMPER, sort_keys=False, default_flow_style=bool(data[1] & 2)))
    except (yaml.YAMLError, ValueError):
        return False
    return True
