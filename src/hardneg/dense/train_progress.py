"""A training's progress and wall-clock time in the job's log (:class:`hardneg.dense.trainer.Trainer`), kept out
of every artifact.

The per-step log holds only what the same configuration and seed reproduce exactly (no wall-clock times): the
wall-clock seconds of each part of a step (the method's ``step_timings``, backward, optimiser update, events,
summed by :class:`WallClock`) go to the job's log, every ``log_every`` steps in the progress line with the time
per step and the time left (:func:`log_progress`) and as means over the whole run at the end, and, step by step,
to :attr:`hardneg.dense.trainer.Trainer.timings` (``benchmarks/train_steps.parquet``, with the jobs' time and
memory records, outside the artifacts a seed reproduces).
"""

from __future__ import annotations

import logging

from hardneg.dense.trainer_state import Loop
from hardneg.io import logs


def _duration(seconds: float) -> str:
    """``1h02m``, ``3m05s`` or ``12s``: the time left, in a training step's log line."""
    seconds = int(round(seconds))
    if seconds >= 3600:
        return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
    return f"{seconds // 60}m{seconds % 60:02d}s" if seconds >= 60 else f"{seconds}s"


class WallClock:
    """Wall-clock seconds spent in each part of the optimiser steps, for the job's log only: no artifact holds
    a time, so the same configuration and seed give the same bytes."""

    def __init__(self) -> None:
        self.totals: dict[str, float] = {}
        self.steps = 0

    def add(self, part: str, seconds: float) -> None:
        self.totals[part] = self.totals.get(part, 0.0) + seconds

    def means(self) -> dict[str, float]:
        """Mean seconds per optimiser step of each part (``step``: the whole step, data and events included)."""
        return {part: total / max(self.steps, 1) for part, total in self.totals.items()}

    def describe(self) -> str:
        return ", ".join(f"{part} {seconds:.4f}" for part, seconds in self.means().items())


def log_progress(log: logging.Logger, loop: Loop, row: dict, epoch: int, clock: WallClock, log_every: int) -> None:
    """The progress line every ``log_every`` steps (and at the last), else a tick of the progress display.

    The line goes to ``log``, the trainer's logger; ``clock`` has timed the loop's steps so far."""
    step, total_steps = loop.step, loop.total_steps
    if step % log_every == 0 or step == total_steps:
        per_step = (clock.totals["step"] - loop.last_logged[1]) / max(step - loop.last_logged[0], 1)
        logs.progress(
            log,
            "step %d/%d epoch %d loss %.4f lr %.2e grad_norm %.3f (%.3f s/step, %s left)",
            step,
            total_steps,
            epoch,
            row["loss"],
            row["lr"],
            row["grad_norm"],
            per_step,
            _duration(per_step * (loop.last_step - step)),
            last=step == loop.last_step,
            done=step,
            total=total_steps,
        )
        loop.last_logged = (step, clock.totals["step"])
    else:
        logs.tick(step, total_steps, f"loss {row['loss']:.4f}")
