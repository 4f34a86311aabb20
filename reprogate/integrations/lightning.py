"""lightning.Trainer, traced: `Trainer(..., callbacks=[ReprogateCallback()])`.

The callback writes the trace a rebuild compares, one file per rank, the way `reprogate.trace`
does (REPROGATE_TRACE_DIR, RANK): per optimizer step and rank the loss `training_step` returned
(averaged over accumulated batches), the learning rate of the first parameter group, the digest
of the batches the step trained on (the data order), the gradient norm before the optimizer
step (`grad_norm=True`), the digests of `tensors` and of the whole model state every `every`
steps, and the validation metric (`metric`, from the Trainer's callback metrics) on rank 0. It
stops the fit at REPROGATE_MAX_STEPS.

Seeds: `seeded(default)` is Lightning's `seed_everything` with the rebuild's seed
(REPROGATE_SEED, else `default`), data-loader workers included; call it before building the
model. `deterministic=True` (a bitwise contract needs it; give the Trainer `deterministic=True`
too) switches on torch's deterministic algorithms when the fit starts, as the Trainer's own flag
does, and the trace's meta states the switches the steps really ran with.

This module imports only reprogate's runtime and lightning: a rebuild injects it beside the
runtime, so the realized environment needs lightning (its lock file has it) and not reprogate.
"""

from __future__ import annotations

import atexit
import os
from collections.abc import Iterable, Mapping
from typing import Any

from lightning import __version__ as lightning_version
from lightning.pytorch import Callback, LightningModule, Trainer, seed_everything

from reprogate.runtime.seeding import SEED_ENV, seeded_by
from reprogate.runtime.tracer import Tracer

MAX_STEPS_ENV = "REPROGATE_MAX_STEPS"


def seeded(default: int) -> int:
    """Lightning's seed_everything with the rebuild's seed (REPROGATE_SEED), else `default`;
    returns the seed applied."""
    seed = int(seed_everything(int(os.environ.get(SEED_ENV, default)), workers=True))
    seeded_by(seed, "lightning")
    return seed


class ReprogateCallback(Callback):
    """Writes this rank's reprogate trace from the Trainer's hooks (see the module docstring).

    `every`: the steps at which `tensors` (names in the module's state dict) and the model state
    are digested. `config` / `dataset_manifest`: what the script read, digested into the meta as
    with `Tracer(config=..., dataset_manifest=...)` (give them only when the record pins them).
    """

    def __init__(
        self,
        every: int = 1,
        tensors: Iterable[str] = (),
        metric: str = "val_loss",
        deterministic: bool = True,
        grad_norm: bool = True,
        config: Mapping[str, Any] | None = None,
        dataset_manifest: Mapping[str, Any] | None = None,
        directory: str | None = None,
        digest: str = "sha256",
    ) -> None:
        self.every = every
        self.tensors = list(tensors)
        self.metric = metric
        self.deterministic = deterministic
        self.grad_norm = grad_norm
        self.config = config
        self.dataset_manifest = dataset_manifest
        self.directory = directory
        self.digest = digest
        self.tracer: Tracer | None = None
        self._module: Any = None
        self._batches: list[Any] = []
        self._losses: list[float] = []
        self._lr: float | None = None
        self._norm: float | None = None
        self._max_steps = int(os.environ[MAX_STEPS_ENV]) if os.environ.get(MAX_STEPS_ENV) else None

    def on_fit_start(self, trainer: Trainer, pl_module: LightningModule) -> None:
        import torch

        if self.deterministic:
            torch.use_deterministic_algorithms(True)
            torch.backends.cudnn.deterministic = True
            torch.backends.cudnn.benchmark = False
            os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
        self._module = pl_module
        self.tracer = Tracer(
            directory=self.directory,
            rank=int(trainer.global_rank),
            every=self.every,
            tensors=self.tensors,
            model=pl_module,
            meta={"framework": "lightning", "lightning": lightning_version, "accumulate_grad_batches": int(trainer.accumulate_grad_batches)},
            config=self.config,
            dataset_manifest=self.dataset_manifest,
            digest=self.digest,
        )
        atexit.register(self.tracer.close)

    def on_train_batch_start(self, trainer: Trainer, pl_module: LightningModule, batch: Any, batch_idx: int) -> None:
        self._batches.append(_copied(batch))

    def on_before_optimizer_step(self, trainer: Trainer, pl_module: LightningModule, optimizer: Any) -> None:
        if optimizer.param_groups:
            self._lr = float(optimizer.param_groups[0]["lr"])
        if self.grad_norm:
            import torch

            grads = [p.grad.detach().float().norm() for p in pl_module.parameters() if p.grad is not None]
            self._norm = float(torch.stack(grads).norm().item()) if grads else None

    def on_train_batch_end(self, trainer: Trainer, pl_module: LightningModule, outputs: Any, batch: Any, batch_idx: int) -> None:
        loss = outputs.get("loss") if isinstance(outputs, Mapping) else outputs
        if loss is not None and hasattr(loss, "detach"):
            self._losses.append(float(loss.detach().float().item()))
        step = int(trainer.global_step)
        if self._lr is None or self.tracer is None:  # no optimizer step yet: the batches accumulate
            return
        batch_seen = self._batches[0] if len(self._batches) == 1 else list(self._batches)
        value = sum(self._losses) / len(self._losses) if self._losses else None
        metrics = {"grad_norm": self._norm} if self._norm is not None else None
        self.tracer.step(step, batch=batch_seen if self._batches else None, loss=value, lr=self._lr, metrics=metrics, model=self._module)
        self._batches, self._losses, self._lr, self._norm = [], [], None, None
        if self._max_steps is not None and step >= self._max_steps:
            trainer.should_stop = True

    def on_validation_end(self, trainer: Trainer, pl_module: LightningModule) -> None:
        if trainer.sanity_checking or self.tracer is None:
            return
        value = trainer.callback_metrics.get(self.metric)
        if value is not None and trainer.is_global_zero:
            self.tracer.metric(self.metric, float(value), int(trainer.global_step))
        self.tracer.flush()

    def on_fit_end(self, trainer: Trainer, pl_module: LightningModule) -> None:
        if self.tracer is not None:
            self.tracer.flush()  # kept open: a validation after the fit still reports its metric

    def close(self) -> None:
        """Close the trace (also done when the process exits)."""
        if self.tracer is not None:
            self.tracer.close()


def _copied(batch: Any) -> Any:
    """The batch's tensors copied (containers kept): the step's data, before anything changes it."""
    if hasattr(batch, "detach"):
        return batch.detach().clone()
    if isinstance(batch, (list, tuple)):
        return [_copied(item) for item in batch]
    if isinstance(batch, Mapping):
        return {str(key): _copied(value) for key, value in batch.items()}
    return batch
