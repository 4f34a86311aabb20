"""digest: realize the environment the ranks will run in, and establish what it is.

The realizer is chosen from the record (job.environment.realizer, else container, else venv);
`--environment` says whether to realize what the record pins (reference) or what the checked-out
tree declares (candidate). For a container the engine is asked which image it holds, and the
pinned digest must be among its repo digests — a digest is never taken on someone's word. What
the environment holds inside (Python, packages, OS) is told by rank 0 in the preflight.
"""

from __future__ import annotations

from pathlib import Path

from reprogate.core.errors import ReprogateError
from reprogate.rebuild import sandbox
from reprogate.rebuild.realizers import REALIZERS, RealizeFailed, RealizeRequest
from reprogate.rebuild.stages.base import StageResult, failed, passed, skipped
from reprogate.rebuild.state import Environment, RebuildJob, RebuildState


def expected_outputs(job: RebuildJob) -> tuple[Path, ...]:
    """What the ranks must not read: the reference trace (the base's and the checkout's) and the
    record files that hold the reference's digests and metric values, in the checkout and where
    the artifacts stage copied them into the work folder (a reference trace kept inside the
    project folder comes along with the project's copy, which the ranks see)."""
    relative = [job.record_path.resolve().relative_to(job.root.resolve())] if job.root.resolve() in job.record_path.resolve().parents else []
    for data in (job.data, job.checked_out):
        trace = data.get("reference", {}).get("trace") if isinstance(data.get("reference"), dict) else None
        if isinstance(trace, dict) and isinstance(trace.get("path"), str) and ".." not in Path(trace["path"]).parts:
            relative.append(Path(trace["path"]))
    found = [job.record_path, *(where / rel for rel in relative for where in (job.root, job.workdir))]
    return tuple(dict.fromkeys(found))


def digest(state: RebuildState) -> StageResult:
    job, fetched = state.job, state.fetched
    assert fetched is not None
    choice, launcher, options = job.realizer, job.launcher.name, job.options
    realizer = REALIZERS[choice.name]
    try:
        cache = options.cache or Path.home() / ".cache" / "reprogate"
        masked = expected_outputs(job)
        box = sandbox.for_ranks(job.workdir, masked) if sandbox.applies(realizer.isolation, launcher) and sandbox.unavailable() is None else None
        request = RealizeRequest(
            job.record,
            job.root,
            job.workdir,
            options.environment,
            cache,
            fetched.runtime,
            options.image,
            box,
            options.allow_source_builds,
            masked,
            pins_reviewed=not job.code.environment_changed,
        )
        realized = realizer.realize(request)
    except RealizeFailed as exc:
        return failed(exc.message + (f" ({exc.hint})" if exc.hint else ""), log_tail=exc.log_tail)
    except ReprogateError as exc:
        return failed(exc.message + (f" ({exc.hint})" if exc.hint else ""), exit_code=int(exc.exit_code))
    state.on_close(realized.close)
    state.environment = Environment(choice, realized, sandbox.described(box, realizer.isolation, launcher))
    what = realized.identity.summary()
    if not realized.identity.rebuilt():  # nothing was realized, so nothing is verified: say so, never pass
        return skipped(what)
    return passed(f"{options.environment} environment: {what}", realizer=realized.kind)
