"""Training-side API: seed a run, trace its steps, and carry generator state across a resume.

Only training code imports this; torch and NumPy are imported inside the functions, so
`import reprogate.runtime.trace` costs nothing until it is used. A trace is JSON Lines, one object per
event, written per rank:

  {"type": "meta", "rank": 0, "world_size": 2, "seed": 7, ...}
  {"type": "step", "rank": 0, "step": 1, "batch": "sha256:...", "loss": 2.31, "lr": 0.01,
   "metrics": {...}, "tensors": {"fc.weight": "sha256:..."}, "model_state": "sha256:..."}
  {"type": "metric", "rank": 0, "name": "val_loss", "value": 1.87, "step": 40}

Tensor digests are sha256 over the dtype name, the shape and the raw bytes (little-endian, C
order), so equal digests mean bitwise-equal tensors. A CPU tensor that is already contiguous is
hashed through a view of its memory, without a copy.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
from pathlib import Path
from typing import Any, Iterable, Mapping

TRACE_DIR_ENV = "REPROGATE_TRACE_DIR"
SEED_ENV = "REPROGATE_SEED"


def seed_from_env(default: int) -> int:
    """The seed a rebuild asks for (REPROGATE_SEED), else the script's own default."""
    return int(os.environ.get(SEED_ENV, default))


def seed_everything(seed: int, rank: int = 0, deterministic: bool = True, allow_tf32: bool = False) -> Any:
    """Seed Python, NumPy and torch (CPU and CUDA) and switch on deterministic kernels.

    Each rank's own randomness (dropout, augmentation) is seeded with `seed + rank`; the returned
    torch.Generator is seeded with `seed` alone, identical on every rank, for the DataLoader or
    DistributedSampler, so all ranks agree on the data order.
    """
    import torch

    os.environ.setdefault("PYTHONHASHSEED", str(seed))  # for subprocesses (DataLoader workers)
    if deterministic:
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")  # before any CUDA context
    random.seed(seed + rank)
    try:
        import numpy

        numpy.random.seed((seed + rank) % 2**32)
    except ImportError:
        pass
    torch.manual_seed(seed + rank)
    if torch.cuda.is_available():
        torch.cuda.manual_seed_all(seed + rank)
    if deterministic:
        torch.use_deterministic_algorithms(True)
        torch.backends.cudnn.deterministic = True
        torch.backends.cudnn.benchmark = False
    if not allow_tf32:
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        torch.set_float32_matmul_precision("highest")
    return torch.Generator().manual_seed(seed)


_HEADERS: dict[tuple[Any, Any], bytes] = {}


def _feed_tensor(h: Any, tensor: Any) -> None:
    """Add dtype, shape and raw bytes of a tensor to a hash, copying only if it must.

    This runs every training step (batch digests), so the common case (a contiguous CPU tensor)
    takes the shortest path: a cached header and a zero-copy NumPy view."""
    t = tensor.detach() if tensor.requires_grad else tensor
    if not t.is_cpu:
        t = t.cpu()
    if not t.is_contiguous():
        t = t.contiguous()
    key = (t.dtype, t.shape)
    header = _HEADERS.get(key)
    if header is None:
        header = _HEADERS[key] = f"{str(t.dtype)[6:]}|{tuple(t.shape)}|".encode()
    h.update(header)
    if t.numel():
        try:
            h.update(t.numpy())  # shares the tensor's memory: no copy
        except TypeError:  # a dtype NumPy lacks (bfloat16, float8): hash a uint8 view instead
            import torch

            h.update(t.reshape(-1).view(torch.uint8).numpy())


def tensor_digest(tensor: Any) -> str:
    """sha256 over dtype, shape and raw bytes of a tensor (copied only if it must be)."""
    h = hashlib.sha256()
    _feed_tensor(h, tensor)
    return "sha256:" + h.hexdigest()


def model_state_digest(model: Any) -> str:
    """One digest over every tensor of a model's state dict, in name order."""
    state = model.state_dict() if hasattr(model, "state_dict") else model
    h = hashlib.sha256()
    for name in sorted(state):
        value = state[name]
        if hasattr(value, "detach"):
            h.update(f"{name}={tensor_digest(value)}\n".encode())
    return "sha256:" + h.hexdigest()


def batch_digest(batch: Any) -> str:
    """Digest of an input batch: tensors by content, containers in order."""
    h = hashlib.sha256()

    def feed(item: Any) -> None:
        if hasattr(item, "detach"):
            _feed_tensor(h, item)
        elif isinstance(item, (list, tuple)):  # before the (slow) Mapping ABC check
            for element in item:
                feed(element)
        elif isinstance(item, Mapping):
            for key in sorted(item):
                h.update(str(key).encode())
                feed(item[key])
        else:
            h.update(repr(item).encode())

    feed(batch)
    return "sha256:" + h.hexdigest()


class Tracer:
    """Writes one rank's step trace.

    `every` chooses the steps at which `tensors` (names in the model's state dict) and the whole
    model state are digested; batch digests, loss and learning rate are recorded every step.
    The trace goes to REPROGATE_TRACE_DIR (set by `reprogate rebuild`) or `directory`.
    """

    def __init__(self, directory: str | Path | None = None, rank: int | None = None, every: int = 10, tensors: Iterable[str] = (), model: Any = None, meta: Mapping[str, Any] | None = None) -> None:
        self.rank = int(os.environ.get("RANK", 0)) if rank is None else rank
        folder = Path(os.environ.get(TRACE_DIR_ENV) or directory or ".")
        folder.mkdir(parents=True, exist_ok=True)
        self.path = folder / f"trace-rank{self.rank}.jsonl"
        self.every = max(1, every)
        self.tensors = list(tensors)
        self.model = model
        self._fh = open(self.path, "w", encoding="utf-8")
        self._write({"type": "meta", "rank": self.rank, "world_size": int(os.environ.get("WORLD_SIZE", 1)), **(meta or {})})

    def _write(self, event: Mapping[str, Any]) -> None:
        self._fh.write(json.dumps(event, sort_keys=True, allow_nan=False) + "\n")

    def step(self, step: int, batch: Any = None, loss: Any = None, lr: float | None = None, metrics: Mapping[str, float] | None = None, model: Any = None) -> None:
        model = model if model is not None else self.model
        if metrics or (model is not None and step % self.every == 0):
            event: dict[str, Any] = {"type": "step", "rank": self.rank, "step": step}
            if batch is not None:
                event["batch"] = batch_digest(batch)
            if loss is not None:
                event["loss"] = float(loss.item() if hasattr(loss, "item") else loss)
            if lr is not None:
                event["lr"] = float(lr)
            if metrics:
                event["metrics"] = {k: float(v) for k, v in metrics.items()}
            if model is not None and step % self.every == 0:
                state = model.state_dict()
                if self.tensors:
                    event["tensors"] = {name: tensor_digest(state[name]) for name in self.tensors if name in state}
                event["model_state"] = model_state_digest(state)
            self._write(event)
            return
        # The every-step path, formatted by hand: json.dumps costs several times more, every step.
        # Same keys, same sorted order, same float repr as _write produces.
        parts = []
        if batch is not None:
            parts.append(f'"batch": "{batch_digest(batch)}"')
        if loss is not None:
            value = float(loss.item() if hasattr(loss, "item") else loss)
            if value != value or value in (float("inf"), float("-inf")):
                raise ValueError(f"step {step}: loss is {value}; a trace holds finite numbers only")
            parts.append(f'"loss": {value!r}')
        if lr is not None:
            parts.append(f'"lr": {float(lr)!r}')
        parts += [f'"rank": {self.rank}', f'"step": {int(step)}', '"type": "step"']
        self._fh.write("{" + ", ".join(parts) + "}\n")

    def metric(self, name: str, value: float, step: int | None = None) -> None:
        self._write({"type": "metric", "rank": self.rank, "name": name, "value": float(value), **({"step": step} if step is not None else {})})

    def close(self) -> None:
        if not self._fh.closed:
            self._fh.close()

    def __enter__(self) -> "Tracer":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def rng_state(sampler_position: Mapping[str, int] | None = None) -> dict[str, Any]:
    """Every generator's state (and where the sampler stood), to save with a checkpoint."""
    import torch

    state: dict[str, Any] = {"python": random.getstate(), "torch": torch.get_rng_state()}
    try:
        import numpy

        state["numpy"] = numpy.random.get_state()
    except ImportError:
        pass
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    state["sampler"] = dict(sampler_position or {})
    return state


def restore_rng_state(state: Mapping[str, Any]) -> dict[str, int]:
    """Put the generators back as `rng_state` found them; returns the sampler position."""
    import torch

    random.setstate(state["python"])
    torch.set_rng_state(state["torch"])
    if "numpy" in state:
        import numpy

        numpy.random.set_state(state["numpy"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])
    return dict(state.get("sampler", {}))


def read_trace(paths: Iterable[str | Path]) -> list[dict[str, Any]]:
    """Events of one or more trace files, sorted by (type, step, rank) for comparison."""
    events = []
    for path in paths:
        with open(path, encoding="utf-8") as fh:
            events.extend(json.loads(line) for line in fh if line.strip())
    return sorted(events, key=lambda e: (e.get("type", ""), e.get("step", -1), e.get("rank", 0), e.get("name", "")))
