"""Verdicts of the shape `reprogate rebuild` writes, for tests of what consumes them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from reprogate.rebuild.verdict import Verdict

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


NONCE = "test-dispatch-nonce-0123456789"


def record_digest_at(repo: Path, sha: str, path: str) -> str:
    """The digest `github status` computes for the record at `path` in commit `sha`."""
    from reprogate.github.binding import head_digests

    digest = head_digests(repo, sha, [path])[path]
    assert digest is not None, f"{path} is not a record at {sha}"
    return digest


def bound_verdict(repo: Path, sha: str, path: str, verdict: str = "pass", diagnosis: str | None = None, nonce: str = NONCE, **kw: Any) -> dict[str, Any]:
    """A verdict as the dispatched rebuild of `path` at `sha` writes it: this record's digest and the dispatch's nonce."""
    data = make_verdict(verdict, diagnosis, digest=record_digest_at(repo, sha, path), **kw)
    data["record"]["path"] = path
    data["run"] = {"nonce": nonce}
    return data


def typed(data: dict[str, Any]) -> Verdict:
    """`data` as every reader of a verdict takes it: held to the schema and built (Verdict.from_json)."""
    return Verdict.from_json(data, "verdict.json")
