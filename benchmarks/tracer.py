"""Benchmark: what the Tracer adds to a training step, against the same loop without it.

A ~10M-parameter MLP (AdamW, fp32, CPU) whose batch size is chosen so a bare step takes about
--step-ms (50 ms); then, in one run and interleaved round by round so machine load hits every
variant alike, the bare loop and the loop with a Tracer recording the batch digest, loss and lr
every step and the named tensors plus the whole model state every 10 steps (or every step):

  sha256 / blake3            digests on the training thread (blake3 spreads one tensor over the cores)
  blake3, background copy    model state copied on the training thread, hashed on a worker thread
  blake3, background guarded parameters hashed in place on the worker; the optimizer waits for it

Prints per variant the time the training thread spends in the tracer per step (inside
Tracer.step, waiting for the worker in the optimizer's step hook, and the final flush) and its
share of a --step-ms step (the aim for every 10 steps: <= 1%), and the medians of per-round
ratios traced / bare of the whole step in wall time and in training-thread CPU time (aim <= 1.01;
on a shared, loaded machine these ratios measure the neighbours more than the tracer). Where the
machine cannot make a step as short as --step-ms, the batch stops at 8; the share of --step-ms is
then the figure to read. Also the hash throughput of each algorithm on the model's bytes here.

    .venv/bin/python benchmarks/tracer.py [--rounds 5] [--steps 30] [--step-ms 50] [--threads 1]
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import torch
from torch import nn

from reprogate.trace import Tracer, new_hash, seed_everything

WIDTH_IN, HIDDEN, WIDTH_OUT = 1024, 2304, 1024  # 10.0M parameters

VARIANTS: list[tuple[str, int | None, dict[str, Any]]] = [
    ("bare", None, {}),
    ("sha256, every step", 1, {"digest": "sha256"}),
    ("sha256, every 10", 10, {"digest": "sha256"}),
    ("blake3, every step", 1, {"digest": "blake3"}),
    ("blake3, every 10", 10, {"digest": "blake3"}),
    ("blake3, every 10, background copy", 10, {"digest": "blake3", "background": True}),
    ("blake3, every 10, background guarded", 10, {"digest": "blake3", "background": True, "guard": True}),
    ("blake3, every step, background guarded", 1, {"digest": "blake3", "background": True, "guard": True}),
]


def make_model() -> nn.Module:
    return nn.Sequential(nn.Linear(WIDTH_IN, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, WIDTH_OUT))


def run(batch: int, steps: int, every: int | None, options: dict[str, Any]) -> dict[str, float]:
    """Seconds per step over `steps` steps after two warm-up steps: wall clock; CPU time of the
    training thread (with one torch thread all compute is on it); and the time the training
    thread spent in the tracer (inside Tracer.step, plus waiting for the worker in the
    optimizer's hook and the final flush): the direct measure of what tracing costs the loop."""
    seed_everything(1, deterministic=False)
    model = make_model()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    g = torch.Generator().manual_seed(0)
    batches = [(torch.randn(batch, WIDTH_IN, generator=g), torch.randn(batch, WIDTH_OUT, generator=g)) for _ in range(4)]
    options = dict(options)
    if options.pop("guard", False):
        options["optimizers"] = [optimizer]
    in_tracer = 0.0
    with tempfile.TemporaryDirectory() as folder:
        tracer = Tracer(Path(folder), rank=0, every=every, tensors=["0.weight", "4.weight"], model=model, **options) if every else None
        start = (0.0, 0.0)
        for step in range(1, steps + 3):
            if step == 3:
                start = (time.perf_counter(), time.thread_time())
                if tracer:
                    tracer.waited = 0.0
            x, y = batches[step % len(batches)]
            loss = nn.functional.mse_loss(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            if tracer:
                begin = time.perf_counter()
                tracer.step(step, batch=(x, y), loss=loss, lr=1e-4)
                in_tracer += time.perf_counter() - begin if step >= 3 else 0.0
        if tracer:
            tracer.flush()  # digests still on the worker count against the loop
            in_tracer += tracer.waited
        end = (time.perf_counter(), time.thread_time())
        if tracer:
            tracer.close()
    return {"wall": (end[0] - start[0]) / steps, "training thread CPU": (end[1] - start[1]) / steps, "in the tracer": in_tracer / steps}


KINDS = ("in the tracer", "wall", "training thread CPU")


def calibrate(step_ms: float) -> int:
    """The batch size whose bare step takes about step_ms of training-thread CPU time."""
    batch = 64
    for _ in range(4):
        seconds = run(batch, 6, None, {})["training thread CPU"]
        batch = max(8, round(batch * step_ms / 1000 / seconds))
    return batch


def throughput(model: nn.Module) -> dict[str, float]:
    state = model.state_dict()
    data = [t.reshape(-1).view(torch.uint8).numpy() for t in state.values()]
    size = sum(len(d) for d in data)
    out = {}
    for label, algorithm, parallel in (("sha256", "sha256", False), ("blake3, one thread", "blake3", False), ("blake3, all cores", "blake3", True)):
        best = float("inf")
        for _ in range(3):
            start = time.perf_counter()
            for d in data:
                h = new_hash(algorithm, parallel)
                h.update(d)
                h.hexdigest()
            best = min(best, time.perf_counter() - start)
        out[label] = size / best / 1e9
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--step-ms", type=float, default=50.0)
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads (default 1: all compute on the training thread)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    model = make_model()
    params = sum(p.numel() for p in model.parameters())
    batch = calibrate(args.step_ms)
    shape = f"{WIDTH_IN}-{HIDDEN}-{HIDDEN}-{WIDTH_OUT}"
    print(f"MLP {shape}: {params / 1e6:.1f}M parameters ({params * 4 / 2**20:.0f} MiB), batch {batch}, {torch.get_num_threads()} torch thread(s)")
    for label, rate in throughput(model).items():
        print(f"  hash throughput on the model state, {label}: {rate:.2f} GB/s")
    times: dict[str, list[dict[str, float]]] = {label: [] for label, _, _ in VARIANTS}
    order = random.Random(0)
    for _ in range(args.rounds):
        for label, every, options in order.sample(VARIANTS, len(VARIANTS)):  # no variant always first
            times[label].append(run(batch, args.steps, every, options))
    bare = {kind: [t[kind] for t in times["bare"]] for kind in KINDS[1:]}
    print(
        f"{args.rounds} rounds of {args.steps} steps, variants shuffled in each; bare loop: {statistics.median(bare['wall']) * 1e3:.1f} ms/step wall, "
        f"{statistics.median(bare['training thread CPU']) * 1e3:.1f} ms/step training-thread CPU. Medians per variant:"
    )
    print(f"  {'':<40} {'in tracer':>10} {'% of ' + format(args.step_ms, 'g') + ' ms':>10} {'ratio wall':>11} {'ratio CPU':>10}")
    for label, _, _ in VARIANTS[1:]:
        mine = times[label]
        in_tracer = statistics.median(t["in the tracer"] for t in mine)
        wall = statistics.median(t["wall"] / b for t, b in zip(mine, bare["wall"], strict=True))
        cpu = statistics.median(t["training thread CPU"] / b for t, b in zip(mine, bare["training thread CPU"], strict=True))
        print(f"  {label:<40} {in_tracer * 1e3:7.2f} ms {100 * in_tracer / (args.step_ms / 1000):9.2f}% {wall:11.3f} {cpu:10.3f}")


if __name__ == "__main__":
    main()
