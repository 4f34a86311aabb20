"""A verdict as the Markdown a reviewer reads in a pull request, or as JSON.

Sections: the verdict and diagnosis, the stage table, the bounded claim and what it does not
cover, the reference and rebuilt environments side by side, the statistical tests with α, n, m and power, the reference and rebuilt loss curves as a
Mermaid xychart-beta (GitHub renders it), the failing run's log tail, and the way forward when the
rebuild failed: what to do about the stage that failed first (WAY_FORWARD), and, where the change
is meant, a new reference record promoted through the baseline label — never a bypass.
"""

from __future__ import annotations

import json
import re
from typing import Any

from reprogate.output.markdown import cell, code_block, one_line

ICONS = {"pass": "✅", "fail": "❌", "skipped": "⏭️", "not-run": "⏸️"}
MAX_POINTS = 60
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


MENTION = re.compile(r"(?<![\w.])@(?=\w)")  # @user notifies; repo@sha256:... (after a letter) does not


def _inline(text: Any) -> str:
    """Text a pull request may have shaped (config keys, paths, package names, reasons) made inert
    as Markdown outside its code spans: no HTML, no links or images, no @mentions that notify people.
    Code spans (backticks, which stage details use on purpose) are literal already and kept."""
    parts = str(text).split("`")
    for i in range(0, len(parts), 2):  # even parts lie outside code spans
        parts[i] = parts[i].replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("](", "]\\(")
        parts[i] = MENTION.sub("@\u2060", parts[i])
    return "`".join(parts)


def _cell(text: Any) -> str:
    return cell(_inline(text))


def _downsample(points: list[list[float]] | list[tuple[int, float]], limit: int = MAX_POINTS) -> list[tuple[int, float]]:
    pts = [(int(s), float(v)) for s, v in points]
    if len(pts) <= limit:
        return pts
    stride = len(pts) / limit
    picked = [pts[int(i * stride)] for i in range(limit)]
    return picked[:-1] + [pts[-1]]


def mermaid_chart(reference: list[Any], rebuilt: list[Any]) -> str:
    """xychart-beta with both loss curves on the reference's steps."""
    ref = _downsample(reference)
    if not ref:
        return ""
    steps = [s for s, _ in ref]
    rebuilt_by_step = {int(s): float(v) for s, v in rebuilt}
    new = [rebuilt_by_step.get(s) for s in steps]
    values = [v for _, v in ref] + [v for v in new if v is not None]
    low, high = min(values), max(values)
    pad = (high - low) * 0.05 or 0.01
    lines = [
        "```mermaid",
        "xychart-beta",
        '    title "Training loss: reference (first line) and rebuild (second line)"',
        f'    x-axis "step" [{", ".join(str(s) for s in steps)}]',
        f'    y-axis "loss" {low - pad:.4g} --> {high + pad:.4g}',
        f"    line [{', '.join(f'{v:.5g}' for _, v in ref)}]",
    ]
    if any(v is not None for v in new):
        filled, last = [], ref[0][1]
        for value in new:  # xychart has no gaps: a step the rebuild did not reach repeats its last value
            last = value if value is not None else last
            filled.append(last)
        lines.append(f"    line [{', '.join(f'{v:.5g}' for v in filled)}]")
    lines.append("```")
    return "\n".join(lines)


def markdown(verdict: dict[str, Any]) -> str:
    passed = verdict["verdict"] == "pass"
    record = verdict["record"]
    stopped = not passed and verdict.get("exit_code") in (2, 3)  # nothing compared: not a failed reproduction
    outcome = "passed" if passed else ("could not run" if stopped else "failed")
    icon = ICONS["pass"] if passed else ("⚠️" if stopped else ICONS["fail"])
    name = record.get("name") or record.get("path")  # the verdict schema requires the path, not the name
    head = f"## {icon} Reproduction {outcome}: `{name}` ({record['level']} contract)"
    lines = [head, ""]
    if stopped:
        lines += [f"**Diagnosis:** the rebuild stopped at the **{verdict['diagnosis']}** stage before anything was compared.", ""]
    elif not passed:
        lines += [f"**Diagnosis:** the first difference is at the **{verdict['diagnosis']}** stage.", ""]
    lines += ["| stage | result | time | detail |", "|---|---|---|---|"]
    for stage in verdict["stages"]:
        lines.append(f"| {stage['name']} | {ICONS.get(stage['status'], '')} {stage['status']} | {stage['seconds']:.1f} s | {_cell(stage['detail'])} |")
    claim = verdict["claim"]
    lines += ["", "### Claim", "", one_line(_inline(claim["text"])), ""]
    if claim["not_covered"]:
        lines += ["This claim does not cover:", *[f"- {_cell(item)}" for item in claim["not_covered"]], ""]
    compared = (verdict.get("environment") or {}).get("compared") or []
    if compared:
        lines += ["### Environment: reference and rebuild", "", "| | reference (the record) | rebuild (inside the ranks' environment) |", "|---|---|---|"]
        lines += [f"| {_cell(row['what'])} | {_cell(row['reference'])} | {'' if row['same'] else '≠ '}{_cell(row['rebuilt'])} |" for row in compared]
        lines.append("")
    if verdict["tests"]:
        lines += ["### Tests", "", "| test | result | details |", "|---|---|---|"]
        for test in verdict["tests"]:
            shown = {k: v for k, v in test.items() if k not in ("test", "passed", "values", "reference", "power", "seeds_note", "notice")}
            lines.append(f"| {test['test']} | {'pass' if test['passed'] else 'fail'} | {_cell(', '.join(f'{k}={_short(v)}' for k, v in shown.items()))} |")
        lines.append("")
        for test in verdict["tests"]:
            stated = test.get("power") or {}
            if stated:
                lines.append(f"- {_cell(test['test'])}: " + _cell(", ".join(f"{k.replace('_', ' ')} {_short(v)}" for k, v in stated.items())))
            if test.get("seeds_note"):
                lines.append(f"- seeds: {_cell(test['seeds_note'])}")
            if test.get("notice"):
                lines.append(f"- notice: {_cell(test['notice'])}")
        lines.append("")
    curves = verdict.get("curves") or {}  # optional in the verdict schema
    chart = mermaid_chart(curves.get("reference") or [], curves.get("rebuilt") or [])
    if chart:
        lines += ["### Loss", "", chart, ""]
    tail = next((s.get("log_tail") for s in verdict["stages"] if s.get("log_tail")), None)
    if tail:
        lines += ["### Log tail of the failing run", "", *code_block(tail, "text"), ""]
    if not passed:
        lines += ["### Way forward", "", way_forward(verdict), ""]
    lines.append(f"<sub>{verdict['tool']} · record digest `{record['digest'][20:36]}…` · {verdict['seconds']:.1f} s · {verdict['started_at']}</sub>")
    return "\n".join(lines) + "\n"


def way_forward(verdict: dict[str, Any]) -> str:
    """What to do about a failed rebuild: specific to the stage that failed first."""
    if verdict.get("infrastructure"):
        return INFRASTRUCTURE
    stage = str(verdict.get("diagnosis"))
    specific = WAY_FORWARD.get(stage, "")
    tail = " reprogate has no bypass flag: whatever makes the gate pass is stated in the record, where reviewers see it."
    promote = "" if stage == "preflight" else " " + PROMOTE
    return (specific + promote + tail).strip()


def _short(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, list) and all(isinstance(v, float) for v in value):
        return "[" + ", ".join(f"{v:.4g}" for v in value) + "]"
    return str(value)


def render(verdict: dict[str, Any], fmt: str) -> str:
    return json.dumps(verdict, indent=2) + "\n" if fmt == "json" else markdown(verdict)
