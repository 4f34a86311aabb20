"""The compiled check agrees with jsonschema on every document, or refuses to compile."""

from __future__ import annotations

import copy
import random
from pathlib import Path
from typing import Any

import pytest
from support import EXAMPLES

from reprogate.core.documents import load_document
from reprogate.core.schema_fastpath import Unsupported, compile_schema
from reprogate.core.schemas import SCHEMA_FILES, load_schema, validator

POOL: list[Any] = [
    None,
    True,
    False,
    0,
    -1,
    7,
    1.5,
    2.0,
    -0.5,
    "",
    "x",
    "sha256:" + "a" * 64,
    "sha256:XYZ",
    "2026-02-31",
    "2026-11-20",
    "2026-11-20T10:00:00Z",
    "GPU-1",
    [],
    [1],
    ["a"],
    {},
    {"a": 1},
]
KINDS = {
    "RunRecord": sorted(EXAMPLES.glob("records/*.yaml")),
    "DatasetManifest": [EXAMPLES / "data" / "d77.manifest.yaml"],
    "Config": [EXAMPLES / ".reprogate.yaml"],
}


def containers(node: Any, out: list[Any]) -> list[Any]:
    if isinstance(node, (dict, list)):
        out.append(node)
        for child in node.values() if isinstance(node, dict) else node:
            containers(child, out)
    return out


def mutate(data: Any, rng: random.Random) -> Any:
    data = copy.deepcopy(data)
    for _ in range(rng.choice([1, 1, 2, 3])):
        target = rng.choice(containers(data, []))
        keys = list(target) if isinstance(target, dict) else list(range(len(target)))
        action = rng.random()
        if not keys or action < 0.15:
            if isinstance(target, dict):
                target[rng.choice(["extra", "x-note", "name", "digest", "used"])] = copy.deepcopy(rng.choice(POOL))
            else:
                target.append(copy.deepcopy(rng.choice(POOL)))
        elif action < 0.35:
            del target[rng.choice(keys)]
        elif action < 0.5 and isinstance(target, list):
            target.append(copy.deepcopy(target[0]))
        else:
            target[rng.choice(keys)] = copy.deepcopy(rng.choice(POOL))
    return data


def quick(kind: str) -> Any:
    return compile_schema(load_schema(kind), *[load_schema(k) for k in SCHEMA_FILES if k != kind])


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_compiled_check_agrees_with_jsonschema_on_mutated_documents(kind: str) -> None:
    rng = random.Random(20261129)
    check, reference = quick(kind), validator(kind)
    bases = [load_document(Path(p)).data for p in KINDS[kind]]
    counts = {True: 0, False: 0}
    for base in bases:
        assert check(base) and reference.is_valid(base)
    for _ in range(900 if kind == "RunRecord" else 300):
        doc = mutate(rng.choice(bases), rng)
        expected = reference.is_valid(doc)
        assert check(doc) == expected, doc
        counts[expected] += 1
    assert counts[True] > 20 and counts[False] > 100  # both answers were exercised


@pytest.mark.parametrize("keyword", [{"dependentRequired": {"a": ["b"]}}, {"prefixItems": [{}]}, {"$dynamicRef": "#x"}, {"unevaluatedProperties": False}])
def test_unknown_keywords_refuse_to_compile(keyword: dict[str, Any]) -> None:
    with pytest.raises(Unsupported):
        compile_schema({"type": "object", "properties": {"a": keyword}})


@pytest.mark.parametrize(
    "schema, good, bad",
    [
        ({"type": "integer"}, [1, 2.0], [True, 1.5, "1"]),
        ({"enum": [1, "a"]}, [1, 1.0, "a"], [True, "b"]),
        ({"const": False}, [False], [0, None]),
        ({"uniqueItems": True}, [[1, 2], [1, True]], [[1, 1.0], [{"a": 1}, {"a": 1}]]),
        ({"exclusiveMinimum": 0}, [0.1, "x"], [0, -1]),
        ({"format": "date"}, ["2026-02-28", 5], ["2026-02-30"]),
    ],
)
def test_json_schema_semantics_corners(schema: dict[str, Any], good: list[Any], bad: list[Any]) -> None:
    check = compile_schema(schema)
    from jsonschema import Draft202012Validator, FormatChecker

    reference = Draft202012Validator(schema, format_checker=FormatChecker())
    for value in good:
        assert check(value) and reference.is_valid(value), value
    for value in bad:
        assert not check(value) and not reference.is_valid(value), value
