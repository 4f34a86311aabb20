"""A character-level MLP in plain PyTorch, configured by its command-line flags (argparse).

`python train.py --lr 0.01 --steps 30`, or as ranks: `torchrun --nproc-per-node 2 train.py ...`.
There is no configuration file: `reprogate init` pins the flags as the configuration
(job.config.hash_of: argv). The reprogate lines: seed from REPROGATE_SEED, a Tracer, one
`tracer.step` per step and the metric on rank 0.
"""

import argparse
import os
from pathlib import Path

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, Dataset, DistributedSampler

from reprogate.trace import Tracer, seed_everything, seed_from_env

HERE = Path(__file__).resolve().parent


class Windows(Dataset):
    """(context, next character) pairs over a text."""

    def __init__(self, ids: torch.Tensor, context: int) -> None:
        self.ids, self.context = ids, context

    def __len__(self) -> int:
        return len(self.ids) - self.context

    def __getitem__(self, i: int) -> tuple[torch.Tensor, torch.Tensor]:
        return self.ids[i : i + self.context], self.ids[i + self.context]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--context", type=int, default=8)
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()

    rank, world = int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1))
    if world > 1:
        dist.init_process_group("gloo")
    torch.set_num_threads(1)
    seed = seed_from_env(args.seed)
    generator = seed_everything(seed, rank)

    text = (HERE / "data" / "train.txt").read_text(encoding="utf-8")
    valid_text = (HERE / "data" / "valid.txt").read_text(encoding="utf-8")
    vocab = {ch: i for i, ch in enumerate(sorted(set(text + valid_text)))}

    def ids(chars: str) -> torch.Tensor:
        return torch.tensor([vocab[ch] for ch in chars], dtype=torch.long)

    dataset = Windows(ids(text), args.context)
    sampler = DistributedSampler(dataset, num_replicas=world, rank=rank, seed=seed, drop_last=True) if world > 1 else None
    loader = DataLoader(
        dataset, batch_size=args.batch_size, sampler=sampler, shuffle=sampler is None, generator=generator if sampler is None else None, drop_last=True
    )
    model = nn.Sequential(nn.Embedding(len(vocab), 16), nn.Flatten(1), nn.Linear(args.context * 16, args.hidden), nn.Tanh(), nn.Linear(args.hidden, len(vocab)))
    ddp = DistributedDataParallel(model) if world > 1 else model
    optimizer = torch.optim.AdamW(ddp.parameters(), lr=args.lr)
    steps = min(args.steps, int(os.environ.get("REPROGATE_MAX_STEPS", args.steps)))

    tracer = Tracer(every=5, tensors=["0.weight", "4.weight"], model=model)
    batches = iter(loader)
    for step in range(1, steps + 1):
        x, y = next(batches)
        loss = nn.functional.cross_entropy(ddp(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        tracer.step(step, batch=(x, y), loss=loss, lr=optimizer.param_groups[0]["lr"])

    model.eval()
    valid = Windows(ids(valid_text), args.context)
    with torch.no_grad():
        xs = torch.stack([valid[i][0] for i in range(len(valid))])
        ys = torch.stack([valid[i][1] for i in range(len(valid))])
        val_loss = nn.functional.cross_entropy(model(xs), ys).item()
    if rank == 0:
        tracer.metric("val_loss", val_loss, steps)
    tracer.close()
    if world > 1:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
