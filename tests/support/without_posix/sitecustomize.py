"""A Python without the POSIX-only parts Windows lacks: put this folder on PYTHONPATH and the
interpreter cannot import fcntl, resource, termios, grp or pwd, and its os module has no
O_NONBLOCK or O_NOFOLLOW. REPROGATE_TEST_PLATFORM=darwin also makes sys.platform say darwin
(the rebuild's Linux-only refusal). tests/test_portability.py runs the command line under it."""

from __future__ import annotations

import importlib.abc
import os
import sys

BLOCKED = frozenset({"fcntl", "resource", "termios", "grp", "pwd"})


class _Blocker(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path=None, target=None):  # type: ignore[no-untyped-def]
        if fullname in BLOCKED:
            raise ModuleNotFoundError(f"No module named {fullname!r} (blocked: tests/support/without_posix)", name=fullname)
        return None


for _name in BLOCKED:
    sys.modules.pop(_name, None)
sys.meta_path.insert(0, _Blocker())
for _flag in ("O_NONBLOCK", "O_NOFOLLOW"):
    if hasattr(os, _flag):
        delattr(os, _flag)
if os.environ.get("REPROGATE_TEST_PLATFORM"):
    sys.platform = os.environ["REPROGATE_TEST_PLATFORM"]
