"""The state of a training (:class:`hardneg.dense.trainer.Trainer`): where its loop stands, what a checkpoint of
it holds, and that state given back to a resumed training.

:class:`Loop` is the state of one training loop while it runs. :func:`loop_state` gathers what a checkpoint
holds: the model, optimiser, scheduler and random-number states (Python's ``random``, NumPy's global generator,
torch's CPU and CUDA generators), the number of micro-batches done, the log so far, the current epoch's batch
list (a model-dependent sampler could not draw it again once the model has moved on) and the states of method,
sampler and callbacks (each one's ``state_dict()``, None for one without). :func:`restore_state` puts such a
state back in the trainer's objects and the loop. Batch contents are drawn from a generator seeded by (seed,
epoch, batch index), so a resumed run skips the batches already seen and continues exactly as an uninterrupted
run would. Writing and reading the state is :mod:`hardneg.dense.checkpoint`'s, in the layout
:data:`CHECKPOINT_FORMAT` names.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

if TYPE_CHECKING:
    from hardneg.dense.trainer import Trainer

CHECKPOINT_FORMAT = 3  # checkpoints of another layout are not resumed (3: safetensors + JSON, no pickle)


def _state_of(obj):
    return obj.state_dict() if hasattr(obj, "state_dict") else None


def _restore(obj, state) -> None:
    if state is not None:
        obj.load_state_dict(state)


@dataclass
class Loop:
    """The state of one training loop (:meth:`hardneg.dense.trainer.Trainer._fit`): its length, the optimiser's
    objects, where it stands (micro-batches and steps done, those done before a resumed checkpoint) and what the
    current step has gathered so far."""

    per_epoch: list[int]
    total_micro: int
    total_steps: int
    last_step: int
    optimizer: Any
    scheduler: Any
    scaler: Any
    wrapped: Any = None
    rows: list[dict] = field(default_factory=list)
    done_micro: int = 0
    step: int = 0
    resumed_batches: Any = None
    micro: int = 0
    pending: list[float] = field(default_factory=list)
    pending_stats: list[dict] = field(default_factory=list)
    step_parts: dict[str, float] = field(default_factory=dict)
    last_step_end: float = 0.0
    last_logged: tuple[int, float] = (0, 0.0)


def restore_state(trainer: Trainer, loop: Loop, state: dict) -> None:
    """Put a checkpoint's ``state`` back: in the trainer's model, method, sampler and callbacks, in the loop's
    optimiser, scheduler and scaler, in the random-number generators, and where the loop stands."""
    trainer.model.load_state_dict(state["model"])
    loop.optimizer.load_state_dict(state["optimizer"])
    loop.scheduler.load_state_dict(state["scheduler"])
    loop.scaler.load_state_dict(state["scaler"])
    torch.set_rng_state(state["rng"])
    if torch.cuda.is_available() and state["cuda_rng"] is not None:
        torch.cuda.set_rng_state_all(state["cuda_rng"])
    random.setstate(state["python_rng"])
    np.random.set_state(state["numpy_rng"])
    loop.done_micro, loop.step, loop.rows = state["micro"], state["step"], state["log"]
    loop.resumed_batches = state["batches"]
    _restore(trainer.sampler, state["sampler"])
    _restore(trainer.method, state["method"])
    for callback, callback_state in zip(trainer.callbacks, state["callbacks"]):
        _restore(callback, callback_state)


def loop_state(trainer: Trainer, loop: Loop) -> dict:
    """The state a checkpoint holds where ``loop`` stands (see the module docstring)."""
    return {
        "model": trainer.model.state_dict(),
        "optimizer": loop.optimizer.state_dict(),
        "scheduler": loop.scheduler.state_dict(),
        "scaler": loop.scaler.state_dict(),
        "rng": torch.get_rng_state(),
        "cuda_rng": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None,
        "python_rng": random.getstate(),
        "numpy_rng": np.random.get_state(),
        "micro": loop.micro,
        "step": loop.step,
        "log": loop.rows,
        "epoch": trainer.epoch,
        "batches": trainer.batches,
        "sampler": _state_of(trainer.sampler),
        "method": _state_of(trainer.method),
        "callbacks": [_state_of(c) for c in trainer.callbacks],
    }
