"""Verdicts of the shape `reprogate rebuild` writes, for tests of what consumes them."""

from __future__ import annotations

from typing import Any

STAGES = ["artifacts", "digest", "preflight", "dataset", "config", "envelope", "run", "batches", "model-state", "steps", "metric"]


def make_verdict(
    verdict: str = "pass", diagnosis: str | None = None, infrastructure: bool = False, level: str = "bitwise", digest: str = "canonical-v1:sha256:" + "0" * 64
) -> dict[str, Any]:
    """A schema-valid verdict: stages before the diagnosis passed, the diagnosis failed, the rest not run."""
    stages = []
    failed = False
    for name in STAGES:
        if failed:
            status = "not-run"
        elif name == diagnosis:
            status, failed = "fail", True
        else:
            status = "pass"
        stages.append({"name": name, "status": status, "seconds": 0.1, "detail": f"{name} {status}"})
    return {
        "apiVersion": "reprogate/v1",
        "kind": "Verdict",
        "verdict": verdict,
        "diagnosis": diagnosis,
        "infrastructure": infrastructure,
        "record": {"path": "records/tiny.yaml", "name": "tiny", "digest": digest, "level": level},
        "stages": stages,
        "seeds": {"rebuilt": [1], "reference": [1, 2, 3]},
        "tests": [],
        "claim": {"replayed": verdict == "pass", "text": "test verdict", "compared": [], "not_covered": []},
        "started_at": "2026-11-30T00:00:00Z",
        "seconds": 1.0,
        "tool": "reprogate test",
    }
