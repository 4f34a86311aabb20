"""The one-way import rule of ARCHITECTURE.md, checked on the source (imports under
`if TYPE_CHECKING:` are annotations, not dependencies, and are left out)."""

from __future__ import annotations

import ast
from pathlib import Path

from support import REPO

PACKAGE = REPO / "reprogate"
FAMILIES = {"validate", "rules", "capture", "lockfiles", "detect", "datasets", "images", "rebuild", "github", "audit"}
RANK = {"core": 0, "output": 1, **{family: 2 for family in FAMILIES}, "cli": 3}


def _layer(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _imports(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skipped.update(id(child) for child in ast.walk(node))
    found = []
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("reprogate"):
            if node.module == "reprogate":
                found += [(node.lineno, f"reprogate.{alias.name}") for alias in node.names]
            else:
                found.append((node.lineno, node.module))
        elif isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names if alias.name.startswith("reprogate")]
    return found


def test_imports_go_one_way() -> None:
    problems = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(REPO).with_suffix("")
        module = ".".join(rel.parts)
        mine = _layer(module)
        for line, target in _imports(path):
            theirs = _layer(target)
            if target in ("reprogate.__version__",) or theirs in ("", "__init__", "__version__"):
                continue
            if mine == "runtime" or module == "reprogate.trace":
                if theirs != "runtime" and target != "reprogate.core.canonical":
                    problems.append(f"{rel}:{line}: runtime code imports {target} (it runs where reprogate is not installed)")
                continue
            if mine in RANK and theirs in RANK and RANK[theirs] > RANK[mine]:
                problems.append(f"{rel}:{line}: {mine} imports {target}, a layer above it")
            if theirs == "cli" and mine != "cli" and module != "reprogate.__main__":
                problems.append(f"{rel}:{line}: only the command line imports cli")
    assert not problems, "\n".join(problems)
