"""What a rebuild stage is: a name, a function of the context, and the context fields it needs
from earlier stages and provides to later ones."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from reprogate.rebuild.context import RebuildContext, StageResult


class StageFn(Protocol):
    def __call__(self, ctx: RebuildContext) -> StageResult: ...


@dataclass(frozen=True)
class Stage:
    run: StageFn
    needs: tuple[str, ...] = ()  # context fields an earlier stage must have filled
    provides: tuple[str, ...] = ()  # context fields this stage fills when it passes
