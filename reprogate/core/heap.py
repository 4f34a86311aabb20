"""The heap frozen for a stretch of work: objects alive at its start are moved out of the cyclic
garbage collector's sight until it ends.

Two commands keep a large, long-lived heap while they make many short-lived objects: `validate`
(the targets of 10,000 records, before it forks its workers) and `dataset verify` (a loaded
manifest, while it hashes). Left in sight, that heap is rescanned at every full collection, so
the cost of one more item grows with the number of items; frozen before a fork, the workers'
collections neither scan it nor copy its pages. A caller that froze its own heap keeps it frozen.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def heap_frozen() -> Iterator[None]:
    ours = gc.get_freeze_count() == 0
    if ours:
        gc.freeze()
    try:
        yield
    finally:
        if ours:
            gc.unfreeze()
