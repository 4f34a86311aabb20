"""The Tracer: writes one rank's trace (its meta event, then its steps and metrics) as JSON Lines.

See reprogate.runtime.trace for the format. The meta is read when the first event is written, so
it states what the steps really ran with (process_facts, seeding); digests come from
tensor_digests, on the training thread or a worker thread, the same either way. The canonical
hashing module is imported only when a configuration or manifest digest is asked for.
"""

from __future__ import annotations

import json
import math
import os
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from reprogate.runtime.process_facts import cpu_facts, determinism_facts, world_size
from reprogate.runtime.seeding import applied
from reprogate.runtime.tensor_digests import batch_digest, combine_state, new_hash, state_digests

TRACE_DIR_ENV = "REPROGATE_TRACE_DIR"


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
        event: dict[str, Any] = {"type": "meta", "rank": self.rank, "world_size": world_size(), "digest": self.digest}
        run = applied()
        if "seed" in run:
            event["seed"] = run["seed"]
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


def _canonical(data: Mapping[str, Any]) -> str:
    from reprogate.core.canonical import canonical_digest

    return canonical_digest(dict(data))
