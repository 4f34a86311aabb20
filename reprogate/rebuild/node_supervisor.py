"""The first process inside a node's sandbox: it starts every local rank of the node and says
how each one ended.

All ranks of a node share one sandbox, so they share its network namespace (loopback only: gloo
and NCCL meet there) and its private /dev/shm, while each keeps its own environment, log and exit
code. bubblewrap gives one command one environment; this program, started by the sandbox with
`python -I -S -c SOURCE SPEC_FD STATUS_FD` (no site, no PYTHON* variable, no file of the work
folder: the code is reprogate's, handed over on the command line), reads the ranks' starts as
JSON from SPEC_FD (argv, environment, folder, and a log descriptor reprogate opened) and writes
one line `RANK CODE` to STATUS_FD as each rank ends. Standard library only; nothing here is
imported by reprogate itself (sandbox.py reads this file as text).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys


def main(spec_fd: int, status_fd: int) -> int:
    chunks = []
    while chunk := os.read(spec_fd, 1 << 16):
        chunks.append(chunk)
    os.close(spec_fd)
    spec = json.loads(b"".join(chunks))
    status = os.fdopen(status_fd, "w", buffering=1)
    running: dict[int, int] = {}
    for start in spec["ranks"]:
        rank, log = int(start["rank"]), int(start["log_fd"])
        try:
            proc = subprocess.Popen(
                start["argv"], env=start["env"], cwd=start["cwd"], stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )
            running[proc.pid] = rank
        except OSError as exc:
            os.write(log, f"cannot start rank {rank}: {exc}\n".encode())
            status.write(f"{rank} 127\n")
        finally:
            os.close(log)
    while running:
        try:
            pid, how = os.wait()
        except ChildProcessError:
            break
        exited = running.pop(pid, None)  # the rank of that child; None for one not ours
        if exited is not None:
            status.write(f"{exited} {os.waitstatus_to_exitcode(how)}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]), int(sys.argv[2])))
