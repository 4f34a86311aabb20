"""A fresh virtual environment from the record's lock file, made with uv.

- requirements files (pip-compile / `uv pip compile` output): `uv venv` then `uv pip sync`, with
  `--require-hashes` when the file carries hashes, so only the pinned artifacts install;
- `uv.lock`: `uv sync --frozen` into the venv (UV_PROJECT_ENVIRONMENT), never re-resolving;
- any other format (poetry.lock, Pipfile.lock, conda files) is refused with exit 2: uv cannot
  install it faithfully, and a near miss would be a different environment.

`reference` installs the lock file the record pins (the tree's copy must still match its
checksum); `candidate` installs the tree's lock file as it is: the pull request's change.

Venvs are cached by the digest of the lock file, the Python version and uv's version (and, for a
candidate the workflow let build sdists, that fact: built_with), so a second rebuild of the same
lock takes seconds. Training code is untrusted (a pull request's), so a cached
venv is made read-only after it is built, fingerprinted (fingerprint() below), and reused only if
the fingerprint still matches — a venv a rank managed to change is thrown away and rebuilt.
Bytecode is compiled up front so a read-only venv imports as fast as a writable one.

Indexes: UV_* settings win; otherwise the index URL, extra index URLs, find-links and no-index
pip is configured with (`pip config list`, PIP_* variables) are passed on, with pip's way of
weighing every index alike, so a machine set up for pip resolves the same wheels (uv does not
read pip's configuration itself). Either way they are handed to every uv step as arguments, the
seed packages' step included, so a runner that reaches only its mirror still gets a venv. With a
hashed lock, only the pinned artifacts can install either way.

An index that cannot be reached is the network's fault, not the lock's: uv's own retries spent,
the step is tried once more after a pause, and if it still fails the rebuild ends as an
infrastructure failure (exit 3), never as a lock file to fix (exit 2).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from reprogate.core.errors import InfrastructureError, UsageError
from reprogate.core.history import find_version
from reprogate.core.progress import Activity
from reprogate.core.record import LockFile, RunRecord
from reprogate.core.redact import redact
from reprogate.rebuild import sandbox
from reprogate.rebuild.realizers.base import Defect, Identity, Isolation, LockPin, RankProcess, RankStart, RealizeRequest
from reprogate.rebuild.realizers.local import LocalProcess, start_local_ranks

if TYPE_CHECKING:
    from reprogate.rebuild.sandbox import Sandbox

NAME = "venv"
INSTALLABLE = {"pip-requirements": "requirements", "uv": "uv.lock"}
UV_TIMEOUT = 1800.0
# uv's index settings and the argument each stands for; a list is split on the separator uv uses.
UV_INDEX_VARIABLES: tuple[tuple[str, str, str | None], ...] = (
    ("UV_DEFAULT_INDEX", "--default-index", None),
    ("UV_INDEX_URL", "--index-url", None),
    ("UV_INDEX", "--index", " "),
    ("UV_EXTRA_INDEX_URL", "--extra-index-url", " "),
    ("UV_FIND_LINKS", "--find-links", ","),
)
# pip's settings reprogate hands to uv, and the variable that overrides each in pip's configuration.
PIP_VARIABLES = (("index-url", "PIP_INDEX_URL"), ("extra-index-url", "PIP_EXTRA_INDEX_URL"), ("find-links", "PIP_FIND_LINKS"), ("no-index", "PIP_NO_INDEX"))
TRUE_WORDS = ("1", "true", "yes", "on")  # how pip and uv spell a true boolean setting
NETWORK_PAUSE = 15.0  # seconds before the one retry of a step an index could not be reached for
# uv's causes when a request did not get an answer (it exits 2 for these and for a lock that
# does not resolve alike); matched in its message, lower-cased.
NETWORK_CAUSES = (
    "error sending request",
    "request failed after",
    "dns error",
    "failed to lookup address",
    "tcp connect error",
    "connection reset",
    "connection refused",
    "operation timed out",
    "network unreachable",
    "http status server error",  # a 5xx answer, with uv's retries turned off
)


def uv_binary() -> str:
    """uv from the PATH, else the one installed beside this interpreter (pip install uv)."""
    found = shutil.which("uv") or str(Path(sys.executable).parent / "uv")
    if not Path(found).exists():
        raise InfrastructureError("uv is not installed: pip install uv (the venv realizer builds environments with it)")
    return found


BUILD_PASSED_THROUGH = ("PATH", "LANG", "LANGUAGE", "TZ", "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE")
# uv's own settings a build may keep: how it talks to its indexes, never where they are (those
# become arguments: index_arguments), never a publish token or pip's settings.
UV_PASSED_THROUGH = (
    "UV_HTTP_TIMEOUT",
    "UV_REQUEST_TIMEOUT",
    "UV_HTTP_RETRIES",
    "UV_CONCURRENT_DOWNLOADS",
    "UV_CONCURRENT_INSTALLS",
    "UV_CONCURRENT_BUILDS",
    "UV_NATIVE_TLS",
    "UV_SYSTEM_CERTS",
    "UV_INSECURE_HOST",
    "UV_OFFLINE",
    "UV_PYTHON_DOWNLOADS",
    "UV_NO_PROGRESS",
)
INDEX_CREDENTIAL = re.compile(r"UV_INDEX_[A-Z0-9_]+_(USERNAME|PASSWORD)")  # a named index's login, as uv reads it


def build_environment(runner: Mapping[str, str], workdir: Path, uv_cache: Path, credentials: bool) -> dict[str, str]:
    """What uv gets: the locale, PATH and certificates, the few uv settings of UV_PASSED_THROUGH,
    a home and temporary folder in the work folder and this rebuild's own uv cache. A named
    index's login only with `credentials` — a step in which no package code can run (no build
    backend: wheels only): whatever uv starts inherits uv's environment. Never the runner's
    other variables (cloud keys, hub tokens, UV_PUBLISH_TOKEN, PIP_*) or its home."""
    (workdir / "home").mkdir(parents=True, exist_ok=True)
    (workdir / "tmp").mkdir(parents=True, exist_ok=True)
    env = {k: runner[k] for k in BUILD_PASSED_THROUGH if k in runner}
    env.update({k: v for k, v in runner.items() if k.startswith("LC_") or k in UV_PASSED_THROUGH})
    if credentials:
        env.update({k: v for k, v in runner.items() if INDEX_CREDENTIAL.fullmatch(k)})
    env.update({"HOME": str(workdir / "home"), "TMPDIR": str(workdir / "tmp"), "UV_LINK_MODE": "copy", "UV_CACHE_DIR": str(uv_cache)})
    return env


INDEX_FLAGS = ("--index", "--default-index", "--index-url", "--extra-index-url")


def local_index_paths(arguments: list[str]) -> list[Path]:
    """Local folders and files among uv's index arguments (find-links, file:// indexes): the
    build sandbox shows them. A file:// index is a tree of pages whose links leave the index
    folder (a mirror's `simple/absl-py/index.html` links `../../files/absl_py-....whl`), so the
    folder that holds the index is shown too: the operator's mirror, read-only — unless that
    folder is the file system's root, a home folder or holds one (an index kept at `~/simple`
    would show the runner's credentials to the build steps; its own folder is shown then)."""
    found = []
    for flag, value in zip(arguments, arguments[1:], strict=False):
        if flag == "--find-links" or flag in INDEX_FLAGS:
            path = value[len("file://") :] if value.startswith("file://") else value
            if path.startswith("/"):
                folder = Path(path.rstrip("/") or "/")
                found.append(folder.parent if flag in INDEX_FLAGS and _may_show_whole(folder.parent) else folder)
    return found


def _may_show_whole(folder: Path) -> bool:
    """Whether the build sandbox may show `folder` whole: not `/`, not a home folder, nor one that holds a home."""
    homes = {Path.home(), Path("/root"), Path("/home")}
    return folder != folder.parent and not any(folder == home or folder in home.parents for home in homes)


def _build_sandbox(request: RealizeRequest, building: Path, readable: list[str | Path], writable: list[Path]) -> Sandbox | None:
    """The build steps' sandbox where bubblewrap runs here (none elsewhere: then a rebuild that
    runs code other than the base's was refused before it began, unless the workflow allowed it)."""

    if sandbox.unavailable() is not None:
        return None
    shown = [Path(p) if os.path.isabs(str(p)) else Path(shutil.which(str(p)) or str(p)) for p in readable]
    shown = [p.parent if p.is_file() else p for p in shown] + [Path(os.path.realpath(p)).parent.parent for p in shown if p.is_file()]
    return sandbox.for_builds(request.workdir, building, shown, writable, request.masked)


def _find_python(uv: str, python: str, runner: Mapping[str, str]) -> str:
    """The interpreter as an absolute path, found with the runner's environment (pyenv shims and
    uv's own Pythons live under its home), so the build steps need neither; the request as it
    was where uv finds none (the venv step then says so)."""
    try:
        done = subprocess.run([uv, "python", "find", python], capture_output=True, text=True, timeout=60, env=dict(runner), check=False)
    except (OSError, subprocess.TimeoutExpired):
        return python
    found = done.stdout.strip().splitlines()
    return found[-1] if done.returncode == 0 and found and os.path.isabs(found[-1]) else python


def _lock_format(entry: LockFile) -> str:
    if entry.format is not None:
        return entry.format
    name = Path(entry.path).name
    if name == "uv.lock":
        return "uv"
    if name.endswith((".txt", ".in")) or name.startswith("requirements"):
        return "pip-requirements"
    return "other"


def choose_lock(record: RunRecord) -> LockFile:
    """The lock file the venv is made from: the first one uv can install."""
    locks = record.source.lock_files if record.source is not None else ()
    if not locks:
        raise UsageError(
            "the record pins no lock file, so there is nothing to build a venv from",
            hint="add source.lock_files (reprogate capture --into finds them), or declare a container",
        )
    for entry in locks:
        if _lock_format(entry) in INSTALLABLE:
            return entry
    names = ", ".join(f"{e.path} ({_lock_format(e)})" for e in locks)
    raise UsageError(
        f"uv cannot install any of the record's lock files: {names}",
        hint="pin a requirements file (pip-compile --generate-hashes / uv pip compile --generate-hashes) or uv.lock, or declare a container",
    )


def index_arguments(env: Mapping[str, str]) -> list[str]:
    """Where every uv step looks for packages, as arguments: uv's own locations when the runner
    sets any, else pip's; then UV_NO_INDEX and UV_INDEX_STRATEGY, which hold either way. Given as
    arguments, not left in the environment, because `uv venv` reads only some of them (not
    UV_FIND_LINKS or UV_NO_INDEX), and its seed packages would otherwise come from PyPI on a
    runner that can reach only its mirror."""
    args = uv_index_settings(env) or pip_index_settings(env)
    if _true(env.get("UV_NO_INDEX")) and "--no-index" not in args:
        args.append("--no-index")
    strategy = (env.get("UV_INDEX_STRATEGY") or "").strip()
    if strategy:  # the runner's choice (first-index guards against dependency confusion) wins
        args += ["--index-strategy", strategy]
    return args


def uv_index_settings(env: Mapping[str, str]) -> list[str]:
    """The runner's UV_* index locations, spelled as the arguments they stand for."""
    args: list[str] = []
    for var, flag, separator in UV_INDEX_VARIABLES:
        value_text = env.get(var) or ""
        for value in value_text.split(separator) if separator else [value_text]:
            if value.strip():
                args += [flag, value.strip()]
    return args


def _true(value: str | None) -> bool:
    return (value or "").strip().lower() in TRUE_WORDS


def pip_index_settings(env: Mapping[str, str]) -> list[str]:
    """uv arguments for pip's configured indexes, unless UV_* settings already say where to look."""
    if uv_index_settings(env):
        return []
    values: dict[str, list[str]] = {"index-url": [], "extra-index-url": [], "find-links": [], "no-index": []}
    try:
        done = subprocess.run(
            [sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True, timeout=30, env={**env, "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
        )
        lines = done.stdout.splitlines() if done.returncode == 0 else []
    except (OSError, subprocess.TimeoutExpired):
        lines = []
    for line in lines:
        key, sep, value = line.partition("=")
        name = key.rpartition(".")[2]
        if sep and name in values:  # a multi-line value (one URL a line in pip.conf) is listed with literal \n
            values[name].extend(value.strip().strip("'\"").replace("\\n", " ").split())
    for name, var in PIP_VARIABLES:
        if env.get(var):
            values[name] = env[var].split()
    args: list[str] = []
    if values["no-index"] and _true(values["no-index"][-1]):  # an air-gapped runner: its find-links only
        values["index-url"], values["extra-index-url"] = [], []
        args.append("--no-index")
    for url in dict.fromkeys(values["index-url"][:1]):
        args += ["--index-url", url]
    for url in dict.fromkeys(values["extra-index-url"]):
        args += ["--extra-index-url", url]
    for url in dict.fromkeys(values["find-links"]):
        args += ["--find-links", url]
    if values["extra-index-url"] and not env.get("UV_INDEX_STRATEGY"):  # pip weighs every index alike; uv takes the first that has a name
        args += ["--index-strategy", "unsafe-best-match"]
    return args


def _python_for(record: RunRecord) -> str:
    """The Python the reference ran (major.minor of software.python), else this interpreter's."""
    recorded = record.software.python if record.software is not None else None
    if isinstance(recorded, str) and recorded.count(".") >= 1:
        return ".".join(recorded.split(".")[:2])
    return f"{sys.version_info.major}.{sys.version_info.minor}"


COMPLETE = ".reprogate-complete"


WHEELS_ONLY_HINT = "; a lock the pull request chose is installed from wheels only unless the workflow passes --allow-source-builds"


def builds_sdists(request: RealizeRequest) -> bool:
    """Whether the build may run sdists' build backends: for a lock that is reviewed (the base's,
    or the record's own), or where the workflow allows it (`--allow-source-builds`). A candidate's
    lock, or one the head's record pins differently from the base's, is the pull request's, and
    a build backend runs in the build sandbox with the host's network (uv reaches its indexes)."""
    return request.source_builds or (request.environment == "reference" and request.pins_reviewed)


def built_with(request: RealizeRequest) -> str:
    """What, besides the lock, decided what a venv holds, as part of its cache key: a venv whose
    build ran the pull request's build backends (source builds the workflow allowed for a lock
    the pull request chose) holds whatever they wrote into it, and never serves another rebuild
    with the same lock (a reference rebuild, a wheels-only one). "" otherwise."""
    pull_request_lock = request.environment == "candidate" or not request.pins_reviewed
    return "pull-request-source-builds" if pull_request_lock and request.source_builds else ""


def fingerprint(folder: Path) -> str:
    """What every file in a venv is, cheaply: path, size, inode and both times in nanoseconds.
    The change time cannot be set back by a process, so a file a training script rewrote (even as
    root, even with its modification time restored) changes the fingerprint."""
    h = hashlib.sha256()
    for base, dirs, files in os.walk(folder):
        dirs.sort()
        for name in sorted(files):
            if name == COMPLETE:
                continue
            path = os.path.join(base, name)
            info = os.lstat(path)
            h.update(f"{os.path.relpath(path, folder)}\0{info.st_size}\0{info.st_ino}\0{info.st_mtime_ns}\0{info.st_ctime_ns}\n".encode())
    return h.hexdigest()


def _intact(target: Path) -> bool:
    try:
        stamp = json.loads((target / COMPLETE).read_text())
    except (OSError, ValueError):
        return False
    return isinstance(stamp, dict) and stamp.get("fingerprint") == fingerprint(target)


def _discard(folder: Path) -> None:
    for path in [folder, *folder.rglob("*")]:
        if path.is_dir() and not path.is_symlink():
            path.chmod(0o755)
    shutil.rmtree(folder, ignore_errors=True)


@dataclass(frozen=True)
class VenvIdentity(Identity):
    """The lock file a venv was made from, and how (the cache key, whether the cache served it)."""

    lock_file: str  # its path in the record
    lock_digest: str  # of what was installed: the record's pin for a reference, the checkout's file for a candidate
    lock_from: str  # the checkout, or the commit the pinned version came from
    lock_format: str
    python_requested: str
    uv: str  # uv's version
    cache_key: str
    built_with: str | None = None  # what besides the lock decided its content (built_with below)
    cache: str = "miss"  # hit, miss, or "modified: rebuilt"
    seconds: float = 0.0

    def summary(self) -> str:
        return f"venv from {self.lock_file} ({self.lock_digest[:19]}..., cache {self.cache}, {self.seconds:.1f} s)"

    def claim_words(self, which: str) -> str:
        return f"the {which} environment: a venv from {self.lock_file} ({self.lock_digest})"

    def installed_lock(self) -> LockPin:
        return LockPin(self.lock_file, self.lock_digest)

    def missing_module(self, module: str) -> Defect:
        return Defect(
            "lock-file",
            f"the venv made from {self.lock_file} cannot import {module}: the lock file is incomplete (a dependency of its pins is missing), "
            f"not the runner; re-lock with `uv pip compile --generate-hashes`, it lacks {module.split('.')[0]}",
        )

    def amend_record(self, data: dict[str, Any]) -> None:
        """The installed lock file is pinned by what the venv was made from."""
        source = data.setdefault("source", {"dirty": False})
        locks = [e for e in source.get("lock_files") or [] if isinstance(e, dict)]
        for entry in locks:
            if entry.get("path") == self.lock_file:
                entry["checksum"] = self.lock_digest
        source["lock_files"] = locks


class VenvEnvironment:
    kind = NAME
    image_reference: str | None = None

    def __init__(self, path: Path, identity: VenvIdentity, sandbox: Sandbox | None = None) -> None:
        self.path = path
        self.python = str(path / "bin" / "python")
        self.identity = identity
        # the venv and the interpreter it links to, read-only inside the sandbox
        self.sandbox = sandbox.showing(path, Path(os.path.realpath(self.python)).parent.parent) if sandbox is not None else None

    command_environment: tuple[str, ...] = ()

    def spawn(self, argv: list[str], env: Mapping[str, str], cwd: Path, log: Path) -> LocalProcess:
        return LocalProcess(self._argv(argv), {**env, **self._activation(env)}, cwd, log, self.sandbox)

    def spawn_ranks(self, starts: Sequence[RankStart], cwd: Path) -> dict[int, RankProcess]:
        activated = [RankStart(s.rank, tuple(self._argv(list(s.argv))), {**s.env, **self._activation(s.env)}, s.log) for s in starts]
        return start_local_ranks(activated, cwd, self.sandbox)

    def command(self, argv: list[str], env: Mapping[str, str], cwd: Path, inherit: Sequence[str] = ()) -> list[str]:
        """The venv's interpreter by its path, activated as spawn does (VIRTUAL_ENV, PATH first)."""
        return ["env", *(f"{k}={v}" for k, v in self._activation(env).items()), *self._argv(argv)]

    def _argv(self, argv: list[str]) -> list[str]:
        if argv and Path(argv[0]).name in ("python", "python3"):
            return [self.python, *argv[1:]]
        return list(argv)

    def _activation(self, env: Mapping[str, str]) -> dict[str, str]:
        return {"VIRTUAL_ENV": str(self.path), "PATH": f"{self.path / 'bin'}:{env.get('PATH', '')}"}

    def close(self) -> None:
        pass


class VenvRealizer:
    name = NAME
    # local ranks in the sandbox; its uv steps (sdists' build backends) run here whatever the launcher
    isolation = Isolation(local_ranks_sandboxed=True, builds_here=True)

    def unrealized(self, which: str) -> str:
        return f"the {which} environment: a venv that could not be made"

    def realize(self, request: RealizeRequest) -> VenvEnvironment:
        entry = choose_lock(request.record)
        lock_path = request.root / entry.path
        try:
            content = lock_path.read_bytes()
        except OSError as exc:
            raise UsageError(f"{entry.path}: cannot read the lock file ({exc.strerror})") from None
        digest = "sha256:" + hashlib.sha256(content).hexdigest()
        origin = "the checkout"
        if request.environment == "reference" and digest != entry.checksum:
            content, origin = self._pinned_lock(request, entry, digest)
            digest = entry.checksum
            lock_path = request.workdir / ".reprogate" / "reference-lock" / Path(entry.path).name
            lock_path.parent.mkdir(parents=True, exist_ok=True)
            lock_path.write_bytes(content)
        uv = uv_binary()
        python = _python_for(request.record)
        uv_version = subprocess.run([uv, "--version"], capture_output=True, text=True, timeout=30).stdout.strip()
        built_by = built_with(request)
        parts = [content, python.encode(), uv_version.encode(), sys.platform.encode(), *([built_by.encode()] if built_by else [])]
        key = hashlib.sha256(b"\0".join(parts)).hexdigest()[:24]
        target = request.cache / "venvs" / key
        started = time.monotonic()
        if _intact(target):
            cache = "hit"
        else:
            cache = "modified: rebuilt" if target.exists() else "miss"
            if target.exists():  # something changed a cached venv: never reuse it
                _discard(target)
            self._build(uv, python, lock_path, _lock_format(entry), target, request)
        seconds = round(time.monotonic() - started, 3)
        identity = VenvIdentity(entry.path, digest, origin, _lock_format(entry), python, uv_version, key, built_by or None, cache, seconds)
        return VenvEnvironment(target, identity, request.sandbox)

    @staticmethod
    def _pinned_lock(request: RealizeRequest, entry: LockFile, found: str) -> tuple[bytes, str]:
        """The lock file the record pins, from the repository's history when the checkout has
        another version (the pull request changed it)."""

        pinned = entry.checksum
        version = find_version(request.root, entry.path, lambda data: "sha256:" + hashlib.sha256(data).hexdigest() == pinned)
        if version is None:
            raise UsageError(
                f"{entry.path} in this checkout is {found}, not the {pinned} the record "
                "pins, and no commit in this repository's history has the pinned version",
                hint="rebuild with --environment candidate (what this tree declares), or fetch the history (fetch-depth: 0)",
            )
        commit, content = version
        return content, f"commit {commit[:12]} (the checkout has another version)"

    def _build(self, uv: str, python: str, lock: Path, fmt: str, target: Path, request: RealizeRequest) -> None:
        building = target.with_name(f"{target.name}.building-{os.getpid()}")
        shutil.rmtree(building, ignore_errors=True)
        building.parent.mkdir(parents=True, exist_ok=True)
        # Copies, not uv's default hard links into its cache: a venv must own its files, or linking
        # the same wheel into another venv (or a chmod here) would change the files under both.
        runner = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "ACTIONS_"))}
        indexes = index_arguments(runner)  # pip's and uv's settings, read here with the runner's own environment
        interpreter = _find_python(uv, python, runner)
        # This rebuild's own uv cache, removed after the build: a package's code that ran while
        # one rebuild built its venv leaves nothing another rebuild would install.
        cache = request.workdir / "uv-cache"
        cache.mkdir(parents=True, exist_ok=True)
        # A pull request's lock may name an sdist (a direct URL, a path) whose build backend runs
        # code: wheels only for a candidate or a lock the head re-pinned, unless the (trusted)
        # workflow allows source builds.
        no_build = [] if builds_sdists(request) else ["--no-build"]
        log = request.workdir / "logs" / "realize-venv.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        building.mkdir()

        def fresh_building() -> None:
            shutil.rmtree(building, ignore_errors=True)
            building.mkdir()

        box = _build_sandbox(request, building, [uv, interpreter, lock, *local_index_paths(indexes)], [cache])
        with Activity(f"building the venv from {lock.name} with uv (cached by the lock's digest afterwards)"):
            try:
                self._uv(
                    [uv, "venv", "--quiet", "--seed", "--allow-existing", "--python", interpreter, *indexes, str(building)],
                    build_environment(runner, request.workdir, cache, credentials=True),  # creates a venv: no package code runs
                    log,
                    "uv could not create a Python " + python + " environment",
                    before_retry=fresh_building,
                    sandbox=box,
                    not_the_lock=(
                        "the lock was not looked at yet: this runner lacks the Python the record names, or its indexes "
                        "(find-links) lack pip, setuptools and wheel, which `uv venv --seed` installs"
                    ),
                )
                env = build_environment(runner, request.workdir, cache, credentials=bool(no_build))
                if fmt == "pip-requirements":
                    hashed = "--hash=" in lock.read_text(encoding="utf-8", errors="replace")
                    cmd = [
                        uv,
                        "pip",
                        "sync",
                        "--python",
                        str(building / "bin" / "python"),
                        *indexes,
                        *no_build,
                        *(["--require-hashes"] if hashed else []),
                        str(lock),
                    ]
                else:
                    cmd = [uv, "sync", "--frozen", "--no-install-project", "--project", str(lock.parent), *indexes, *no_build]
                    env = {**env, "UV_PROJECT_ENVIRONMENT": str(building)}
                wheels_only = WHEELS_ONLY_HINT if no_build else ""
                self._uv(cmd, env, log, f"uv could not install {lock.name}", sandbox=box, lock_hint=wheels_only)
                self._compile(building, request, log, box)
            finally:
                _discard(cache)
        for path in building.rglob("*"):  # read-only: nothing a rank does changes the cached venv
            if path.is_file() and not path.is_symlink():
                path.chmod(path.stat().st_mode & ~0o222)
        (building / COMPLETE).write_text(json.dumps({"lock": lock.name, "fingerprint": fingerprint(building)}) + "\n")
        try:
            building.rename(target)
        except OSError:  # another rebuild finished the same venv first
            _discard(building)

    @staticmethod
    def _compile(building: Path, request: RealizeRequest, log: Path, box: Sandbox | None) -> None:
        """Bytecode for the whole venv, so a read-only venv imports as fast as a writable one:
        compiled by the venv's interpreter with `-I -S` (no site: no `.pth` file of a package
        runs; no PYTHON* variable), with no uv setting, credential or network in reach (uv's own
        --compile-bytecode starts the venv's Python with its site, inside uv's environment).
        A file that does not compile (a package's Python 2 test data) is left as it is."""
        python = str(building / "bin" / "python")
        cmd = [python, "-I", "-S", "-m", "compileall", "-q", "-j", "0", str(building)]
        env = {"PATH": "/usr/bin:/bin", "HOME": str(request.workdir / "home"), "TMPDIR": str(request.workdir / "tmp")}
        try:
            if box is not None:
                done = replace(box, network="loopback").run(cmd, log.parent, env, timeout=UV_TIMEOUT)
            else:
                done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=UV_TIMEOUT, check=False)
        except subprocess.TimeoutExpired:
            raise InfrastructureError(f"compiling the venv's bytecode did not finish within {UV_TIMEOUT:g} s") from None
        with open(log, "a", encoding="utf-8") as fh:
            fh.write(redact(f"$ {' '.join(cmd)}\n{done.stdout[-4000:]}{done.stderr[-4000:]}\n"))

    @staticmethod
    def _uv(
        cmd: list[str],
        env: Mapping[str, str],
        log: Path,
        what: str,
        before_retry: Callable[[], Any] = lambda: None,
        not_the_lock: str = "",
        sandbox: Sandbox | None = None,
        lock_hint: str = "",
    ) -> None:
        """Run one uv step (inside `sandbox` when given). A failure is the lock's (exit 2) unless an
        index did not answer, or the step never reads the lock (`not_the_lock` says why): then it
        is the runner's (exit 3)."""
        for attempt in (1, 2):
            try:
                if sandbox is not None:
                    done = sandbox.run(cmd, log.parent, env, timeout=UV_TIMEOUT)
                else:
                    done = subprocess.run(cmd, capture_output=True, text=True, env=dict(env), timeout=UV_TIMEOUT)
            except subprocess.TimeoutExpired:
                raise InfrastructureError(f"{what}: uv did not finish within {UV_TIMEOUT:g} s") from None
            with open(log, "a", encoding="utf-8") as fh:
                fh.write(redact(f"$ {' '.join(cmd)}\n{done.stdout}{done.stderr}\n"))  # an index URL may carry credentials
            if done.returncode == 0:
                return
            message = redact((done.stderr or done.stdout).strip())
            tail = "\n".join(message.splitlines()[-15:])
            if not unreachable_index(message):
                if not_the_lock:
                    raise InfrastructureError(f"{what}:\n{tail}", hint=not_the_lock)
                hint = "the lock file does not install here; fix the lock (uv's message above), or use a container"
                raise UsageError(f"{what}:\n{tail}", hint=hint + (lock_hint if "build" in message.lower() else ""))
            if attempt == 1:
                with open(log, "a", encoding="utf-8") as fh:
                    fh.write(f"# an index could not be reached; trying once more in {NETWORK_PAUSE:g} s\n")
                time.sleep(NETWORK_PAUSE)
                before_retry()
        raise InfrastructureError(
            f"{what}: a package index could not be reached (twice, {NETWORK_PAUSE:g} s apart):\n{tail}",
            hint="the lock file was not judged; rerun when the index answers, or point pip (or UV_INDEX_URL / UV_FIND_LINKS) at a mirror this runner reaches",
        )


def unreachable_index(message: str) -> bool:
    """Whether uv failed because a request went unanswered, not because the lock is wrong."""
    lowered = message.lower()
    return any(cause in lowered for cause in NETWORK_CAUSES)
