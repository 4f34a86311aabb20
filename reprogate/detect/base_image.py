"""Base-image layer: Dockerfile FROM lines and image references in records, compose files,
Kubernetes manifests and workflows, old ref -> new ref with tag and digest compared separately
(a tag that stayed while its pinned digest changed is a change)."""

from __future__ import annotations

from typing import Any, Iterator

from reprogate.detect import Change, DetectContext
from reprogate.detect.dockerfile import ImageRef, from_lines
from reprogate.detect.framework import is_dockerfile
from reprogate.detect.versions import Versions

LAYER = "base-image"


def matches(v: Versions) -> bool:
    return is_dockerfile(v.name) or v.name.endswith((".yaml", ".yml", ".json"))


def _yaml_refs(data: Any, path: str = "") -> Iterator[tuple[str, str]]:
    if isinstance(data, dict):
        if data.get("kind") == "RunRecord" and str(data.get("apiVersion", "")).startswith("reprogate"):
            yield from _record_refs(data)
            return
        for key, value in data.items():
            where = f"{path}.{key}" if path else str(key)
            if key == "image" and isinstance(value, str):
                yield where, value
            elif key == "container" and isinstance(value, str):  # GitHub Actions job container
                yield where, value
            elif key == "uses" and isinstance(value, str) and value.startswith("docker://"):
                yield where, value[len("docker://") :]
            else:
                yield from _yaml_refs(value, where)
    elif isinstance(data, list):
        for i, value in enumerate(data):
            yield from _yaml_refs(value, f"{path}[{i}]")


def _record_refs(record: dict[str, Any]) -> Iterator[tuple[str, str]]:
    container = record.get("container")
    if isinstance(container, dict) and container.get("used") is not False and container.get("repository"):
        ref = f"{container.get('registry', 'docker.io')}/{container['repository']}"
        ref += f":{container['tag']}" if container.get("tag") else ""
        ref += f"@{container['digest']}" if container.get("digest") else ""
        yield "container", ref
    for i, base in enumerate((container or {}).get("base_images") or [] if isinstance(container, dict) else []):
        if isinstance(base, dict) and base.get("ref"):
            yield f"container.base_images[{i}]", f"{base['ref']}@{base['digest']}" if base.get("digest") else base["ref"]


def refs(v: Versions, which: str) -> dict[str, ImageRef]:
    text = v.text(which)
    if text is None:
        return {}
    if is_dockerfile(v.name):
        return {f"FROM ({f.key})" + (f" --platform={f.platform}" if f.platform else ""): f.image for f in from_lines(text)}
    return {where: ImageRef.parse(ref) for where, ref in _yaml_refs(v.data(which))}


def diff(v: Versions, ctx: DetectContext) -> list[Change]:
    try:
        old, new = refs(v, "old"), refs(v, "new")
    except ValueError as exc:
        if is_dockerfile(v.name) or v.kind() is not None:
            return [Change(LAYER, v.path, "unparseable", detail=f"cannot be parsed ({exc}); counted as changed")]
        return []  # an unparseable YAML file that is not ours: other layers judge it
    changes = []
    for where in sorted(set(old) | set(new)):
        before, after = old.get(where), new.get(where)
        if before == after:
            continue
        if before is None or after is None:
            changes.append(Change(LAYER, v.path, "added" if before is None else "removed", where, str(before) if before else None, str(after) if after else None))
            continue
        if before.name != after.name:
            kind = "image"
        elif before.tag != after.tag:
            kind = "tag" if before.digest == after.digest else "tag+digest"
        else:
            kind = "digest"
        detail = "the tag stayed; its pinned digest changed" if kind == "digest" and before.tag else ""
        changes.append(Change(LAYER, v.path, kind, where, str(before), str(after), detail))
    return changes
