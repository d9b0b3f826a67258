"""Live training curves: a trainer event that writes each step's log row to a TensorBoard log while training runs.

``train_log.parquet`` is written once training ends; the TensorBoard log beside it (``results/<run>/tensorboard``,
``tensorboard --logdir results``) grows step by step, so a long run can be watched. Every numeric column of a
step's row (loss, lr, grad_norm, the method's statistics, ``dev_rr10`` on the steps it is evaluated, ...) becomes a
scalar of the same name at that optimiser step; NaN values (a column not computed at that step) are left out.

The log is flushed every ``log_every`` steps, at every checkpoint step (so a resumed run's curves have no hole
before the checkpoint it resumes from), when a stop is requested, and at the last step. Only rank 0 writes.

Resume: a fresh training (its first step is 1) removes the event files of earlier attempts; a resumed one (its
first step is k > 1) opens a new event file with ``purge_step=k``, which tells TensorBoard to drop the steps >= k
that the interrupted attempt had written, so no step appears twice. Event files hold wall-clock times: they are
logs, not artifacts that a seed reproduces.
"""

from __future__ import annotations

import logging
import math
import os
import time
from numbers import Real
from pathlib import Path
from typing import TYPE_CHECKING

from hardneg.io import stop

if TYPE_CHECKING:
    from torch.utils.tensorboard import SummaryWriter

log = logging.getLogger(__name__)

EVENT_FILE_PREFIX = "events.out.tfevents."


def scalars(row: dict) -> dict[str, float]:
    """The numeric columns of a step's log row as TensorBoard scalars: every finite number but ``step`` (the
    x-axis), booleans left out."""
    return {
        key: float(value)
        for key, value in row.items()
        if key != "step" and isinstance(value, Real) and not isinstance(value, bool) and math.isfinite(value)
    }


def _event_files(log_dir: Path) -> list[Path]:
    return sorted(log_dir.glob(f"{EVENT_FILE_PREFIX}*")) if log_dir.is_dir() else []


def _created_at(path: Path) -> int:
    """The creation second TensorBoard writes into an event file's name (events.out.tfevents.<seconds>.<host>...)."""
    try:
        return int(path.name[len(EVENT_FILE_PREFIX) :].split(".", 1)[0])
    except ValueError:
        return 0


class TensorBoardLog:
    """Trainer event (``on_step_end``): the step's log row → TensorBoard scalars under ``log_dir``.

    ``log_every`` and ``checkpoint_every`` (optimiser steps, 0 = no checkpoints) say when to flush; see the
    module docstring. The writer is opened on the first step this process logs, so building the event costs
    nothing on ranks other than 0.
    """

    def __init__(self, log_dir: str | os.PathLike, log_every: int, checkpoint_every: int = 0):
        self.log_dir = Path(log_dir)
        self.log_every = log_every
        self.checkpoint_every = checkpoint_every
        self.writer: SummaryWriter | None = None

    def _open(self, first_step: int) -> SummaryWriter:
        from torch.utils.tensorboard import SummaryWriter  # torch: imported only where a model or tensor is used

        self.log_dir.mkdir(parents=True, exist_ok=True)
        earlier = _event_files(self.log_dir)
        if first_step <= 1:
            for path in earlier:  # a new training: the curves of earlier attempts are not this one's
                path.unlink()
            return SummaryWriter(str(self.log_dir))
        # TensorBoard reads event files in name order, which starts with the creation second: the new file must
        # sort after the interrupted attempt's for its purge to apply to them
        newest = max((_created_at(path) for path in earlier), default=0)
        until = min(newest + 1, time.time() + 2)  # a file dated in the future (clock change) is not waited for
        while time.time() < until:
            time.sleep(0.05)
        log.info(
            "TensorBoard log resumed at step %d (%s); later steps of the interrupted attempt are dropped",
            first_step,
            self.log_dir,
        )
        return SummaryWriter(str(self.log_dir), purge_step=first_step)

    def on_step_end(self, trainer, step: int, row: dict) -> None:
        if not trainer.replicas.is_main:
            return
        if self.writer is None:
            self.writer = self._open(step)
        for name, value in scalars(row).items():
            self.writer.add_scalar(name, value, step)
        if step >= trainer.total_steps:
            self.close()
        elif (
            step % self.log_every == 0
            or stop.requested()
            or (self.checkpoint_every and step % self.checkpoint_every == 0)
        ):
            self.writer.flush()

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            self.writer = None
