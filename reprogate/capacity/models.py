"""GPU models compared exactly: NVML names normalised, and the Slurm GRES types known to name them.

A record allows the GPU models its reference ran on, as NVML names them (`NVIDIA H100 80GB
HBM3`); a pool states a model the same way (a Cluster file) or as a GRES type (`gpu:h100:8`).
Substrings do not decide: `a10` is contained in `NVIDIA A100-SXM4-80GB` and `l4` in `NVIDIA L40S`,
and neither is that GPU. A name is normalised (case, spaces, dashes and the `NVIDIA`/`Tesla`
prefix do not count) and then compared whole; a GRES type means the NVML names this table lists
for it, and one that covers several models (`h100`: SXM, PCIe or NVL) honors a record only if the
record allows each of them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

H100 = ("NVIDIA H100 80GB HBM3", "NVIDIA H100 PCIe", "NVIDIA H100 NVL")
A100_80 = ("NVIDIA A100-SXM4-80GB", "NVIDIA A100 80GB PCIe")
A100_40 = ("NVIDIA A100-SXM4-40GB", "NVIDIA A100-PCIE-40GB")
V100 = ("Tesla V100-SXM2-16GB", "Tesla V100-SXM2-32GB", "Tesla V100-PCIE-16GB", "Tesla V100-PCIE-32GB")

# GRES type (as sites write it, normalised) -> the NVML names it may stand for.
GRES_TYPES: dict[str, tuple[str, ...]] = {
    "h100": H100,
    "h100sxm": H100[:1],
    "h100pcie": H100[1:2],
    "h100nvl": H100[2:],
    "h200": ("NVIDIA H200",),
    "b200": ("NVIDIA B200",),
    "a100": (*A100_80, *A100_40),
    "a10080gb": A100_80,
    "a10040gb": A100_40,
    "a100sxm4": (A100_80[0], A100_40[0]),
    "a10": ("NVIDIA A10",),
    "a10g": ("NVIDIA A10G",),
    "a30": ("NVIDIA A30",),
    "a40": ("NVIDIA A40",),
    "l4": ("NVIDIA L4",),
    "l40": ("NVIDIA L40",),
    "l40s": ("NVIDIA L40S",),
    "v100": V100,
    "t4": ("Tesla T4",),
    "rtx4090": ("NVIDIA GeForce RTX 4090",),
    "rtx3090": ("NVIDIA GeForce RTX 3090",),
}


def normalised(name: str) -> str:
    """`NVIDIA A100-SXM4-80GB` and `nvidia a100 sxm4 80gb` alike: lower case, letters and digits only, no vendor word."""
    text = re.sub(r"[^a-z0-9]", "", name.lower())
    for vendor in ("nvidia", "tesla", "geforce"):
        text = text.removeprefix(vendor)
    return text


@dataclass(frozen=True)
class Offered:
    """What a pool's GPU model text stands for: the NVML names it may be (one, or several for a broad GRES type)."""

    text: str
    names: tuple[str, ...]
    known: bool = True  # False: a GRES type the table does not list, which names no model for certain

    def verdict(self, allowed: list[str]) -> tuple[str, str]:
        """("honored" | "short" | "unknown", why) against the record's allowed NVML names."""
        wanted = {normalised(a) for a in allowed}
        if not self.known and normalised(self.text) not in wanted:
            return (
                "unknown",
                f"the pool's GRES type {self.text} is not one reprogate knows; the record allows only {allowed}: state the model (a Cluster file's gpus.model)",
            )
        mine = {normalised(n) for n in self.names}
        if mine <= wanted:
            return "honored", f"{self.text} is {self._said()}, one of {allowed}"
        if not mine & wanted:
            return "short", f"the pool has {self.text}" + (f" ({self._said()})" if self._said() != self.text else "") + f"; the record allows only {allowed}"
        return "unknown", f"the pool's {self.text} may be {self._said()}; the record allows only {allowed}: state the exact model (a Cluster file's gpus.model)"

    def _said(self) -> str:
        return self.names[0] if len(self.names) == 1 else " or ".join(self.names)


def offered(text: str, gres: bool = False) -> Offered:
    """The pool's model: a GRES type from the table, else the name itself (compared normalised);
    `gres`: the text is a Slurm GRES type, so one the table lacks is no model name."""
    key = normalised(text)
    if key in GRES_TYPES:
        return Offered(text, GRES_TYPES[key])
    return Offered(text, (text,), known=not gres)
