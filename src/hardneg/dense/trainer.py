"""The trainer every method shares.

AdamW or LAMB (``pytorch_optimizer``), linear warm-up then linear decay, gradient accumulation, gradient
clipping, bf16 autocast (GPU, or CPU with bf16 instructions; :mod:`hardneg.dense.precision`), fp16 autocast and
gradient checkpointing on GPU, seeded data order, periodic checkpoints with resume, several processes
(``DistributedDataParallel``, see :mod:`hardneg.dense.distributed`), and a per-step log of loss, learning rate,
pre-clip gradient norm and whatever the method and the events add.

Extension points:

* the *sampler* (:class:`hardneg.dense.data.BatchSampler`) says up front how many batches each epoch has (the
  learning-rate schedule needs the total) and is asked for an epoch's batches at the start of that epoch,
  with the current model;
* *events*: the method and every callback may define ``on_epoch_start(trainer, epoch)`` (before the sampler
  is asked) and ``on_step_end(trainer, step, row)`` (after every optimiser step; ``row`` is that step's log
  dict, to which an event may add columns, e.g. :class:`hardneg.dense.dev_eval.DevEvaluation`). A plain
  function callback is called as ``callback(trainer, step)`` after every optimiser step;
* *state*: the method, the sampler and callbacks may define ``state_dict()`` / ``load_state_dict(state)``;
  a state holds JSON values, NumPy numbers and arrays, and tensors (see :mod:`hardneg.dense.checkpoint`);
* *timings*: a method may set ``step_timings``, a dict of part name → wall-clock seconds of its latest ``loss``
  call (ADORE: encode, search, loss).

Resume: a checkpoint holds the state of the training (:mod:`hardneg.dense.trainer_state`: what it holds, and
why a resumed run continues exactly as an uninterrupted run would). Checkpoints are a safetensors file and a JSON
file, never a pickle; one written for another configuration or format, or altered, is ignored with a logged
reason (see :mod:`hardneg.dense.checkpoint`).

The per-step log holds only what the same configuration and seed reproduce exactly: wall-clock times go to the
job's log and to :attr:`Trainer.timings` (:mod:`hardneg.dense.train_progress`).
"""

from __future__ import annotations

import logging
import math
import os
import random
import time
from contextlib import nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, cast

import numpy as np
import torch

from hardneg.dense import checkpoint, precision
from hardneg.dense.distributed import SINGLE, Replicas
from hardneg.dense.train_config import TrainConfig, Window, make_optimizer, resolve_device
from hardneg.dense.train_progress import WallClock, log_progress
from hardneg.dense.trainer_state import CHECKPOINT_FORMAT, Loop, loop_state, restore_state
from hardneg.io import stop
from hardneg.io.atomic import atomic_dir

if TYPE_CHECKING:
    from torch.nn.parallel import DistributedDataParallel

log = logging.getLogger(__name__)


class _StepFunction:
    """A plain ``callback(trainer, step)`` as an ``on_step_end`` event."""

    def __init__(self, function):
        self.function = function

    def on_step_end(self, trainer, step: int, row: dict) -> None:
        self.function(trainer, step)


class Trainer:
    """Trains ``model`` with ``method`` on the batches of ``sampler`` (see the module docstring).

    ``replicas`` places this process among several training processes (:data:`SINGLE` in one process); with
    more than one, ``model`` is wrapped in ``DistributedDataParallel`` and only rank 0 writes checkpoints.
    ``device`` is ignored when ``replicas`` names one (a worker's own GPU). Attributes events may read:
    ``model`` (the plain model, not the DDP wrapper), ``device``, ``precision``, ``replicas``, ``config``,
    ``total_steps``, ``step``, ``epoch``, ``batches`` (the current epoch's batch list) and ``epoch_ends`` (during
    ``on_step_end``: whether the step ends its epoch). ``window``: train
    only a part of a longer training (:class:`Window`).
    """

    def __init__(
        self,
        model: torch.nn.Module,
        method,
        sampler,
        config: TrainConfig,
        *,
        checkpoint_dir: str | os.PathLike,
        fingerprint: str,
        device: str = "auto",
        callbacks=(),
        replicas: Replicas = SINGLE,
        window: Window | None = None,
    ):
        self.model, self.method, self.sampler, self.config = model, method, sampler, config
        self.window = window
        self.checkpoint_dir = Path(checkpoint_dir)
        self.fingerprint = fingerprint  # a checkpoint of another configuration is never resumed
        self.replicas = replicas
        self.device = replicas.device or resolve_device(device)
        self.callbacks = list(callbacks)
        self.precision = precision.effective(self.device, config.precision)
        self.total_steps, self.step, self.epoch, self.epoch_ends = 0, 0, 0, False
        self.batches: list[np.ndarray] = []
        self.wall_clock = WallClock()  # seconds per part of a step, this process's steps only
        self.timings: list[dict] = []  # per optimiser step of this process: seconds of each part

    # ------------------------------------------------------------------------------------------- events
    def _event_targets(self) -> list:
        """The method first, then the callbacks in order (plain functions as ``on_step_end`` events)."""
        return [self.method] + [
            c if hasattr(c, "on_step_end") or hasattr(c, "on_epoch_start") else _StepFunction(c) for c in self.callbacks
        ]

    def _fire(self, event: str, *args) -> None:
        for target in self._event_targets():
            handler = getattr(target, event, None)
            if handler is not None:
                handler(self, *args)

    def _start_epoch(self, epoch: int, count: int) -> list[np.ndarray]:
        """Fire ``on_epoch_start``, then ask the sampler for the epoch's batches (rank 0's on every rank); the
        first ``count`` of them are trained (fewer than all only in the last epoch of a :class:`Window`)."""
        self._fire("on_epoch_start", epoch)
        batches = self.sampler.batches(epoch, self.model)
        self.model.train()  # a model-dependent sampler may have switched it to eval mode
        batches = [np.asarray(b) for b in self.replicas.broadcast(batches)]
        expected = self.sampler.num_batches(epoch)
        if len(batches) != expected:
            raise RuntimeError(
                f"the sampler gave {len(batches)} batches for epoch {epoch}; its num_batches "
                f"said {expected} (the learning-rate schedule was planned with that)"
            )
        return batches[:count]

    def _epochs(self) -> list[int]:
        """The micro-batches of each epoch trained: ``epochs`` whole epochs, or with a :class:`Window` as many as
        its ``total_steps`` take, the last one cut short."""
        config = self.config
        if self.window is None:
            return [self.sampler.num_batches(e) for e in range(config.epochs)]
        wanted = self.window.total_steps * config.grad_accumulation
        per_epoch: list[int] = []
        while sum(per_epoch) < wanted:
            count = self.sampler.num_batches(len(per_epoch))
            if count < 1:
                raise RuntimeError(f"epoch {len(per_epoch)} has no batches: too few training rows for one batch")
            per_epoch.append(min(count, wanted - sum(per_epoch)))
        return per_epoch

    # --------------------------------------------------------------------------------------- checkpoints
    def _autocast(self):
        return precision.autocast(self.device, self.precision)

    def _save(self, state: dict) -> None:
        checkpoint.save_checkpoint(
            self.checkpoint_dir, state, fingerprint=self.fingerprint, format=CHECKPOINT_FORMAT, step=state["step"]
        )
        log.info("checkpoint at step %d (%s)", state["step"], self.checkpoint_dir)

    def _load(self) -> dict | None:
        """The checkpoint of this configuration in ``checkpoint_dir``, or None. Nothing is unpickled: a
        checkpoint of another configuration or format, an altered one, or a pickled ``state.pt`` of an older
        format is ignored with a logged warning, and training starts from the beginning."""
        return checkpoint.load_checkpoint(self.checkpoint_dir, fingerprint=self.fingerprint, format=CHECKPOINT_FORMAT)

    def _grad_norm(self) -> torch.Tensor:
        """The total gradient norm before clipping; clips to ``max_grad_norm`` when one is set.

        Without clipping the gradients are only read, so logging the norm leaves the update unchanged."""
        if self.config.max_grad_norm:
            return torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.config.max_grad_norm)
        return torch.nn.utils.get_total_norm([p.grad for p in self.model.parameters() if p.grad is not None])

    # ---------------------------------------------------------------------------------------------- fit
    def fit(self) -> list[dict]:
        """Train; return the per-step log (step, epoch, loss, lr, grad_norm, the method's statistics and the
        events' columns; no wall-clock times, see :class:`WallClock`). Every rank returns the same log."""
        # SIGTERM/SIGINT: stop after the current step, with a checkpoint; on a GPU, attention kernels that take
        # the many shapes of chunked batches without a per-shape plan (hardneg.dense.precision)
        with stop.deferred(), precision.attention_kernels(self.device):
            return self._fit()

    def _fit(self) -> list[dict]:
        """The training loop, in its parts: the loop set up (:meth:`_start`, with :meth:`_resume`), each
        micro-batch's forward and backward (:meth:`_micro_step`), each optimiser step with its events and log row
        (:meth:`_optimizer_step`), its progress line (:func:`hardneg.dense.train_progress.log_progress`),
        checkpoints and clean stops (:meth:`_checkpoint_or_stop`), and the state a later part of the training
        continues (:meth:`_finish`)."""
        loop = self._start()
        config = self.config
        for epoch, count in enumerate(loop.per_epoch):
            if loop.step >= loop.last_step:
                break
            if loop.micro + count < loop.done_micro or (count and loop.micro + count == loop.done_micro):
                loop.micro += count  # finished before the checkpoint: the sampler is not asked again
                continue
            self.epoch = epoch
            if loop.micro < loop.done_micro:  # resumed in the middle of this epoch: its batches as they were drawn
                assert loop.resumed_batches is not None
                self.batches = loop.resumed_batches
            else:  # ask the sampler now
                self.batches = self._start_epoch(epoch, count)
            for index, queries in enumerate(self.batches):
                loop.micro += 1
                if loop.micro <= loop.done_micro:
                    continue
                ends_step = loop.micro % config.grad_accumulation == 0 or loop.micro == loop.total_micro
                self._micro_step(loop, queries, epoch, index, ends_step)
                if not ends_step:
                    continue
                row = self._optimizer_step(loop, epoch, index)
                log_progress(log, loop, row, epoch, self.wall_clock, self.config.log_every)
                if loop.step == loop.last_step:
                    break
                self._checkpoint_or_stop(loop)
        return self._finish(loop)

    def _start(self) -> Loop:
        """Seeds, device and optimiser set up, the checkpoint (or the state a window continues) restored, the
        model wrapped for several processes and put in training mode."""
        config, model, replicas = self.config, self.model, self.replicas
        # every generator a checkpoint saves starts seeded, so that a saved state (an episode's trainer_state) is
        # the same bytes on every run of the same configuration
        torch.manual_seed(config.seed)
        random.seed(config.seed)
        np.random.seed(config.seed)
        model.to(self.device)
        if config.gradient_checkpointing and self.device.type == "cuda":
            # DDP cannot follow re-entrant checkpointing of an encoder used twice per step
            options = {"gradient_checkpointing_kwargs": {"use_reentrant": False}} if replicas.distributed else {}
            for encoder in (getattr(model, name, None) for name in ("query_encoder", "doc_encoder", "encoder")):
                if encoder is not None and hasattr(encoder, "gradient_checkpointing_enable"):
                    encoder.gradient_checkpointing_enable(**options)
        per_epoch = self._epochs()
        total_micro = sum(per_epoch)
        total_steps = self.total_steps = max(1, math.ceil(total_micro / config.grad_accumulation))
        optimizer = make_optimizer(model.named_parameters(), config)
        # transformers: imported only where a model or tokenizer is used
        from transformers import get_linear_schedule_with_warmup

        scheduler = get_linear_schedule_with_warmup(optimizer, int(config.warmup_ratio * total_steps), total_steps)
        scaler = torch.amp.GradScaler("cuda", enabled=self.precision == "fp16")
        loop = Loop(
            per_epoch=per_epoch,
            total_micro=total_micro,
            total_steps=total_steps,
            last_step=self.window.stop if self.window is not None else total_steps,
            optimizer=optimizer,
            scheduler=scheduler,
            scaler=scaler,
        )
        self._resume(loop)
        # Some parameters never get a gradient (the pooler a loaded Hugging Face model computes but nobody
        # reads; ADORE's separate document encoder), which DDP must be told to expect.
        loop.wrapped = replicas.wrap(model, find_unused_parameters=True)
        model.train()
        loop.last_step_end, loop.last_logged = time.perf_counter(), (loop.step, 0.0)
        optimizer.zero_grad(set_to_none=True)
        return loop

    def _resume(self, loop: Loop) -> None:
        """Continue from this configuration's checkpoint, or else from the state a window starts from."""
        window, state = self.window, self._load()
        if state is None and window is not None and window.start_state is not None:
            state = window.start_state
            if state["step"] != window.start:
                raise RuntimeError(
                    f"the trainer state to continue is at step {state['step']}, not at step "
                    f"{window.start} where this part of the training starts"
                )
            log.info("continuing the trainer state of step %d", window.start)
        if state is None:
            return
        restore_state(self, loop, state)
        log.info("resuming from step %d of %d", loop.step, loop.total_steps)

    def _micro_step(self, loop: Loop, queries, epoch: int, index: int, ends_step: bool) -> None:
        """One micro-batch: its forward and backward (gradients accumulate until the step's last), timed."""
        config, replicas, clock = self.config, self.replicas, self.wall_clock
        batch = self.method.make_batch(queries, np.random.default_rng([config.seed, epoch, index]))
        # DDP all-reduces on the backward of a step's last micro-batch only
        sync = (
            cast("DistributedDataParallel", loop.wrapped).no_sync()  # wrapped in DDP where distributed
            if replicas.distributed and not ends_step
            else nullcontext()
        )
        with sync:
            forward_started = time.perf_counter()
            with self._autocast():
                loss, stats = self.method.loss(loop.wrapped, batch, self.device, replicas=replicas)
            backward_started = time.perf_counter()
            # each rank's backward gives its share of dL/dθ; DDP averages, so scale by the world size
            scaled = loss * replicas.world if replicas.distributed else loss
            loop.scaler.scale(scaled / config.grad_accumulation).backward()
            backward_ended = time.perf_counter()
        parts = dict(getattr(self.method, "step_timings", None) or {"forward": backward_started - forward_started})
        parts["backward"] = backward_ended - backward_started
        for part, seconds in parts.items():
            clock.add(part, seconds)
            loop.step_parts[part] = loop.step_parts.get(part, 0.0) + seconds
        loop.pending.append(float(loss.detach()))
        loop.pending_stats.append(stats)

    def _optimizer_step(self, loop: Loop, epoch: int, index: int) -> dict:
        """The optimiser step closing the accumulated micro-batches, then the step's log row (the mean loss and
        statistics of its micro-batches), the events and the step's timings; returns the row."""
        optimizer, scaler, scheduler, clock = loop.optimizer, loop.scaler, loop.scheduler, self.wall_clock
        update_started = time.perf_counter()
        scaler.unscale_(optimizer)  # no-op unless fp16 (then clipping and the norm see true gradients)
        grad_norm = self._grad_norm()
        scaler.step(optimizer)
        scaler.update()
        scheduler.step()
        optimizer.zero_grad(set_to_none=True)
        events_started = time.perf_counter()
        clock.add("optimizer", events_started - update_started)
        step = loop.step = self.step = loop.step + 1
        row = {
            "step": step,
            "epoch": epoch,
            "loss": float(np.mean(loop.pending)),
            "lr": float(scheduler.get_last_lr()[0]),
            "grad_norm": float(grad_norm),
        }
        for key in loop.pending_stats[0]:
            row[key] = float(np.mean([s[key] for s in loop.pending_stats]))
        loop.pending, loop.pending_stats = [], []
        self.epoch_ends = index == len(self.batches) - 1  # this step ends the epoch (events may ask)
        self._fire("on_step_end", step, row)
        loop.rows.append(row)
        now = time.perf_counter()
        clock.add("events", now - events_started)
        clock.add("step", now - loop.last_step_end)
        self.timings.append(
            {
                "step": step,
                **loop.step_parts,
                "optimizer": events_started - update_started,
                "events": now - events_started,
                "seconds": now - loop.last_step_end,
            }
        )
        loop.step_parts = {}
        clock.steps, loop.last_step_end = clock.steps + 1, now
        return row

    def _checkpoint_or_stop(self, loop: Loop) -> None:
        """A checkpoint every ``checkpoint_every`` steps, and when a stop was asked for (every rank stops after
        the same step), then the stop."""
        replicas, step, total_steps = self.replicas, loop.step, loop.total_steps
        stopping = replicas.max(stop.requested() or 0)  # every rank stops after the same step
        if step < total_steps and (
            stopping or (self.config.checkpoint_every and step % self.config.checkpoint_every == 0)
        ):
            if replicas.is_main:
                self._save(loop_state(self, loop))
            replicas.barrier()
        if stopping and step < total_steps:
            log.warning(
                "stopped after step %d of %d; the checkpoint is saved and a re-run resumes from it",
                step,
                total_steps,
            )
            raise stop.StopRequested(stopping)

    def _finish(self, loop: Loop) -> list[dict]:
        """The state a window's next part continues (written to a temporary folder and renamed), the mean
        wall-clock times; the model back in evaluation mode; returns the log."""
        window, replicas, clock = self.window, self.replicas, self.wall_clock
        if window is not None:
            if replicas.is_main:
                with atomic_dir(window.stop_state) as folder:
                    checkpoint.save_checkpoint(
                        folder,
                        loop_state(self, loop),
                        fingerprint=window.fingerprint,
                        format=CHECKPOINT_FORMAT,
                        step=loop.step,
                    )
            replicas.barrier()
        if clock.steps:
            log.info(
                "wall-clock seconds per step, mean of the %d steps of this process: %s", clock.steps, clock.describe()
            )
        self.model.eval()
        return loop.rows

    def discard_checkpoint(self) -> None:
        if self.replicas.is_main:
            checkpoint.discard_checkpoint(self.checkpoint_dir)
