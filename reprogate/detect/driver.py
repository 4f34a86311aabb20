"""Driver layer: what decides the host driver a build needs.

- the CUDA each Dockerfile stage is built on: its base image (nvidia/cuda tags, NGC releases,
  `cuda12.4` / `cu124` tags), else the CUDA build argument the stage declares;
- the CUDA of the wheels a file installs: `+cu124` local versions, `/cu124` wheel indexes,
  `--torch-backend cu126`, in lock files, requirement files, pyproject and Dockerfile RUN lines;
- image references in compose files, manifests and workflows that carry a CUDA;
- cuda-compat / cuda-toolkit packages a Dockerfile installs;
- the driver a record requires, and self-hosted runner labels that select a GPU generation.

A CUDA change is reported as the CUDA versions and the minimum driver (and its branch) each needs.
"""

from __future__ import annotations

import re
from typing import Any

from reprogate.detect import base_image, cuda, framework
from reprogate.detect.base import Change, DetectContext
from reprogate.detect.dockerfile import ImageRef, stages
from reprogate.detect.framework import is_dockerfile
from reprogate.detect.pip_commands import shell_commands
from reprogate.detect.versions import Versions
from reprogate.lockfiles import format_for

LAYER = "driver"
_APT_CUDA = re.compile(r"^(cuda-(?:compat|toolkit|runtime|libraries|cudart)-\d+-\d+)(?:=(\S+))?$")
# Runner labels that select GPU machines: words for GPUs and drivers, and cloud GPU instance families
# (AWS g4dn/g5/g6/p4d/p5: `aws-g6-4xlarge-plus`) as a word of the label.
_DRIVERISH = re.compile(
    r"(gpu|cuda|driver|nvidia|r\d{3}|h100|h200|b200|a100|a10g|l4|l40|t4|v100|(?<![a-z0-9])(?:g4dn|g5|g6e?|p3|p4de?|p5e?)(?![a-z0-9]))", re.IGNORECASE
)
_CUDA_RUNTIME = re.compile(r"^nvidia-cuda-runtime(-cu\d+)?$")
_CUDA_INPUT = re.compile(r"(?i)cuda|gpu[-_]arch")  # `cuda-version`, `gpu-arch-version`: inputs of reusable GPU workflows
_RUNNER_INPUT = re.compile(r"(?i)runner|runs[-_]on")
_INDEX_LABELS = ("--index-url", "--extra-index-url", "--find-links")
_INDEX_GROUPS = ("uv index", "poetry source", "uv source")


def matches(v: Versions) -> bool:
    return is_dockerfile(v.name) or v.name.endswith((".yaml", ".yml", ".json")) or format_for(v.path) is not None or v.name == "pyproject.toml"


def _wheel_cudas(pins: dict[tuple[str, str], Any]) -> dict[str, set[str]]:
    """Group -> the CUDA versions the wheels or indexes of that group name."""
    found: dict[str, set[str]] = {}
    for (group, name), pin in pins.items():
        if "cu" not in pin.identity.lower() and not _CUDA_RUNTIME.match(name):
            continue  # no +cuXYZ, /cuXYZ or CUDA runtime wheel here: not parsed
        for value in pin.identity.split(" | "):
            hit = None
            if name in _INDEX_LABELS or group in _INDEX_GROUPS:
                hit = cuda.of_index(value.split("url=")[-1].split(",")[0])
            elif name == "--torch-backend":
                hit = cuda.of_arg("cuda", value)
            elif value[:1].isdigit():
                hit = cuda.of_wheel_version(value)
            else:
                from packaging.requirements import InvalidRequirement, Requirement

                try:
                    requirement = Requirement(value.removeprefix("-e "))
                except InvalidRequirement:
                    continue
                for spec in requirement.specifier:
                    hit = hit or cuda.of_wheel_version(spec.version)
                    if _CUDA_RUNTIME.match(name) and (match := cuda.VERSION.match(spec.version)):
                        hit = hit or cuda.Cuda(f"{match.group(1)}.{match.group(2)}", name)  # the CUDA runtime as a wheel
                if requirement.url and requirement.url.endswith(".whl"):
                    hit = hit or cuda.of_wheel_file(requirement.url)
            if hit is not None:
                found.setdefault(group, set()).add(hit.version)
    return found


def _wheel_facts(pins: dict[tuple[str, str], Any]) -> dict[str, Any]:
    return {f"CUDA wheels ({group})" if group else "CUDA wheels": ", ".join(sorted(versions)) for group, versions in _wheel_cudas(pins).items()}


def _dockerfile_facts(v: Versions, which: str, ctx: DetectContext) -> dict[str, Any]:

    text = v.text(which)
    facts: dict[str, Any] = {}
    for stage in stages(text or "")[1]:
        found = cuda.of_image(stage.image.name, stage.image.tag) if stage.image is not None else None
        if found is None and stage.parent is None:  # a stage built on another inherits its CUDA, reported there
            for name, value in stage.args.items():
                found = found or cuda.of_arg(name, value or "")
        if found is not None:
            facts[f"CUDA ({stage.key})"] = found
        elif stage.unresolved:
            facts[f"CUDA ({stage.key})"] = f"unresolved (the image is set by --build-arg {', '.join(stage.unresolved)})"
        for command, _, _scope in stage.runs:
            for words in shell_commands(command):
                for word in words:
                    if match := _APT_CUDA.match(word):
                        facts[match.group(1)] = match.group(2) or "any version"
    facts.update(_wheel_facts(framework.pins(v, which, ctx)))
    return facts


def _yaml_facts(v: Versions, which: str) -> dict[str, Any]:

    facts: dict[str, Any] = {}
    if not v.mentions(b"image", b"container", b"docker://", b"runs-on", b"runrecord"):
        return facts  # no image, runner or record in the file: not parsed
    for where, refs in base_image.refs(v, which).items():
        for ref in refs:
            if isinstance(ref, ImageRef) and (found := cuda.of_image(ref.name, ref.tag)) is not None:
                key = f"CUDA ({where}: {ref.name})"  # several references at one place: the set of their CUDAs
                facts[key] = ", ".join(sorted({*filter(None, str(facts.get(key, "")).split(", ")), _shown(found) or ""}))
    data = v.data(which)
    if not isinstance(data, dict):
        return facts
    if data.get("kind") == "RunRecord":
        devices, envelope = data.get("devices") or {}, (data.get("contract") or {}).get("envelope") or {}
        for key in ("driver_version", "cuda_driver_version"):
            if isinstance(devices, dict) and devices.get(key):
                facts[f"devices.{key}"] = str(devices[key])
        if isinstance(envelope, dict) and envelope.get("driver_branch"):
            facts["contract.envelope.driver_branch"] = ", ".join(map(str, envelope["driver_branch"]))
    jobs = data.get("jobs")
    if isinstance(jobs, dict):
        for job, body in jobs.items():
            labels = _runner_labels(body)
            if any(_DRIVERISH.search(label) for label in labels):
                facts[f"jobs.{job}.runs-on"] = ", ".join(labels)
            inputs = body.get("with") if isinstance(body, dict) else None
            for key, value in (inputs or {}).items() if isinstance(inputs, dict) else ():
                if _CUDA_INPUT.search(str(key)) and cuda.VERSION.match(str(value).strip()):
                    facts[f"jobs.{job}.with.{key}"] = str(value).strip()  # a reusable workflow's CUDA, chosen by its caller
                elif _RUNNER_INPUT.fullmatch(str(key)) and any(_DRIVERISH.search(label) for label in _labels(value)):
                    facts[f"jobs.{job}.with.{key}"] = ", ".join(_labels(value))  # the runner a reusable workflow is asked to run on
    return facts


def _labels(runs_on: Any) -> list[str]:
    """The labels of a `runs-on`: a label, a list, or a runner `group` (with or without labels)."""
    if isinstance(runs_on, str):
        return [runs_on]
    if isinstance(runs_on, list):
        return [str(x) for x in runs_on]
    if isinstance(runs_on, dict):
        group = runs_on.get("group")
        return ([str(group)] if isinstance(group, str) else []) + _labels(runs_on.get("labels"))
    return []


def _runner_labels(job: Any) -> list[str]:
    """The runner labels a job can run on, its `${{ matrix.KEY }}` put in from the job's own
    matrix: a matrix entry the job's runs-on reads changes its machines; one it does not read, nothing."""
    labels = []
    for label in _labels(job.get("runs-on") if isinstance(job, dict) else None):
        labels += base_image.expand_matrix(label, job) or [label]
    return labels


def _facts(v: Versions, which: str, ctx: DetectContext) -> dict[str, Any]:
    if v.text(which) is None:
        return {}
    if is_dockerfile(v.name):
        return _dockerfile_facts(v, which, ctx)
    if format_for(v.path) is not None or v.name == "pyproject.toml":
        return _wheel_facts(framework.pins(v, which, ctx))
    return _yaml_facts(v, which)


def _shown(fact: Any) -> str | None:
    if fact is None:
        return None
    if isinstance(fact, cuda.Cuda):
        return fact.version + (f" ({fact.source})" if fact.source.startswith("NGC") else "") if fact.version else fact.source
    return str(fact)


def _driver_detail(before: Any, after: Any) -> str:
    def need(fact: Any) -> str:
        if isinstance(fact, cuda.Cuda) and fact.driver:
            return f">= {fact.driver}" + (f" ({cuda.branch(fact.driver)})" if "." in fact.driver else "")
        if isinstance(fact, str) and fact[:1].isdigit():
            versions = [x.strip() for x in fact.split(",")]
            drivers = [d for d in (cuda.minimum_driver(x) for x in versions) if d]
            return f">= {max(drivers, key=lambda d: [int(p) for p in d.split('.')])} ({cuda.branch(max(drivers))})" if drivers else "unknown"
        return "unknown"

    old, new = need(before), need(after)
    return f"minimum driver {old} -> {new}" if old != new else f"minimum driver {new}"


def _floors(fact: Any) -> tuple[str, ...] | None:
    """The minimum drivers a CUDA fact needs (one per CUDA it names), or None where one is unknown."""
    if isinstance(fact, cuda.Cuda):
        return (fact.driver,) if fact.driver else None
    if isinstance(fact, str) and fact[:1].isdigit():
        found = [cuda.minimum_driver(x.strip()) for x in fact.split(",")]
        return tuple(d for d in found if d) if all(found) else None
    return None


def _same_floors(a: Any, b: Any) -> bool:
    """Whether two CUDA facts need the same drivers: a tag that moves no driver floor
    (`12.1.0` -> `12.1.1`, NGC 24.01 -> 24.02 on one branch) is no driver change."""
    fa, fb = _floors(a), _floors(b)
    if not fa or not fb:
        return False
    return all(any(cuda.same_floor(x, y) for y in fb) for x in fa) and all(any(cuda.same_floor(y, x) for x in fa) for y in fb)


def diff(v: Versions, ctx: DetectContext) -> list[Change]:
    try:
        old, new = _facts(v, "old", ctx), _facts(v, "new", ctx)
    except (ValueError, TypeError):
        return []  # the framework, base-image or records detector reports the unparseable file
    changes = []
    stage_cudas = {side: [f for k, f in facts.items() if k.startswith("CUDA (stage ")] for side, facts in (("old", old), ("new", new))}
    for key in sorted(set(old) | set(new)):
        before, after = old.get(key), new.get(key)
        if _shown(before) == _shown(after):
            continue
        if key.startswith("CUDA") and before is not None and after is not None and _same_floors(before, after):
            continue  # another CUDA tag, the same minimum driver: the base-image layer reports the image
        moved = (before is None and any(_same_floors(after, f) or _shown(f) == _shown(after) for f in stage_cudas["old"])) or (
            after is None and any(_same_floors(before, f) or _shown(f) == _shown(before) for f in stage_cudas["new"])
        )
        if key.startswith("CUDA (stage ") and moved:
            continue  # a stage added on (or removed from) a CUDA the build still uses elsewhere: the CUDAs did not change
        is_cuda = key.startswith("CUDA")
        if before is not None and after is not None:
            kind = "cuda" if is_cuda else "changed"
        else:
            kind = "added" if before is None else "removed"
        detail = _driver_detail(before, after) if is_cuda else ""
        changes.append(Change(LAYER, v.path, kind, key, _shown(before), _shown(after), detail))
    if v.name.endswith((".yml", ".yaml")):
        changes = _drop_reused_runners(_drop_renamed_images(changes, old, new), old, new)
    return changes


def _place_cudas(facts: dict[str, Any]) -> dict[str, list[Any]]:
    """Place in the file -> the CUDA facts of its image references, whichever images they are."""
    found: dict[str, list[Any]] = {}
    for key, fact in facts.items():
        if key.startswith("CUDA (") and ": " in key:
            place = key[len("CUDA (") :].rsplit(": ", 1)[0]
            found.setdefault(place, []).append(fact)
    return found


def _cudas_shown(facts: list[Any]) -> set[str]:
    return {part for f in facts for part in filter(None, str(_shown(f)).split(", "))}


def _same_place(a: list[Any], b: list[Any]) -> bool:
    """Whether two places' image references need the same CUDAs, or the same drivers."""
    if _cudas_shown(a) == _cudas_shown(b):
        return True
    return all(any(_same_floors(x, y) for y in b) for x in a) and all(any(_same_floors(y, x) for x in a) for y in b)


def _drop_renamed_images(changes: list[Change], old: dict[str, Any], new: dict[str, Any]) -> list[Change]:
    """Another image at the same place on the same CUDA (`mosaicml/pytorch:...cu124` for
    `mosaicml/llm-foundry:...cu124`), or on one that needs the same driver (NGC Triton 22.12 for
    `nvidia/cuda:11.8.0`), does not change the driver it needs: the base-image layer reports the image."""
    before, after = _place_cudas(old), _place_cudas(new)
    same = {place for place in before.keys() & after.keys() if _same_place(before[place], after[place])}
    return [c for c in changes if not (c.subject.startswith("CUDA (") and ": " in c.subject and c.subject[len("CUDA (") :].rsplit(": ", 1)[0] in same)]


def _drop_reused_runners(changes: list[Change], old: dict[str, Any], new: dict[str, Any]) -> list[Change]:
    """A job added or removed on runner labels that another job of the file already used (or
    still uses) does not change which drivers run the work: only new or retired labels do."""

    def runners(facts: dict[str, Any]) -> set[Any]:
        return {value for key, value in facts.items() if key.startswith("jobs.") and key.endswith(".runs-on")}

    before, after = runners(old), runners(new)
    kept = []
    for change in changes:
        if change.subject.startswith("jobs.") and change.subject.endswith(".runs-on"):
            if change.kind == "added" and change.new in before:
                continue
            if change.kind == "removed" and change.old in after:
                continue
        kept.append(change)
    return kept
