"""A character-level MLP trained by lightning.Trainer, for seconds on a CPU.

`python train.py --lr 0.01 --steps 20`, or as 2 ranks: `torchrun --nproc-per-node 2 train.py
--lr 0.01 --steps 20` (DDP over gloo on CPUs). The reprogate lines are `seeded` (Lightning's
seed_everything with the rebuild's seed) and the callback.
"""

import argparse
import os
from pathlib import Path

import lightning as L
import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

from reprogate.integrations.lightning import ReprogateCallback, seeded

HERE = Path(__file__).resolve().parent


class Windows(Dataset):
    """(context, next character) pairs over a text."""

    def __init__(self, ids: torch.Tensor, context: int) -> None:
        self.ids, self.context = ids, context

    def __len__(self) -> int:
        return len(self.ids) - self.context

    def __getitem__(self, i: int) -> tuple[torch.Tensor, torch.Tensor]:
        return self.ids[i : i + self.context], self.ids[i + self.context]


class CharModel(L.LightningModule):
    def __init__(self, vocab: int, context: int, lr: float) -> None:
        super().__init__()
        self.lr = lr
        self.embed = nn.Embedding(vocab, 16)
        self.hidden = nn.Linear(context * 16, 64)
        self.head = nn.Linear(64, vocab)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(torch.tanh(self.hidden(self.embed(x).flatten(1))))

    def training_step(self, batch: tuple[torch.Tensor, torch.Tensor], batch_idx: int) -> torch.Tensor:
        x, y = batch
        return nn.functional.cross_entropy(self(x), y)

    def validation_step(self, batch: tuple[torch.Tensor, torch.Tensor], batch_idx: int) -> None:
        x, y = batch
        self.log("val_loss", nn.functional.cross_entropy(self(x), y), sync_dist=True)

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.AdamW(self.parameters(), lr=self.lr)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--context", type=int, default=8)
    parser.add_argument("--seed", type=int, default=1)
    options = parser.parse_args()

    seeded(options.seed)
    torch.set_num_threads(1)
    train_text = (HERE / "data" / "train.txt").read_text(encoding="utf-8")
    valid_text = (HERE / "data" / "valid.txt").read_text(encoding="utf-8")
    vocab = {ch: i for i, ch in enumerate(sorted(set(train_text + valid_text)))}

    def ids(text: str) -> torch.Tensor:
        return torch.tensor([vocab[ch] for ch in text], dtype=torch.long)

    train = DataLoader(Windows(ids(train_text), options.context), batch_size=options.batch_size, shuffle=True, drop_last=True)
    valid = DataLoader(Windows(ids(valid_text), options.context), batch_size=256)
    ranks = int(os.environ.get("LOCAL_WORLD_SIZE", 1))
    trainer = L.Trainer(
        accelerator="cpu",
        devices=ranks,
        strategy="ddp" if ranks > 1 else "auto",
        max_steps=options.steps,
        deterministic=True,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        num_sanity_val_steps=0,
        callbacks=[ReprogateCallback(tensors=["head.weight", "embed.weight"])],
    )
    model = CharModel(len(vocab), options.context, options.lr)
    trainer.fit(model, train)
    trainer.validate(model, valid, verbose=False)
    if torch.distributed.is_initialized():  # gloo's threads, left to the interpreter's exit, abort it now and then
        torch.distributed.destroy_process_group()


if __name__ == "__main__":
    main()
