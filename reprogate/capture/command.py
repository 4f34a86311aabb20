"""What `reprogate capture` does with the capture: print it, write it, or merge it into a record."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from reprogate.capture import CaptureContext
from reprogate.capture.layers import capture_all
from reprogate.capture.merge import Merge, apply, plan
from reprogate.capture.storage import measured_node, measured_storage, merged_storage
from reprogate.core.canonical import file_digest
from reprogate.core.config import load_config, repository_root
from reprogate.core.diagnostics import ExitCode
from reprogate.core.documents import DocumentError, load_document
from reprogate.core.errors import UsageError
from reprogate.core.fileio import atomic_write
from reprogate.core.shapes import table
from reprogate.core.yamlout import dump_yaml
from reprogate.images.errors import ImageError, RegistryUnreachable
from reprogate.images.registry import RegistryClient
from reprogate.output.result import CommandResult
from reprogate.runtime.trace import MetaEvent, leading_meta_events, meta_events, plain


def lock_globs(root: Path) -> list[str]:
    """The framework watch globs of the project's configuration: the lock files capture pins
    (none when the configuration cannot be read; capture still runs)."""

    try:
        return list(load_config(root).watch.get("framework", ()))
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
        try:  # a tag is only a label: pin what it points to now
            found = RegistryClient().resolve(image)
        except RegistryUnreachable as exc:
            raise RegistryUnreachable(f"--image {image!r}: registry unreachable ({exc.message})", hint="give REF@sha256:<digest> instead") from None
        except ImageError as exc:
            raise UsageError(f"--image {image!r}: {exc.message}", hint="give REF@sha256:<digest> instead") from None
        messages.append(f"note: {image} resolved to {found.digest}")
        image = f"{image}@{found.digest}"
    exclude = [record] if record is not None else []
    ctx = CaptureContext(root=root, image=image, framework=framework, lock_globs=lock_globs(root), exclude=exclude)
    document = capture_all(ctx)
    messages += [f"note: {note}" for note in ctx.notes]
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

    doc = load_document(record)
    if not isinstance(doc.data, dict) or doc.data.get("kind") != "RunRecord":
        raise UsageError(f"{record}: not a run record (kind: RunRecord); left unchanged")

    root = repository_root(record.parent)
    notes = _training_determinism(doc.data, document, root)
    merge = plan(doc.data, document, _recipe_checksum(doc.data, root))
    merge.notes[:0] = notes
    _plan_storage(doc.data, root, merge)
    _plan_node(doc.data, document, merge)
    text = record.read_text(encoding="utf-8")
    atomic_write(record, apply(doc, text, merge))
    return [*(f"note: {n}" for n in merge.notes), f"updated {record}: {', '.join('.'.join(p) for p, _ in merge.changes)}"]


def _plan_storage(data: dict[str, Any], root: Path, merge: Merge) -> None:
    """contract.envelope.storage from what the record's files measure (capture/storage.py)."""
    measured = measured_storage(data, root)
    contract = data.get("contract")
    if not measured or not isinstance(contract, dict):
        return
    storage = merged_storage(data, measured)
    if isinstance(contract.get("envelope"), dict):
        merge.changes.append((("contract", "envelope", "storage"), storage))
    else:
        merge.changes.append((("contract", "envelope"), {"storage": storage}))
    merge.notes.append("contract.envelope.storage: " + ", ".join(f"{k} {v}" for k, v in measured.items()) + " (measured)")


def _plan_node(data: dict[str, Any], document: dict[str, Any], merge: Merge) -> None:
    """contract.envelope.node: CPUs and GPU memory measured here; host memory a person (or init) stated is kept."""
    envelope = (data.get("contract") or {}).get("envelope") if isinstance(data.get("contract"), dict) else None
    if not isinstance(envelope, dict):
        return
    devices = table(document, "devices")
    measured = measured_node(data, devices)
    stated = table(envelope, "node")
    merge.changes.append((("contract", "envelope", "node"), {**stated, **measured}))
    merge.notes.append("contract.envelope.node: " + ", ".join(f"{k} {v}" for k, v in measured.items()) + " (measured)")


def _recipe_checksum(data: dict[str, Any], root: Path) -> str | None:
    """The build recipe's checksum now (capture owns it like the lock files'), or None."""

    recipe = (data.get("source") or {}).get("build_recipe") if isinstance(data.get("source"), dict) else None
    rel = recipe.get("path") if isinstance(recipe, dict) else None
    if not isinstance(rel, str) or not (root / rel).is_file():
        return None
    return file_digest(root / rel)


def _training_determinism(data: dict[str, Any], document: dict[str, Any], root: Path) -> list[str]:
    """software.determinism as the training process had it (the reference trace's meta, rank 0),
    never as this CLI process has it: capture runs before or beside training, whose
    seed_everything and torch.backends settings are what the steps ran with."""
    software = document.get("software")
    if not isinstance(software, dict):
        return []
    software.pop("determinism", None)
    previous = (data.get("software") or {}).get("determinism") if isinstance(data.get("software"), dict) else None
    rel = ((data.get("reference") or {}).get("trace") or {}).get("path") if isinstance(data.get("reference"), dict) else None
    metas: list[MetaEvent] = []
    if isinstance(rel, str) and (root / rel).is_file():
        try:
            metas = leading_meta_events(root / rel)
        except (OSError, ValueError):  # TraceError (a meta of the wrong shape) and UnicodeDecodeError are ValueErrors
            metas = []
    found = next((m.determinism for m in meta_events(metas) if m.determinism is not None), None)
    if found is not None:
        software["determinism"] = plain(found)
        return [f"software.determinism from the training process (the meta of {rel})"]
    if isinstance(previous, dict):
        software["determinism"] = previous
    where = f"{rel} has no meta event with them" if isinstance(rel, str) else "the record has no reference trace"
    kept = "kept as recorded" if isinstance(previous, dict) else "left out"
    return [f"software.determinism {kept}: {where} (this CLI process's settings say nothing of training)"]
