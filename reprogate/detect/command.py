"""`reprogate detect`: which watched layers a diff changes, printed for people, tools or GitHub."""

from __future__ import annotations

from pathlib import Path

from reprogate.output.result import CommandResult


def detect_command(repo: Path, base: str | None, head: str, files_from: Path | None, config_path: Path | None, fmt: str) -> CommandResult:
    from reprogate.core.config import load_config
    from reprogate.detect import output
    from reprogate.detect.git import DetectError
    from reprogate.detect.run import detect, detect_files

    config = load_config(config_path if config_path is not None else repo)
    if files_from is not None:
        result = detect_files(files_from, config)
    elif base is None:
        raise DetectError("give --base REF (and --head), or --files-from FILE")
    else:
        result = detect(repo, base, head, config)
    if fmt == "json":
        return CommandResult(stdout=[output.as_json(result).rstrip("\n")])
    done = CommandResult(stdout=output.text(result).rstrip("\n").split("\n"))
    if fmt == "github":
        done.outputs = {
            "changed": "true" if result.changes else "false",
            "layers": ",".join(result.layers),
            "rebuild-required": "true" if result.rebuild_required else "false",
        }
        done.summary = output.markdown(result)
    return done
