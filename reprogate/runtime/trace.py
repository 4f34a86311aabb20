"""Training-side API: seed a run, trace its steps, and carry generator state across a resume.

Only training code imports this, and a rebuild injects this one file (with reprogate/core/canonical.py)
read-only into environments that lack the rest of reprogate: it needs the standard library only;
torch, NumPy, blake3 and the canonical hashing module are imported inside the functions that use
them. A trace is JSON Lines, one object per event, written per rank:

  {"type": "meta", "rank": 0, "world_size": 2, "seed": 7, "digest": "sha256", "cpu": {...}, ...}
  {"type": "step", "rank": 0, "step": 1, "batch": "sha256:...", "loss": 2.31, "lr": 0.01,
   "metrics": {...}, "tensors": {"fc.weight": "sha256:..."}, "model_state": "sha256:..."}
  {"type": "metric", "rank": 0, "name": "val_loss", "value": 1.87, "step": 40}

The meta event states what the run really used, read inside the training process when the first
event is written (after the script has seeded and configured torch): the seed `seed_everything`
applied, the world size, the configuration and dataset-manifest digests the script passed, torch's
CPU capability, MKL's reproducibility mode, thread counts and the determinism switches. `validate`
and `rebuild` hold a record to its reference trace's meta.

Tensor digests are over the dtype name, the shape and the raw bytes (little-endian, C order), so
equal digests mean bitwise-equal tensors. The algorithm is sha256 unless the Tracer is told
`digest="blake3"` (several times faster); every digest carries its algorithm as a prefix and the
meta declares it, so a sha256 trace is never compared with a blake3 one as if they differed. A
contiguous CPU tensor is hashed through a view of its memory; a non-contiguous one in C-order
blocks of at most 1 MiB, so it is never copied whole and hashes exactly like its contiguous bytes.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import platform
import random
import sys
import threading
import time
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from reprogate.runtime.portable_cpu import PORTABLE_CPU_ENV

TRACE_DIR_ENV = "REPROGATE_TRACE_DIR"
SEED_ENV = "REPROGATE_SEED"
DIGEST_ALGORITHMS = ("sha256", "blake3")
CPU_ENV_NAMES = ("ATEN_CPU_CAPABILITY", "MKL_CBWR", "ONEDNN_MAX_CPU_ISA", "DNNL_MAX_CPU_ISA", "OMP_NUM_THREADS", "MKL_NUM_THREADS")

_RUN: dict[str, Any] = {}  # what seed_everything applied in this process, for the trace's meta


def seed_from_env(default: int) -> int:
    """The seed a rebuild asks for (REPROGATE_SEED), else the script's own default."""
    return int(os.environ.get(SEED_ENV, default))


def seed_everything(seed: int, rank: int = 0, deterministic: bool = True, allow_tf32: bool = False, portable_cpu: bool = False) -> Any:
    """Seed Python, NumPy and torch (CPU and CUDA) and switch on deterministic kernels.

    Each rank's own randomness (dropout, augmentation) is seeded with `seed + rank`; the returned
    torch.Generator is seeded with `seed` alone, identical on every rank, for the DataLoader or
    DistributedSampler, so all ranks agree on the data order.

    `portable_cpu=True` pins torch's CPU kernels, MKL and oneDNN to code paths every x86-64 CPU
    runs (PORTABLE_CPU_ENV) and turns torch's use of oneDNN off, so a bitwise CPU contract holds
    on machines with other instruction sets. Call it before any tensor operation: torch fixes its kernels at the first one and MKL
    its code path at its first call. If either already happened, this raises rather than trace a
    run that is not portable; the alternative is to set the same variables in the job's
    environment (a record's execution.env). Keep the thread count fixed as well (OMP_NUM_THREADS
    or torch.set_num_threads): MKL and torch's parallel reductions sum in per-thread pieces.
    """
    if portable_cpu:
        _pin_portable_env()  # before torch could read them, if it has not yet
    import torch

    if portable_cpu:
        _check_portable(torch)
        torch.backends.mkldnn.enabled = False
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
    _RUN.update(seed=seed, portable_cpu=portable_cpu)
    return torch.Generator().manual_seed(seed)


def _pin_portable_env() -> None:
    x86 = platform.machine().lower() in ("x86_64", "amd64", "i686", "i386")
    for name, value in PORTABLE_CPU_ENV.items():
        if name == "ONEDNN_MAX_CPU_ISA" and not x86:
            continue  # an x86 instruction set; oneDNN on other CPUs has its own names
        if name == "MKL_CBWR" and os.environ.get(name, "").upper().startswith("COMPATIBLE"):
            continue  # COMPATIBLE,STRICT is as portable, and what the job asked for
        os.environ[name] = value


def _check_portable(torch: Any) -> None:
    capability = torch.backends.cpu.get_cpu_capability()
    problems = []
    if capability.lower() != "default":
        problems.append(f"torch already chose its {capability} CPU kernels")
    mode = mkl_cbwr_mode(torch)
    if mode is not None and not mode.startswith("COMPATIBLE"):
        problems.append(f"MKL already runs in reproducibility mode {mode}")
    if problems:
        raise RuntimeError(
            f"seed_everything(portable_cpu=True) came too late: {' and '.join(problems)}. Call it before any tensor "
            "operation, or set ATEN_CPU_CAPABILITY=default MKL_CBWR=COMPATIBLE ONEDNN_MAX_CPU_ISA=SSE41 in the job's "
            "environment (a record's execution.env)"
        )


# MKL's conditional numerical reproducibility branches, as mkl_cbwr_get reports them (mkl_cbwr.h).
_MKL_BRANCHES = {
    1: "OFF",
    2: "AUTO",
    3: "COMPATIBLE",
    4: "SSE2",
    6: "SSSE3",
    7: "SSE4_1",
    8: "SSE4_2",
    9: "AVX",
    10: "AVX2",
    11: "AVX512_MIC",
    12: "AVX512",
    13: "AVX512_MIC_E1",
    14: "AVX512_E1",
}
_MKL_STRICT = 0x10000


def mkl_cbwr_mode(torch: Any) -> str | None:
    """MKL's reproducibility mode in this process (OFF, AUTO, COMPATIBLE, AVX2, ... with ",STRICT"),
    or None where torch has no MKL or does not export MKL's query.

    torch links MKL statically; libtorch_cpu exports MKL's service call mkl_serv_cbwr_get (what
    mkl_cbwr_get resolves to). The first call fixes the mode from MKL_CBWR, like any MKL call, so
    read it only once the script has set its environment."""
    try:
        if not torch.backends.mkl.is_available():
            return None
        import ctypes

        library = ctypes.CDLL(os.path.join(os.path.dirname(torch.__file__), "lib", "libtorch_cpu.so"))
        query = getattr(library, "mkl_serv_cbwr_get", None) or getattr(library, "mkl_cbwr_get", None)
        if query is None:
            return None
        query.restype, query.argtypes = ctypes.c_int, [ctypes.c_int]
        code = int(query(-1))  # MKL_CBWR_ALL
    except (OSError, AttributeError):
        return None
    if code < 0:
        return None
    name = _MKL_BRANCHES.get(code & 0xFFFF, f"BRANCH_{code & 0xFFFF}")
    return name + (",STRICT" if code & _MKL_STRICT else "")


def cpu_facts() -> dict[str, Any]:
    """The CPU side of this process as torch sees it: capability, MKL mode, threads, variables."""
    facts: dict[str, Any] = {"architecture": platform.machine()}
    torch = sys.modules.get("torch")
    if torch is not None:
        facts["capability"] = str(torch.backends.cpu.get_cpu_capability()).lower()
        facts["threads"] = int(torch.get_num_threads())
        mode = mkl_cbwr_mode(torch)
        if mode is not None:
            facts["mkl_cbwr"] = mode
    variables = {name: os.environ[name] for name in CPU_ENV_NAMES if name in os.environ}
    if variables:
        facts["env"] = variables
    facts["portable"] = bool(_RUN.get("portable_cpu", False))
    return facts


def determinism_facts() -> dict[str, Any]:
    """The determinism switches in force in this process (torch imported by the script, else none)."""
    torch = sys.modules.get("torch")
    if torch is None:
        return {}

    def read(get: Callable[[], Any]) -> Any:
        try:
            return get()
        except Exception:  # noqa: BLE001 - a switch this torch does not have
            return None

    with warnings.catch_warnings():  # the TF32 flags warn of deprecation in recent releases
        warnings.simplefilter("ignore")
        found = {
            "deterministic_algorithms": read(lambda: bool(torch.are_deterministic_algorithms_enabled())),
            "cudnn_deterministic": read(lambda: bool(torch.backends.cudnn.deterministic)),
            "cudnn_benchmark": read(lambda: bool(torch.backends.cudnn.benchmark)),
            "tf32_matmul": read(lambda: bool(torch.backends.cuda.matmul.allow_tf32)),
            "tf32_cudnn": read(lambda: bool(torch.backends.cudnn.allow_tf32)),
            "float32_matmul_precision": read(torch.get_float32_matmul_precision),
            "mkldnn_enabled": read(lambda: bool(torch.backends.mkldnn.enabled)),
            "mkldnn_deterministic": read(lambda: bool(torch.backends.mkldnn.deterministic)),
        }
    return {k: v for k, v in found.items() if v is not None}


# digests -----------------------------------------------------------------------------------------

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


def _snapshot(item: Any) -> Any:
    """A private copy of a batch's tensors (containers kept), for hashing on another thread."""
    if hasattr(item, "detach"):
        return item.detach().clone()
    if isinstance(item, (list, tuple)):
        return type(item)(_snapshot(e) for e in item) if type(item) in (list, tuple) else [_snapshot(e) for e in item]
    if isinstance(item, Mapping):
        return {k: _snapshot(v) for k, v in item.items()}
    return item


# the tracer --------------------------------------------------------------------------------------


class Tracer:
    """Writes one rank's step trace.

    `every` chooses the steps at which `tensors` (names in the model's state dict) and the whole
    model state are digested; batch digests, loss and learning rate are recorded every step.
    The trace goes to REPROGATE_TRACE_DIR (set by `reprogate rebuild`) or `directory`.

    `config` (the configuration mapping as the script read it) and `dataset_manifest` (the dataset
    manifest mapping) put their canonical digests in the meta, where validate and rebuild compare
    them with the record's job.config.hash and dataset.manifest.digest. `digest` is "sha256" or
    "blake3" (faster, pip install blake3).

    `background=True` hashes the every-`every`-steps digests on a worker thread. What it hashes
    must not change before the worker reads it, so it snapshots (copies) the model state on the
    training thread — unless `optimizers` are given: then the parameters are hashed in place,
    without a copy, and each optimizer's step waits (a step pre-hook) until the worker has read
    them. That is safe when parameters change only through those optimizers' step(); anything
    else that writes parameters in place between two traced steps (an EMA or weight clipping
    applied to the model, load_state_dict, FSDP/ZeRO resharding) needs background without
    optimizers, or background=False. Buffers (batch-norm statistics change in forward) and batches
    are always copied. Digests are the same in every mode.
    """

    def __init__(
        self,
        directory: str | Path | None = None,
        rank: int | None = None,
        every: int = 10,
        tensors: Iterable[str] = (),
        model: Any = None,
        meta: Mapping[str, Any] | None = None,
        config: Mapping[str, Any] | None = None,
        dataset_manifest: Mapping[str, Any] | None = None,
        digest: str = "sha256",
        background: bool = False,
        optimizers: Iterable[Any] = (),
    ) -> None:
        new_hash(digest)  # refuse an unknown or unavailable algorithm now, not at step 10
        self.rank = int(os.environ.get("RANK", "0")) if rank is None else rank
        folder = Path(os.environ.get(TRACE_DIR_ENV) or directory or ".")
        folder.mkdir(parents=True, exist_ok=True)
        self.path = folder / f"trace-rank{self.rank}.jsonl"
        self.every = max(1, every)
        self.tensors = list(tensors)
        self.model = model
        self.digest = digest
        self._meta = dict(meta or {})
        if config is not None:
            self._meta.setdefault("config_digest", _canonical(config))
        if dataset_manifest is not None:
            self._meta.setdefault("dataset_digest", _canonical({k: v for k, v in dataset_manifest.items() if k != "digest"}))
        self._meta_written = False
        self._fh = open(self.path, "w", encoding="utf-8")  # open for the tracer's lifetime; close() closes it
        self._worker: Any = None
        self._pending: list[Any] = []
        self._live: list[Any] = []  # tasks that read parameters in place
        self._hooks: list[Any] = []
        self._lock = threading.Lock()
        self.waited = 0.0  # seconds the training thread spent waiting for the worker (optimizer hooks, flush)
        if background:
            from concurrent.futures import ThreadPoolExecutor

            self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="reprogate-trace")
            self._hooks = [opt.register_step_pre_hook(self._before_optimizer_step) for opt in optimizers]

    # meta

    def _write_meta(self) -> None:
        """The meta event, read when the first event is written: by then the script has seeded
        and configured torch, so it states what the steps really ran with."""
        self._meta_written = True
        event: dict[str, Any] = {"type": "meta", "rank": self.rank, "world_size": _world_size(), "digest": self.digest}
        if "seed" in _RUN:
            event["seed"] = _RUN["seed"]
        event["cpu"] = cpu_facts()
        determinism = determinism_facts()
        if determinism:
            event["determinism"] = determinism
        torch = sys.modules.get("torch")
        if torch is not None:
            event["torch"] = str(torch.__version__)
        event.update(self._meta)
        self._emit(json.dumps(event, sort_keys=True, allow_nan=False) + "\n")

    # writing, in order, on whichever thread hashes

    def _emit(self, line: str) -> None:
        with self._lock:
            self._fh.write(line)

    def _submit(self, task: Callable[[], str], live: bool = False) -> None:
        self._raise_failures()
        future = self._worker.submit(lambda: self._emit(task()))
        self._pending.append(future)
        if live:
            self._live.append(future)

    def _raise_failures(self) -> None:
        done = [f for f in self._pending if f.done()]
        for future in done:
            self._pending.remove(future)
            if future in self._live:
                self._live.remove(future)
            future.result()  # re-raises a failure of the worker here, on the training thread

    def _before_optimizer_step(self, *_: Any) -> None:
        """The optimizer is about to write its parameters: let the worker finish reading them."""
        if self._live:
            start = time.perf_counter()
            for future in list(self._live):
                future.result()
            self._live.clear()
            self.waited += time.perf_counter() - start

    def _write(self, event: Mapping[str, Any]) -> None:
        if not self._meta_written:
            self._write_meta()
        line = json.dumps(event, sort_keys=True, allow_nan=False) + "\n"
        if self._worker is not None and self._pending:
            self._submit(lambda: line)  # keep the file in step order behind pending digests
        else:
            self._emit(line)

    # steps

    def step(
        self, step: int, batch: Any = None, loss: Any = None, lr: float | None = None, metrics: Mapping[str, float] | None = None, model: Any = None
    ) -> None:
        if not self._meta_written:
            self._write_meta()
        model = model if model is not None else self.model
        traced = model is not None and step % self.every == 0
        if metrics or traced:
            event: dict[str, Any] = {"type": "step", "rank": self.rank, "step": step}
            if loss is not None:
                event["loss"] = float(loss.item() if hasattr(loss, "item") else loss)
            if lr is not None:
                event["lr"] = float(lr)
            if metrics:
                event["metrics"] = {k: float(v) for k, v in metrics.items()}
            if self._worker is None:
                if batch is not None:
                    event["batch"] = batch_digest(batch, self.digest)
                if traced:
                    event.update(self._state_fields(model.state_dict()))
                self._write(event)
                return
            self._submit_step(event, batch, model if traced else None)
            return
        # The every-step path, formatted by hand: json.dumps costs several times more, every step.
        # Same keys, same sorted order, same float repr as _write produces.
        parts = []
        if batch is not None:
            parts.append(f'"batch": "{batch_digest(batch, self.digest)}"')
        if loss is not None:
            value = float(loss.item() if hasattr(loss, "item") else loss)
            if not math.isfinite(value):
                raise ValueError(f"step {step}: loss is {value}; a trace holds finite numbers only")
            parts.append(f'"loss": {value!r}')
        if lr is not None:
            parts.append(f'"lr": {float(lr)!r}')
        parts += [f'"rank": {self.rank}', f'"step": {int(step)}', '"type": "step"']
        line = "{" + ", ".join(parts) + "}\n"
        if self._worker is not None and self._pending:
            self._submit(lambda: line)
        else:
            self._emit(line)

    def _state_fields(self, state: Mapping[str, Any]) -> dict[str, Any]:
        digests = state_digests(state, self.digest, parallel=self._worker is None)  # each tensor hashed once, for both fields
        fields: dict[str, Any] = {}
        if self.tensors:
            fields["tensors"] = {name: digests[name] for name in self.tensors if name in digests}
        fields["model_state"] = combine_state(digests, self.digest)
        return fields

    def _submit_step(self, event: dict[str, Any], batch: Any, model: Any) -> None:
        """Hand a traced step to the worker: batch and buffers copied, parameters copied too unless
        an optimizer hook guards them (see the class docstring)."""
        batch = _snapshot(batch) if batch is not None else None
        live = False
        state: dict[str, Any] = {}
        if model is not None:
            guarded = bool(self._hooks)
            parameters = {p.data_ptr() for p in model.parameters()} if guarded else set()
            for name, value in model.state_dict().items():
                if hasattr(value, "detach") and value.data_ptr() in parameters and value.is_cpu:
                    state[name] = value
                    live = True
                else:
                    state[name] = _snapshot(value)

        def task() -> str:
            if batch is not None:
                event["batch"] = batch_digest(batch, self.digest)
            if model is not None:
                event.update(self._state_fields(state))
            return json.dumps(event, sort_keys=True, allow_nan=False) + "\n"

        self._submit(task, live=live)

    def metric(self, name: str, value: float, step: int | None = None) -> None:
        self._write({"type": "metric", "rank": self.rank, "name": name, "value": float(value), **({"step": step} if step is not None else {})})

    def flush(self) -> None:
        """Wait for every digest handed to the worker, and write the file out."""
        if self._worker is not None:
            start = time.perf_counter()
            for future in list(self._pending):
                future.result()
            self._pending.clear()
            self._live.clear()
            self.waited += time.perf_counter() - start
        with self._lock:
            self._fh.flush()

    def close(self) -> None:
        if self._fh.closed:
            return
        try:
            if not self._meta_written:
                self._write_meta()
            self.flush()
        finally:
            for hook in self._hooks:
                hook.remove()
            self._hooks = []
            if self._worker is not None:
                self._worker.shutdown(wait=True)
            self._fh.close()

    def __enter__(self) -> Tracer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _world_size() -> int:
    """The world size the process group really has, else what the launcher said."""
    dist = sys.modules.get("torch.distributed")
    launcher = int(os.environ.get("WORLD_SIZE", "1"))
    try:
        if dist is not None and dist.is_available() and dist.is_initialized():
            return int(dist.get_world_size())
    except Exception:  # noqa: BLE001 - a half-initialised group: fall back to the launcher's word
        return launcher
    return launcher


def _canonical(data: Mapping[str, Any]) -> str:
    from reprogate.core.canonical import canonical_digest

    return canonical_digest(dict(data))


# generator state ---------------------------------------------------------------------------------


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
    texts = []
    for path in paths:
        with open(path, encoding="utf-8") as fh:
            texts.append(fh.read())
    return trace_events(texts)


def trace_events(texts: Iterable[str]) -> list[dict[str, Any]]:
    """The events of trace texts (JSON Lines), sorted by (type, step, rank) for comparison. A
    line that is not a JSON object, or a step that is not an integer, is a ValueError naming it."""
    events = []
    for text in texts:
        for number, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            event = json.loads(line)
            if not isinstance(event, dict):
                raise ValueError(f"line {number} is a JSON {type(event).__name__}, not an event object")
            if not isinstance(event.get("step", -1), int) or not isinstance(event.get("rank", 0), int):
                raise ValueError(f"line {number}: step and rank are integers")
            events.append(event)
    return sorted(events, key=lambda e: (str(e.get("type", "")), e.get("step", -1), e.get("rank", 0), str(e.get("name", ""))))


def meta_events(events: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The meta events of a trace, rank by rank."""
    return sorted((e for e in events if e.get("type") == "meta"), key=lambda e: e.get("rank", 0))
