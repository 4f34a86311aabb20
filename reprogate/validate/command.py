"""`reprogate validate` and `reprogate digest`: check documents, or print what a record pins."""

from __future__ import annotations

from pathlib import Path

from reprogate.core.diagnostics import ExitCode
from reprogate.core.documents import DEFAULT_MAX_BYTES
from reprogate.core.errors import ReprogateError
from reprogate.output.findings import RENDERERS, all_findings
from reprogate.output.result import CommandResult
from reprogate.output.sarif import render_sarif
from reprogate.validate.digests import digest_for
from reprogate.validate.rule_texts import RULE_TEXTS
from reprogate.validate.runner import Options, validate


def validate_command(paths: list[str], fmt: str, max_bytes: int | None, root: Path | None, strict: bool, verbose: bool) -> CommandResult:

    report = validate(paths, Options(max_bytes=max_bytes or DEFAULT_MAX_BYTES, root=root, strict=strict))
    if fmt == "sarif":
        return render_sarif("validate", report.exit_code, all_findings(report), RULE_TEXTS)
    return RENDERERS[fmt](report, verbose)


def digest_command(files: list[Path], canonical: bool, manifest: bool) -> CommandResult:
    """One digest per file; a file that cannot be digested is reported and the others still are."""

    result = CommandResult()
    for path in files:
        try:
            result.stdout.append(f"{digest_for(path, canonical=canonical or manifest, manifest=manifest)}  {path}")
        except ReprogateError as exc:
            result.stderr.extend(exc.lines())
            result.worst(ExitCode.USAGE)
        except OSError as exc:
            result.stderr.append(f"{path}: cannot read: {exc.strerror}")
            result.worst(ExitCode.USAGE)
    return result
