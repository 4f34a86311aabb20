"""The one way reprogate runs git: a time limit, a bound on what it prints, a clean environment.

Every family reads the repository through git (detect's diffs, the gate's objects at a revision,
capture's source state, a record's tree id, earlier versions of a file). Each call here:

- ends within `timeout` seconds: a hung git (a lock, a slow file system, a filter) is killed with
  the processes it started, rather than holding a check or a gate job forever;
- keeps at most `limit` bytes of standard output (a caller that only hashes it streams it to
  `sink` instead), so a huge diff or tree cannot fill the runner's memory;
- runs with no `GIT_*` variable from the caller's environment. A hook, a `git rebase --exec` or an
  editor launched by git sets GIT_DIR, GIT_INDEX_FILE, GIT_WORK_TREE and more; inherited, they
  would make reprogate read another repository or index than the folder it was given. Only the
  variables a caller passes deliberately (`env`) reach git.

A git that is missing, too slow, too talkative, or that exits non-zero raises GitError, an
infrastructure error (exit 3) carrying git's own words; a family that owes its user another exit
code (a revision that does not exist is a usage error) catches it and says so in its own terms.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import IO, Literal, NamedTuple

from reprogate.core.errors import InfrastructureError

TIMEOUT = 120.0  # seconds: a full `ls-tree` or `diff --raw` of a large repository takes a few
OUTPUT_LIMIT = 512 * 1024 * 1024  # bytes of stdout kept: far above any listing or object set a check reads
STDERR_LIMIT = 64 * 1024  # git's complaint is a few lines; the rest is read and dropped
_CHUNK = 1 << 20

Failure = Literal["missing", "timeout", "output", "exit"]


class GitError(InfrastructureError):
    """git could not answer: not installed, past its time limit, more output than kept, or a
    non-zero exit (`returncode` and `stderr` say which). Exit 3 unless a caller says otherwise."""

    def __init__(self, message: str, *, failure: Failure, returncode: int | None = None, stderr: str = "") -> None:
        super().__init__(message)
        self.failure: Failure = failure
        self.returncode = returncode
        self.stderr = stderr


class GitResult(NamedTuple):
    returncode: int
    stdout: bytes
    stderr: str


def git_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """This process's environment without any GIT_* variable, plus `extra` (what the call means to set)."""
    env = {name: value for name, value in os.environ.items() if not name.startswith("GIT_")}
    env.update(extra or {})
    return env


def open_git(
    cwd: Path, *args: str, env: Mapping[str, str] | None = None, stdin: int | None = subprocess.DEVNULL, stderr: int | None = None
) -> subprocess.Popen[bytes]:
    """git started in `cwd` with the clean environment, its stdout a pipe: for the one caller
    that talks to git object by object (`cat-file --batch` while writing files) instead of
    reading one answer. It runs in a session of its own, so `run_git` can end it with its children.
    OSError (FileNotFoundError when git is not installed) as Popen raises it."""
    return subprocess.Popen(["git", "-C", str(cwd), *args], stdin=stdin, stdout=subprocess.PIPE, stderr=stderr, env=git_env(env), start_new_session=True)


def run_git(
    cwd: Path,
    *args: str,
    input: bytes | None = None,
    timeout: float = TIMEOUT,
    limit: int = OUTPUT_LIMIT,
    sink: Callable[[bytes], object] | None = None,
    env: Mapping[str, str] | None = None,
    check: bool = True,
) -> GitResult:
    """Run `git -C cwd ARGS` and return what it said.

    `input` is written to its stdin (else stdin is empty); `sink`, when given, receives stdout
    chunk by chunk and the result's stdout is empty (no bound applies: nothing is kept). With
    `check` a non-zero exit raises GitError; without it the caller reads `returncode` itself.
    Missing, timed out or over `limit` always raise."""
    name = _subcommand(args)
    try:
        proc = open_git(cwd, *args, env=env, stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL, stderr=subprocess.PIPE)
    except FileNotFoundError:
        raise GitError("git is not installed", failure="missing") from None
    except OSError as exc:
        raise GitError(f"git cannot be started: {exc.strerror or exc}", failure="missing") from None
    assert proc.stdout is not None and proc.stderr is not None
    expired = threading.Event()

    def expire() -> None:
        if proc.returncode is None:
            expired.set()
            _end(proc)

    timer = threading.Timer(timeout, expire)
    err = bytearray()
    helpers = [threading.Thread(target=_drain, args=(proc.stderr, err), daemon=True)]
    if input is not None:
        assert proc.stdin is not None
        helpers.append(threading.Thread(target=_feed, args=(proc.stdin, input), daemon=True))
    out = bytearray()
    over = False
    timer.start()
    try:
        for helper in helpers:
            helper.start()
        while chunk := os.read(proc.stdout.fileno(), _CHUNK):
            if sink is not None:
                sink(chunk)
                continue
            if len(out) + len(chunk) > limit:
                over = True
                _end(proc)
                break
            out += chunk
        returncode = proc.wait()
    finally:
        timer.cancel()
        if proc.poll() is None:
            _end(proc)
            proc.wait()
        for helper in helpers:
            helper.join()
        proc.stdout.close()
        proc.stderr.close()
    said = err.decode("utf-8", "replace")
    if expired.is_set():
        raise GitError(f"git {name} did not finish within {timeout:g} s", failure="timeout", stderr=said)
    if over:
        raise GitError(f"git {name} printed more than {limit:,} bytes; not read", failure="output", stderr=said)
    if check and returncode != 0:
        raise GitError(said.strip()[:500] or f"git {name} failed", failure="exit", returncode=returncode, stderr=said)
    return GitResult(returncode, bytes(out), said)


def ignored_paths(cwd: Path, paths: list[str], rules_only: bool = False) -> dict[str, str]:
    """Which of `paths` (relative to `cwd`, present or not) git would leave out of a commit:
    {path: the rule, `.gitignore:7:*.bin`}. Tracked files are not listed (an ignore rule does not
    apply to them) unless `rules_only`: then every path a rule matches is, as `git add PATH`
    refuses an ignored folder even when some files in it are tracked. Outside a work tree, or
    when git cannot say, nothing is listed."""
    if not paths:
        return {}
    payload = b"".join(p.encode("utf-8", "surrogateescape") + b"\0" for p in paths)
    try:
        index = ["--no-index"] if rules_only else []
        found = run_git(cwd, "check-ignore", *index, "-v", "-z", "--stdin", input=payload, timeout=30, limit=8 * 1024 * 1024, check=False)
    except GitError:
        return {}
    if found.returncode not in (0, 1):
        return {}
    fields = found.stdout.decode("utf-8", "surrogateescape").split("\0")
    out: dict[str, str] = {}
    for i in range(0, len(fields) - 3, 4):  # source, line, pattern, path
        source, line, pattern, path = fields[i : i + 4]
        if source and not pattern.startswith("!"):
            out[path] = f"{source}:{line}:{pattern}"
    return out


def _subcommand(args: tuple[str, ...]) -> str:
    """The git command the arguments name, past global options (`-c key=value`), for messages."""
    words = iter(args)
    for word in words:
        if word in ("-c", "-C"):
            next(words, None)
        elif not word.startswith("-"):
            return word
    return "git"


def _end(proc: subprocess.Popen[bytes]) -> None:
    """Kill git and whatever it started (a filter, an alias's shell): they share its session.
    Where there are no sessions to kill (Windows), git itself."""
    try:
        if hasattr(os, "killpg"):
            os.killpg(proc.pid, signal.SIGKILL)
        else:
            proc.kill()
    except (ProcessLookupError, PermissionError):
        pass


def _drain(stream: IO[bytes], keep: bytearray) -> None:
    while chunk := os.read(stream.fileno(), _CHUNK):
        keep += chunk[: max(0, STDERR_LIMIT - len(keep))]


def _feed(stream: IO[bytes], data: bytes) -> None:
    try:
        stream.write(data)
        stream.close()
    except (BrokenPipeError, OSError):
        pass  # git ended before reading all of it; its exit status says why


__all__ = ["OUTPUT_LIMIT", "TIMEOUT", "GitError", "GitResult", "git_env", "open_git", "run_git"]
