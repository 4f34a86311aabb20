"""Environment variables a record may not set for its ranks: the ones that run code of their own
in a program that is not the code under test.

A record's `execution.env` reaches the rank, and on its way every program between reprogate and
the rank: the sandbox launcher (`bwrap`), Slurm's `sbatch` and `srun` and the job script's shell,
`env` in a realized environment's command line, a container engine's client. Those run with the
runner's rights, outside any sandbox, before the rank exists. A few variables make such a
program load or run a file the record names:

- the dynamic loader's (`LD_*`: `LD_PRELOAD`, `LD_AUDIT`, `LD_LIBRARY_PATH` ...) and the other
  variables the C library itself drops for setuid programs, for the same reason (`GCONV_PATH`
  loads conversion modules, `GLIBC_TUNABLES` has had its own memory bugs, `LOCPATH`, `NLSPATH`,
  `HOSTALIASES`, `RES_OPTIONS` ...);
- the shells' start-up files and imported functions (`BASH_ENV`, `ENV`, `BASH_FUNC_*`,
  `SHELLOPTS`, `PS4` with tracing, `PROMPT_COMMAND`): Slurm's job script is a shell script;
- the interpreters' (`PYTHONSTARTUP`, `PYTHONHOME`, `PYTHONINSPECT`, `PYTHONUSERBASE`,
  `PERL5OPT`, `PERL5LIB`, `RUBYOPT`, `NODE_OPTIONS`), which change which code an interpreter
  runs before its program. `PYTHONPATH` stays allowed: it is how a project names its own source
  folders, it changes only what the rank imports (the injected runtime stays first), and
  reprogate's own helpers in a sandbox start with `python -I -S`, which ignores it.

A training script that needs one of them sets it for its own child processes. `validate` refuses
each (`rank-environment-is-inert`, exit 1, naming the key) and the rebuild refuses a record that
holds one before anything starts, whether or not it was validated.
"""

from __future__ import annotations

from collections.abc import Iterable

HIJACK_PREFIXES: tuple[str, ...] = ("LD_", "BASH_FUNC_", "DYLD_")
HIJACK_NAMES: frozenset[str] = frozenset(
    {
        # the C library's own list of what a setuid program must not honour
        "GCONV_PATH",
        "GETCONF_DIR",
        "GLIBC_TUNABLES",
        "HOSTALIASES",
        "LOCALDOMAIN",
        "LOCPATH",
        "MALLOC_TRACE",
        "NIS_PATH",
        "NLSPATH",
        "RESOLV_HOST_CONF",
        "RES_OPTIONS",
        "TZDIR",
        # shells
        "BASH_ENV",
        "ENV",
        "SHELLOPTS",
        "BASHOPTS",
        "PS4",
        "PROMPT_COMMAND",
        "IFS",
        "CDPATH",
        # interpreters
        "PYTHONSTARTUP",
        "PYTHONHOME",
        "PYTHONINSPECT",
        "PYTHONUSERBASE",
        "PYTHONEXECUTABLE",
        "PERL5OPT",
        "PERL5LIB",
        "PERLLIB",
        "RUBYOPT",
        "RUBYLIB",
        "NODE_OPTIONS",
    }
)


def hijacks(name: str) -> bool:
    """Whether a variable of this name makes a program other than the code under test load or
    run a file (see the module's docstring for the list and why)."""
    return name in HIJACK_NAMES or name.startswith(HIJACK_PREFIXES)


def hijacking(names: Iterable[str]) -> list[str]:
    """The names among `names` that hijack, in their order."""
    return [name for name in names if hijacks(name)]


__all__ = ["HIJACK_NAMES", "HIJACK_PREFIXES", "hijacking", "hijacks"]
