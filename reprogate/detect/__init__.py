"""`reprogate detect`: which watched layers a diff changes, and exactly how.

One `git diff --name-status` lists the changed files; one `git cat-file --batch` reads every
watched file at both revisions. Each detector module (framework, base_image, driver, dataset,
records; listed in DETECTORS) says which paths it watches and turns the two versions of a file into changes:
"torch 2.4.0 -> 2.5.0", not "poetry.lock changed". Fail safe: a watched file that cannot be
parsed at either revision counts as changed, with the reason, never as unchanged.
"""

from __future__ import annotations

from reprogate.detect import base_image, dataset, driver, framework, records
from reprogate.detect.base import LAYERS, REBUILD_LAYERS, Change, DetectContext, Detector

# Every detector, by the layer it watches; a module not listed here is never asked.
DETECTORS: dict[str, Detector] = {module.LAYER: module for module in (framework, base_image, driver, dataset, records)}


def detectors() -> tuple[Detector, ...]:
    return tuple(DETECTORS.values())


__all__ = ["DETECTORS", "LAYERS", "REBUILD_LAYERS", "Change", "DetectContext", "Detector", "detectors"]
