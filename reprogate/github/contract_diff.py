"""What a pull request changes in a record's contract, and in which direction.

The base's contract judges the rebuild (rebuild/judged_by.py); a change to it takes effect only
through a baseline promotion. Reviewers approving one should see at a glance whether it loosens
the contract (a weaker level, a larger tolerance, fewer tensors or steps, a wider interval or
envelope, a smaller α) or tightens it. Anything else is shown as changed.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from reprogate.core.shapes import table
from reprogate.output.markdown import code_span
from reprogate.rebuild.judged_by import JUDGING, JUDGING_IN_JOB

LEVELS = ("startup", "statistical", "behavioral", "bitwise")  # weakest first
LOOSER_WHEN_LARGER = (
    "contract.tolerance.abs",
    "contract.tolerance.rel",
    "contract.metric.margin",
    "contract.metric.resolution",
    "contract.envelope.nodes.max",
    "contract.metric.detect.absolute",  # only a larger shift need be caught
    "contract.metric.detect.relative",
)
LOOSER_WHEN_ADDED_VALUE = ("contract.tolerance.abs", "contract.tolerance.rel", "contract.metric.margin")  # none before: exact
LOOSER_WHEN_SMALLER = (
    "contract.steps.count",
    "contract.metric.alpha",
    "contract.metric.interval.low",
    "contract.metric.detect.power",
    "contract.metric.rebuild_seeds",
)
LOOSER_WHEN_ADDED = ("contract.envelope",)  # more GPU models, world sizes, topology changes: more places count as reproduced


@dataclass(frozen=True)
class ContractChange:
    field: str
    base: Any
    head: Any
    effect: str  # loosened, tightened, changed


def contract_changes(base: dict[str, Any] | None, head: dict[str, Any] | None) -> list[ContractChange]:
    """The leaves of what judges a rebuild (`contract`, `seeds`, `reference`, the `semantics` the
    record means and how its environment is made, `job.environment`, `job.config`:
    rebuild/judged_by.py) that differ between two versions of a record. A pull request that adds
    `semantics` to an old record (as `validate`'s realizer-implicit hint asks) is shown here too:
    like the contract it takes effect only through a baseline promotion."""
    if not isinstance(base, dict) or not isinstance(head, dict):
        return []
    before = dict(_leaves(_judging(base), ""))
    after = dict(_leaves(_judging(head), ""))
    changes = []
    for field in sorted(before.keys() | after.keys()):
        old, new = before.get(field), after.get(field)
        if _same(old, new) or field.endswith((".computed_at", ".computed_by")):
            continue
        changes.append(ContractChange(field, old, new, _effect(field, old, new)))
    return changes


def _judging(record: dict[str, Any]) -> dict[str, Any]:
    job = table(record, "job")
    judged = {k: record.get(k) for k in JUDGING}
    judged["job"] = {k: job.get(k) for k in JUDGING_IN_JOB}
    return judged


def _leaves(node: Any, prefix: str) -> list[tuple[str, Any]]:
    if isinstance(node, dict):
        return [leaf for key, value in node.items() for leaf in _leaves(value, f"{prefix}.{key}" if prefix else str(key))]
    return [(prefix, node)]


def _same(a: Any, b: Any) -> bool:
    return json.dumps(a, sort_keys=True, default=str) == json.dumps(b, sort_keys=True, default=str)


def _effect(field: str, old: Any, new: Any) -> str:
    if field == "contract.level" and old in LEVELS and new in LEVELS:
        return "loosened" if LEVELS.index(new) < LEVELS.index(old) else "tightened"
    if _numbers(old, new):
        if field in LOOSER_WHEN_LARGER or field == "contract.metric.interval.high":
            return "loosened" if new > old else "tightened"
        if field in LOOSER_WHEN_SMALLER:
            return "loosened" if new < old else "tightened"
    if isinstance(old, list) and isinstance(new, list):
        gone, added = [x for x in old if x not in new], [x for x in new if x not in old]
        if field == "contract.tensors":
            return "loosened" if gone else "tightened"
        if field.startswith(LOOSER_WHEN_ADDED):
            return "loosened" if added and not gone else "tightened" if gone and not added else "changed"
    if field == "seeds.replay":  # replayed seeds are not independent of the reference: a deterministic build passes them by rerunning
        return "loosened" if new is not None else "tightened"
    if old is None and field in LOOSER_WHEN_ADDED_VALUE:
        return "loosened"
    if new is None and field in LOOSER_WHEN_ADDED_VALUE:
        return "tightened"
    if field == "contract.envelope.nodes.min" and _numbers(old, new):
        return "loosened" if new < old else "tightened"
    return "changed"


def _numbers(*values: Any) -> bool:
    return all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)


def markdown_table(path: str, changes: Sequence[ContractChange]) -> list[str]:
    """The comment's rows for one record (text from the pull request in code spans)."""

    def shown(value: Any) -> str:
        return "—" if value is None else code_span(json.dumps(value, default=str)[:80], in_table=True)

    lines = [
        f"Contract changes in {code_span(path)} (the base's contract judges this rebuild; these take effect only through a baseline promotion):",
        "",
        "| field | base | pull request | |",
        "|---|---|---|---|",
    ]
    lines += [f"| {code_span(c.field, in_table=True)} | {shown(c.base)} | {shown(c.head)} | **{c.effect}** |" for c in changes[:40]]
    if len(changes) > 40:
        lines.append(f"| … {len(changes) - 40} more | | | |")
    return lines


__all__ = ["ContractChange", "contract_changes", "markdown_table"]
