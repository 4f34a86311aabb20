"""detect places a lock pin's change on the line naming it without compiling a pattern per pin
(a 10,000-pin bump listed 500 changes and compiled 500 patterns): the plain search must find
exactly what the pattern finds, on lines built from the characters that decide it."""

from __future__ import annotations

import random

from reprogate.detect.lines import _named, _names

EDGES = "abAB-_.  \t\"'=[/(,<>!~;]@:)#xé\u00a0\u0130"
NAMES = ["torch", "nvidia-cublas-cu12", "Foo_Bar", "a.b", "x", "typing-extensions", "-lead", "p"]


def test_the_plain_search_finds_what_the_pattern_finds() -> None:
    rng = random.Random(3)
    for _ in range(20_000):
        name = rng.choice(NAMES)
        variants = [name, name.upper(), name.replace("-", "_"), name.replace("-", "__"), "".join(rng.choice(EDGES) for _ in range(rng.randint(0, 4)))]
        line = "".join(rng.choice(variants) + "".join(rng.choice(EDGES) for _ in range(rng.randint(0, 2))) for _ in range(rng.randint(1, 4)))
        assert _names(line, name) == (_named(name).search(line) is not None), (line, name)


def test_a_pin_is_found_only_as_a_whole_name() -> None:
    assert _names("torch==2.5.1 \\", "torch") and _names("  Torch_Vision>=0.2", "torch-vision")
    assert not _names("pytorch==2.5.1", "torch") and not _names("torch-vision==1", "torch-v")
