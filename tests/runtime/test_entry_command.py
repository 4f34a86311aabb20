"""Entrypoint commands read as their launcher reads them: torchrun's options, the script, its flags.

runtime/entry_command.py reads torchrun's command line without torch (validate runs where torch is
not installed), so it is held here to torch's own parser: the same options, each taking a value
or not. The rank host then runs a torchrun entrypoint as one of torchrun's workers.
"""

from __future__ import annotations

import os
import sys

import pytest

from reprogate.runtime import rank_host
from reprogate.runtime.entry_command import TORCHRUN_FLAGS, TORCHRUN_VALUED, EntryCommandError, flag_changes, read_entry


def test_torchrun_options_are_torchs() -> None:
    from torch.distributed.run import get_args_parser  # torch 2.13, the dev group's

    parser = get_args_parser()
    theirs_valued = {o for a in parser._actions if a.option_strings and a.nargs != 0 for o in a.option_strings}
    theirs_flags = {o for a in parser._actions if a.option_strings and a.nargs == 0 for o in a.option_strings} - {"-h", "--help"}
    mine_valued = {o for opt in TORCHRUN_VALUED for o in (opt, opt.replace("-", "_").replace("__", "--", 1) if opt.startswith("--") else opt)}
    mine_flags = {o for opt in TORCHRUN_FLAGS for o in (opt, opt.replace("-", "_").replace("__", "--", 1) if opt.startswith("--") else opt)}
    assert mine_valued == theirs_valued and mine_flags == theirs_flags
    argv = ["--nnodes=1", "--nproc_per_node", "2", "--standalone", "--max-restarts", "0", "train.py", "--lr", "3e-4", "--nproc-per-node", "9"]
    parsed = parser.parse_args(argv)
    command = read_entry(["torchrun", *argv])
    assert (command.script, list(command.arguments)) == (parsed.training_script, parsed.training_script_args)
    assert command.nproc_per_node == int(parsed.nproc_per_node) == 2 and command.world_size == 2, "the script's own flags after it are the script's"


def test_commands_are_read_as_their_launchers_read_them() -> None:
    assert read_entry(["python", "train.py", "--lr", "3e-4"]).arguments == ("--lr", "3e-4")
    module = read_entry(["python3", "-m", "pkg.train", "--epochs", "1"])
    assert (module.launcher, module.module, module.arguments) == ("python", "pkg.train", ("--epochs", "1"))
    as_module = read_entry(["python", "-m", "torch.distributed.run", "--nproc-per-node", "4", "-m", "pkg.train", "-x"])
    assert (as_module.launcher, as_module.module, as_module.world_size, as_module.arguments) == ("torchrun", "pkg.train", 4, ("-x",))
    assert read_entry(["torchrun", "--nnodes", "1:4", "train.py"]).world_size is None, "an elastic range is no fixed world size"
    assert read_entry(["bash", "run.sh", "--lr", "1"]).launcher == "other"
    with pytest.raises(EntryCommandError):
        read_entry(["torchrun", "--nproc-per-node"])


def test_flag_changes_name_each_flag() -> None:
    pinned = ["--lr", "3e-4", "--epochs", "1", "--tied"]
    assert flag_changes(pinned, pinned) == []
    assert flag_changes(pinned, ["--lr", "1e-3", "--epochs", "1", "--tied"]) == ["--lr 3e-4 -> 1e-3"]
    assert flag_changes(pinned, ["--lr", "3e-4", "--epochs", "1"]) == ["--tied (flag) removed"]
    assert flag_changes(pinned, [*pinned, "--seed", "2"]) == ["--seed 2 added"]
    assert flag_changes(["--lr", "-0.5"], ["--lr", "0.5"]) == ["--lr -0.5 -> 0.5"], "a negative number is a value, not a flag"
    assert flag_changes(["--lr=3e-4"], ["--lr", "3e-4"])[0].startswith("the same flags"), "the pin is the exact list"


def test_the_rank_host_runs_torchrun_as_its_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    assert rank_host.as_torchrun_worker(["torchrun", "--nproc-per-node", "2", "train.py", "--lr", "1"]) == ["python", "train.py", "--lr", "1"]
    assert os.environ["OMP_NUM_THREADS"] == "1", "what torchrun sets for more than one process per node"
    assert rank_host.as_torchrun_worker(["torchrun", "--nproc-per-node=2", "-m", "pkg.train"]) == ["python", "-m", "pkg.train"]
    assert rank_host.as_torchrun_worker(["torchrun", "--nproc-per-node", "2", "--no-python", "./run"]) == ["./run"]
    other = ["torchrun", "--nproc-per-node", "4", "train.py"]
    assert rank_host.as_torchrun_worker(other) == other, "another world size than the ranks': left to torchrun, as before"
    assert rank_host.as_torchrun_worker([sys.executable, "train.py"]) == [sys.executable, "train.py"]
