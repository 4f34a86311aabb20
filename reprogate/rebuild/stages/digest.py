"""digest: realize the environment the ranks will run in, and establish what it is.

The realizer is chosen from the record (job.environment.realizer, else container, else venv);
`--environment` says whether to realize what the record pins (reference) or what the checked-out
tree declares (candidate). For a container the engine is asked which image it holds, and the
pinned digest must be among its repo digests — a digest is never taken on someone's word. Then
the environment's own interpreter reports its Python, packages and OS (runtime/probe.py), which
the envelope and the rebuild record use.
"""

from __future__ import annotations

import json
from pathlib import Path

from reprogate.core.errors import ReprogateError
from reprogate.core.redact import redact
from reprogate.rebuild.context import RebuildContext, StageResult, failed, passed, skipped

PROBE_TIMEOUT = 120.0


def digest(ctx: RebuildContext) -> StageResult:
    from reprogate.rebuild.realizers import REALIZERS, RealizeFailed, RealizeRequest, choose

    assert ctx.runtime is not None
    try:
        ctx.choice = choose(ctx.data, ctx.options.realizer)
        cache = ctx.options.cache or Path.home() / ".cache" / "reprogate"
        request = RealizeRequest(ctx.data, ctx.root, ctx.workdir, ctx.options.environment, cache, ctx.runtime, ctx.options.image)
        ctx.realized = REALIZERS[ctx.choice.name].realize(request)
    except RealizeFailed as exc:
        return failed(exc.message + (f" ({exc.hint})" if exc.hint else ""), log_tail=exc.log_tail)
    except ReprogateError as exc:
        return failed(exc.message + (f" ({exc.hint})" if exc.hint else ""), exit_code=int(exc.exit_code))
    realized = ctx.realized
    probe = _probe(ctx)
    if isinstance(probe, StageResult):
        return probe
    ctx.probe = probe
    facts = realized.facts
    what = {
        "container": lambda: (
            f"image {facts.get('image_id', '?')[:19]} ({facts.get('image_source')}; {facts.get('engine')})"
            + (f", pinned digest {facts['digest_verified_by_engine']} confirmed by the engine" if facts.get("digest_verified_by_engine") else "")
        ),
        "venv": lambda: (
            f"venv from {facts.get('lock_file')} ({facts.get('lock_digest', '')[:19]}..., cache {facts.get('cache')}, {facts.get('seconds', 0):.1f} s)"
        ),
        "current": lambda: "the Python environment reprogate runs in (nothing rebuilt: the record asks for it)",
    }[realized.kind]()
    inside = f"Python {probe.get('python')}, torch {probe.get('packages', {}).get('torch', 'not installed')}"
    if realized.kind == "current":  # nothing was realized, so nothing is verified: say so, never pass
        return skipped(f"{what}; {inside}")
    return passed(f"{ctx.options.environment} environment: {what}; {inside}", realizer=realized.kind)


def _probe(ctx: RebuildContext) -> dict | StageResult:
    """Facts from inside the realized environment, by its own interpreter."""
    assert ctx.realized is not None and ctx.runtime is not None
    from reprogate.rebuild.ranks import rank_environment

    log = ctx.workdir / "logs" / "probe.log"
    env = rank_environment({}, ctx.workdir, ctx.runtime)
    process = ctx.realized.spawn([ctx.realized.python, "-m", "reprogate.runtime.probe"], env, ctx.workdir, log)
    import time

    deadline = time.monotonic() + PROBE_TIMEOUT
    while process.poll() is None:
        if time.monotonic() > deadline:
            process.kill()
            return failed(f"the environment's interpreter did not answer within {PROBE_TIMEOUT:g} s", exit_code=3)
        time.sleep(0.05)
    text = log.read_text(errors="replace") if log.exists() else ""
    if process.poll() != 0:
        return failed(
            f"the environment's interpreter ({ctx.realized.python}) could not run: exit {process.poll()}",
            log_tail=redact("\n".join(text.splitlines()[-15:])),
            exit_code=3,
        )
    try:
        return json.loads(text.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return failed("the environment's interpreter answered with something that is not the probe's JSON", log_tail=redact(text[-2000:]), exit_code=3)
