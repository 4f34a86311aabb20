"""The sandbox the code under test runs in on this machine: bubblewrap.

Training code from a pull request runs on the runner as the runner's user. Without a sandbox it
could read an ancestor's `/proc/*/environ` (the step shell's variables), write the runner's file
commands under `$RUNNER_TEMP` (`GITHUB_ENV`: code execution in the job's next step), read the
runner user's home and the runner's install folder (registry and cloud credentials, the runner's
private key), talk to a container engine or the cloud's metadata address, and outlive the
rebuild. What runs inside:

- **nothing but what is listed** (`allowlisted`): the system folders (`/usr`, `/bin`, `/lib*`,
  `/sbin`, `/sys`) and a few files of `/etc` (the loader's cache, certificates, users, name
  resolution, the time zone) read-only, the interpreter and venv read-only, the work folder
  writable, a fresh `/tmp` and `/dev/shm` of its own. Everything else — the runner's home and
  install folder wherever `config.sh --work` put them, other workspaces, `/run` with its sockets,
  `/var`, `/opt`, `/root` — is simply not there, whatever the folders are called. The reference's
  expected outputs are masked even where a shown folder holds them;
- its own PID namespace (`--unshare-pid`, a fresh `/proc`), IPC namespace, session
  (`--new-session`), and for the ranks its own network namespace with loopback only
  (`--unshare-net`): no Docker daemon on a TCP port, no abstract Unix socket, no metadata
  address. All local ranks of a node share one sandbox (rebuild/node_supervisor.py starts them
  inside), so they still meet over loopback. The venv realizer's build steps keep the host's
  network: uv must reach its indexes;
- an environment set inside (`--clearenv`, then `--setenv` per variable): bwrap itself starts
  with LAUNCHER_ENVIRONMENT only, so no variable of a record (`LD_PRELOAD`, ...) reaches the
  launcher, whose loader would honour it before any namespace exists. The options, the
  environment among them, reach bwrap through a descriptor (`--args`), not its command line,
  which every user of the machine can read.

`/dev` is the host's (GPUs), but for `/dev/shm`. When bwrap ends, every process inside ends with
it (`--die-with-parent` and the PID namespace). A rebuild that runs code other than the base's (a
candidate environment, a project tree or environment pins the pull request changed) is refused
where bubblewrap cannot run, unless the workflow says `--allow-unsandboxed`; the claim says which.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from types import MappingProxyType
from typing import IO, TYPE_CHECKING, Any, Literal

from reprogate.core.fileio import create_for_code
from reprogate.core.processes import end_tree

if TYPE_CHECKING:
    from reprogate.rebuild.realizers.base import Isolation, RankStart

NAME = "bubblewrap"
# What bwrap itself is started with: nothing a record or the runner's environment chose.
LAUNCHER_ENVIRONMENT: Mapping[str, str] = MappingProxyType({"PATH": "/usr/bin:/bin", "LC_ALL": "C"})
SYSTEM_FOLDERS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/sys")
# The files of /etc a program needs to start, load libraries, check certificates and name hosts;
# never the whole folder (it holds service keys and configuration: munge, ssh, the runner's).
ETC_SHOWN = (
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "ssl/certs",
    "ssl/openssl.cnf",
    "ca-certificates.conf",
    "pki/tls/certs",
    "pki/ca-trust",
    "passwd",
    "group",
    "nsswitch.conf",
    "host.conf",
    "hosts",
    "gai.conf",
    "resolv.conf",
    "protocols",
    "services",
    "localtime",
    "timezone",
    "alternatives",
    "os-release",
    "lsb-release",
    "debian_version",
    "mime.types",
)
Network = Literal["loopback", "host"]
SUPERVISOR = (Path(__file__).with_name("node_supervisor.py")).read_text(encoding="utf-8")  # read now, before any rank can write anything


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
    box = Sandbox((), (), network="loopback")
    try:
        done = box.run(["true"], Path("/"), {}, timeout=20)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bwrap did not start: {exc}"
    if done.returncode != 0:
        why = done.stderr.strip()[:200]
        return f"bwrap cannot make namespaces here ({why}); a self-hosted runner needs unprivileged user namespaces (kernel.unprivileged_userns_clone=1)"
    return None


@dataclass(frozen=True)
class Sandbox:
    """What the code under test may see and write, and which network it has."""

    readable: tuple[Path, ...]  # shown read-only, beside the system folders
    writable: tuple[Path, ...]  # shown writable
    masked: tuple[Path, ...] = ()  # inside shown folders, yet not shown (the reference's expected outputs)
    network: Network = "loopback"

    def showing(self, *paths: Path) -> Sandbox:
        """The same sandbox with more paths shown read-only (a realizer's interpreter and venv)."""
        return replace(self, readable=(*self.readable, *(Path(os.path.realpath(p)) for p in paths)))

    def masking(self, *paths: Path) -> Sandbox:
        """The same sandbox with these files or folders hidden even where a shown folder holds them."""
        return replace(self, masked=(*self.masked, *(Path(os.path.realpath(p)) for p in paths)))

    def arguments(self, cwd: Path, env: Mapping[str, str]) -> list[str]:
        """bwrap's options for running a command in `cwd` with exactly `env` (the command follows them)."""
        line = ["--die-with-parent", "--new-session", "--unshare-pid", "--unshare-ipc"]
        if self.network == "loopback":
            line.append("--unshare-net")
        for folder in SYSTEM_FOLDERS:
            if os.path.islink(folder):  # a merged /usr: /bin -> usr/bin
                line += ["--symlink", os.readlink(folder), folder]
            elif os.path.isdir(folder):
                line += ["--ro-bind", folder, folder]
        line += ["--proc", "/proc", "--dev-bind", "/dev", "/dev", "--tmpfs", "/dev/shm", "--tmpfs", "/tmp", "--dir", "/etc"]
        for name in ETC_SHOWN:
            line += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
        binds = [(p, "--ro-bind") for p in self.readable] + [(p, "--bind") for p in self.writable]
        # parents before children, so a read-only folder inside the work folder stays read-only
        for path, how in sorted(dict(binds).items(), key=lambda item: len(item[0].parts)):
            if path.exists():
                line += [how, str(path), str(path)]
        for path in sorted(set(self.masked), key=lambda p: len(p.parts)):
            if _shown(path, [p for p, _ in binds]):
                line += ["--tmpfs", str(path)] if path.is_dir() else ["--ro-bind", "/dev/null", str(path)]
        line.append("--clearenv")
        for key, value in env.items():
            line += ["--setenv", key, value]
        return [*line, "--chdir", str(cwd)]

    def popen(self, argv: Sequence[str], cwd: Path, env: Mapping[str, str], pass_fds: Sequence[int] = (), **kwargs: Any) -> subprocess.Popen[Any]:
        """Start argv inside the sandbox with exactly `env`; bwrap itself gets LAUNCHER_ENVIRONMENT."""
        bwrap = shutil.which("bwrap", path=os.environ.get("PATH", os.defpath)) or "bwrap"
        args = _descriptor(self.arguments(cwd, env))  # the options (the environment among them) through a descriptor; the command after them
        try:
            return subprocess.Popen([bwrap, "--args", str(args), "--", *argv], env=dict(LAUNCHER_ENVIRONMENT), pass_fds=(args, *pass_fds), **kwargs)
        finally:
            os.close(args)

    def run(self, argv: Sequence[str], cwd: Path, env: Mapping[str, str], timeout: float) -> subprocess.CompletedProcess[str]:
        """Run argv inside the sandbox to its end, its output captured as text."""
        with self.popen(argv, cwd, env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True, start_new_session=True) as proc:
            try:
                out, err = proc.communicate(timeout=timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.communicate()
                raise
        return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)

    def start_node(self, starts: Sequence[RankStart], cwd: Path) -> NodeRanks:
        """Every rank of `starts` in this one sandbox (one network namespace: they meet over its
        loopback), each with its own environment and log, started by rebuild/node_supervisor.py."""
        logs: list[IO[bytes]] = []
        spec_read, spec_write = os.pipe()
        status_read, status_write = os.pipe()
        try:
            for start in starts:
                start.log.parent.mkdir(parents=True, exist_ok=True)
                logs.append(os.fdopen(create_for_code(start.log, start.log.parent), "wb"))  # a link a rank left there is replaced, not followed
            ranks = [
                {"rank": s.rank, "argv": list(s.argv), "env": dict(s.env), "cwd": str(cwd), "log_fd": log.fileno()} for s, log in zip(starts, logs, strict=True)
            ]
            supervisor = [sys.executable, "-I", "-S", "-c", SUPERVISOR, str(spec_read), str(status_write)]
            proc = self.popen(
                supervisor, cwd, {}, pass_fds=(spec_read, status_write, *(log.fileno() for log in logs)), stdin=subprocess.DEVNULL, start_new_session=True
            )
        finally:
            for fd in (spec_read, status_write):
                os.close(fd)
            for log in logs:
                log.close()
        try:
            with os.fdopen(spec_write, "wb") as spec:
                spec.write(json.dumps({"ranks": ranks}).encode())
        except BrokenPipeError:  # the sandbox did not start: its exit code says so
            pass
        os.set_blocking(status_read, False)
        return NodeRanks(proc, status_read, tuple(s.rank for s in starts))


STATUS_LINE_LIMIT = 64  # bytes of an unfinished status line kept; the supervisor writes `RANK CODE`


class NodeRanks:
    """The ranks of one node's sandbox: their exit codes as the supervisor reports them."""

    def __init__(self, proc: subprocess.Popen[Any], status: int, ranks: tuple[int, ...]) -> None:
        self.proc, self.status, self.ranks = proc, status, ranks
        self.codes: dict[int, int] = {}
        self._pending = b""

    def code(self, rank: int) -> int | None:
        """How `rank` ended (None while it runs); a sandbox that ended without saying is the
        sandbox's own code (bwrap's exit, or -9 when it was killed)."""
        self._drain()
        if rank not in self.codes and self.proc.poll() is not None:
            self._drain()
            for missing in self.ranks:
                self.codes.setdefault(missing, self.proc.returncode or -9)
        return self.codes.get(rank)

    def _drain(self) -> None:
        if self.status < 0:
            return
        while True:
            try:
                chunk = os.read(self.status, 4096)
            except BlockingIOError:
                return
            if not chunk:
                os.close(self.status)
                self.status = -1
                return
            self._pending += chunk
            *lines, self._pending = self._pending.split(b"\n")
            self._pending = self._pending[-STATUS_LINE_LIMIT:]  # a status line is `RANK CODE`: a longer one is no report
            for line in lines:
                rank, _, code = line.decode("ascii", "replace").partition(" ")
                if rank.isdigit() and int(rank) in self.ranks and code.lstrip("-").isdigit():
                    self.codes.setdefault(int(rank), int(code))

    def kill(self) -> None:
        """End the sandbox and every process in it, and wait until they are gone: the ranks run
        in sessions of their own inside its PID namespace and die only after bwrap does, so
        without the wait the rebuild would find them still there and call them escaped."""
        end_tree(self.proc)
        self._drain()


class NodeRank:
    """One rank of a node's sandbox, as a launcher polls and ends it (ending one ends the node's)."""

    def __init__(self, node: NodeRanks, rank: int) -> None:
        self.node, self.rank = node, rank

    def poll(self) -> int | None:
        return self.node.code(self.rank)

    def kill(self) -> None:
        self.node.kill()


def _descriptor(args: Sequence[str]) -> int:
    """A memory file holding args NUL-separated, at offset 0, for bwrap's --args."""
    fd = os.memfd_create("bwrap-args")
    data = b"".join(os.fsencode(a) + b"\0" for a in args)
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def _shown(path: Path, shown: Sequence[Path]) -> bool:
    return path.exists() and any(p == path or p in path.parents for p in shown)


def interpreter_folders() -> tuple[Path, ...]:
    """The interpreter reprogate runs in: its prefixes and the folder its executable lives in."""
    return tuple(Path(os.path.realpath(p)) for p in (sys.prefix, sys.base_prefix, Path(os.path.realpath(sys.executable)).parent.parent))


def for_ranks(workdir: Path, masked: Sequence[Path] = ()) -> Sandbox:
    """The sandbox of a rebuild's ranks: the interpreter reprogate runs in (the node supervisor and
    the current realizer need it) read-only, the work folder writable, loopback only; the
    checkout is not shown (the ranks run the copy in the work folder), and `masked` (the
    reference's expected outputs) is hidden even where a shown folder holds it."""
    return Sandbox(interpreter_folders(), (workdir.resolve(),), tuple(Path(os.path.realpath(p)) for p in masked), "loopback")


def for_builds(workdir: Path, building: Path, readable: Sequence[Path], writable: Sequence[Path], masked: Sequence[Path] = ()) -> Sandbox:
    """The sandbox of a realizer's build steps (uv): the ranks' view, with the tools and inputs of
    the build shown read-only, only the venv being built, uv's cache and the work folder
    writable, and the host's network (uv reaches its indexes)."""
    ranks = for_ranks(workdir, masked)
    shown = tuple(Path(os.path.realpath(p)) for p in readable)
    written = (building.resolve(), *(Path(os.path.realpath(p)) for p in writable))
    return replace(ranks, readable=(*ranks.readable, *shown), writable=(*ranks.writable, *written), network="host")


def applies(realizer: Isolation, launcher: str) -> bool:
    """Ranks this module sandboxes: local processes of a realizer whose ranks are local processes
    (venv, current: `Isolation.local_ranks_sandboxed`); Slurm and Kubernetes ranks run where their
    scheduler starts them, and a container's have the engine's namespaces."""
    return realizer.local_ranks_sandboxed and launcher == "local"


def refusal(realizer: Isolation, launcher: str, foreign: str | None, allow_unsandboxed: bool) -> str | None:
    """Why a rebuild must not start unsandboxed (None: it may start). `foreign` says what code
    other than the base's the rebuild runs (a candidate environment, the pull request's project
    tree or environment pins), None when it runs none: then it needs the sandbox — in its ranks,
    and in a realizer's build steps on this machine (the venv's: `Isolation.builds_here`),
    whatever the launcher — unless the workflow says otherwise."""
    here = applies(realizer, launcher) or realizer.builds_here
    if not here or foreign is None or allow_unsandboxed:
        return None
    why = unavailable()
    return None if why is None else f"{foreign}, and its ranks cannot be sandboxed here: {why}"


def described(sandbox: Sandbox | None, realizer: Isolation, launcher: str) -> str:
    """What the claim says about the ranks' sandbox."""
    if not applies(realizer, launcher):
        if realizer.own:
            return realizer.own
        return f"as the {launcher} launcher starts ranks (on the host's network: a multi-node launcher's ranks meet over it)"
    if sandbox is not None:
        return (
            f"{NAME}: own PID, IPC and network namespace (loopback only), an allowlisted file system "
            "(system folders, the interpreter and venv read-only, the work folder writable; no home, runner folder, checkout or socket)"
        )
    return f"none ({unavailable() or 'not asked for'})"


__all__ = [
    "ETC_SHOWN",
    "LAUNCHER_ENVIRONMENT",
    "NAME",
    "SYSTEM_FOLDERS",
    "NodeRank",
    "NodeRanks",
    "Sandbox",
    "applies",
    "described",
    "for_builds",
    "for_ranks",
    "interpreter_folders",
    "refusal",
    "unavailable",
]
