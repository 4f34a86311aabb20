"""The command line: click wiring only.

Each module here declares the options of one family of commands and hands them to that family's
`command.py`, which returns a CommandResult; `common.finish` prints it and exits. Work modules are
imported inside each command, so `reprogate validate` on a GitHub-hosted runner never pays for
torch, NVML, scipy or requests. Every command is listed in COMMANDS below, and nowhere else.
"""

from __future__ import annotations

import click

from reprogate import __version__
from reprogate.cli import attest, audit, capacity, capture, datasets, detect, github, images, init, rebuild, validate


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, "--version", prog_name="reprogate")
def main() -> None:
    """Reproducible ML training runs as a release gate.

    Exit codes: 0 pass, 1 a check failed, 2 bad usage or unreadable input, 3 infrastructure
    (registry, API, engine, scheduler or device unreachable after retries), 4 an internal error
    (a bug in reprogate: please report it).
    """


COMMANDS: dict[str, click.Command] = {
    "init": init.init,
    "validate": validate.validate,
    "digest": validate.digest,
    "capture": capture.capture,
    "preflight": rebuild.preflight,
    "rebuild": rebuild.rebuild,
    "interval": rebuild.interval,
    "compare": rebuild.compare,
    "report": rebuild.report,
    "attest": attest.attest,
    "badge": attest.badge,
    "detect": detect.detect,
    "image": images.image,
    "dockerfile": images.dockerfile,
    "gate": github.gate,
    "github": github.github,
    "audit": audit.audit,
    "capacity": capacity.capacity,
    "dataset": datasets.dataset,
}
for _name, _command in COMMANDS.items():
    main.add_command(_command, _name)
