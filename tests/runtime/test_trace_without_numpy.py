"""The Tracer in a training environment without NumPy (torch does not require it; a lock file of
torch alone has none): digests are the same bytes as with NumPy, not a crash at the first step."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

SCRIPT = """
import json, sys
sys.modules["numpy"] = None  # as if NumPy were not installed: torch then has no NumPy support
import torch
from reprogate.runtime.tensor_digests import batch_digest, tensor_digest
g = torch.Generator().manual_seed(0)
x = torch.randn(64, 33, generator=g)
out = {
    "float32": tensor_digest(x),
    "bfloat16": tensor_digest(x.to(torch.bfloat16)),
    "transposed": tensor_digest(x.t()),
    "batch": batch_digest((x[:8], torch.arange(8))),
}
try:
    x.numpy()
    out["numpy"] = "available"
except RuntimeError as exc:
    out["numpy"] = str(exc)
print(json.dumps(out))
"""


def test_digests_without_numpy_equal_digests_with_it() -> None:
    torch = pytest.importorskip("torch")
    from reprogate.runtime.tensor_digests import batch_digest, tensor_digest

    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    without = json.loads(done.stdout)
    assert "Numpy is not available" in without.pop("numpy"), "the subprocess really ran without NumPy"
    g = torch.Generator().manual_seed(0)
    x = torch.randn(64, 33, generator=g)
    assert without == {
        "float32": tensor_digest(x),
        "bfloat16": tensor_digest(x.to(torch.bfloat16)),
        "transposed": tensor_digest(x.t()),
        "batch": batch_digest((x[:8], torch.arange(8))),
    }
