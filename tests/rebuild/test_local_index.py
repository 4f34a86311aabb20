"""A runner whose pip reads a mirror on its own disk (`index-url = file:///opt/pypi/simple`): the
mirror's pages link their wheels outside the index folder (`../../files/NAME.whl`), and the venv
realizer's build sandbox showed only the index folder, so uv found the page and not the wheel and
`init`/`rebuild` ended in exit 3 blaming the index. Found by a new user's trial of adopting.md."""

from __future__ import annotations

import sys
import zipfile
from pathlib import Path

from support import require_tool

from reprogate.rebuild import sandbox
from reprogate.rebuild.realizers.venv import local_index_paths


def _mirror(root: Path) -> Path:
    """A PEP 503 tree as mirrors lay it out: simple/NAME/index.html beside files/."""
    (root / "simple" / "tinypkg").mkdir(parents=True)
    (root / "files").mkdir()
    with zipfile.ZipFile(root / "files" / "tinypkg-1.0-py3-none-any.whl", "w") as wheel:
        wheel.writestr("tinypkg/__init__.py", "")
        wheel.writestr("tinypkg-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: tinypkg\nVersion: 1.0\n")
        wheel.writestr("tinypkg-1.0.dist-info/WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        wheel.writestr("tinypkg-1.0.dist-info/RECORD", "")
    link = '<a href="../../files/tinypkg-1.0-py3-none-any.whl">tinypkg-1.0-py3-none-any.whl</a>'
    (root / "simple" / "tinypkg" / "index.html").write_text(f"<!DOCTYPE html><html><body>{link}</body></html>")
    (root / "simple" / "index.html").write_text('<a href="tinypkg/">tinypkg</a>')
    return root / "simple"


def test_a_local_mirrors_wheels_are_shown_to_the_build_sandbox_not_only_its_pages(tmp_path: Path) -> None:
    require_tool("bwrap")
    uv = require_tool("uv")
    index = _mirror(tmp_path / "mirror")
    work = tmp_path / "work"
    for folder in ("home", "tmp", "venv", "cache"):
        (work / folder).mkdir(parents=True)
    arguments = ["--index-url", f"file://{index}", "--find-links", str(tmp_path / "wheels")]
    assert local_index_paths(arguments) == [tmp_path / "mirror", tmp_path / "wheels"]  # an index's tree; a find-links folder itself
    home = Path.home()
    assert local_index_paths(["--index-url", f"file://{home}/simple"]) == [home / "simple"], "never the runner's home whole"
    assert local_index_paths(["--index-url", "file:///simple", "--extra-index-url", "file:///home/simple"]) == [Path("/simple"), Path("/home/simple")]
    box = sandbox.for_builds(work, work / "venv", [Path(uv).parent, *local_index_paths(arguments[:2])], [work / "cache"])
    (work / "requirements.in").write_text("tinypkg\n")
    env = {"PATH": "/usr/bin:/bin", "HOME": str(work / "home"), "TMPDIR": str(work / "tmp"), "UV_CACHE_DIR": str(work / "cache")}
    done = box.run([uv, "pip", "compile", str(work / "requirements.in"), *arguments[:2], "--no-header", "--python", sys.executable], work, env, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "tinypkg==1.0" in done.stdout
