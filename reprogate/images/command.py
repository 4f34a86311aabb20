"""`reprogate image resolve|verify` and `reprogate dockerfile pins`: what they check and print."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from reprogate.core.diagnostics import ExitCode
from reprogate.core.documents import load_document, read_text
from reprogate.core.errors import ReprogateError, UsageError
from reprogate.core.fileio import atomic_write
from reprogate.detect.dockerfile import DockerfileError, from_lines
from reprogate.images.engine import connect
from reprogate.images.errors import ImageError, RegistryUnreachable
from reprogate.images.registry import RegistryClient as RegistryClient  # the command line names it from here
from reprogate.images.registry import parse_reference
from reprogate.output.result import CommandResult, worst


def resolve_command(refs: list[str], platform: str | None, fmt: str, client: RegistryClient | None = None) -> CommandResult:
    client = client or RegistryClient()
    lines, results, code = [], [], ExitCode.OK
    for ref in refs:
        try:
            found = client.resolve(ref, platform)
        except RegistryUnreachable as exc:
            lines.append(f"{ref}: registry unreachable: {exc}")
            code = worst(code, ExitCode.INFRA)
            continue
        except ImageError as exc:
            lines.append(f"{ref[:200]}: {exc}")
            code = worst(code, exc.exit_code)
            continue
        results.append(found.as_dict())
        text = f"{found.reference.registry}/{found.reference.repository}@{found.digest}"
        if found.platform_digest:
            text += f"  {found.platform}: {found.platform_digest}"
        elif found.platforms:
            text += f"  (index: {', '.join(found.platforms)})"
        lines.append(text)
    if fmt == "json":
        return CommandResult(code, [json.dumps({"resolved": results, "errors": [line for line in lines if ": " in line and "@sha256:" not in line]}, indent=2)])
    return CommandResult(code, lines)


def verify_record(record: Path, pull: bool, client: RegistryClient | None = None) -> CommandResult:
    """The record's image and base images still exist; a recorded tag that moved is reported."""

    data = load_document(record).data
    if not isinstance(data, dict) or data.get("kind") != "RunRecord":
        raise UsageError(f"{record} is not a run record (kind: RunRecord)")
    container = data.get("container")
    if not isinstance(container, dict) or container.get("used") is False:
        reason = container.get("reason", "no container section") if isinstance(container, dict) else "no container section"
        return CommandResult(ExitCode.OK, [f"{record}: the record declares no container ({reason}); nothing to verify"])
    client = client or RegistryClient()
    lines: list[str] = []
    code = ExitCode.OK
    targets = [(f"{container.get('registry', 'docker.io')}/{container.get('repository')}", container.get("digest"), container.get("tag"))]
    targets += [
        (b["ref"].split("@")[0].rsplit(":", 1)[0] if ":" in b["ref"].rsplit("/", 1)[-1] else b["ref"].split("@")[0], b.get("digest"), None)
        for b in container.get("base_images") or []
        if isinstance(b, dict)
    ]
    for name, digest, tag in targets:
        try:
            ref = parse_reference(name)
            if not digest:
                lines.append(f"{name}: no digest pinned")
                code = worst(code, ExitCode.FAILED)
                continue
            if client.exists(ref, digest):
                lines.append(f"{name}@{digest}: present")
            else:
                lines.append(f"{name}@{digest}: MISSING from {ref.registry} (deleted or garbage-collected): exact reproduction is no longer possible")
                code = worst(code, ExitCode.FAILED)
            if tag:
                moved = client.resolve(parse_reference(f"{name}:{tag}")).digest
                if moved != digest:
                    lines.append(f"{name}:{tag} has moved to {moved} (reported only: the record pins the digest)")
        except RegistryUnreachable as exc:
            lines.append(f"{name}: registry unreachable: {exc}")
            return CommandResult(ExitCode.INFRA, lines)
        except ImageError as exc:
            lines.append(f"{name}: {exc}")
            code = worst(code, ExitCode.FAILED)
    if pull:
        pull_code, pull_lines = _pull(container)
        lines += pull_lines
        code = worst(code, pull_code)
    return CommandResult(code, lines)


def _pull(container: dict[str, Any]) -> tuple[ExitCode, list[str]]:
    """Pull by digest through the Docker engine and confirm RepoDigests, where an engine exists."""

    try:
        client = connect(10).client
    except ReprogateError as exc:
        return ExitCode.INFRA, [f"--pull: {exc.message}; nothing was pulled or confirmed"]
    repo = f"{container.get('registry')}/{container.get('repository')}"
    digest = container.get("digest")
    errors = [event["error"] for event in client.api.pull(repo, digest, stream=True, decode=True) if "error" in event]
    if errors:
        return ExitCode.FAILED, [f"--pull: {repo}@{digest}: {errors[-1]}"]
    image = client.images.get(f"{repo}@{digest}")
    confirmed = any(d.endswith(digest) for d in image.attrs.get("RepoDigests", []))
    return (ExitCode.OK if confirmed else ExitCode.FAILED), [
        f"--pull: {repo}@{digest}: {'pulled; RepoDigests confirm the digest' if confirmed else 'pulled, but RepoDigests do not list the digest'}"
    ]


_FROM = re.compile(r"^(?P<lead>\s*FROM\s+(?:--\S+\s+)*)(?P<image>\S+)(?P<rest>.*)$", re.IGNORECASE)


def dockerfile_pins(path: Path, write: bool, client: RegistryClient | None = None) -> CommandResult:
    """Each FROM with the digest it resolves to; with write, pin literal references in place."""

    text = read_text(path, str(path))  # bounded, UTF-8, never waits on a FIFO; errors name the file
    client = client or RegistryClient()
    resolved: dict[str, str] = {}
    lines: list[str] = []
    code = ExitCode.OK
    try:
        entries = from_lines(text)
    except DockerfileError as exc:  # a FROM nested or grown past the bounds: unusable input, named by line
        raise UsageError(f"{path}: {exc}") from None
    for entry in entries:
        ref = str(entry.image)
        try:
            found = client.resolve(ref)
        except RegistryUnreachable as exc:
            return CommandResult(ExitCode.INFRA, [*lines, f"{ref}: registry unreachable: {exc}"])
        except ImageError as exc:
            lines.append(f"{path}: {entry.key}: {exc}")
            code = worst(code, exc.exit_code)
            continue
        pinned = f"{entry.image.name}:{entry.image.tag or 'latest'}@{found.digest}"
        resolved[ref] = pinned
        state = "pinned" if entry.image.digest == found.digest else ("digest differs" if entry.image.digest else "not pinned")
        lines.append(f"{entry.key}: {ref} -> {found.digest} ({state})")
    if write and resolved:
        out = []
        for line in text.splitlines(keepends=True):
            match = _FROM.match(line)
            if match and match.group("image") in resolved:
                line = (
                    match.group("lead")
                    + resolved[match.group("image")]
                    + match.group("rest")
                    + ("\n" if line.endswith("\n") and not match.group("rest").endswith("\n") else "")
                )
            elif match and "$" in match.group("image"):
                lines.append(f"{match.group('image')}: uses ARG variables; not rewritten (pin the ARG default instead)")
            out.append(line)
        atomic_write(path, "".join(out))
        lines.append(f"rewrote {path}")
    return CommandResult(code, lines)
