"""The project folder a record pins by git tree id must still hold the reference's code.

`source.tree` is a reference artifact: training code changed after the reference ran makes the
record's claim untrue, so the record is invalid at once — in a pull request, before any GPU is
asked for — with the changed paths named. Files inside the folder that another check owns are
left to it: the configuration (its hash), the dataset manifest and its shards (the dataset
checks), and the environment pins a pull request may change (lock files, the build recipe:
drift, rebuilt by the gate).

Cheap where git already knows: in a clean work tree the folder's tree id is git's own
(`rev-parse HEAD:<folder>`); only a folder with changes, or outside git, is hashed.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

from reprogate.core.diagnostics import Diagnostic, Severity
from reprogate.core.documents import DocumentError
from reprogate.core.git import GitError, run_git
from reprogate.core.gittree import changed_paths, folder_files, recorded_files, tree_id
from reprogate.core.record import RunRecord
from reprogate.datasets.manifest_header import read_manifest
from reprogate.detect.dockerfile import instructions
from reprogate.lockfiles import FORMATS, LockFileError, format_for
from reprogate.rules.base import RuleContext
from reprogate.rules.files import AddressError, resolve

WAY_FORWARD = (
    "a changed reference artifact needs a new reference: re-record it (`reprogate init FOLDER --force`, or `capture --into` and a "
    "new reference run), then promote it with the baseline label; or undo the change"
)


def source_tree_matches(ctx: RuleContext) -> Iterator[Diagnostic]:
    source = ctx.record.source
    folder, pinned = (source.path, source.tree) if source is not None else (None, None)
    if folder is None or pinned is None:
        return
    try:
        real = resolve(ctx, folder, folder=True)
    except AddressError as exc:
        yield ctx.finding(("source", "path"), exc.message, exc.code, exc.hint)
        return
    if ctx.source is not None and real in ctx.source.resolve().parents:
        return  # a record inside the folder it pins changes that tree itself: record-is-rebuildable says so
    key = ("source-tree", real)
    if key not in ctx.cache:
        ctx.cache[key] = current_tree(real)
    found = ctx.cache[key]
    if found == pinned:
        return

    known = _git_diff(real, pinned, found)
    before = recorded_files(ctx.root, pinned) if known is None else {}
    if known is None and before is None:
        yield ctx.finding(
            ("source", "tree"),
            f"the project folder {folder} has git tree {found[:12]}, the record pins {pinned[:12]}, which this repository does not hold",
            "source-tree-changed",
            "fetch the full history (actions/checkout with fetch-depth: 0) to see what changed; " + WAY_FORWARD,
        )
        return
    owners = owned_paths(ctx.record, ctx.root, folder)
    diff = known if known is not None else changed_paths(before or {}, folder_files(real))
    code = {kind: [p for p in paths if p not in owners] for kind, paths in diff.items()}
    stray = stray_traces(real, code.get("added", []))
    if stray:
        code["added"] = [p for p in code["added"] if p not in stray]
        yield ctx.finding(
            ("source", "tree"),
            f"{folder} holds {', '.join(stray[:4])}{' ...' if len(stray) > 4 else ''}, not committed: a step trace a run by hand wrote "
            "(the Tracer writes into the current folder when REPROGATE_TRACE_DIR is unset), not the reference's code",
            "stray-trace",
            f"delete it (rm {' '.join(f'{folder}/{p}' for p in stray[:4])}) or ignore trace-rank*.jsonl in .gitignore; "
            "until then a rebuild from this checkout counts it as a change of the folder",
            Severity.WARNING,
        )
    if any(code.values()):
        listed = "; ".join(f"{kind}: {', '.join(paths[:6])}{' ...' if len(paths) > 6 else ''}" for kind, paths in code.items() if paths)
        yield ctx.finding(
            ("source", "tree"),
            f"the code in {folder} changed since the reference ({listed}); the record pins tree {pinned[:12]}, the folder has {found[:12]}",
            "reference-artifact-changed",
            WAY_FORWARD,
        )


TRACE_NAME = re.compile(r"trace-rank[0-9]+\.jsonl")  # what runtime/tracer.py names a rank's trace


def stray_traces(folder: Path, added: list[str]) -> list[str]:
    """The added paths that are rank traces git does not track: left by a run by hand, not code."""
    traces = [p for p in added if TRACE_NAME.fullmatch(p.rsplit("/", 1)[-1])]
    if not traces:
        return []
    try:
        tracked = set(run_git(folder, "ls-files", "-z", "--", *traces, timeout=30).stdout.decode("utf-8", "replace").split("\0"))
    except GitError:
        return traces  # outside git nothing is committed; the names alone say what they are
    return [p for p in traces if p not in tracked]


def current_tree(folder: Path) -> str:
    """The git tree id of the folder as it is: git's own when the work tree is clean there; else
    git's index of it as it is now (a copy of the index, so only changed files are hashed, in C);
    outside git, computed here."""

    status = _git(folder, "status", "--porcelain", "-z", "--untracked-files=all", "--", ".")
    if status is not None and not status:
        known = _git(folder, "rev-parse", "HEAD:./")
        if known:
            return known.decode().strip()
    try:
        staged = _staged_tree(folder)
    except OSError:  # the index could not be copied: hash the files instead
        staged = None
    if staged:
        return staged
    return tree_id(folder)


def _git(folder: Path, *args: str, env: dict[str, str] | None = None) -> bytes | None:
    """stdout, or None where git cannot say (outside a work tree, no git, too slow): the tree is
    then computed from the files."""
    try:
        return run_git(folder, *args, env=env).stdout
    except GitError:
        return None


def _staged_tree(folder: Path) -> str | None:
    """The tree git would record for the folder now, from a throwaway copy of the index (the real
    index and the work tree are left alone; the blobs go into the object store, as `git add` would)."""

    top, index = _git(folder, "rev-parse", "--show-toplevel"), _git(folder, "rev-parse", "--git-path", "index")
    if not top or not index:
        return None
    top_path = Path(top.decode().strip())
    index_path = Path(index.decode().strip())
    index_path = index_path if index_path.is_absolute() else folder / index_path
    rel = folder.resolve().relative_to(top_path.resolve()).as_posix()
    with tempfile.TemporaryDirectory(prefix="reprogate-index-") as tmp:
        copy = Path(tmp) / "index"
        if index_path.is_file():
            shutil.copyfile(index_path, copy)
        env = {"GIT_INDEX_FILE": str(copy)}  # set on purpose: core.git drops any inherited one
        if _git(top_path, "add", "-A", "--", rel, env=env) is None:
            return None
        tree = _git(top_path, "write-tree", *([f"--prefix={rel}/"] if rel != "." else []), env=env)
    return tree.decode().strip() if tree else None


def _git_diff(folder: Path, pinned: str, found: str) -> dict[str, list[str]] | None:
    """changed / added / removed paths (relative to the folder) between two tree ids git holds."""
    out = _git(folder, "diff-tree", "-r", "-z", "--no-renames", "--name-status", pinned, found)
    if out is None:
        return None
    kinds = {"M": "changed", "T": "changed", "A": "added", "D": "removed"}
    diff: dict[str, list[str]] = {"changed": [], "added": [], "removed": []}
    fields = out.decode("utf-8", "replace").split("\0")
    for status, name in zip(fields[::2], fields[1::2], strict=False):
        diff[kinds.get(status[:1], "changed")].append(name)
    return diff


def owned_paths(record: RunRecord, root: Path, folder: str) -> dict[str, str]:
    """Paths inside the project folder (relative to it) that another check judges, with which:
    config, dataset, environment. A file the record calls a lock file or a build recipe is one
    only if it parses as one: naming `train.py` a lock file must not hide a code change."""
    prefix = folder.rstrip("/") + "/"
    owners: dict[str, str] = {}

    def claim(rel: str | None, owner: str) -> None:
        if rel is not None and rel.startswith(prefix):
            owners[rel[len(prefix) :]] = owner

    claim(record.job.config.path if record.job is not None else None, "config")
    manifest = record.dataset.manifest.path if record.dataset is not None and record.dataset.manifest is not None else None
    claim(manifest, "dataset")
    source = record.source
    recipe = source.build_recipe.path if source is not None and source.build_recipe is not None else None
    if recipe is not None and _is_recipe(root / recipe):
        claim(recipe, "environment")
    for item in source.lock_files if source is not None else ():
        if _is_lock(root / item.path, item.format):
            claim(item.path, "environment")
    if manifest is not None and manifest.startswith(prefix):
        try:
            loaded = read_manifest(root / manifest)
        except (DocumentError, OSError):  # validate's manifest rules say what is wrong with it
            loaded = None
        if loaded is not None:
            base = Path(manifest).parent / (loaded.header.namespace or ".")
            for name in [*(s.name for s in loaded.shards()), *(f.name for f in loaded.header.files)]:
                claim((base / name).as_posix(), "dataset")
    return owners


DOCKERFILE_WORDS = frozenset(
    {
        "FROM",
        "RUN",
        "CMD",
        "LABEL",
        "MAINTAINER",
        "EXPOSE",
        "ENV",
        "ADD",
        "COPY",
        "ENTRYPOINT",
        "VOLUME",
        "USER",
        "WORKDIR",
        "ARG",
        "ONBUILD",
        "STOPSIGNAL",
        "HEALTHCHECK",
        "SHELL",
    }
)


def _text(path: Path) -> str | None:
    try:
        if not path.is_file() or path.stat().st_size > 16 * 1024 * 1024:
            return None
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def _is_lock(path: Path, declared: object) -> bool:
    """Whether the file parses as the lock format the record declares (or its name says)."""

    module = FORMATS.get(declared) if isinstance(declared, str) else format_for(path)
    text = _text(path)
    if module is None or text is None:
        return False
    try:
        module.parse(text)
    except (LockFileError, ValueError, TypeError, KeyError, AttributeError):
        return False
    return True


def _is_recipe(path: Path) -> bool:
    """Whether the file is a Dockerfile: every instruction one Docker knows, the first past ARG a FROM."""

    text = _text(path)
    if text is None:
        return False
    try:
        found = instructions(text)
    except (ValueError, RecursionError):
        return False
    words = [i.word for i in found]
    first = next((w for w in words if w != "ARG"), None)
    return first == "FROM" and all(w in DOCKERFILE_WORDS for w in words)


__all__ = ["WAY_FORWARD", "current_tree", "owned_paths", "source_tree_matches"]
