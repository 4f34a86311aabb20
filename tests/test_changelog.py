"""CHANGELOG.md keeps Keep a Changelog form, states Semantic Versioning and what breaks, and names
the package's version: the newest release section is `reprogate.__version__` unless Unreleased
holds changes. The lead's 0.6.0 bump (fill Unreleased, rename it, bump the version) passes at
every step; a bump with nothing said for it, or a release without a section, does not."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest
from support import REPO

from reprogate import __version__

pytestmark = pytest.mark.core  # runs on macOS and Windows too (ci.yml's core job)


def load_tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location("changelog_tool", REPO / "tools" / "changelog.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["changelog_tool"] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


tool = load_tool()
TEXT = (REPO / "CHANGELOG.md").read_text(encoding="utf-8")


def problems(text: str, version: str = __version__) -> list[str]:
    return tool.check(tool.parse(text), version)


def test_the_changelog_holds_the_form_and_this_version() -> None:
    assert problems(TEXT) == []
    changelog = tool.parse(TEXT)
    assert changelog.releases and changelog.releases[-1].name == "0.1.0"
    assert changelog.unreleased is None or changelog.sections[0] is changelog.unreleased


def test_the_command_line_checks_the_repository_and_prints_a_section() -> None:
    done = subprocess.run([sys.executable, str(REPO / "tools" / "changelog.py"), "check"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    notes = subprocess.run([sys.executable, str(REPO / "tools" / "changelog.py"), "notes", "0.4.0"], capture_output=True, text=True)
    assert notes.returncode == 0 and notes.stdout.startswith("A release a user can install"), notes.stdout[:200]
    assert "## [0.3.1]" not in notes.stdout and "[0.4.0]: https://" not in notes.stdout
    missing = subprocess.run([sys.executable, str(REPO / "tools" / "changelog.py"), "notes", "9.9.9"], capture_output=True, text=True)
    assert missing.returncode == 1 and "no '## [9.9.9] - DATE' section" in missing.stderr


def filled(text: str) -> str:
    """Unreleased with one change under Added (what the lead writes from the fragments)."""
    return text.replace("## [Unreleased]\n\n### Added\n", "## [Unreleased]\n\n### Added\n\n- Something new.\n", 1)


def released(text: str, version: str, date: str) -> str:
    """Unreleased filled, named `version` (its empty headings dropped), its link reference updated."""
    empty = "## [Unreleased]\n\n### Added\n\n### Changed\n\n### Fixed\n\n### Security\n"
    assert empty in text
    new = text.replace(empty, f"## [{version}] - {date}\n\n### Added\n\n- Something new.\n", 1)
    return new.replace(
        f"[Unreleased]: https://github.com/reprogate/reprogate/compare/v{__version__}...HEAD\n",
        f"[{version}]: https://github.com/reprogate/reprogate/compare/v{__version__}...v{version}\n",
    )


def test_the_leads_bump_passes_at_every_step() -> None:
    """Fill Unreleased (version unchanged, or bumped ahead); then name it 0.6.0 and bump."""
    assert problems(filled(TEXT), "0.5.0") == []
    assert problems(filled(TEXT), "0.6.0") == [], "a tree bumped before its section is named"
    bumped = released(TEXT, "0.6.0", "2026-12-15")
    assert problems(bumped, "0.6.0") == []
    with_new_unreleased = bumped.replace("## [0.6.0]", "## [Unreleased]\n\n## [0.6.0]", 1)
    with_new_unreleased += "[Unreleased]: https://github.com/reprogate/reprogate/compare/v0.6.0...HEAD\n"
    assert problems(with_new_unreleased, "0.6.0") == []


@pytest.mark.parametrize(
    "change, version, expected",
    [
        # a bump with nothing said for it: the tree claims a release the changelog does not have
        (lambda t: t, "0.6.0", "the package is 0.6.0 but the newest release here is 0.5.0"),
        # the section named, the version not bumped (two trees would both say 0.5.0)
        (lambda t: released(t, "0.6.0", "2026-12-15"), "0.5.0", "the package is 0.5.0 but the newest release here is 0.6.0"),
        # 0.5.0's own form, before this change
        (lambda t: t.replace("## [0.5.0] - 2026-12-01", "## 0.5.0 — 2026-12-01"), "0.5.0", "is neither '## [Unreleased]' nor"),
        (lambda t: t.replace("### Security\n\nFound by", "### Fixed (attacks)\n\nFound by", 1), "0.5.0", "'### Fixed (attacks)' is not one of"),
        (lambda t: t.replace("### Changed\n\nWhat an existing record or workflow means:", "### Fixed\n\nWhat", 1), "0.5.0", "repeats a subsection (Fixed"),
        (lambda t: t.replace("[0.4.0]: https://github.com/reprogate/reprogate/compare/v0.3.1...v0.4.0\n", ""), "0.5.0", "no link reference '[0.4.0]"),
        (lambda t: t.replace("## [0.4.0] - 2026-12-01", "## [0.6.1] - 2026-12-01"), "0.5.0", "0.5.0 is listed above 0.6.1"),
        (lambda t: t.replace("## [0.4.0] - 2026-12-01", "## [0.4.0] - 2027-01-01"), "0.5.0", "dated 2026-12-01, before 0.4.0"),
        (lambda t: t.replace("Semantic Versioning", "semver"), "0.5.0", "does not say 'Semantic Versioning'"),
        (lambda t: t.replace("**exit codes**", "**codes**"), "0.5.0", "does not say 'exit codes'"),
        (lambda t: t.replace("## [Unreleased]", "## [Unreleased]\n\n## [Unreleased]", 1), "0.5.0", "more than one '## [Unreleased]'"),
    ],
)
def test_a_changelog_out_of_form_fails(change: object, version: str, expected: str) -> None:
    found = problems(change(TEXT), version)  # type: ignore[operator]
    assert any(expected in p for p in found), found


def test_the_old_form_fails_whole() -> None:
    """0.5.0's CHANGELOG (before this form): every section is named as out of form."""
    old = subprocess.run(["git", "-C", str(REPO), "show", "fece23a:CHANGELOG.md"], capture_output=True, text=True)
    if old.returncode != 0:
        pytest.skip("the history before this change is not in this checkout")
    found = problems(old.stdout)
    assert len([p for p in found if "is neither" in p]) == 6 and any("Semantic Versioning" in p for p in found), found


def test_the_docs_state_the_versioning_policy() -> None:
    page = (REPO / "docs" / "releasing.md").read_text(encoding="utf-8")
    for term in ("Semantic Versioning", "record semantics", "exit codes", "CLI flags", "action inputs", "CHANGELOG.md"):
        assert term in page, term


def test_the_project_urls_name_the_documentation_and_the_changelog() -> None:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib
    urls = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["urls"]
    assert {"Documentation", "Changelog", "Source", "Issues"} <= set(urls)
    assert urls["Changelog"].endswith("/CHANGELOG.md") and "/docs" in urls["Documentation"]


def test_every_unreleased_heading_is_a_kind(tmp_path: Path) -> None:
    unreleased = tool.parse(TEXT).unreleased
    assert unreleased is not None and {s.kind for s in unreleased.subsections} <= set(tool.KINDS)
