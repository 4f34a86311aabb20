"""What `reprogate capture` does with the capture: print it, write it, or merge it into a record."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from reprogate.capture import CaptureContext, capture_all
from reprogate.core.diagnostics import ExitCode
from reprogate.core.documents import DocumentError, load_document
from reprogate.core.errors import UsageError
from reprogate.core.fileio import atomic_write
from reprogate.core.yamlout import dump_yaml
from reprogate.output.result import CommandResult


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


def run_capture(output: Path | None, record: Path | None, image: str | None, root: Path, framework: bool) -> CommandResult:
    """Print the capture, write it to a file, and/or merge it into a record."""
    messages: list[str] = []
    if image is not None and "@sha256:" not in image:
        from reprogate.images.registry import ImageError, RegistryClient, Unreachable

        try:  # a tag is only a label: pin what it points to now
            found = RegistryClient().resolve(image)
        except Unreachable as exc:
            raise Unreachable(f"--image {image!r}: registry unreachable ({exc.message})", hint="give REF@sha256:<digest> instead") from None
        except ImageError as exc:
            raise UsageError(f"--image {image!r}: {exc.message}", hint="give REF@sha256:<digest> instead") from None
        messages.append(f"note: {image} resolved to {found.digest}")
        image = f"{image}@{found.digest}"
    document = capture_all(CaptureContext(root=root, image=image, framework=framework, lock_globs=_lock_globs(root)))
    for section in ("source", "devices", "software", "host"):
        value = document.get(section)
        if isinstance(value, dict) and value.get("present") is False:
            messages.append(f"note: {section}: {value.get('reason')}")
    stdout: list[str] = []
    if output is not None and str(output) != "-":
        atomic_write(output, render(document, output))
        messages.append(f"wrote {output}")
    elif record is None or str(output) == "-":
        stdout = render(document, None).splitlines()
    if record is not None:
        messages.extend(_merge(record, document))
    return CommandResult(ExitCode.OK, stdout, messages)


def _merge(record: Path, document: dict[str, Any]) -> list[str]:
    from reprogate.capture.merge import apply, plan

    doc = load_document(record)
    if not isinstance(doc.data, dict) or doc.data.get("kind") != "RunRecord":
        raise UsageError(f"{record}: not a run record (kind: RunRecord); left unchanged")
    merge = plan(doc.data, document)
    text = record.read_text(encoding="utf-8")
    atomic_write(record, apply(doc, text, merge))
    return [*(f"note: {n}" for n in merge.notes), f"updated {record}: {', '.join('.'.join(p) for p, _ in merge.changes)}"]
