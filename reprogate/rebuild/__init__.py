"""`reprogate rebuild`: the drill. Stages in order; the first failure is the diagnosis.

The verdict (schemas/verdict.schema.json) records every stage, the rebuild machine, the seeds,
each statistical test with its α, margin, n and m, the loss curves, and the bounded claim: what
was replayed, on what, compared how, and what the claim does not cover.
"""

from __future__ import annotations

import datetime
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from reprogate import __version__
from reprogate.core.canonical import canonical_digest
from reprogate.core.diagnostics import ExitCode
from reprogate.core.errors import UsageError
from reprogate.core.documents import display_path, load_document
from reprogate.rebuild.compare import loss_curve
from reprogate.rebuild.context import RebuildContext, RebuildOptions, StageResult
from reprogate.rebuild.stages import STAGES
from reprogate.core.config import repository_root


class RebuildUsageError(UsageError):
    """The rebuild cannot begin: the record is unreadable or invalid, or the work folder is not empty (exit 2)."""


def run_rebuild(record: Path, options: RebuildOptions) -> dict[str, Any]:
    """Run the stages and return the verdict document."""
    from reprogate.validate.runner import Options, validate_file

    checked = validate_file(record, True, Options(addressed_files=False), {})
    if checked.kind != "RunRecord" or checked.errors:
        first = checked.diagnostics[0] if checked.diagnostics else None
        where = f"{first.path}:{first.location.line}:{first.location.col} {first.field} {first.message}" if first else "not a run record"
        raise RebuildUsageError(f"the record is not valid ({where}); run `reprogate validate {record}`")
    doc = load_document(record)
    root = (options.root or repository_root(record.parent)).resolve()
    temporary = options.workdir is None
    workdir = Path(tempfile.mkdtemp(prefix="reprogate-rebuild-")) if temporary else options.workdir
    assert workdir is not None
    if workdir.exists() and any(workdir.iterdir()):
        raise RebuildUsageError(f"work folder {workdir} is not empty; a rebuild starts from an empty worker")
    workdir.mkdir(parents=True, exist_ok=True)
    ctx = RebuildContext(record, doc, root, workdir, options)
    started_at = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z")
    started = time.monotonic()
    results: list[StageResult] = []
    failed: StageResult | None = None
    try:
        for name, stage in STAGES:
            if failed is not None:
                results.append(StageResult(name, "not-run", f"not run: {failed.name} failed first"))
                continue
            begin = time.monotonic()
            result = stage(ctx)
            result.seconds = time.monotonic() - begin
            results.append(result)
            if result.status == "fail":
                failed = result
    finally:
        if temporary:
            shutil.rmtree(workdir, ignore_errors=True)
    return _verdict(ctx, results, failed, started_at, time.monotonic() - started)


def _verdict(ctx: RebuildContext, results: list[StageResult], failed: StageResult | None, started_at: str, seconds: float) -> dict[str, Any]:
    from reprogate.rebuild.claim import claim

    seeds_rebuilt = [r.seed for r in ctx.runs]
    verdict: dict[str, Any] = {
        "apiVersion": "reprogate/v1",
        "kind": "Verdict",
        "verdict": "fail" if failed else "pass",
        "diagnosis": failed.name if failed else None,
        "infrastructure": bool(failed and failed.data.get("infra")),
        "record": {"path": display_path(ctx.record_path), "name": ctx.section("metadata", "name"), "digest": canonical_digest({k: v for k, v in ctx.data.items() if k != "baseline"}), "level": ctx.level},
        "stages": [{"name": r.name, "status": r.status, "seconds": round(r.seconds, 3), "detail": r.detail, **({"log_tail": r.data["log_tail"]} if r.data.get("log_tail") else {})} for r in results],
        "environment": {k: v for k, v in ctx.facts.items() if v not in (None, "")},
        "seeds": {"rebuilt": seeds_rebuilt, "reference": [v["seed"] for v in ctx.section("reference", "metric", "values") or []]},
        "tests": ctx.tests,
        "curves": {"reference": loss_curve(ctx.reference_events), "rebuilt": loss_curve(ctx.runs[0].events) if ctx.runs else []},
        "started_at": started_at,
        "seconds": round(seconds, 3),
        "tool": f"reprogate {__version__}",
    }
    verdict["claim"] = claim(ctx, verdict)
    return verdict


def exit_code(verdict: dict[str, Any]) -> ExitCode:
    if verdict["verdict"] == "pass":
        return ExitCode.OK
    return ExitCode.INFRA if verdict.get("infrastructure") else ExitCode.FAILED
