"""The sandbox local ranks of the venv and current realizers run in: bubblewrap.

Training code from a pull request runs on the runner as the runner's user. Without a sandbox it
could read an ancestor's `/proc/*/environ` (the step shell's variables), write the runner's file
commands under `$RUNNER_TEMP` (`GITHUB_ENV`: code execution in the job's next step), read the
runner user's home (registry and cloud credentials) and outlive the rebuild. Each rank is started
by `bwrap`, itself started with the rank's allowlisted environment only (the namespace's pid 1
shows the environment bwrap got), in:

- its own PID namespace (`--unshare-pid`, a fresh `/proc`): no runner process is visible, and
  when bwrap ends every process of the rank ends with it (`--die-with-parent`);
- a read-only view of the file system, with the runner user's home, `$RUNNER_TEMP`, the runner's
  install folder and `/tmp` hidden behind empty tmpfs mounts; what the ranks need is shown again
  on top (the interpreter and venv read-only, the checkout read-only, the work folder writable);
- a new session (`--new-session`: no terminal to inject input into).

The network namespace is kept (ranks meet over loopback) and `/dev` is the host's (GPUs; NCCL's
shared memory between ranks). A candidate rebuild, whose code is the pull request's, is refused
where bubblewrap cannot run, unless the workflow says `--allow-unsandboxed`; the claim says which.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, replace
from pathlib import Path

NAME = "bubblewrap"
SANDBOXED_REALIZERS = ("venv", "current")  # the container realizer's ranks have the engine's namespaces


def unavailable() -> str | None:
    """Why bubblewrap cannot sandbox ranks on this machine (None: it can). Tried once, for real;
    REPROGATE_SANDBOX=off turns it off (a runner that sandboxes its jobs itself)."""
    if os.environ.get("REPROGATE_SANDBOX") == "off":
        return "REPROGATE_SANDBOX=off"
    return _probe(shutil.which("bwrap"))


@functools.cache
def _probe(bwrap: str | None) -> str | None:
    if bwrap is None:
        return "bwrap is not installed (Debian/Ubuntu: apt install bubblewrap)"
    probe = [bwrap, "--die-with-parent", "--new-session", "--unshare-pid", "--ro-bind", "/", "/", "--proc", "/proc", "--dev-bind", "/dev", "/dev", "true"]
    try:
        done = subprocess.run(probe, capture_output=True, timeout=20, check=False, env={"PATH": os.defpath})
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bwrap did not start: {exc}"
    if done.returncode != 0:
        why = done.stderr.decode(errors="replace").strip()[:200]
        return f"bwrap cannot make namespaces here ({why}); a self-hosted runner needs unprivileged user namespaces (kernel.unprivileged_userns_clone=1)"
    return None


@dataclass(frozen=True)
class Sandbox:
    """What one rank may see and write."""

    hidden: tuple[Path, ...]  # replaced by empty tmpfs mounts
    readable: tuple[Path, ...]  # shown again, read-only
    writable: tuple[Path, ...]  # shown again, writable

    def showing(self, *paths: Path) -> Sandbox:
        """The same sandbox with more paths shown read-only (a realizer's interpreter and venv)."""
        return replace(self, readable=(*self.readable, *(Path(os.path.realpath(p)) for p in paths)))

    def wrap(self, argv: list[str], cwd: Path) -> list[str]:
        bwrap = shutil.which("bwrap") or "bwrap"
        line = [bwrap, "--die-with-parent", "--new-session", "--unshare-pid", "--ro-bind", "/", "/", "--dev-bind", "/dev", "/dev", "--proc", "/proc"]
        for path in sorted(set(self.hidden), key=lambda p: len(p.parts)):
            line += ["--tmpfs", str(path)]
        for path in _sockets():  # a container engine or a user session would be a way out of the sandbox
            line += ["--tmpfs", str(path)] if path.is_dir() else ["--ro-bind", "/dev/null", str(path)]
        binds = [(p, "--ro-bind") for p in self.readable] + [(p, "--bind") for p in self.writable]
        # parents before children, so a read-only folder inside the work folder stays read-only
        for path, how in sorted(dict(binds).items(), key=lambda item: len(item[0].parts)):
            if path.exists():
                line += [how, str(path), str(path)]
        return [*line, "--chdir", str(cwd), "--", *argv]


SOCKETS = ("/run/docker.sock", "/var/run/docker.sock", "/run/podman", "/run/containerd", "/run/user", "/run/dbus", "/var/run/dbus", "/run/buildkit")


def _sockets() -> list[Path]:
    """Container-engine and session sockets on this machine, and the one DOCKER_HOST names."""
    found = [Path(p) for p in SOCKETS]
    host = os.environ.get("DOCKER_HOST", "")
    if host.startswith("unix://"):
        found.append(Path(host[len("unix://") :]))
    seen: dict[str, Path] = {}
    for path in found:
        try:
            if path.exists() and not path.is_symlink():
                seen.setdefault(os.path.realpath(path), path)
        except OSError:
            continue
    return sorted(seen.values(), key=lambda p: len(p.parts))


def _runner_root() -> Path | None:
    """The runner's install folder (it holds the runner's credentials), found from the work folder
    it made: `<root>/_work/<repository>/<repository>`."""
    workspace = os.environ.get("GITHUB_WORKSPACE")
    if not workspace:
        return None
    for folder in Path(workspace).resolve().parents:
        if folder.name == "_work":
            return folder.parent
    return None


def for_ranks(workdir: Path, checkout: Path) -> Sandbox:
    """The sandbox of a rebuild's ranks: everything the runner keeps hidden, the interpreter
    reprogate runs in (its prefixes) and the checkout readable, the work folder writable."""
    hidden = [Path("/tmp"), Path.home()]
    for name in ("RUNNER_TEMP", "RUNNER_TOOL_CACHE"):
        if os.environ.get(name):
            hidden.append(Path(os.environ[name]))
    root = _runner_root()
    if root is not None:
        hidden.append(root)
    readable = [Path(sys.prefix), Path(sys.base_prefix), Path(os.path.realpath(sys.executable)).parent.parent, checkout]
    return Sandbox(tuple(p.resolve() for p in hidden), tuple(Path(os.path.realpath(p)) for p in readable), (workdir.resolve(),))


def for_builds(workdir: Path, checkout: Path, building: Path, readable: list[Path], writable: list[Path]) -> Sandbox:
    """The sandbox of a realizer's build steps (uv): what the ranks' sandbox hides stays hidden
    (so a package's code that runs while installing — a build backend, a `.pth` file run by the
    bytecode compile — sees no runner process, no runner home and no action venv to rewrite);
    only the venv being built, uv's cache and the work folder are writable."""
    ranks = for_ranks(workdir, checkout)
    shown = tuple(Path(os.path.realpath(p)) for p in readable)
    return replace(ranks, readable=(*ranks.readable, *shown), writable=(*ranks.writable, building.resolve(), *(Path(os.path.realpath(p)) for p in writable)))


def applies(realizer: str, launcher: str) -> bool:
    """Ranks this module sandboxes: local processes of the venv and current realizers (Slurm and
    Kubernetes ranks run where their scheduler starts them; containers have their own namespaces)."""
    return realizer in SANDBOXED_REALIZERS and launcher == "local"


def refusal(realizer: str, launcher: str, environment: str, allow_unsandboxed: bool) -> str | None:
    """Why a rebuild must not start unsandboxed (None: it may start): a candidate rebuild runs the
    pull request's code — in its ranks, and in the venv realizer's build steps on this machine,
    whatever the launcher — so it needs the sandbox unless the workflow says otherwise."""
    here = applies(realizer, launcher) or realizer == "venv"
    if not here or environment != "candidate" or allow_unsandboxed:
        return None
    why = unavailable()
    return None if why is None else f"a candidate rebuild runs the pull request's code, and its ranks cannot be sandboxed here: {why}"


def described(sandbox: Sandbox | None, realizer: str, launcher: str) -> str:
    """What the claim says about the ranks' sandbox."""
    if not applies(realizer, launcher):
        return "container" if realizer == "container" else f"as the {launcher} launcher starts ranks"
    if sandbox is not None:
        return f"{NAME}: own PID namespace, file system read-only but the work folder, runner home and temporary folders hidden"
    return f"none ({unavailable() or 'not asked for'})"


__all__ = ["NAME", "SANDBOXED_REALIZERS", "Sandbox", "applies", "described", "for_builds", "for_ranks", "refusal", "unavailable"]
