"""`reprogate capture --into RECORD`: put a capture into a record without touching a person's text.

Records are reviewed and commented by people. Re-dumping the whole YAML would drop every comment
and reflow every section, so the capture-owned parts (host, cpu, devices, software, the captured keys
of source, container runtime facts, execution.env) are spliced into the existing text at the
positions the parser reports; every other byte of the file stays as it was. JSON records have no
comments and are rewritten whole.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from typing import Any

import yaml

from reprogate.core.documents import Document, plain_loader
from reprogate.core.shapes import table
from reprogate.core.yamlout import dump_yaml

SOURCE_KEYS = ("repository", "commit", "path", "tree", "dirty", "diff_digest", "untracked_digest", "lock_files", "job_start_installs")


@dataclass
class Merge:
    """The changes to make: (key path, new value), applied in order; and what to tell the user."""

    changes: list[tuple[tuple[str, ...], Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def plan(record: dict[str, Any], capture: dict[str, Any], recipe_checksum: str | None = None) -> Merge:
    """The changes: environment sections replaced, the captured source keys refreshed, and the
    build recipe's checksum (`recipe_checksum`, read by the caller) brought up to date."""
    merge = Merge()
    for section in ("host", "cpu", "devices", "software"):
        if isinstance(capture.get(section), dict):
            merge.changes.append(((section,), capture[section]))
    source = capture.get("source")
    if isinstance(source, dict) and source.get("present") is not False:
        merged = copy.deepcopy(table(record, "source"))
        for key in SOURCE_KEYS:
            merged.pop(key, None)
            if key in source:
                merged[key] = source[key]
        recipe = merged.get("build_recipe")
        if recipe_checksum is not None and isinstance(recipe, dict) and recipe.get("checksum") != recipe_checksum:
            merge.notes.append(f"source.build_recipe {recipe.get('path')}: checksum {recipe.get('checksum')} -> {recipe_checksum}")
            merged["build_recipe"] = {**recipe, "checksum": recipe_checksum}
        merge.changes.append((("source",), merged))
    elif isinstance(source, dict):
        merge.notes.append(f"source not captured ({source.get('reason')}); the record's source section is unchanged")
    _plan_container(record, capture.get("container"), merge)
    variables = (capture.get("environment") or {}).get("variables")
    if isinstance(variables, dict) and isinstance(record.get("execution"), dict):
        merge.changes.append((("execution", "env"), variables))
    return merge


def _plan_container(record: dict[str, Any], found: Any, merge: Merge) -> None:
    if not isinstance(found, dict):
        return
    current = record.get("container")
    if found.get("used") is False:
        if current is None:
            merge.changes.append((("container",), {"used": False, "reason": found.get("reason", "not in a container")}))
        elif isinstance(current, dict) and current.get("used") is not False:
            merge.notes.append("the record names an image, but this job does not run in a container")
        return
    if isinstance(current, dict) and current.get("used") is False:
        merge.notes.append(f"the record says no container, but this job runs in one ({found.get('detected')}); container left unchanged")
        return
    updated = copy.deepcopy(current) if isinstance(current, dict) else {}
    if "digest" in found:
        if updated.get("digest") not in (None, found["digest"]):
            merge.notes.append(f"container digest changed: the record had {updated['digest']}, the job runs {found['digest']}")
        for key in ("registry", "repository", "tag", "digest"):
            if key in found:
                updated[key] = found[key]
    elif found.get("digest_unknown"):
        merge.notes.append(found["digest_unknown"])
    for key in ("runtime", "inventory"):
        if key in found:
            updated[key] = found[key]
    merge.changes.append((("container",), updated))


def apply(doc: Document, text: str, merge: Merge) -> str:
    """The record's new text with each change applied."""
    data = copy.deepcopy(doc.data)
    for path, value in merge.changes:
        target = data
        for key in path[:-1]:
            target = target.setdefault(key, {})
        target[path[-1]] = value
    if doc.syntax == "json":
        return json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    for path, value in merge.changes:
        try:
            text = splice(text, path, value)
        except FlowStyle:  # a one-line {...} parent: rewrite that parent entry whole
            parent = path[:-1]
            replacement = data
            for key in parent:
                replacement = replacement[key]
            text = splice(text, parent, replacement)
    return text


class FlowStyle(Exception):
    """The entry sits inside a one-line {...} mapping, which cannot be edited line by line."""


def splice_path(text: str, path: tuple[str, ...], data: dict[str, Any]) -> str:
    """`text` with the entry at `path` set to its value in `data` (the whole document as it is to
    be); where that entry sits in a flow mapping (`metric: {name: acc, ...}`), the nearest
    enclosing entry in block style is rewritten whole from `data`, in block style. FlowStyle
    when the document itself is one flow mapping."""
    for depth in range(len(path), 0, -1):
        part = path[:depth]
        value: Any = data
        for key in part:
            value = value[key]
        try:
            return splice(text, part, value)
        except FlowStyle:
            continue
    raise FlowStyle("the document")


def _node_for(root: Any, path: tuple[str, ...]) -> tuple[Any, Any, Any]:
    """(parent mapping node, key node, value node) of a key path; key/value None if absent."""
    parent = root
    for i, key in enumerate(path):
        found = next(((k, v) for k, v in parent.value if isinstance(k, yaml.ScalarNode) and k.value == key), None)
        if found is None:
            return parent, None, None
        if i == len(path) - 1:
            return parent, found[0], found[1]
        parent = found[1]
    raise ValueError("empty path")


def _block_end(text: str, end: int) -> int:
    """Where a value's block ends, without the comments and blank lines that precede the next key
    (they belong to what follows)."""
    line_start = text.rfind("\n", 0, end) + 1
    if text[line_start:end].strip():  # a flow or scalar value ended mid-line: take the whole line
        newline = text.find("\n", end)
        return len(text) if newline == -1 else newline + 1
    end = line_start  # a block ended where the next, less indented key begins
    lines = text[:end].splitlines(keepends=True)
    while lines and (not lines[-1].strip() or lines[-1].lstrip().startswith("#")):
        lines.pop()
    return sum(len(line) for line in lines)


def splice(text: str, path: tuple[str, ...], value: Any) -> str:
    """Replace (or add) the mapping entry at `path` in YAML `text`, leaving all else unchanged."""

    root = plain_loader()(text).get_single_node()
    parent, key_node, value_node = _node_for(root, path)
    if parent.flow_style:
        raise FlowStyle(".".join(path[:-1]))
    if key_node is not None:
        column = key_node.start_mark.column
        start = key_node.start_mark.index - column
        end = _block_end(text, value_node.end_mark.index)
    elif parent is root:
        column, start, end = 0, len(text), len(text)
    else:
        column = parent.value[0][0].start_mark.column if parent.value else 2
        start = end = _block_end(text, parent.end_mark.index)
    body = dump_yaml({path[-1]: value})
    indented = "".join((" " * column + line) if line.strip() else line for line in body.splitlines(keepends=True))
    prefix = text[:start]
    if prefix and not prefix.endswith("\n"):
        prefix += "\n"
    return prefix + indented + text[end:]
