"""The tiny example's model trained on CUDA with deterministic kernels: tools/gpu-check's reference.

tools/gpu-check copies this file into a fresh project as train.py, beside the example's own
train.py (as example.py, whose model, dataset and manifest check it reuses unchanged), and makes a
record of it with `reprogate init`. What differs from the example is only what CUDA needs to be
bitwise: the model and batches on `cuda`, `torch.use_deterministic_algorithms(True)` and
`CUBLAS_WORKSPACE_CONFIG=:4096:8` (the record's execution.env sets it; this script refuses to run
without it, so a rank that lost it fails loudly instead of passing by luck). The loss is written as
log-softmax times one-hot targets rather than `cross_entropy`, because torch lists NLLLoss on CUDA
among the operations that raise under deterministic algorithms.

Fault drill (gpu-check's perturbed rebuild): EXAMPLE_PERTURB_STEP=k nudges the weights after step k.
"""

import argparse
import json
import os
from pathlib import Path

import torch
import yaml
from example import Model, Windows, checked_manifest, encode
from torch.utils.data import DataLoader

from reprogate.trace import Tracer, seed_everything, seed_from_env

WORKSPACE = ":4096:8"


def loss_of(logits: torch.Tensor, targets: torch.Tensor, vocab: int) -> torch.Tensor:
    """Mean cross-entropy without NLLLoss: the one-hot targets are made on the CPU."""
    one_hot = torch.nn.functional.one_hot(targets.cpu(), vocab).to(device=logits.device, dtype=logits.dtype)
    return -(torch.log_softmax(logits, dim=1) * one_hot).sum(dim=1).mean()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--config", required=True)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit(
            f"gpu-check: CUDA is not available in this rank (torch {torch.__version__}, CUDA build {torch.version.cuda}, "
            f"CUDA_VISIBLE_DEVICES={os.environ.get('CUDA_VISIBLE_DEVICES')!r}, LD_LIBRARY_PATH={os.environ.get('LD_LIBRARY_PATH')!r})"
        )
    if os.environ.get("CUBLAS_WORKSPACE_CONFIG") != WORKSPACE:
        raise SystemExit(f"gpu-check: CUBLAS_WORKSPACE_CONFIG is {os.environ.get('CUBLAS_WORKSPACE_CONFIG')!r}, not {WORKSPACE!r} (the record's execution.env)")
    config = yaml.safe_load(Path(args.config).read_text())
    data_dir = Path(args.config).parent / config["data"]["folder"]
    rank = int(os.environ.get("RANK", 0))
    if int(os.environ.get("WORLD_SIZE", 1)) != 1:
        raise SystemExit("gpu-check: the CUDA reference runs as one rank")
    seed = seed_from_env(args.seed)
    generator = seed_everything(seed, rank)  # before the first CUDA work: deterministic kernels, TF32 off
    torch.use_deterministic_algorithms(True)
    device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", 0)) % torch.cuda.device_count())
    torch.cuda.set_device(device)

    vocab = json.loads((data_dir / config["data"]["vocabulary"]).read_text())
    train_ids = torch.cat([encode(data_dir / name, vocab) for name in config["data"]["shards"]])
    valid_ids = encode(data_dir / config["data"]["valid"], vocab)
    m, t = config["model"], config["train"]
    loader = DataLoader(Windows(train_ids, m["context"]), batch_size=t["batch_per_rank"], shuffle=True, generator=generator, drop_last=True)
    model = Model(len(vocab), m["context"], m["embed"], m["hidden"]).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=t["lr"], weight_decay=t["weight_decay"])
    steps = min(t["steps"], int(os.environ.get("REPROGATE_MAX_STEPS", t["steps"])))
    perturb = int(os.environ.get("EXAMPLE_PERTURB_STEP", -1))

    manifest = checked_manifest(data_dir, config["data"]["manifest"])
    trace = config["trace"]
    meta = {"steps": steps, "device": torch.cuda.get_device_name(device), "cuda": torch.version.cuda}
    tracer = Tracer(every=trace["every"], tensors=trace["tensors"], model=model, config=config, dataset_manifest=manifest, meta=meta)
    step = 0
    batches = iter(loader)
    while step < steps:
        x, y = next(batches)
        step += 1
        loss = loss_of(model(x.to(device)), y, len(vocab))
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
        val_loss = loss_of(model(xs.to(device)), ys, len(vocab)).item()
    tracer.metric("val_loss", val_loss, step)
    tracer.close()


if __name__ == "__main__":
    main()
