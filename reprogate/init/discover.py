"""What a project folder holds: the guesses `reprogate init` offers as defaults.

Nothing here is trusted blindly: each guess is shown (in a prompt on a terminal, in the output
otherwise) and every flag overrides it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

SCRIPTS = ("train.py", "main.py", "run.py")
CONFIG_SUFFIXES = (".yaml", ".yml", ".json", ".toml")
SKIPPED_FOLDERS = {".git", ".venv", "venv", "__pycache__", "node_modules", ".dvc", "records", "reference"}


@dataclass
class Found:
    script: Path | None = None
    config: Path | None = None
    data: Path | None = None
    manifest: Path | None = None
    recipe: Path | None = None
    notes: list[str] = field(default_factory=list)

    def entrypoint(self, project: Path, config: Path | None = None) -> list[str] | None:
        """`python SCRIPT [--config CONFIG]`, relative to the project folder (the rebuild's cwd);
        CONFIG is the one pinned (`config`, as --config chose it), else the one found."""
        if self.script is None:
            return None
        argv = ["python", self.script.relative_to(project).as_posix()]
        chosen = config or self.config
        if chosen is not None and "--config" in self.script.read_text(encoding="utf-8", errors="replace"):
            argv += ["--config", _relative(chosen, project)]
        return argv


def _relative(path: Path, start: Path) -> str:

    return Path(os.path.relpath(path, start)).as_posix()


def _files(folder: Path, depth: int = 3) -> list[Path]:
    found: list[Path] = []
    if depth < 0 or not folder.is_dir():
        return found
    for entry in sorted(folder.iterdir()):
        if entry.name in SKIPPED_FOLDERS or entry.name.startswith(".") and entry.name != ".reprogate.yaml":
            continue
        if entry.is_dir() and not entry.is_symlink():
            found.extend(_files(entry, depth - 1))
        elif entry.is_file():
            found.append(entry)
    return found


def _is_manifest(path: Path) -> bool:
    return ".manifest." in path.name


def _configs(files: list[Path], data: Path | None) -> list[Path]:
    ignored = (".reprogate.yaml", "dvc.yaml", "dvc.lock", "pyproject.toml", "uv.lock", "environment.yml")
    return [f for f in files if f.suffix in CONFIG_SUFFIXES and not _is_manifest(f) and f.name not in ignored and (data is None or data not in f.parents)]


def discover(project: Path, root: Path) -> Found:
    found = Found()
    found.script = next((project / name for name in SCRIPTS if (project / name).is_file()), None)
    data = next((f for f in (project / "data", root / "data") if f.is_dir() and any(p.is_file() for p in f.rglob("*"))), None)
    found.data = data
    files = _files(project)
    manifests = [f for f in files if _is_manifest(f)]
    found.manifest = manifests[0] if len(manifests) == 1 else None
    configs = _configs(files, data)
    if not configs and root != project:  # a configuration folder beside the project folder
        configs = _configs([f for f in _files(root, 2) if project not in f.parents], data)
    preferred = [f for f in configs if any(word in f.name.lower() for word in ("config", "param", "hparam"))] or [f for f in configs if "config" in f.parts]
    chosen = preferred or configs
    found.config = chosen[0] if len(chosen) >= 1 else None
    if len(chosen) > 1:
        found.notes.append(f"several configuration files: took {chosen[0].relative_to(root).as_posix()} (--config chooses another)")
    found.recipe = next((f for f in (project / "Dockerfile", root / "Dockerfile") if f.is_file()), None)
    return found
