"""Base-image layer: Dockerfile FROM lines (and `COPY --from=<image>`), and image references in
records, compose files, Kubernetes manifests and workflows; old ref -> new ref with tag and
digest compared separately (a tag that stayed while its pinned digest changed is a change).

Dockerfile references are resolved the way BuildKit resolves them (see detect.dockerfile); one
that needs a build argument without a default is reported as unresolved. YAML references are
keyed by where they sit with list positions left out, and by image name: inserting an entry in a
matrix list does not "change" the entries after it.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from reprogate.detect.base import Change, DetectContext
from reprogate.detect.dockerfile import ImageRef, stages
from reprogate.detect.framework import is_dockerfile
from reprogate.detect.versions import Versions

LAYER = "base-image"
_INDEX = re.compile(r"\[\d+\]")


def matches(v: Versions) -> bool:
    return is_dockerfile(v.name) or v.name.endswith((".yaml", ".yml", ".json"))


@dataclass(frozen=True)
class Unresolved:
    """A FROM whose image is chosen by a build argument that has no default."""

    written: str
    missing: tuple[str, ...]

    def __str__(self) -> str:
        return f"{self.written} (unresolved: build argument {', '.join(self.missing)} has no default)"


Ref = ImageRef | Unresolved


def _is_image_key(key: object) -> bool:
    """`image`, and keys that name an image in build matrices and workflow inputs: `BASE_IMAGE`,
    `base-image`, `cuda_image`, `fa4_image_cu130` (`image` as one of the key's words)."""
    words = re.split(r"[-_.]", str(key).lower())
    return words == ["baseimage"] or ("image" in words and words[-1] not in _NOT_A_REFERENCE)


# `image_tag`, `image-pull-policy`: about an image, but not a reference to one
_NOT_A_REFERENCE = {"tag", "tags", "name", "version", "digest", "id", "repo", "repository", "registry", "policy", "pull", "size", "platform", "arch"}


_MATRIX = re.compile(r"\$\{\{\s*matrix\.([A-Za-z0-9_.-]+)\s*\}\}")


def matrix_values(job: Any, key: str) -> list[str] | None:
    """The values a GitHub Actions job's `${{ matrix.KEY }}` takes (`config.image` reads each
    `config` entry's `image`), from `strategy.matrix` and its `include` entries; None when they
    are not plain values written in the file (an expression, `fromJSON`, nothing)."""
    strategy = job.get("strategy") if isinstance(job, dict) else None
    matrix = strategy.get("matrix") if isinstance(strategy, dict) else None
    if not isinstance(matrix, dict):
        return None
    head, _, rest = key.partition(".")
    included = [e.get(head) for e in _as_list(matrix.get("include")) if isinstance(e, dict) and head in e]
    found: list[str] = []
    for entry in [*_as_list(matrix.get(head)), *included]:
        value = entry.get(rest) if rest and isinstance(entry, dict) else (None if rest else entry)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            return None
        if str(value) not in found:
            found.append(str(value))
    return found or None


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def expand_matrix(text: str, job: Any) -> list[str] | None:
    """`text` with its one `${{ matrix.KEY }}` put in for each value the job's matrix gives it
    (`openmmlab/lmdeploy-builder:cuda${{ matrix.cudaver }}` -> one reference per cudaver); None
    when it holds another expression or the values are not written in the file."""
    keys = set(_MATRIX.findall(text))
    if len(keys) != 1 or "${{" in _MATRIX.sub("", text):
        return None
    values = matrix_values(job, next(iter(keys)))
    return [_MATRIX.sub(value, text) for value in values] if values else None


def _yaml_refs(data: Any, path: str = "") -> Iterator[tuple[str, str]]:
    if isinstance(data, dict):
        if data.get("kind") == "RunRecord" and str(data.get("apiVersion", "")).startswith("reprogate"):
            yield from _record_refs(data)
            return
        for key, value in data.items():
            where = f"{path}.{key}" if path else str(key)
            if isinstance(value, str) and (_is_image_key(key) or key == "container") and value.strip() and " " not in _MATRIX.sub("", value.strip()):
                yield where, value  # `container:` is a GitHub Actions job container
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


def dockerfile_refs(text: str) -> dict[str, list[Ref]]:
    found: dict[str, list[Ref]] = defaultdict(list)
    for stage in stages(text)[1]:
        key = f"FROM ({stage.key})" + (f" --platform={stage.platform}" if stage.platform else "")
        if stage.image is not None:
            found[key].append(stage.image)
        elif stage.unresolved:
            found[key].append(Unresolved(stage.written, stage.unresolved))
        for _, ref in stage.copies_from:
            found[f"COPY --from ({stage.key})"].append(ref)
    return found


def refs(v: Versions, which: str) -> dict[str, list[Ref]]:
    """Where -> the references there (several where a list held several), for one side."""

    def read() -> dict[str, list[Ref]]:
        text = v.text(which)
        if text is None:
            return {}
        if is_dockerfile(v.name):
            return dockerfile_refs(text)
        found: dict[str, list[Ref]] = defaultdict(list)
        if not v.mentions(b"image", b"container", b"docker://"):
            return found  # no key that names an image: not parsed
        data = v.data(which)
        for where, ref in _yaml_refs(data):
            if _unused_matrix_entry(data, where):
                continue  # a matrix entry the job never reads changes nothing it runs
            if "${{" not in ref:
                found[_INDEX.sub("[]", where)].append(ImageRef.parse(ref.strip()))
            elif (expanded := _matrix_refs(data, where, ref)) is not None:  # else decided at run time
                found[_INDEX.sub("[]", where)].extend(ImageRef.parse(r.strip()) for r in expanded)
        return found

    return v.memo(f"image refs {which}", read)


_ENTRY_INDEX = re.compile(r"\[\d+\]")


def _unused_matrix_entry(data: Any, where: str) -> bool:
    """Whether `where` (`jobs.test.strategy.matrix.include[1].image`) is a value of a GitHub
    Actions job's matrix that the job never reads as `matrix.image` (outside its strategy): an
    image listed there but not used by the job's container, runs-on or steps."""
    parts = where.split(".")
    if len(parts) < 5 or parts[0] != "jobs" or parts[2] != "strategy" or not parts[3].startswith("matrix"):
        return False
    jobs = data.get("jobs") if isinstance(data, dict) else None
    job = jobs.get(parts[1]) if isinstance(jobs, dict) else None
    if not isinstance(job, dict):
        return False
    path = [_ENTRY_INDEX.sub("", part) for part in parts[4:]]
    if path and path[0] in ("include", "exclude"):
        path = path[1:]
    if not path:
        return False
    rest = json.dumps({k: v for k, v in job.items() if k != "strategy"})
    used = re.compile(r"matrix\s*\.\s*" + re.escape(path[0]) + r"(?![\w-])(?:\s*\.\s*([\w-]+))?")
    for found in used.finditer(rest):
        if found.group(1) is None or len(path) == 1 or found.group(1) == path[1]:
            return False
    return f"matrix[{json.dumps(path[0])}]" not in rest and f"matrix['{path[0]}']" not in rest


def _matrix_refs(data: Any, where: str, ref: str) -> list[str] | None:
    """A job's image reference built from a matrix value (`...:cuda${{ matrix.cudaver }}`): one
    reference per value. A matrix value that is itself an image (`${{ matrix.container }}` over
    `include: [{container: ...}]`) is read where the matrix holds it, not again here."""
    parts = where.split(".")
    if len(parts) < 3 or parts[0] != "jobs" or not isinstance(data, dict) or not isinstance(data.get("jobs"), dict):
        return None
    key = next(iter(_MATRIX.findall(ref)), "").rsplit(".", 1)[-1]
    if _is_image_key(key) or key == "container":
        return None
    return expand_matrix(ref, data["jobs"].get(parts[1].split("[", 1)[0]))


def _name(ref: Ref) -> str:
    return ref.name if isinstance(ref, ImageRef) else ref.written


def pair(old: list[Ref], new: list[Ref]) -> list[tuple[Ref | None, Ref | None]]:
    """The references that differ between two lists at one place, paired by image name: what
    stayed is dropped, a name on both sides is a tag/digest change, the rest added or removed."""
    before, after = list(old), list(new)
    for ref in list(before):
        if ref in after:
            before.remove(ref)
            after.remove(ref)
    pairs: list[tuple[Ref | None, Ref | None]] = []
    for ref in list(before):
        same = next((r for r in after if _name(r) == _name(ref)), None)
        if same is None and len(before) == 1 and len(after) == 1:
            same = after[0]  # the one reference at this place changed image
        if same is not None:
            pairs.append((ref, same))
            before.remove(ref)
            after.remove(same)
    return pairs + [(ref, None) for ref in before] + [(None, ref) for ref in after]


def _change(v: Versions, where: str, before: Ref | None, after: Ref | None) -> Change:
    if isinstance(before, Unresolved) or isinstance(after, Unresolved):
        detail = "the image is chosen by --build-arg at build time; set a default to make it reviewable"
        return Change(LAYER, v.path, "unresolved", where, str(before) if before else None, str(after) if after else None, detail)
    if before is None or after is None:
        return Change(LAYER, v.path, "added" if before is None else "removed", where, str(before) if before else None, str(after) if after else None)
    if before.name != after.name:
        kind = "image"
    elif before.tag != after.tag:
        kind = "tag" if before.digest == after.digest else "tag+digest"
    else:
        kind = "digest"
    detail = "the tag stayed; its pinned digest changed" if kind == "digest" and before.tag else ""
    return Change(LAYER, v.path, kind, where, str(before), str(after), detail)


def diff(v: Versions, ctx: DetectContext) -> list[Change]:
    try:
        old, new = refs(v, "old"), refs(v, "new")
    except (ValueError, TypeError) as exc:
        if is_dockerfile(v.name) or v.kind() is not None:
            return [Change(LAYER, v.path, "unparseable", detail=f"cannot be parsed ({exc}); counted as changed")]
        return []  # an unparseable YAML file that is not ours: other layers judge it
    changes = []
    everywhere_old = [ref for refs in old.values() for ref in refs]
    everywhere_new = [ref for refs in new.values() for ref in refs]
    for where in sorted(set(old) | set(new)):
        for before, after in pair(old.get(where, []), new.get(where, [])):
            if is_dockerfile(v.name) and (before is None and after in everywhere_old or after is None and before in everywhere_new):
                continue  # a stage added on (or removed from) an image the build still uses elsewhere: the images did not change
            changes.append(_change(v, where, before, after))
    return changes
