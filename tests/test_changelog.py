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


UNRELEASED = "## [Unreleased]\n"
major, minor, _ = __version__.split(".")
NEXT = f"{major}.{int(minor) + 1}.0"  # the next release, however far the tree is


def filled(text: str) -> str:
    """Unreleased with one change under Added (what the lead writes from the fragments)."""
    assert UNRELEASED in text
    rest = text.split(UNRELEASED, 1)[1].lstrip("\n")
    rest = rest.removeprefix("### Added\n\n")  # an Unreleased that keeps its empty headings
    return text.split(UNRELEASED, 1)[0] + UNRELEASED + "\n### Added\n\n- Something new.\n\n" + rest


def released(text: str, version: str, date: str) -> str:
    """Unreleased filled, named `version` (its empty headings dropped), its link reference updated."""
    head, rest = filled(text).split(UNRELEASED, 1)
    rest = rest.replace("\n### Changed\n\n### Fixed\n\n### Security\n\n", "\n", 1)  # empty headings, where kept
    new = head + f"## [{version}] - {date}\n" + rest
    return new.replace(
        f"[Unreleased]: https://github.com/reprogate/reprogate/compare/v{__version__}...HEAD\n",
        f"[{version}]: https://github.com/reprogate/reprogate/compare/v{__version__}...v{version}\n",
    )


def test_the_leads_bump_passes_at_every_step() -> None:
    """Fill Unreleased (version unchanged, or bumped ahead); then name it the next release and bump."""
    assert problems(filled(TEXT), __version__) == []
    assert problems(filled(TEXT), NEXT) == [], "a tree bumped before its section is named"
    bumped = released(TEXT, NEXT, "2027-01-15")
    assert problems(bumped, NEXT) == [], bumped[:3000]
    with_new_unreleased = bumped.replace(f"## [{NEXT}]", f"## [Unreleased]\n\n## [{NEXT}]", 1)
    with_new_unreleased += f"[Unreleased]: https://github.com/reprogate/reprogate/compare/v{NEXT}...HEAD\n"
    assert problems(with_new_unreleased, NEXT) == []


@pytest.mark.parametrize(
    "change, version, expected",
    [
        # a bump with nothing said for it: the tree claims a release the changelog does not have
        (lambda t: t, NEXT, f"the package is {NEXT} but the newest release here is {__version__}"),
        # the section named, the version not bumped (two trees would both say the same version)
        (lambda t: released(t, NEXT, "2027-01-15"), __version__, f"the package is {__version__} but the newest release here is {NEXT}"),
        # 0.5.0's own form, before this change
        (lambda t: t.replace("## [0.5.0] - 2026-12-01", "## 0.5.0 — 2026-12-01"), __version__, "is neither '## [Unreleased]' nor"),
        (lambda t: t.replace("### Security\n\nFound by", "### Fixed (attacks)\n\nFound by", 1), __version__, "'### Fixed (attacks)' is not one of"),
        (lambda t: t.replace("### Changed\n\nWhat an existing record or workflow means:", "### Fixed\n\nWhat", 1), __version__, "repeats a subsection (Fixed"),
        (lambda t: t.replace("[0.4.0]: https://github.com/reprogate/reprogate/compare/v0.3.1...v0.4.0\n", ""), __version__, "no link reference '[0.4.0]"),
        (lambda t: t.replace("## [0.4.0] - 2026-12-01", "## [0.6.1] - 2026-12-01"), __version__, "is listed above 0.6.1"),
        (lambda t: t.replace("## [0.4.0] - 2026-12-01", "## [0.4.0] - 2027-01-01"), __version__, "dated 2026-12-01, before 0.4.0"),
        (lambda t: t.replace("Semantic Versioning", "semver"), __version__, "does not say 'Semantic Versioning'"),
        (lambda t: t.replace("**exit codes**", "**codes**"), __version__, "does not say 'exit codes'"),
        (lambda t: t.replace("## [Unreleased]", "## [Unreleased]\n\n## [Unreleased]", 1), __version__, "more than one '## [Unreleased]'"),
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
