"""The documentation a user reads: the README and docs/, built by mkdocs.

What goes stale in docs is what they point at: a link to a page or anchor that moved, a repository
path that was renamed (the README once described a layout of files that no longer existed), a
command reference that forgot an option. These tests hold each of them to the repository as it is.
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from functools import cache
from pathlib import Path
from types import ModuleType

import pytest
from support import REPO

from reprogate.core.config import DEFAULT_STATUS_CONTEXT, Config

PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
GITHUB = "https://github.com/reprogate/reprogate"
FENCE = re.compile(r"^```.*?^```", flags=re.M | re.S)
LINK = re.compile(r"\]\(([^)\s]+)\)")
# A repository path: slash-separated names (globs allowed), optionally ending in a slash.
PATHLIKE = re.compile(r"^\.?[\w-]+(?:/[\w.*-]+)+/?$")
# Names shaped like paths that are not paths: the default labels and status contexts, and the
# documents' apiVersion.
NOT_PATHS = {DEFAULT_STATUS_CONTEXT, Config.rebuild_label, Config.baseline_label, Config.baseline_context, "reprogate/v1"}


def _command_reference() -> ModuleType:
    spec = importlib.util.spec_from_file_location("command_reference", REPO / "tools" / "command_reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@cache
def _top_level() -> frozenset[str]:
    """The first path components the repository tracks (so `.venv/` or a user's `records/` are not
    mistaken for repository paths)."""
    if not (REPO / ".git").exists():  # an unpacked sdist: what it holds is what it tracks
        return frozenset(path.name for path in REPO.iterdir())
    names = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True).stdout.split()
    return frozenset(name.split("/", 1)[0] for name in names)


def _exists(path: str) -> bool:
    path = path.rstrip("/")
    return any(REPO.glob(path)) if "*" in path else (REPO / path).exists()


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site, built once for this module with --strict (every warning fails the build)."""
    site = tmp_path_factory.mktemp("mkdocs") / "site"
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(REPO / "mkdocs.yml"), "-d", str(site)], capture_output=True, text=True, cwd=REPO
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return site


def _anchors(html: Path) -> set[str]:
    return set(re.findall(r'\bid="([^"]+)"', html.read_text(encoding="utf-8")))


def _github_slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation but hyphens and underscores dropped,
    spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_mkdocs_builds_the_site_strictly(site: Path) -> None:
    """--strict turns every warning (a page left out of the nav, a link or anchor that does not
    resolve) into a failure; every page under docs/ is in the nav and built."""
    for page in sorted((REPO / "docs").glob("*.md")):
        built = site / ("index.html" if page.stem == "index" else f"{page.stem}/index.html")
        assert built.is_file(), f"docs/{page.name} was not built (missing from mkdocs.yml's nav?)"


def test_the_command_reference_is_current() -> None:
    module = _command_reference()
    committed = (REPO / "docs" / "commands.md").read_text(encoding="utf-8")
    assert committed == module.render(), "docs/commands.md is stale: run python tools/command_reference.py"


def test_the_command_reference_lists_every_command_and_option() -> None:
    """Not only current, but complete: every command and subcommand has its section, and each of
    its options appears in it."""
    import click

    from reprogate.cli import main

    page = (REPO / "docs" / "commands.md").read_text(encoding="utf-8")
    sections = dict(re.findall(r"^## (reprogate[^\n]*)\n\n```text\n(.*?)\n```", page, flags=re.M | re.S))

    def walk(command: click.Command, path: str, ctx: click.Context | None) -> None:
        here = click.Context(command, info_name=path.rsplit(" ", 1)[-1], parent=ctx)
        assert path in sections, f"no section for {path}"
        for param in command.params:
            if isinstance(param, click.Option) and not param.hidden:
                assert any(opt in sections[path] for opt in param.opts), f"{path}: {param.opts} not in its section"
        if isinstance(command, click.Group):
            for name in command.list_commands(here):
                sub = command.get_command(here, name)
                assert sub is not None
                walk(sub, f"{path} {name}", here)

    walk(main, "reprogate", None)


def test_the_check_mode_of_the_generator_fails_on_a_stale_page(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    module = _command_reference()
    stale = tmp_path / "commands.md"
    stale.write_text(module.render().replace("--strict", "--strikt", 1), encoding="utf-8")
    monkeypatch.setattr(module, "PAGE", stale)
    monkeypatch.setattr(module, "REPO", tmp_path)
    assert module.main(["--check"]) == 1
    assert module.main([]) == 0 and module.main(["--check"]) == 0


def test_the_site_opens_with_the_readmes_introduction() -> None:
    """cibuildwheel's way: one introduction, in the README and on the site's first page."""

    def intro(path: Path) -> str:
        text = path.read_text(encoding="utf-8")
        found = re.search(r"<!-- intro-start[^>]*-->\n(.*?)<!-- intro-end -->", text, flags=re.S)
        assert found, f"{path.name} has no intro-start/intro-end markers"
        return found.group(1)

    readme, index = intro(REPO / "README.md"), intro(REPO / "docs" / "index.md")
    assert readme == index and len(readme) > 200
    assert not LINK.search(readme), "the shared introduction must not hold relative links (they differ between README and docs/)"


def test_the_readme_stays_short_and_keeps_its_sections() -> None:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    assert len(text.encode()) <= 9000, f"README.md is {len(text.encode())} bytes: move detail into docs/"
    headings = re.findall(r"^## (.+)$", text, flags=re.M)
    wanted = ["Five minutes on the example", "The minimal workflow", "Exit codes", "Documentation"]
    assert [h for h in headings if h in wanted] == wanted, headings
    codes = re.findall(r"^\| (\d) \|", text.split("## Exit codes", 1)[1], flags=re.M)
    assert codes == ["0", "1", "2", "3", "4"]
    for page in sorted((REPO / "docs").glob("*.md")):
        assert page.name == "index.md" or f"](docs/{page.name})" in text, f"README's map does not link docs/{page.name}"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_every_link_resolves(page: Path, site: Path) -> None:
    """Relative links reach a file of the repository (and an anchor of the built page);
    links to this repository on GitHub name a path that exists (and a README heading)."""
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    readme_anchors = {_github_slug(h) for h in re.findall(r"^#+ (.+)$", (REPO / "README.md").read_text(encoding="utf-8"), flags=re.M)}
    broken = []
    for target in LINK.findall(text):
        if target.startswith(GITHUB):
            rest = target[len(GITHUB) :]
            if not rest:
                ok = True
            elif rest.startswith("#"):
                ok = rest[1:] in readme_anchors
            else:
                found = re.fullmatch(r"/(?:blob|tree)/main/([^#]+)", rest)
                ok = bool(found) and _exists(found.group(1))
        elif target.startswith(("http://", "https://", "mailto:")):
            continue
        else:
            path, _, anchor = target.partition("#")
            resolved = (page.parent / path).resolve() if path else page
            ok = resolved.exists() and resolved.is_relative_to(REPO)
            if ok and anchor and resolved.suffix == ".md" and resolved.parent == REPO / "docs":
                built = site / ("index.html" if resolved.stem == "index" else f"{resolved.stem}/index.html")
                ok = anchor in _anchors(built)
            elif ok and anchor and resolved == REPO / "README.md":
                ok = anchor in readme_anchors
        if not ok:
            broken.append(target)
    assert not broken, f"{page.relative_to(REPO)}: links that do not resolve: {broken}"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_every_repository_path_named_exists(page: Path) -> None:
    """A backticked `examples/...`, `tests/...`, `reprogate/...` (any path under a folder the
    repository tracks) must exist; paths in a user's project (`records/train.yaml`) are not
    under a tracked folder and are not checked. Commands in code blocks are read the same way."""
    text = page.read_text(encoding="utf-8")
    spans = [*re.findall(r"`([^`\n]+)`", FENCE.sub("", text)), *FENCE.findall(text)]
    missing = []
    for token in [word for span in spans for word in re.split(r"[\s=\"'(),;:]+", span)]:
        token = token.strip()
        if token in NOT_PATHS or not PATHLIKE.match(token) or token.split("/", 1)[0] not in _top_level():
            continue
        if not _exists(token):
            missing.append(token)
    assert not missing, f"{page.relative_to(REPO)} names repository paths that do not exist: {sorted(set(missing))}"


def test_the_path_check_catches_a_stale_path() -> None:
    """The check above is not vacuous: it reads the README's own paths, and a renamed one fails."""
    assert PATHLIKE.match("examples/tiny/records/tiny.yaml") and "examples" in _top_level()
    assert _exists("examples/tiny/records/tiny.yaml") and not _exists("reprogate/schema_check.py")
    assert not _exists("reprogate/documents.py"), "the old README's Layout named reprogate/documents.py: it lives in core/ now"
