"""The one-way import rule of ARCHITECTURE.md, checked on the source.

Every import counts, a function's own included: a deferred import is still a dependency, only
one paid later. Imports under `if TYPE_CHECKING:` are annotations, not dependencies, and are left
out. Four rules hold:

- every family has a rank and imports only families of its rank or below (`RANK`);
- the families of one rank import each other without a loop (a loop makes them one family);
- a name with a leading underscore is its module's own: no other module imports it;
- no module imports itself back at module level (such a loop fails on whichever of its modules
  is imported first).
"""

from __future__ import annotations

import ast
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from support import REPO

PACKAGE = REPO / "reprogate"
# Lower ranks are imported by higher ones, never the other way round. `reprogate` is the package
# root (it holds __version__ only); `runtime` is also bound by RUNTIME_MAY_IMPORT.
RANK = {
    "reprogate": 0,
    "core": 0,
    "runtime": 0,
    "output": 1,
    "lockfiles": 2,
    "datasets": 2,
    "detect": 3,
    "images": 3,
    "capture": 3,
    "rules": 3,
    "validate": 3,
    "rebuild": 4,
    "github": 4,
    "init": 4,
    "audit": 4,
    "capacity": 4,
    "attest": 4,
    "integrations": 4,  # adapters onto trace (runtime) and init; only the command line imports them
    "cli": 5,
    "__main__": 5,
}
# runtime code is copied into realized environments where reprogate is not installed
RUNTIME_MAY_IMPORT = ("reprogate.runtime", "reprogate.core.canonical")
# the framework callbacks training code imports travel with the runtime (rebuild/inject.py)
TRAINING_INTEGRATIONS = ("reprogate.integrations", "reprogate.integrations.transformers", "reprogate.integrations.lightning")


@dataclass(frozen=True)
class Import:
    line: int
    target: str  # the module imported; for `from m import name` where name is no module, m
    names: tuple[str, ...]  # what `from m import ...` takes from the target; empty for a module
    top_level: bool  # runs when the importing module is imported (not inside a function)


def _module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@cache
def _modules() -> dict[str, Path]:
    return {_module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def _family(module: str) -> str:
    if module == "reprogate.trace":
        return "runtime"  # the public name training code imports
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def _is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _from_base(module: str, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    package = module.split(".") if _modules()[module].name == "__init__.py" else module.split(".")[:-1]
    package = package[: len(package) - node.level + 1]
    return ".".join(package + ([node.module] if node.module else []))


def _walk(node: ast.AST, in_function: bool) -> Iterator[tuple[ast.AST, bool]]:
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
            for branch in child.orelse:
                yield branch, in_function
                yield from _walk(branch, in_function)
            continue
        yield child, in_function
        yield from _walk(child, in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)))


@cache
def _imports(module: str) -> tuple[Import, ...]:
    tree = ast.parse(_modules()[module].read_text(encoding="utf-8"))
    found = []
    for node, in_function in _walk(tree, False):
        if isinstance(node, ast.Import):
            found += [Import(node.lineno, alias.name, (), not in_function) for alias in node.names if alias.name.split(".")[0] == "reprogate"]
        elif isinstance(node, ast.ImportFrom):
            base = _from_base(module, node)
            if base.split(".")[0] != "reprogate":
                continue
            names = []
            for alias in node.names:
                if f"{base}.{alias.name}" in _modules():
                    found.append(Import(node.lineno, f"{base}.{alias.name}", (), not in_function))
                else:
                    names.append(alias.name)
            if names:
                found.append(Import(node.lineno, base, tuple(names), not in_function))
    return tuple(found)


def _all_imports() -> Iterator[tuple[str, Import]]:
    for module in _modules():
        for found in _imports(module):
            yield module, found


def _where(module: str, found: Import) -> str:
    return f"{_modules()[module].relative_to(REPO)}:{found.line}"


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected parts of a graph with more than one member (or a self-loop), each
    sorted; Tarjan's algorithm."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for after in sorted(edges.get(node, ())):
            if after not in index:
                visit(after)
                low[node] = min(low[node], low[after])
            elif after in on_stack:
                low[node] = min(low[node], index[after])
        if low[node] == index[node]:
            part = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                part.append(member)
                if member == node:
                    break
            if len(part) > 1 or node in edges.get(node, ()):
                found.append(sorted(part))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def test_every_family_has_a_rank() -> None:
    unranked = sorted({_family(module) for module in _modules()} - set(RANK))
    assert not unranked, f"give each a rank in RANK (and a place in ARCHITECTURE.md): {unranked}"


def test_imports_go_one_way() -> None:
    problems = []
    for module, found in _all_imports():
        mine, theirs = _family(module), _family(found.target)
        if mine == "runtime":
            if not found.target.startswith(RUNTIME_MAY_IMPORT):
                problems.append(f"{_where(module, found)}: runtime code imports {found.target} (it runs where reprogate is not installed)")
        elif RANK.get(theirs, 0) > RANK.get(mine, 0):
            problems.append(f"{_where(module, found)}: {mine} (rank {RANK[mine]}) imports {found.target} (rank {RANK[theirs]}), a layer above it")
    assert not problems, "\n".join(problems)


def test_families_of_one_rank_import_each_other_without_a_loop() -> None:
    edges: dict[str, set[str]] = defaultdict(set)
    lines: dict[tuple[str, str], list[str]] = defaultdict(list)
    for module, found in _all_imports():
        mine, theirs = _family(module), _family(found.target)
        if mine != theirs and RANK.get(mine) == RANK.get(theirs):
            edges[mine].add(theirs)
            lines[mine, theirs].append(f"{_where(module, found)} imports {found.target}")
    problems = []
    for loop in _cycles(edges):
        problems.append(f"families {', '.join(loop)} import each other:")
        problems += [f"  {line}" for a in loop for b in loop for line in lines.get((a, b), [])]
    assert not problems, "\n".join(problems)


def test_private_names_stay_in_their_module() -> None:
    problems = []
    for module, found in _all_imports():
        for name in found.names:
            if _is_private(name):
                problems.append(f"{_where(module, found)}: imports {found.target}.{name}, private to that module (make it public, or move it)")
        home = found.target.rsplit(".", 1)[0]
        if any(_is_private(part) for part in found.target.split(".")) and module != home and not module.startswith(home + "."):
            problems.append(f"{_where(module, found)}: imports {found.target}, private to {home}")
    for module, path in _modules().items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        bound = {}  # local name -> the reprogate module it stands for
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                bound.update({alias.asname: alias.name for alias in node.names if alias.asname and alias.name in _modules()})
            elif isinstance(node, ast.ImportFrom):
                base = _from_base(module, node)
                for alias in node.names:
                    if f"{base}.{alias.name}" in _modules():
                        bound[alias.asname or alias.name] = f"{base}.{alias.name}"
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in bound and _is_private(node.attr):
                problems.append(f"{path.relative_to(REPO)}:{node.lineno}: uses {bound[node.value.id]}.{node.attr}, private to that module")
    assert not problems, "\n".join(problems)


def test_no_module_imports_itself_back_at_module_level() -> None:
    edges: dict[str, set[str]] = defaultdict(set)
    for module, found in _all_imports():
        if found.top_level and found.target in _modules():
            edges[module].add(found.target)
    loops = _cycles(edges)
    assert not loops, "module-level import loops (defer one import into the function that needs it, or move the shared part out):\n" + "\n".join(
        " -> ".join(loop) for loop in loops
    )


# Third-party libraries a module may import inside the function that uses them: each would cost
# a command that never needs it tens of milliseconds to seconds at start-up (measured on the CI
# machine: scipy.stats and torch 2.4 s each, kubernetes 0.7 s, requests 0.3 s, docker 0.2 s,
# pip-requirements-parser, jsonschema, urllib3 and numpy 0.13-0.15 s, referencing 0.12 s,
# packaging.requirements 0.1 s, pynvml and dockerfile-parse 0.05 s), or is optional (blake3) or
# POSIX only (fcntl). Everything else, the package's own modules first, is imported at the top,
# where a reader sees what a module depends on; only the command line defers its commands' modules
# (one import per command) and the runtime what a training process may never need.
DEFERRED = {
    "torch", "numpy", "scipy", "docker", "kubernetes", "pynvml", "blake3", "requests", "urllib3",
    "jsonschema", "referencing", "dockerfile_parse", "pip_requirements_parser", "packaging", "fcntl",
    "tomllib", "tomli", "yaml",  # imported where a TOML or YAML document is read: detect of a requirements file imports none
    "mlflow",  # the optional extra `reprogate[mlflow]`, imported by the one function that opens a tracking store
    "sqlalchemy",  # the same extra's, for a database store: imported where a sqlite URI's file is checked
}  # fmt: skip
EDGES = ("reprogate/cli/", "reprogate/runtime/", "reprogate/trace.py")


def test_every_deferred_library_is_preloaded_before_a_rebuild_starts_its_ranks() -> None:
    """A library imported where it is used is imported by the rebuild before the first rank
    starts (core/optional.py), so a module the code under test plants later is never imported;
    only what the rebuild's own process never imports is left out: the ranks' torch, numpy and
    scipy, and mlflow, which only `init --from-mlflow` opens (it reads a tracking store and runs
    no rank; tests/integrations/test_mlflow_reference.py)."""
    from reprogate.core.optional import OPTIONAL_MODULES

    never_in_a_rebuild = {"torch", "numpy", "scipy", "mlflow", "sqlalchemy"}
    preloaded = {name.split(".")[0] for name in OPTIONAL_MODULES}
    assert DEFERRED - never_in_a_rebuild <= preloaded, sorted(DEFERRED - never_in_a_rebuild - preloaded)
    rebuild_sources = [p for p in PACKAGE.rglob("*.py") if p.relative_to(PACKAGE).parts[0] == "rebuild"]
    assert not [p for p in rebuild_sources if "mlflow" in p.read_text(encoding="utf-8")], "a rebuild module names mlflow: preload it"


def test_imports_sit_at_the_top_of_their_module() -> None:
    problems = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(REPO).as_posix()
        if rel.startswith(EDGES):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for function in ast.walk(tree):
            if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(function):
                if isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom):
                    names = [node.module or ""] if node.level == 0 else ["." * node.level + (node.module or "")]
                else:
                    continue
                problems += [
                    f"{rel}:{node.lineno}: {function.name} imports {name} (import it at the top)" for name in names if name.split(".")[0] not in DEFERRED
                ]
    assert not problems, "\n".join(sorted(set(problems)))


def test_the_command_line_defers_one_import_per_command() -> None:
    """cli/ may defer its commands' modules (so `reprogate validate` loads no rebuild code), one
    import statement per command function, and nothing else."""
    problems = []
    for path in sorted((PACKAGE / "cli").glob("*.py")):
        for function in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
                own = [n for n in ast.walk(function) if isinstance(n, (ast.Import, ast.ImportFrom))]
                if len(own) > 1:
                    problems.append(f"{path.relative_to(REPO)}:{function.lineno}: {function.name} has {len(own)} deferred imports")
    assert not problems, "\n".join(problems)


def test_training_integrations_import_only_the_runtime_and_are_injected() -> None:
    """A callback a training script imports runs where reprogate is not installed: it may import
    only what is injected beside it, and it must be injected itself."""
    from reprogate.rebuild.inject import MODULES

    problems = [
        f"{_where(module, found)}: {module} is training-side and imports {found.target}, which a rebuild does not inject"
        for module, found in _all_imports()
        if module in TRAINING_INTEGRATIONS and not found.target.startswith(RUNTIME_MAY_IMPORT)
    ]
    injected = {"reprogate." + m.removesuffix(".py").replace("/", ".").removesuffix(".__init__") for m in MODULES}
    problems += [f"{module} is not injected (rebuild/inject.py TRAINING_INTEGRATIONS)" for module in TRAINING_INTEGRATIONS if module not in injected]
    assert not problems, "\n".join(problems)


def test_only_the_command_line_imports_the_integrations() -> None:
    """The core never imports an integration: each is an optional extra."""
    problems = [
        f"{_where(module, found)}: {module} imports {found.target}"
        for module, found in _all_imports()
        if _family(found.target) == "integrations" and _family(module) not in ("integrations", "cli")
    ]
    assert not problems, "\n".join(problems)


def test_the_rebuild_options_load_no_other_rebuild_module() -> None:
    """`init` and the command line name RebuildOptions; importing it once loaded the runner, every
    stage, realizer and launcher (144 of reprogate's modules), because the runner was the package's
    __init__. Now the package's __init__ imports nothing: the options load only themselves."""
    import json
    import subprocess
    import sys

    probe = "import json, sys, reprogate.rebuild.options; print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] == 'reprogate')))"
    done = subprocess.run([sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, check=True)
    assert json.loads(done.stdout) == ["reprogate", "reprogate.rebuild", "reprogate.rebuild.options"]


def _gate_exit_code_problems(files: dict[str, str]) -> list[str]:
    """Where a module of reprogate/github decides an exit code on the side: an assignment to a
    `.code`, a `code=` keyword, a setattr of "code", and, in gate.py, an ExitCode member or a
    GateOutcome built anywhere but `outcome`. `files` maps a repository path to its source."""
    problems = []
    for rel, source in files.items():
        tree = ast.parse(source)
        owner = {id(node): function.name for function in ast.walk(tree) if isinstance(function, ast.FunctionDef) for node in ast.walk(function)}
        for node in ast.walk(tree):
            where = f"{rel}:{getattr(node, 'lineno', 0)}"
            targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else []
            problems += [f"{where}: assigns .code" for t in targets if isinstance(t, ast.Attribute) and t.attr == "code"]
            if not isinstance(node, ast.Call):
                continue
            if any(k.arg == "code" for k in node.keywords):
                problems.append(f"{where}: passes code=")
            if any(isinstance(a, ast.Constant) and a.value == "code" for a in node.args) and "setattr" in ast.unparse(node.func):
                problems.append(f"{where}: sets the attribute code")
        if rel.endswith("github/gate.py"):
            for node in ast.walk(tree):
                if owner.get(id(node)) == "outcome":
                    continue
                if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "ExitCode":
                    problems.append(f"{rel}:{node.lineno}: names ExitCode.{node.attr} outside outcome()")
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "GateOutcome":
                    problems.append(f"{rel}:{node.lineno}: builds a GateOutcome outside outcome()")
    return problems


def test_the_gate_sets_its_exit_code_in_one_place() -> None:
    """A gate run's exit code is derived, in `github/gate.outcome` alone, from the failures its
    steps recorded (ARCHITECTURE.md, "The gate's outcome"). It was once written as
    `outcome.code = ExitCode.FAILED` at seven sites across the gate's steps, into one shared
    mutable outcome: a step could set it, and a later one could have reset it, unseen."""
    files = {path.relative_to(REPO).as_posix(): path.read_text(encoding="utf-8") for path in sorted((PACKAGE / "github").glob("*.py"))}
    assert "reprogate/github/gate.py" in files
    assert not _gate_exit_code_problems(files), "\n".join(_gate_exit_code_problems(files))
    # the scan sees each way back in (a second place that sets the code)
    planted = {
        "x/github/gate.py": "def step(o):\n    o.code = ExitCode.FAILED\n    return GateOutcome(ExitCode.OK)\n",
        "x/github/other.py": "def f(o):\n    setattr(o, 'code', 1)\n    replace(o, code=1)\n    o.code += 1\n",
    }
    assert len(_gate_exit_code_problems(planted)) == 7, _gate_exit_code_problems(planted)
