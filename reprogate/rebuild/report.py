"""A verdict as the Markdown a reviewer reads in a pull request, or as JSON.

Above the fold, what a reviewer must see: the verdict, the diagnosis (the first difference the
trace records, then the first stage that failed), the failing stages, the loss section
(rebuild/loss_chart.py: how far the rebuild's loss is from the reference's, on a log scale, with
the first divergence and the tolerance drawn), and the bounded claim and what it does not cover. Then the
reference and rebuilt environments side by side (a reference value the record did not capture
is taken from the reference trace's meta and marked so), the statistical tests with α, n, m and
power, the failing run's log tail, and the way forward when the rebuild failed: what to do about
the stage that failed first (WAY_FORWARD), and, where the change is meant, a new reference record
promoted through the baseline label — never a bypass. Every stage, in runbook order, is folded in
`<details>` at the end: passing stages are context, not news.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from reprogate.core.frozen import thaw
from reprogate.output.markdown import cell, code_block, code_span, inline, one_line, plain
from reprogate.rebuild import loss_chart
from reprogate.rebuild.comparisons import StatedTest
from reprogate.rebuild.verdict import StageRecord, Verdict
from reprogate.rebuild.verdict_environment import ComparedRow

ICONS = {"pass": "✅", "fail": "❌", "skipped": "⏭️", "not-run": "⏸️"}
PROMOTE = (
    "If the change is intended, record a new reference run on it (`reprogate init`, or `reprogate capture --into`, "
    "the reference seeds and `reprogate interval`) and promote it through the baseline label; its own rebuild must pass."
)
# What to do when a stage is the first to fail, by stage (rebuild.stages.STAGES names them all).
WAY_FORWARD: dict[str, str] = {
    "artifacts": "An addressed file is missing or no longer what the record pins (the paths are named above). If the code in "
    "the project folder changed on purpose, that is a new reference. If a file is missing, commit it, or fetch the full "
    "history (`actions/checkout` with `fetch-depth: 0`) so the pinned versions can be found.",
    "digest": "The environment could not be realized, or it is not the one pinned (uv's or the engine's message is above). "
    "Fix the lock file or the image; pin images by digest (`reprogate image resolve REF`). With `--environment candidate` "
    "this is the pull request's own lock file or Dockerfile failing to build.",
    "preflight": "A rank could not prove its devices, framework or collective before any data was fetched: this is the "
    "runner, not the change. Run `reprogate preflight` on the runner, check its GPUs, driver and network, and rerun.",
    "dataset": "The shards no longer match the manifest the record pins (the shards are named above). Restore them from the "
    "dataset's namespace (`reprogate dataset verify MANIFEST --root ...` shows which), or, if the data changed on purpose, "
    "write a new manifest (`reprogate dataset manifest`).",
    "config": "The configuration differs from the reference's (the keys are named above). Revert the change, or make it a new reference.",
    "envelope": "This rebuild lies outside the contract's envelope, or the record contradicts its own reference trace "
    "(both named above). Run on a machine inside the envelope, or correct the record; an envelope is widened only in "
    "the record, on purpose, where reviewers see it — never by a rebuild.",
    "run": "The entrypoint failed or wrote no trace (log tail below). Run it as the rebuild does — each rank with "
    "REPROGATE_SEED, REPROGATE_TRACE_DIR and torchrun's variables, in the realized environment — and fix the script "
    "or the environment it needs.",
    "batches": "A step saw other input batches: data order, sampler seeding, preprocessing or the world size changed. "
    "Check that the script seeds its sampler from `seed_everything`'s generator and reads the data the manifest pins.",
    "model-state": "The model's bits differ at the step named above; the loss line says whether the numbers moved too. "
    "Kernels, library versions and thread counts change bits: pin them (execution.env, the portable CPU mode), or, if "
    "equal bits are more than this run needs, state a behavioral contract in the record.",
    "steps": "The per-step numbers left the declared tolerance at the step named above. Find what changed the numbers "
    "(a library bump in the lock file is the usual cause); a tolerance is changed only in the record, on purpose.",
    "metric": "The evaluation metric fell outside the interval predeclared from the reference seeds (or the equivalence "
    "test failed). Rebuild more seeds (`--seeds N`; `reprogate interval RECORD --plan` says how many a shift needs) to tell noise from a shift; a metric "
    "resolution or margin is changed only in the record.",
}
INFRASTRUCTURE = (
    "The rebuild could not run to a verdict (the stage above says why): fix the runner or the service and rerun. The status is `error`, never a pass."
)
# What to do when the failing stage says what it blames (the verdict's stage `cause`): this, not the
# stage's general advice, so the way forward never contradicts the diagnosis above it.
BY_CAUSE: dict[str, str] = {
    "lock-file": "The environment made from the record's lock file cannot import a module its ranks need (named above): the lock "
    "file is incomplete, not the runner. Re-lock it with every dependency of its pins (`uv pip compile --generate-hashes`), "
    "check that `reprogate rebuild RECORD --environment candidate` passes on the new lock, and let the pull request's own "
    "rebuild judge it.",
    "image": "The image the record pins cannot import a module its ranks need (named above): the image lacks it, not the "
    "runner. Rebuild the image with the module installed, pin the new one by digest (`reprogate image resolve REF`), and let "
    "the pull request's own rebuild judge it.",
}


def _inline(text: Any) -> str:
    """Text a pull request may have shaped (config keys, paths, package names, reasons) made inert
    as Markdown outside the code spans its producer wrote on purpose (output.markdown.inline)."""
    return inline(str(text))


def _cell(text: Any) -> str:
    return cell(str(text))


def _whose_code(verdict: Verdict) -> list[str]:
    """Who wrote the evidence (rebuild/code_origin.py): the base's reviewed tree, or the pull
    request's own code, which only the approval of the rebuild vouches for."""
    code = verdict.environment.code
    if code is None:
        return []
    if code.ran == "pull-request":
        return [
            f"**Evidence from the pull request's own code:** {_inline(code.detail)}. That code wrote the traces and digests compared; "
            "the approval of this rebuild is what vouches for it.",
            "",
        ]
    if code.ran == "base":
        line = "**Reviewed code:** only environment pins changed, so the base's project tree ran in this pull request's environment."
        if code.environment_changed:
            line += (
                " That environment (the packages, image or recipe the pull request pins) is code too and ran with the training;"
                " the approval of this rebuild is what vouches for it."
            )
        return [line, ""]
    return []


def markdown(verdict: Verdict) -> str:
    passed = verdict.passed
    record = verdict.record
    stopped = not passed and verdict.exit_code in (2, 3)  # nothing compared: not a failed reproduction
    outcome = "passed" if passed else ("could not run" if stopped else "failed")
    icon = ICONS["pass"] if passed else ("⚠️" if stopped else ICONS["fail"])
    name = record.name or record.path  # the verdict schema requires the path, not the name
    head = f"## {icon} Reproduction {outcome}: {code_span(str(name))} ({plain(str(record.level))} contract)"
    lines = [head, ""]
    if stopped:
        lines += [f"**Diagnosis:** the rebuild stopped at the **{plain(str(verdict.diagnosis))}** stage before anything was compared.", ""]
    elif not passed:
        lines += [diagnosis_line(verdict), ""]
    lines += _whose_code(verdict)
    failing = [stage for stage in verdict.stages if stage.status == "fail"]
    if failing:
        lines += [*_stage_table(failing), ""]
    lines += loss_chart.section(verdict)
    claim = verdict.claim
    lines += ["### Claim", "", _inline(claim.text), ""]
    if claim.not_covered:
        lines += ["This claim does not cover:", *[f"- {_cell(item)}" for item in claim.not_covered], ""]
    compared = verdict.environment.compared
    if compared:
        lines += ["### Environment: reference and rebuild", "", "| | reference (the record) | rebuild (inside the ranks' environment) |", "|---|---|---|"]
        lines += [f"| {_cell(row.what)} | {_reference_cell(row)} | {'' if row.same else '≠ '}{_cell(thaw(row.rebuilt))} |" for row in compared]
        lines.append("")
    if verdict.tests:
        lines += ["### Tests", "", "| test | result | details |", "|---|---|---|"]
        for test in verdict.tests:
            lines.append(f"| {_cell(test.kind)} | {'pass' if test.passed else 'fail'} | {_cell(_test_details(test))} |")
        lines.append("")
        for test in verdict.tests:
            stated = test.power
            if stated:
                lines.append(f"- {_cell(test.kind)}: " + _cell(", ".join(f"{k.replace('_', ' ')} {_short(v)}" for k, v in stated.items())))
            if test.seeds_note:
                lines.append(f"- seeds: {_cell(test.seeds_note)}")
            if test.notice:
                lines.append(f"- notice: {_cell(test.notice)}")
        lines.append("")
    tail = verdict.log_tail
    if tail:
        lines += ["### Log tail of the failing run", "", *code_block(tail, "text"), ""]
    if not passed:
        lines += ["### Way forward", "", way_forward(verdict), ""]
    lines += ["<details>", f"<summary>{_stages_summary(verdict.stages)}</summary>", "", *_stage_table(verdict.stages), "", "</details>", ""]
    logs = verdict.logs
    if logs:
        shown = ", ".join(code_span(str(log)) for log in logs[:8]) + (f" and {len(logs) - 8} more" if len(logs) > 8 else "")
        lines += [f"The training script's output of every rank is kept beside this report: {shown}.", ""]
    lines.append(
        f"<sub>{plain(str(verdict.tool))} · record digest {code_span(str(record.digest)[20:36] + '…')} · "
        f"{verdict.seconds:.1f} s · {plain(str(verdict.started_at))}</sub>"
    )
    return "\n".join(lines) + "\n"


STEP_POINTS = ("first_outside", "max_deviation")  # a steps test's points, shown as one figure each


def _test_details(test: StatedTest) -> str:
    """A test's parameters, `key=value`; a steps test's first point outside and largest
    difference as one figure each, named by quantity, step and rank and written as the stage
    detail and the loss section write them (3 significant digits)."""
    skip = {"values", "reference", "power", "seeds_note", "notice"}
    points = test.step_points
    words = [f"{k}={_short(v)}" for k, v in test.parameters if k not in skip and not (points and k.startswith(STEP_POINTS))]
    if points:
        outside, rank, quantity = test.first_outside
        if outside is not None:
            words.append(f"first outside: {quantity} at step {outside}, rank {rank}")
        largest, step, rank, quantity = test.largest
        if step is not None:
            size = f"{largest:.3g}" if isinstance(largest, int | float) else "no finite value in the rebuild"
            words.append(f"largest difference: {size} ({quantity} at step {step}, rank {rank})")
    return ", ".join(words)


def _stage_table(stages: Sequence[StageRecord]) -> list[str]:
    rows = ["| stage | result | time | detail |", "|---|---|---|---|"]
    for stage in stages:
        rows.append(f"| {_cell(stage.name)} | {ICONS.get(stage.status, '')} {_cell(stage.status)} | {stage.seconds:.1f} s | {_cell(stage.detail)} |")
    return rows


STATUS_WORDS = {"pass": "passed", "fail": "failed", "skipped": "skipped", "not-run": "not run"}


def _stages_summary(stages: Sequence[StageRecord]) -> str:
    """The fold's one line: how many stages ended how ("All 11 stages: 9 passed, 1 failed, 1 not run")."""
    counts: dict[str, int] = {}
    for stage in stages:
        counts[stage.status] = counts.get(stage.status, 0) + 1
    if set(counts) == {"pass"}:
        return f"All {len(stages)} stages passed"
    return f"All {len(stages)} stages: " + ", ".join(f"{n} {STATUS_WORDS.get(status, status)}" for status, n in counts.items())


def _reference_cell(row: ComparedRow) -> str:
    """A reference value; one the record did not capture, read from the reference trace, says so."""
    value = _cell(thaw(row.reference))
    return f"{value} *(from the reference trace)*" if row.from_trace else value


def diagnosis_line(verdict: Verdict) -> str:
    """The cause first, the stage where it shows second: the first scalar of the trace that
    differs (an input such as `lr` before the loss and the weights it goes on to change), then the
    first stage that failed. Without a traced difference, the stage alone."""
    stage = f"**{plain(str(verdict.diagnosis))}**"
    cause = verdict.first_difference
    if cause is not None and cause.text:
        role = "an input to the step" if cause.role == "input" else "computed by the step"
        first = "the first value the trace records outside the contract" if cause.judged == "tolerance" else "the first difference the trace records"
        return f"**Diagnosis:** {_inline(one_line(cause.text))} ({role}, {first}); the first stage that fails is {stage}."
    return f"**Diagnosis:** the first difference is at the {stage} stage."


def way_forward(verdict: Verdict) -> str:
    """What to do about a failed rebuild: what the failing stage blames where it says (a pinned
    lock file or image is not the runner), else the advice for the stage that failed first."""
    if verdict.infrastructure:
        return INFRASTRUCTURE
    stage = str(verdict.diagnosis)
    cause = verdict.cause
    specific = BY_CAUSE.get(cause or "") or WAY_FORWARD.get(stage, "")
    tail = " reprogate has no bypass flag: whatever makes the gate pass is stated in the record, where reviewers see it."
    runner = cause == "runner" or (cause is None and stage == "preflight")
    promote = "" if runner else " " + PROMOTE
    return (specific + promote + tail).strip()


def _short(value: Any) -> str:
    value = thaw(value)
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, list) and all(isinstance(v, float) for v in value):
        return "[" + ", ".join(f"{v:.4g}" for v in value) + "]"
    return str(value)


def render(verdict: Verdict, fmt: str) -> str:
    """The verdict as JSON (as this reprogate reads it: what an older one left out is filled in as
    `Verdict.from_json` says) or as the Markdown report."""
    return json.dumps(verdict.to_json(), indent=2) + "\n" if fmt == "json" else markdown(verdict)
