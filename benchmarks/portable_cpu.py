"""Benchmark: what the portable CPU mode costs in step time, against the kernels the CPU would pick.

A bitwise CPU contract that holds on every x86-64 machine pins torch's baseline kernels
(ATEN_CPU_CAPABILITY=default) and MKL's common code path (MKL_CBWR=COMPATIBLE); oneDNN is capped at
SSE4.1 too (only convolutions and low-precision matmuls use it, so it does not show here). Both are
fixed per process, so every configuration runs in its own process, round by round, interleaved:

  native          what torch and MKL choose on this CPU (the anchor)
  torch default   ATEN_CPU_CAPABILITY=default only
  MKL compatible  MKL_CBWR=COMPATIBLE only
  portable        both (what the example's record and seed_everything(portable_cpu=True) set)

on two workloads: the tiny example's model and batch (what `reprogate rebuild` runs), and a
~10M-parameter MLP (AdamW, fp32). One thread per process, as the example's record pins, timed in
CPU time of that thread (robust to a loaded machine, where wall time measures the neighbours).
Prints the median step time per configuration and the median ratio to native (1.00 = free).

    .venv/bin/python benchmarks/portable_cpu.py [--rounds 5] [--steps 60]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TINY = REPO / "examples" / "tiny"
CONFIGS = {
    "native": {},
    "torch default": {"ATEN_CPU_CAPABILITY": "default"},
    "MKL compatible": {"MKL_CBWR": "COMPATIBLE"},
    "portable": {"ATEN_CPU_CAPABILITY": "default", "MKL_CBWR": "COMPATIBLE", "ONEDNN_MAX_CPU_ISA": "SSE41"},
}
WORKLOADS = ("tiny example", "10M MLP")


def child(workload: str, steps: int) -> None:
    """Run `steps` training steps after warm-up and print CPU seconds per step (in a fresh process)."""
    import importlib.util

    import torch
    import yaml
    from torch import nn

    torch.set_num_threads(1)
    torch.manual_seed(0)
    if workload == "tiny example":
        spec = importlib.util.spec_from_file_location("tiny_train", TINY / "project" / "train.py")
        module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
        spec.loader.exec_module(module)  # type: ignore[union-attr]
        config = yaml.safe_load((TINY / "config" / "tiny.yaml").read_text())
        m, t = config["model"], config["train"]
        model = module.Model(30, m["context"], m["embed"], m["hidden"])
        batches = [(torch.randint(0, 30, (t["batch_per_rank"], m["context"])), torch.randint(0, 30, (t["batch_per_rank"],))) for _ in range(8)]
        loss_of = nn.functional.cross_entropy
        optimizer = torch.optim.AdamW(model.parameters(), lr=t["lr"])
    else:
        model = nn.Sequential(nn.Linear(1024, 2304), nn.ReLU(), nn.Linear(2304, 2304), nn.ReLU(), nn.Linear(2304, 1024))
        batches = [(torch.randn(32, 1024), torch.randn(32, 1024)) for _ in range(4)]
        loss_of = nn.functional.mse_loss
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    start = 0.0
    for step in range(steps + 3):
        if step == 3:
            start = time.thread_time()
        x, y = batches[step % len(batches)]
        loss = loss_of(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    print(json.dumps({"seconds": (time.thread_time() - start) / steps, "capability": torch.backends.cpu.get_cpu_capability()}))


def measure(workload: str, variables: dict[str, str], steps: int) -> float:
    env = {k: v for k, v in os.environ.items() if k not in ("ATEN_CPU_CAPABILITY", "MKL_CBWR", "ONEDNN_MAX_CPU_ISA")}
    env.update(variables, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    done = subprocess.run([sys.executable, __file__, "--child", workload, "--steps", str(steps)], env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(done.stderr)
    return float(json.loads(done.stdout.strip().splitlines()[-1])["seconds"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--child", choices=WORKLOADS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.steps)
        return
    for workload in WORKLOADS:
        times: dict[str, list[float]] = {name: [] for name in CONFIGS}
        ratios: dict[str, list[float]] = {name: [] for name in CONFIGS}
        steps = args.steps if workload == "tiny example" else max(10, args.steps // 4)
        for _ in range(args.rounds):
            native = measure(workload, CONFIGS["native"], steps)
            times["native"].append(native)
            ratios["native"].append(1.0)
            for name, variables in list(CONFIGS.items())[1:]:
                seconds = measure(workload, variables, steps)
                times[name].append(seconds)
                ratios[name].append(seconds / native)
        print(f"{workload}: {args.rounds} interleaved rounds of {steps} steps, one thread; median CPU time per step, median ratio to native")
        for name in CONFIGS:
            print(f"  {name:<16} {statistics.median(times[name]) * 1e3:8.2f} ms/step   ratio {statistics.median(ratios[name]):.2f}")


if __name__ == "__main__":
    main()
