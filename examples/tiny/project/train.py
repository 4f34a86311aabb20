"""The tiny example: a character-level next-token MLP, trained for seconds on a CPU.

Runs alone or as several ranks under torchrun's environment (RANK, WORLD_SIZE, MASTER_ADDR,
MASTER_PORT), with gloo DistributedDataParallel. Uses reprogate.trace to seed the run and write
the step trace that `reprogate rebuild` compares with the reference.

Fault drills (used by reprogate's tests, harmless otherwise):
  EXAMPLE_PERTURB_STEP=k   nudge the weights after step k (a silent numerical change)
  EXAMPLE_METRIC_SHIFT=x   add x to the reported validation loss
  EXAMPLE_CRASH_STEP=k     crash at step k
"""

import argparse
import hashlib
import json
import os
import sys
from pathlib import Path

import torch
import torch.distributed as dist
import yaml
from torch import nn
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, Dataset, DistributedSampler

from reprogate.trace import Tracer, seed_everything, seed_from_env


class Windows(Dataset):
    """(context, next character) pairs over a text."""

    def __init__(self, ids: torch.Tensor, context: int) -> None:
        self.ids, self.context = ids, context

    def __len__(self) -> int:
        return len(self.ids) - self.context

    def __getitem__(self, i: int):
        return self.ids[i : i + self.context], self.ids[i + self.context]


class Model(nn.Module):
    def __init__(self, vocab: int, context: int, embed: int, hidden: int) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, embed)
        self.hidden = nn.Linear(context * embed, hidden)
        self.head = nn.Linear(hidden, vocab)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(torch.tanh(self.hidden(self.embed(x).flatten(1))))


def encode(path: Path, vocab: dict) -> torch.Tensor:
    return torch.tensor([vocab[ch] for ch in path.read_text(encoding="utf-8")], dtype=torch.long)


def checked_manifest(data_dir: Path, name: str) -> dict:
    """The dataset manifest, after checking that the files this run reads are the ones it lists:
    the trace's meta then states the dataset the steps really saw."""
    manifest = yaml.safe_load((data_dir / name).read_text())
    for entry in manifest["shards"] + manifest.get("files", []):
        found = "sha256:" + hashlib.sha256((data_dir / entry["name"]).read_bytes()).hexdigest()
        if found != entry["checksum"]:
            raise SystemExit(f"{entry['name']} does not match the dataset manifest {name}")
    return manifest


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--config", required=True)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    config = yaml.safe_load(Path(args.config).read_text())
    data_dir = Path(args.config).parent / config["data"]["folder"]
    rank, world = int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1))
    if world > 1:
        dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.set_num_threads(1)
    seed = seed_from_env(args.seed)
    generator = seed_everything(seed, rank)

    vocab = json.loads((data_dir / config["data"]["vocabulary"]).read_text())
    train_ids = torch.cat([encode(data_dir / name, vocab) for name in config["data"]["shards"]])
    valid_ids = encode(data_dir / config["data"]["valid"], vocab)
    m, t = config["model"], config["train"]
    dataset = Windows(train_ids, m["context"])
    sampler = DistributedSampler(dataset, num_replicas=world, rank=rank, seed=seed, drop_last=True) if world > 1 else None
    loader = DataLoader(dataset, batch_size=t["batch_per_rank"], sampler=sampler, shuffle=sampler is None, generator=generator if sampler is None else None, drop_last=True)
    model = Model(len(vocab), m["context"], m["embed"], m["hidden"])
    ddp = DistributedDataParallel(model) if world > 1 else model
    optimizer = torch.optim.AdamW(ddp.parameters(), lr=t["lr"], weight_decay=t["weight_decay"])
    steps = min(t["steps"], int(os.environ.get("REPROGATE_MAX_STEPS", t["steps"])))
    perturb = int(os.environ.get("EXAMPLE_PERTURB_STEP", -1))
    crash = int(os.environ.get("EXAMPLE_CRASH_STEP", -1))

    manifest = checked_manifest(data_dir, config["data"]["manifest"])
    trace = config["trace"]
    tracer = Tracer(every=trace["every"], tensors=trace["tensors"], model=model, config=config, dataset_manifest=manifest, meta={"steps": steps})
    step = 0
    batches = iter(loader)
    while step < steps:
        x, y = next(batches)
        step += 1
        if step == crash:
            raise RuntimeError(f"drill: crashing at step {step} as EXAMPLE_CRASH_STEP asked")
        loss = nn.functional.cross_entropy(ddp(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step == perturb:
            with torch.no_grad():
                model.hidden.weight.mul_(1.01)
        tracer.step(step, batch=(x, y), loss=loss, lr=optimizer.param_groups[0]["lr"])

    model.eval()
    valid = Windows(valid_ids, m["context"])
    count = min(len(valid), config["data"]["valid_examples"])
    with torch.no_grad():
        xs = torch.stack([valid[i][0] for i in range(count)])
        ys = torch.stack([valid[i][1] for i in range(count)])
        val_loss = nn.functional.cross_entropy(model(xs), ys).item()
    val_loss += float(os.environ.get("EXAMPLE_METRIC_SHIFT", 0.0))
    if rank == 0:
        tracer.metric("val_loss", val_loss, step)
        print(f"seed {seed}: val_loss {val_loss:.6f} after {step} steps", file=sys.stderr)
    tracer.close()
    if world > 1:
        dist.barrier()
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
