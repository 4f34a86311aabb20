"""Driver layer: the driver a record requires, CUDA base images and cuda-compat pins in
Dockerfiles, and self-hosted runner labels that select a driver generation in workflows."""

from __future__ import annotations

import re
from typing import Any

from reprogate.detect import Change, DetectContext
from reprogate.detect.dockerfile import from_lines, run_lines
from reprogate.detect.framework import is_dockerfile
from reprogate.detect.versions import Versions

LAYER = "driver"
_COMPAT = re.compile(r"\bcuda-compat-(\d+-\d+)(?:=([^\s]+))?")
_DRIVERISH = re.compile(r"(gpu|cuda|driver|nvidia|r\d{3}|h100|h200|a100|l40)", re.IGNORECASE)


def matches(v: Versions) -> bool:
    return is_dockerfile(v.name) or v.name.endswith((".yaml", ".yml", ".json"))


def _facts(v: Versions, which: str) -> dict[str, str]:
    text = v.text(which)
    if text is None:
        return {}
    facts: dict[str, str] = {}
    if is_dockerfile(v.name):
        for f in from_lines(text):
            if "cuda" in f.image.name.lower():
                facts[f"CUDA base image ({f.key})"] = f"{f.image.name}:{f.image.tag}" if f.image.tag else f.image.name
        for line in run_lines(text):
            for match in _COMPAT.finditer(line):
                facts[f"cuda-compat-{match.group(1)}"] = match.group(2) or "any version"
        return facts
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
            labels = _labels(body.get("runs-on") if isinstance(body, dict) else None)
            gpu = [label for label in labels if _DRIVERISH.search(label)]
            if gpu:
                facts[f"jobs.{job}.runs-on"] = ", ".join(labels)
    return facts


def _labels(runs_on: Any) -> list[str]:
    if isinstance(runs_on, str):
        return [runs_on]
    if isinstance(runs_on, list):
        return [str(x) for x in runs_on]
    if isinstance(runs_on, dict):
        return _labels(runs_on.get("labels"))
    return []


def diff(v: Versions, ctx: DetectContext) -> list[Change]:
    try:
        old, new = _facts(v, "old"), _facts(v, "new")
    except ValueError:
        return []  # the base-image or records detector reports the unparseable file
    return [
        Change(LAYER, v.path, "changed" if key in old and key in new else ("added" if key in new else "removed"), key, old.get(key), new.get(key))
        for key in sorted(set(old) | set(new))
        if old.get(key) != new.get(key)
    ]
