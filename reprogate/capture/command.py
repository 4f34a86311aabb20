"""What `reprogate capture` does with the capture: print it, write it, or merge it into a record."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from reprogate.capture import CaptureContext, capture_all
from reprogate.core.diagnostics import ExitCode
from reprogate.core.documents import DocumentError, load_document
from reprogate.core.fileio import atomic_write
from reprogate.core.yamlout import dump_yaml


def _lock_globs(root: Path) -> list[str]:
    from reprogate.core.config import load_config

    try:
        return load_config(root).watch.get("framework", [])
    except DocumentError:
        return []


def render(document: dict[str, Any], path: Path | None) -> str:
    if path is not None and path.suffix.lower() == ".json":
        return json.dumps(document, indent=2, ensure_ascii=False) + "\n"
    return dump_yaml(document, "Environment captured by `reprogate capture`; merge with: reprogate capture --into RECORD")


def run_capture(output: Path | None, record: Path | None, image: str | None, root: Path, framework: bool) -> tuple[ExitCode, list[str], str | None]:
    """(exit code, messages for stderr, text for stdout or None)."""
    messages: list[str] = []
    if image is not None and "@sha256:" not in image:
        from reprogate.images import ImageError, RegistryClient, Unreachable

        try:  # a tag is only a label: pin what it points to now
            found = RegistryClient().resolve(image)
        except Unreachable as exc:
            return ExitCode.INFRA, [f"--image {image!r}: registry unreachable ({exc}); give REF@sha256:<digest> instead"], None
        except ImageError as exc:
            return ExitCode.USAGE, [f"--image {image!r}: {exc}; give REF@sha256:<digest> instead"], None
        messages.append(f"note: {image} resolved to {found.digest}")
        image = f"{image}@{found.digest}"
    document = capture_all(CaptureContext(root=root, image=image, framework=framework, lock_globs=_lock_globs(root)))
    for section in ("source", "devices", "software", "host"):
        value = document.get(section)
        if isinstance(value, dict) and value.get("present") is False:
            messages.append(f"note: {section}: {value.get('reason')}")
    stdout = None
    if output is not None and str(output) != "-":
        atomic_write(output, render(document, output))
        messages.append(f"wrote {output}")
    elif record is None or str(output) == "-":
        stdout = render(document, None)
    if record is not None:
        code, notes = _merge(record, document)
        messages.extend(notes)
        if code != ExitCode.OK:
            return code, messages, stdout
    return ExitCode.OK, messages, stdout


def _merge(record: Path, document: dict[str, Any]) -> tuple[ExitCode, list[str]]:
    from reprogate.capture.merge import apply, plan

    try:
        doc = load_document(record)
    except DocumentError as exc:
        first = exc.diagnostics[0]
        return exc.exit_code, [f"{first.path}:{first.location.line}:{first.location.col}: {first.message}; record left unchanged"]
    if not isinstance(doc.data, dict) or doc.data.get("kind") != "RunRecord":
        return ExitCode.USAGE, [f"{record}: not a run record (kind: RunRecord); left unchanged"]
    merge = plan(doc.data, document)
    text = record.read_text(encoding="utf-8")
    atomic_write(record, apply(doc, text, merge))
    return ExitCode.OK, [*(f"note: {n}" for n in merge.notes), f"updated {record}: {', '.join('.'.join(p) for p, _ in merge.changes)}"]
