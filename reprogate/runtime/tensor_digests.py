"""Tensor, model-state and batch digests: equal digests mean bitwise-equal tensors.

Tensor digests are over the dtype name, the shape and the raw bytes (little-endian, C order). The
algorithm is sha256 unless blake3 is asked for (several times faster); every digest carries its
algorithm as a prefix, so a sha256 trace is never compared with a blake3 one as if they differed.
A contiguous CPU tensor is hashed through a view of its memory; a non-contiguous one in C-order
blocks of at most BLOCK_BYTES, so it is never copied whole and hashes exactly like its contiguous
bytes. torch, NumPy and blake3 are imported inside the functions that use them.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Mapping
from typing import Any

DIGEST_ALGORITHMS = ("sha256", "blake3")

BLOCK_BYTES = 1 << 20  # a non-contiguous tensor is copied at most this much at a time
PARALLEL_BYTES = 1 << 20  # smaller tensors are not worth waking blake3's threads for
_HEADERS: dict[tuple[Any, Any], bytes] = {}


def new_hash(algorithm: str = "sha256", parallel: bool = False) -> Any:
    """A fresh hash object for a digest algorithm this module writes (sha256, blake3).

    `parallel` lets blake3 spread one large input over every core (its tree makes the digest the
    same either way): right on the training thread, where the cores wait for the digest anyway,
    wrong on a background thread, where they are training."""
    if algorithm == "sha256":
        return hashlib.sha256()
    if algorithm == "blake3":
        try:
            from blake3 import blake3
        except ImportError as exc:
            raise RuntimeError("digest='blake3' needs the blake3 package (pip install 'reprogate[blake3]' or blake3)") from exc
        return blake3(max_threads=blake3.AUTO) if parallel else blake3()
    raise ValueError(f"unknown digest algorithm {algorithm!r}; use one of {', '.join(DIGEST_ALGORITHMS)}")


def digest_algorithm(value: Any) -> str | None:
    """The algorithm a digest string was made with (its prefix), or None if it has none."""
    if isinstance(value, str) and ":" in value:
        return value.split(":", 1)[0]
    return None


def _memory(t: Any) -> Any:
    """A zero-copy byte buffer over a contiguous CPU tensor's memory (bytes, whatever the dtype:
    blake3 takes only byte buffers, and NumPy lacks bfloat16 and float8).

    Through NumPy where the training environment has it; a lock file without NumPy (torch does
    not require it) gets a ctypes view of the same bytes, valid while `t` lives (the caller
    holds it until the hash has read them)."""
    import torch

    flat = t.reshape(-1).view(torch.uint8)
    if _NUMPY_WORKS:
        try:
            return flat.numpy()
        except RuntimeError:  # "Numpy is not available": torch runs without it
            _no_numpy()
    import ctypes

    return (ctypes.c_ubyte * flat.numel()).from_address(flat.data_ptr())


_NUMPY_WORKS = True


def _no_numpy() -> None:
    global _NUMPY_WORKS
    _NUMPY_WORKS = False


def _blocks(t: Any, limit: int) -> Iterator[Any]:
    """Consecutive pieces of `t` in C order, each contiguous or at most `limit` elements, whose
    bytes concatenated are the bytes of t.contiguous()."""
    if t.is_contiguous() or t.numel() <= limit or t.dim() == 0:
        yield t
        return
    rows = t.shape[0]
    per_row = t.numel() // rows
    if per_row <= limit:
        step = max(1, limit // per_row)
        for i in range(0, rows, step):
            yield t[i : i + step]
    else:
        for i in range(rows):
            yield from _blocks(t[i], limit)


def _feed_tensor(h: Any, tensor: Any) -> None:
    """Add dtype, shape and raw bytes of a tensor to a hash, never copying a CPU tensor whole.

    This runs every training step (batch digests), so the common case (a contiguous CPU tensor)
    takes the shortest path: a cached header and a zero-copy NumPy view."""
    t = tensor.detach() if tensor.requires_grad else tensor
    if not t.is_cpu:
        t = t.contiguous().cpu()  # contiguous on the device (fast), then the one copy to the host
    if t.is_conj() or t.is_neg():
        t = t.resolve_conj().resolve_neg()
    key = (t.dtype, t.shape)
    header = _HEADERS.get(key)
    if header is None:
        header = _HEADERS[key] = f"{str(t.dtype)[6:]}|{tuple(t.shape)}|".encode()
    h.update(header)
    if not t.numel():
        return
    if t.is_contiguous():
        h.update(_memory(t))
        return
    limit = max(1, BLOCK_BYTES // t.element_size())
    scratch = None
    for block in _blocks(t, limit):
        if block.is_contiguous():
            h.update(_memory(block))
            continue
        if scratch is None:
            import torch

            scratch = torch.empty(limit, dtype=t.dtype)
        staged = scratch[: block.numel()].view(block.shape)
        staged.copy_(block)
        h.update(_memory(staged))


def tensor_digest(tensor: Any, algorithm: str = "sha256", parallel: bool = False) -> str:
    """Digest over dtype, shape and raw bytes of a tensor, `<algorithm>:<hex>`."""
    h = new_hash(algorithm, parallel and tensor.numel() * tensor.element_size() >= PARALLEL_BYTES)
    _feed_tensor(h, tensor)
    return f"{algorithm}:{h.hexdigest()}"


def state_digests(state: Mapping[str, Any], algorithm: str = "sha256", parallel: bool = False) -> dict[str, str]:
    """The digest of every tensor in a state dict, each hashed once even when tied under two names."""
    seen: dict[tuple[Any, ...], str] = {}
    out: dict[str, str] = {}
    for name, value in state.items():
        if not hasattr(value, "detach"):
            continue
        key = (value.data_ptr(), value.dtype, tuple(value.shape), tuple(value.stride()), value.device)
        if key not in seen or value.numel() == 0:
            seen[key] = tensor_digest(value, algorithm, parallel)
        out[name] = seen[key]
    return out


def combine_state(digests: Mapping[str, str], algorithm: str = "sha256") -> str:
    """The model-state digest from per-tensor digests: one hash over `name=digest` lines in name order."""
    h = new_hash(algorithm)
    for name in sorted(digests):
        h.update(f"{name}={digests[name]}\n".encode())
    return f"{algorithm}:{h.hexdigest()}"


def model_state_digest(model: Any, algorithm: str = "sha256") -> str:
    """One digest over every tensor of a model's state dict, in name order."""
    state = model.state_dict() if hasattr(model, "state_dict") else model
    return combine_state(state_digests(state, algorithm), algorithm)


def batch_digest(batch: Any, algorithm: str = "sha256") -> str:
    """Digest of an input batch: tensors by content, containers in order."""
    h = new_hash(algorithm)

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
    return f"{algorithm}:{h.hexdigest()}"
