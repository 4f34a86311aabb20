"""The Hugging Face Trainer, traced: `Trainer(..., callbacks=[ReprogateCallback()])`.

The callback writes the trace a rebuild compares, one file per rank, the way `reprogate.trace`
does (REPROGATE_TRACE_DIR, RANK): per optimizer step and rank the loss the model returned
(averaged over gradient-accumulation micro-batches), the learning rate that step used, the
digest of the batches it trained on (the data order), the gradient norm whenever the Trainer
logs one, the digests of `tensors` and of the whole model state every `every` steps, and the
evaluation metric (`metric`, default `eval_loss`) on rank 0. It stops at REPROGATE_MAX_STEPS.

Seeds: the Trainer seeds itself from `TrainingArguments.seed` when it is made, after the model
was built. `seeded(args)` — call it before building the model — sets `seed` and `data_seed` to
the rebuild's seed (REPROGATE_SEED, else the arguments' own seed), `full_determinism` when
`deterministic` (a bitwise contract needs it), and seeds as the Trainer would. A script that
does not call it still gets the same arguments and seeding from the callback when the Trainer
is made (`on_init_end`): the data order and dropout then follow the rebuild's seed, the model's
first weights whatever the script seeded before building it.

This module imports only reprogate's runtime and transformers: a rebuild injects it beside the
runtime, so the realized environment needs transformers (its lock file has it) and not reprogate.
"""

from __future__ import annotations

import atexit
import math
import os
from collections.abc import Iterable, Mapping
from typing import Any

from transformers import TrainerCallback, TrainerControl, TrainerState, TrainingArguments, enable_full_determinism, set_seed
from transformers import __version__ as transformers_version

from reprogate.runtime.seeding import SEED_ENV, seeded_by
from reprogate.runtime.tracer import Tracer

MAX_STEPS_ENV = "REPROGATE_MAX_STEPS"


def seeded(args: TrainingArguments, deterministic: bool = True) -> TrainingArguments:
    """`args` with the rebuild's seed as `seed` and `data_seed`, and `full_determinism` when
    `deterministic`; seeds Python, NumPy and torch now, as the Trainer does (call it before
    building the model, so its first weights follow the seed too)."""
    seed = int(os.environ.get(SEED_ENV, args.seed))
    args.seed = seed
    args.data_seed = seed
    args.full_determinism = bool(deterministic)
    if deterministic:
        enable_full_determinism(seed)
    else:
        set_seed(seed)
    seeded_by(seed, "transformers")
    return args


class ReprogateCallback(TrainerCallback):
    """Writes this rank's reprogate trace from the Trainer's events (see the module docstring).

    `every`: the steps at which `tensors` (names in the model's state dict) and the model state
    are digested. `config` / `dataset_manifest`: what the script read, digested into the meta as
    with `Tracer(config=..., dataset_manifest=...)` (give them only when the record pins that
    configuration or manifest). `deterministic`: `full_determinism` (a bitwise contract).
    """

    def __init__(
        self,
        every: int = 1,
        tensors: Iterable[str] = (),
        metric: str = "eval_loss",
        deterministic: bool = True,
        config: Mapping[str, Any] | None = None,
        dataset_manifest: Mapping[str, Any] | None = None,
        directory: str | None = None,
        digest: str = "sha256",
    ) -> None:
        self.every = every
        self.tensors = list(tensors)
        self.metric = metric
        self.deterministic = deterministic
        self.config = config
        self.dataset_manifest = dataset_manifest
        self.directory = directory
        self.digest = digest
        self.tracer: Tracer | None = None
        self._model: Any = None
        self._hooks: list[Any] = []
        self._batches: list[Any] = []
        self._losses: list[float] = []
        self._lr: float | None = None
        self._pending: dict[str, Any] | None = None
        self._max_steps = int(os.environ[MAX_STEPS_ENV]) if os.environ.get(MAX_STEPS_ENV) else None

    # seeds ---------------------------------------------------------------------------------

    def on_init_end(self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs: Any) -> None:
        wanted = int(os.environ.get(SEED_ENV, args.seed))
        if args.seed != wanted or args.data_seed != wanted or bool(args.full_determinism) != self.deterministic:
            seeded(args, self.deterministic)
        else:
            seeded_by(wanted, "transformers")

    # the trace -----------------------------------------------------------------------------

    def on_train_begin(self, args: TrainingArguments, state: TrainerState, control: TrainerControl, model: Any = None, **kwargs: Any) -> None:
        self._model = model
        self.tracer = Tracer(
            directory=self.directory,
            every=self.every,
            tensors=self.tensors,
            model=model,
            meta={"framework": "transformers", "transformers": transformers_version, "gradient_accumulation_steps": args.gradient_accumulation_steps},
            config=self.config,
            dataset_manifest=self.dataset_manifest,
            digest=self.digest,
        )
        atexit.register(self.tracer.close)
        self._hooks = [
            model.register_forward_pre_hook(self._before_forward, with_kwargs=True),
            model.register_forward_hook(self._after_forward),
        ]

    def _before_forward(self, module: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        if module.training:  # evaluation batches are not the training data order
            self._batches.append(_tensors_of({**dict(enumerate(args)), **kwargs}))

    def _after_forward(self, module: Any, args: tuple[Any, ...], output: Any) -> None:
        loss = getattr(output, "loss", None) if not isinstance(output, Mapping) else output.get("loss")
        if module.training and loss is not None:
            self._losses.append(float(loss.detach().float().item()))

    def on_pre_optimizer_step(self, args: TrainingArguments, state: TrainerState, control: TrainerControl, optimizer: Any = None, **kwargs: Any) -> None:
        if optimizer is not None and optimizer.param_groups:
            self._lr = float(optimizer.param_groups[0]["lr"])  # the rate this step applies (the scheduler moves it after)

    def on_step_end(self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs: Any) -> TrainerControl:
        self._write_pending()
        loss = sum(self._losses) / len(self._losses) if self._losses else None
        batch = self._batches[0] if len(self._batches) == 1 else list(self._batches)
        self._pending = {"step": int(state.global_step), "batch": batch if self._batches else None, "loss": loss, "lr": self._lr, "metrics": {}}
        self._batches, self._losses = [], []
        if self._max_steps is not None and state.global_step >= self._max_steps:
            control.should_training_stop = True
        return control

    def on_log(self, args: TrainingArguments, state: TrainerState, control: TrainerControl, logs: Mapping[str, Any] | None = None, **kwargs: Any) -> None:
        grad_norm = (logs or {}).get("grad_norm")
        if self._pending is not None and self._pending["step"] == state.global_step and isinstance(grad_norm, (int, float)) and math.isfinite(grad_norm):
            self._pending["metrics"]["grad_norm"] = float(grad_norm)

    def on_evaluate(self, args: TrainingArguments, state: TrainerState, control: TrainerControl, metrics: Mapping[str, Any] | None = None, **kw: Any) -> None:
        self._write_pending()
        value = (metrics or {}).get(self.metric)
        if self.tracer is not None and state.is_world_process_zero and isinstance(value, (int, float)):
            self.tracer.metric(self.metric, float(value), int(state.global_step))
        if self.tracer is not None:
            self.tracer.flush()

    def on_train_end(self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs: Any) -> None:
        self._write_pending()
        for hook in self._hooks:
            hook.remove()
        self._hooks = []
        if self.tracer is not None:
            self.tracer.flush()  # kept open: an evaluation after training still reports its metric

    def _write_pending(self) -> None:
        pending, self._pending = self._pending, None
        if pending is None or self.tracer is None:
            return
        self.tracer.step(pending["step"], batch=pending["batch"], loss=pending["loss"], lr=pending["lr"], metrics=pending["metrics"] or None, model=self._model)

    def close(self) -> None:
        """Write what is pending and close the trace (also done when the process exits)."""
        self._write_pending()
        if self.tracer is not None:
            self.tracer.close()


def _tensors_of(inputs: Mapping[Any, Any]) -> dict[str, Any]:
    """The tensors a forward call received, by name, copied (the Trainer reuses nothing, but a
    collator may): the batch the step trained on, in a fixed order."""
    return {str(key): value.detach().clone() for key, value in sorted(inputs.items(), key=lambda item: str(item[0])) if hasattr(value, "detach")}
