"""A one-layer GPT-2 trained by the Hugging Face Trainer on characters, for seconds on a CPU.

No download: the model is built from a config, and the "tokenizer" is the characters of the
data. `python train.py --lr 3e-3 --steps 20`, or as 2 ranks: `torchrun --nproc-per-node 2
train.py --lr 3e-3 --steps 20` (the Trainer runs DDP over gloo on CPUs). The one reprogate line
is the callback (and `seeded`, so the model's first weights follow the rebuild's seed too).
"""

import argparse
import tempfile
from pathlib import Path

import torch
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments

from reprogate.integrations.transformers import ReprogateCallback, seeded

HERE = Path(__file__).resolve().parent


class Characters(torch.utils.data.Dataset):
    """Consecutive blocks of `block` characters, each its own label (the model shifts them)."""

    def __init__(self, text: str, vocab: dict[str, int], block: int) -> None:
        ids = torch.tensor([vocab[ch] for ch in text], dtype=torch.long)
        self.blocks = ids[: len(ids) // block * block].view(-1, block)

    def __len__(self) -> int:
        return len(self.blocks)

    def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
        return {"input_ids": self.blocks[i], "labels": self.blocks[i]}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--block", type=int, default=32)
    parser.add_argument("--seed", type=int, default=1)
    options = parser.parse_args()

    train_text = (HERE / "data" / "train.txt").read_text(encoding="utf-8")
    valid_text = (HERE / "data" / "valid.txt").read_text(encoding="utf-8")
    vocab = {ch: i for i, ch in enumerate(sorted(set(train_text + valid_text)))}
    args = seeded(
        TrainingArguments(
            output_dir=tempfile.mkdtemp(prefix="hf-example-"),
            max_steps=options.steps,
            per_device_train_batch_size=options.batch_size,
            per_device_eval_batch_size=16,
            learning_rate=options.lr,
            warmup_steps=2,
            logging_steps=1,
            save_strategy="no",
            report_to="none",
            use_cpu=True,
            dataloader_num_workers=0,
            disable_tqdm=True,
            seed=options.seed,
        )
    )
    torch.set_num_threads(1)
    config = GPT2Config(vocab_size=len(vocab), n_positions=options.block, n_embd=32, n_layer=1, n_head=2, bos_token_id=0, eos_token_id=0)
    model = GPT2LMHeadModel(config)
    trainer = Trainer(
        model=model,
        args=args,
        train_dataset=Characters(train_text, vocab, options.block),
        eval_dataset=Characters(valid_text, vocab, options.block),
        callbacks=[ReprogateCallback(tensors=["transformer.wte.weight", "transformer.h.0.mlp.c_fc.weight"])],
    )
    trainer.train()
    trainer.evaluate()


if __name__ == "__main__":
    main()
