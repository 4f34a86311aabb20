"""`reprogate detect`: which watched layers a diff changes, and exactly how.

One `git diff --name-status` lists the changed files; one `git cat-file --batch` reads every
watched file at both revisions. Each detector module (framework, base_image, driver, dataset,
records) says which paths it watches and turns the two versions of a file into changes:
"torch 2.4.0 -> 2.5.0", not "poetry.lock changed". Fail safe: a watched file that cannot be
parsed at either revision counts as changed, with the reason, never as unchanged.
"""

from __future__ import annotations

import functools
from dataclasses import asdict, dataclass, field
from types import ModuleType
from typing import Any

LAYERS = ("framework", "base-image", "driver", "dataset", "records")
REBUILD_LAYERS = ("framework", "base-image", "driver", "dataset")


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
        return {k: v for k, v in asdict(self).items() if v not in (None, "")}


@dataclass
class DetectContext:
    ignore_groups: set[str] = field(default_factory=set)
    reference_record: str | None = None


@functools.lru_cache(maxsize=1)
def detectors() -> tuple[ModuleType, ...]:
    from reprogate.detect import base_image, dataset, driver, framework, records

    return (framework, base_image, driver, dataset, records)
