"""`reprogate detect`: which watched layers a diff changes, printed for people, tools or GitHub."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from reprogate.core.config import CONFIG_NAME, load_config
from reprogate.core.diagnostics import ExitCode
from reprogate.detect import output
from reprogate.detect.git import DetectError, config_at, config_location, read_blobs, resolve, toplevel
from reprogate.detect.run import Resolved, detect, detect_files
from reprogate.output.result import CommandResult
from reprogate.output.sarif import render_sarif

if TYPE_CHECKING:
    from reprogate.detect.run import DetectResult


def _with_the_bases_config(repo: Path, base: str, head: str) -> DetectResult:
    """The diff judged by `.reprogate.yaml` as the base has it (its records, watch globs and
    ignores), as the gate does: a pull request that edits the configuration cannot unwatch what
    it changes. Without one at the base, the working tree's."""

    top, rel = config_location(repo, None)
    resolved = Resolved(top, resolve(top, base), resolve(top, head))
    sides = [f"{resolved.base}:{rel}", f"{resolved.head}:{rel}"]
    blobs = read_blobs(top, sides)
    at_base = blobs.get(sides[0]) is not None
    config = config_at(top, resolved.base, rel, (top / rel).parent) if at_base else load_config(repo)
    result = detect(repo, base, head, config, resolved)
    if at_base and blobs.get(sides[1]) != blobs.get(sides[0]):
        result.notes.append(f"{rel} changed in this diff; the base's {CONFIG_NAME} decided what is watched (the gate does the same)")
    return result


def detect_command(repo: Path, base: str | None, head: str, files_from: Path | None, config_path: Path | None, fmt: str) -> CommandResult:

    if files_from is not None:
        result = detect_files(files_from, load_config(config_path if config_path is not None else repo))
    elif base is None:
        raise DetectError("give --base REF (and --head), or --files-from FILE")
    elif config_path is not None:
        result = detect(repo, base, head, load_config(config_path))
    else:
        result = _with_the_bases_config(repo, base, head)
    if fmt == "json":
        return CommandResult(stdout=[output.as_json(result).rstrip("\n")])
    if fmt == "sarif":
        top = repo if files_from is not None else toplevel(repo)  # detect's paths are the repository's own
        return render_sarif("detect", ExitCode.OK, output.findings(result), output.rule_texts(result), top)
    done = CommandResult(stdout=output.text(result).rstrip("\n").split("\n"))
    if fmt == "github":
        done.outputs = {
            "changed": "true" if result.changes else "false",
            "layers": ",".join(result.layers),
            "rebuild-required": "true" if result.rebuild_required else "false",
        }
        done.summary = output.markdown(result)
    return done
