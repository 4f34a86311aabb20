"""Benchmark: the tiny example's full rebuild, and the Tracer's overhead per training step.

  rebuild    wall time of `reprogate rebuild examples/tiny/records/tiny.yaml` (aim: under 60 s)
  tracer     the example's model and data in one process, N steps each of: the bare loop, the
             loop with a Tracer digesting tensors and model state every step, and every 10 steps
             (batch digest, loss and lr every step in both); overhead = traced / bare - 1
             (aim: under 1% at every 10 steps)

    .venv/bin/python benchmarks/rebuild.py [--steps 400] [--repeat 3]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TINY = REPO / "examples" / "tiny"


def rebuild_time(repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        with tempfile.TemporaryDirectory() as out:
            start = time.perf_counter()
            done = subprocess.run([sys.executable, "-m", "reprogate", "rebuild", str(TINY / "records" / "tiny.yaml"), "--out", out], capture_output=True, text=True, cwd=REPO)
            elapsed = time.perf_counter() - start
            if done.returncode != 0:
                raise SystemExit(done.stdout + done.stderr)
            best = min(best, elapsed)
    return best


def tracer_overhead(steps: int, repeat: int) -> dict[str, float]:
    import torch
    import yaml
    from torch import nn

    from reprogate.trace import Tracer, seed_everything

    spec = importlib.util.spec_from_file_location("tiny_train", TINY / "project" / "train.py")
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    config = yaml.safe_load((TINY / "config" / "tiny.yaml").read_text())
    vocab = json.loads((TINY / "data" / "vocab.json").read_text())
    ids = torch.cat([module.encode(TINY / "data" / name, vocab) for name in config["data"]["shards"]])
    m, t = config["model"], config["train"]
    torch.set_num_threads(1)

    def loop(every: int | None) -> float:
        generator = seed_everything(1)
        data = module.Windows(ids, m["context"])
        loader = torch.utils.data.DataLoader(data, batch_size=t["batch_per_rank"], shuffle=True, generator=generator, drop_last=True)
        model = module.Model(len(vocab), m["context"], m["embed"], m["hidden"])
        optimizer = torch.optim.AdamW(model.parameters(), lr=t["lr"])
        batches = [next(iter(loader)) for _ in range(8)]  # data loading is not what is measured
        with tempfile.TemporaryDirectory() as folder:
            tracer = Tracer(folder, rank=0, every=every, tensors=config["trace"]["tensors"], model=model) if every else None
            start = time.perf_counter()
            for step in range(1, steps + 1):
                x, y = batches[step % len(batches)]
                loss = nn.functional.cross_entropy(model(x), y)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                if tracer:
                    tracer.step(step, batch=(x, y), loss=loss, lr=optimizer.param_groups[0]["lr"])
            elapsed = time.perf_counter() - start
            if tracer:
                tracer.close()
        return elapsed / steps

    results = {}
    for label, every in (("bare", None), ("every step", 1), ("every 10 steps", 10)):
        results[label] = min(loop(every) for _ in range(repeat))
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(f"full rebuild of the tiny example: {rebuild_time(args.repeat):.1f} s (best of {args.repeat})")
    per_step = tracer_overhead(args.steps, args.repeat)
    bare = per_step["bare"]
    for label, seconds in per_step.items():
        extra = "" if label == "bare" else f"  overhead {100 * (seconds / bare - 1):+.1f}%"
        print(f"  {label:<16} {seconds * 1e6:8.1f} us/step{extra}")


if __name__ == "__main__":
    main()
