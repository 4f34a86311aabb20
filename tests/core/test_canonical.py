"""One canonical form: formatting never changes a digest, content always does."""

from __future__ import annotations

import math

import pytest

from reprogate.core.canonical import CanonicalError, canonical_bytes, canonical_digest
from reprogate.core.documents import load_text

pytestmark = pytest.mark.core  # runs on macOS and Windows too (ci.yml's core job)

CONFIG_BLOCK = """\
# C-19
optimizer:
  name: AdamW
  lr: 3.0e-4
  betas: [0.9, 0.95]
model: {layers: 32, name: "décodeur"}
"""

CONFIG_REFORMATTED = """\
model:
    name: décodeur   # same text, other quoting
    layers: 32
optimizer: {betas: [0.9, 0.95], lr: 0.0003, name: 'AdamW'}
"""

CONFIG_JSON = '{"optimizer": {"name": "AdamW", "lr": 0.0003, "betas": [0.9, 0.95]}, "model": {"layers": 32, "name": "d\\u00e9codeur"}}'


def test_reformatting_reordering_and_comments_do_not_change_the_digest() -> None:
    a = canonical_digest(load_text(CONFIG_BLOCK, "a").data)
    b = canonical_digest(load_text(CONFIG_REFORMATTED, "b").data)
    c = canonical_digest(load_text(CONFIG_JSON, "c", "json").data)
    assert a == b == c


def test_content_changes_do_change_the_digest() -> None:
    base = load_text(CONFIG_BLOCK, "a").data
    for changed in (CONFIG_BLOCK.replace("3.0e-4", "3.0e-5"), CONFIG_BLOCK.replace("32", "'32'"), CONFIG_BLOCK.replace("0.95]", "0.95, 0.999]")):
        assert canonical_digest(load_text(changed, "x").data) != canonical_digest(base)


def test_v1_form_is_frozen() -> None:
    """A golden vector: if this fails, the canonical form changed and every pinned hash with it."""
    data = {"b": [1, 2.5, True, None], "a": "é", "c": {"z": 1e-7, "y": -0.0}}
    assert canonical_bytes(data) == '{"a":"é","b":[1,2.5,true,null],"c":{"y":-0.0,"z":1e-07}}'.encode()
    assert canonical_digest(data) == "canonical-v1:sha256:a664cf010c8892f648659eb203c9052ce5405cbc922261eb5375fcac65313198"


def test_yaml_1_1_spellings_keep_their_text() -> None:
    """`on: yes` would be {True: True} to PyYAML; its canonical form must not depend on that."""
    data = load_text("on: yes\nversion: 2.10\ndate: 2026-01-01\n", "t").data
    assert canonical_bytes(data) == b'{"date":"2026-01-01","on":"yes","version":2.1}'


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_non_finite_numbers_have_no_canonical_form(value: float) -> None:
    with pytest.raises(CanonicalError):
        canonical_digest({"x": value})


def test_foreign_types_are_refused() -> None:
    with pytest.raises(CanonicalError):
        canonical_digest({"x": {1, 2}})
    with pytest.raises(CanonicalError):
        canonical_digest({1: "x"})
