"""What every detector shares: the Change it reports, its context, and the Detector protocol."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from reprogate.detect.versions import Versions

LAYERS = ("framework", "base-image", "driver", "dataset", "source", "records")
REBUILD_LAYERS = ("framework", "base-image", "driver", "dataset", "source")


@dataclass
class Change:
    layer: str
    path: str
    kind: str  # added, removed, version, artifacts, changed, unparseable, promoted, tag, digest ...
    subject: str = ""  # package, image stage, shard ...
    old: str | None = None
    new: str | None = None
    detail: str = ""
    group: str = ""  # where in the file: a dependency group or extra, build-system, a Dockerfile stage, a workflow job
    record: str = ""  # the run record(s) that pin this file, as the base revision has them
    line: int = 0  # the line it is about, at the head (at the base for a removal); 0: none found (detect.lines)

    def describe(self) -> str:
        subject = f"{self.subject} [{self.group}]" if self.group else self.subject
        if self.kind in ("version", "requirement"):
            return f"{subject} {self.old} -> {self.new}"
        if self.kind in ("added", "removed") and subject:
            value = self.new if self.kind == "added" else self.old
            return f"{subject} {self.kind}" + (f" ({value})" if value else "")
        if self.old is not None or self.new is not None:
            return f"{subject + ': ' if subject else ''}{self.old} -> {self.new}" + (f" ({self.detail})" if self.detail else "")
        return f"{subject + ': ' if subject else ''}{self.detail or self.kind}"

    def as_dict(self) -> dict[str, Any]:
        """The fields that say something, in field order (every field is a string, an int or None:
        no deep copy is needed, which dataclasses.asdict would make of each); line 0 says nothing."""
        return {k: v for k, v in vars(self).items() if v not in (None, "") and not (k == "line" and v == 0)}


@dataclass
class DetectContext:
    ignore_groups: set[str] = field(default_factory=set)
    reference_record: str | None = None


class Detector(Protocol):
    """One watched layer: which files it reads, and the changes between two versions of one."""

    LAYER: str
    __name__: str  # a detector is a module: its name says which one

    def matches(self, v: Versions) -> bool: ...

    def diff(self, v: Versions, ctx: DetectContext) -> Iterable[Change]: ...
