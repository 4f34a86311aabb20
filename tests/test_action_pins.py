"""Nothing pins an action that will not run: every `uses:` in the action, the repository's
workflows and the example workflows names a commit and tag that `.github/action-pins.toml` lists,
and every listed action runs on a runtime GitHub's hosted runners still have (Node 20 is gone from
them since 2026-09). A composite action counts through the actions it uses."""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - the 3.10 CI leg
    import tomli as tomllib

import pytest
from support import REPO

from reprogate.core.documents import load_document

PINS = REPO / ".github" / "action-pins.toml"
# runs.using values a hosted runner executes today; node20 and older are not among them
SUPPORTED_RUNTIMES = frozenset({"node24", "composite", "docker"})
PINNED_FILES = sorted([REPO / "action.yml", *(REPO / ".github" / "workflows").glob("*.yml"), *(REPO / "examples" / "workflows").glob("*.yml")])
OWN_ACTION = "reprogate/reprogate"  # the example workflows' placeholder pin of this action itself
TAG_COMMENT = re.compile(r"#\s*(v\d[\w.-]*)")


@dataclass(frozen=True)
class Use:
    """One `uses:` of a workflow or action: where, which action, which commit, which tag its comment names."""

    where: str
    action: str
    sha: str
    tag: str | None


def uses_in(path: Path) -> list[Use]:
    """Every step's `uses:` (read as YAML), with the tag its line's comment names (YAML drops comments)."""
    document = load_document(path)
    lines = path.read_text(encoding="utf-8").splitlines()

    def walk(node: object) -> list[str]:
        if isinstance(node, dict):
            found = [v for k, v in node.items() if k == "uses" and isinstance(v, str)]
            return found + [u for v in node.values() for u in walk(v)]
        if isinstance(node, list):
            return [u for v in node for u in walk(v)]
        return []

    found = []
    for reference in walk(document.data):
        if reference.startswith(("./", "docker://")):
            continue
        action, _, sha = reference.partition("@")
        line = next((text for text in lines if re.search(rf"uses:\s*{re.escape(reference)}(\s|$)", text)), "")
        comment = TAG_COMMENT.search(line.partition(reference)[2])
        where = str(path.relative_to(REPO)) if path.is_relative_to(REPO) else str(path)
        found.append(Use(where, action, sha, comment.group(1) if comment else None))
    return found


def load_pins(path: Path = PINS) -> list[dict[str, object]]:
    return list(tomllib.loads(path.read_text(encoding="utf-8"))["pin"])


def problems(files: list[Path], pins: list[dict[str, object]]) -> list[str]:
    """What is wrong with the pins of `files` against the table: an empty list when nothing is."""
    rows = {(str(p["action"]), str(p["sha"])): p for p in pins}
    found: list[str] = []
    for row in pins:
        if row["runtime"] not in SUPPORTED_RUNTIMES:
            found.append(f"{row['action']}@{row['tag']} runs on {row['runtime']}, which hosted runners no longer have: pin a release on node24")
        for inner in row.get("uses", []):  # type: ignore[attr-defined]
            action, _, sha = str(inner).partition("@")
            if (action, sha) not in rows:
                found.append(f"{row['action']}@{row['tag']} uses {inner}, which the table does not list (check its runtime and add it)")
    for path in files:
        for use in uses_in(path):
            if use.action == OWN_ACTION:
                continue
            row = rows.get((use.action, use.sha))
            if row is None:
                found.append(f"{use.where}: {use.action}@{use.sha} is not in .github/action-pins.toml (check its action.yml's runs.using and add it)")
            elif use.tag != row["tag"]:
                found.append(f"{use.where}: {use.action}@{use.sha} says {use.tag}, the table says {row['tag']}")
    return found


def test_every_pin_is_listed_with_a_runtime_hosted_runners_run() -> None:
    assert PINNED_FILES and load_pins()
    assert problems(PINNED_FILES, load_pins()) == []


def test_every_row_is_used_somewhere() -> None:
    """A row nothing pins is a check nobody needs; inner pins of a composite row count as used."""
    pins = load_pins()
    used = {(u.action, u.sha) for path in PINNED_FILES for u in uses_in(path)}
    used |= {tuple(str(inner).partition("@")[::2]) for row in pins for inner in row.get("uses", [])}  # type: ignore[attr-defined]
    assert [row for row in pins if (row["action"], row["sha"]) not in used] == []


def test_one_release_of_each_action_everywhere() -> None:
    """Dependabot bumps .github/workflows and action.yml; the example workflows are not in its
    reach, so this holds them to the same release."""
    releases: dict[str, set[str]] = {}
    for path in PINNED_FILES:
        for use in uses_in(path):
            releases.setdefault(use.action, set()).add(use.sha)
    assert {action: shas for action, shas in releases.items() if len(shas) > 1} == {}


@pytest.mark.parametrize(
    "pin, runtime, expected",
    [
        # the composite action's cache pin of 0.5.0: actions/cache v4.2.0, a node20 action
        ("actions/cache/restore@1bd1e32a3bdc45362d1e726936510720a7c30a57 # v4.2.0", "node20", "runs on node20"),
        # a pin the table does not know at all
        ("actions/checkout@11bd71901bbe5b1630ceea73d27597364c9af683 # v4.2.2", None, "is not in .github/action-pins.toml"),
        # the right commit with another release's name in its comment
        ("actions/checkout@3d3c42e5aac5ba805825da76410c181273ba90b1 # v6.0.2", None, "says v6.0.2, the table says v7.0.1"),
    ],
)
def test_a_pin_on_a_removed_runtime_or_unchecked_fails(tmp_path: Path, pin: str, runtime: str | None, expected: str) -> None:
    workflow = tmp_path / "w.yml"
    workflow.write_text(f"on: push\njobs:\n  j:\n    runs-on: ubuntu-24.04\n    steps:\n      - uses: {pin}\n")
    pins = load_pins()
    if runtime is not None:
        action, _, rest = pin.partition("@")
        pins.append({"action": action, "sha": rest.split()[0], "tag": rest.split("# ")[1], "runtime": runtime})
    found = problems([workflow], pins)
    assert any(expected in line for line in found), found


def test_dependabot_watches_the_actions_and_pip() -> None:
    config = load_document(REPO / ".github" / "dependabot.yml").data
    ecosystems = {(u["package-ecosystem"], u["directory"]) for u in config["updates"]}
    assert {("github-actions", "/"), ("pip", "/")} <= ecosystems
    assert all(u["schedule"]["interval"] in ("daily", "weekly", "monthly") for u in config["updates"])
