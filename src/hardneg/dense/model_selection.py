"""Model selection on dev: keep the checkpoint with the best dev measure, not the last one (``train.keep``).

On a small collection the last step is often not the best model: dev RR@10 may peak half-way and fall as the model
learns its few training queries by heart. Like Hugging Face's ``load_best_model_at_end`` and sentence-transformers'
best-checkpoint saving, :class:`ModelSelection` is a trainer event that reads the dev evaluation's value
(:class:`hardneg.dense.dev_eval.DevEvaluation` fires first and writes it into the step's row) at every evaluated
step and keeps a copy of the model's weights (on the CPU) whenever the value beats the best so far; equal values
keep the earlier step. After training the run's model is the kept copy (:meth:`ModelSelection.restore`), and the
training log and the model card say which step it was (:meth:`ModelSelection.record`).

The copy is part of the event's state, so a resumed training, and the next episode of a run trained in episodes,
go on comparing with the best of the steps before. ``train.keep: last`` keeps the last step, as every run without
a dev evaluation does.
"""

from __future__ import annotations

import logging
import math

import torch

from hardneg.dense.dev_eval import COLUMNS

log = logging.getLogger(__name__)

KEEPS = ("auto", "best", "last")


def resolve_keep(keep: str, dev_every) -> str:
    """``best`` or ``last``: ``auto`` is ``best`` when the run evaluates dev (``dev_every`` set), else ``last``."""
    if keep == "auto":
        return "best" if dev_every else "last"
    return keep


class ModelSelection:
    """Trainer event keeping the weights of the step with the best ``measure`` (a key of
    :data:`hardneg.dense.dev_eval.COLUMNS`, e.g. ``RR@10``) among the evaluated steps; ties keep the earlier one."""

    def __init__(self, measure: str = "RR@10"):
        if measure not in COLUMNS:
            raise ValueError(f"model selection by {measure!r}: the dev evaluation measures {', '.join(COLUMNS)}")
        self.measure, self.column = measure, COLUMNS[measure]
        self.best_step: int | None = None
        self.best_value = -math.inf
        self.weights: dict | None = None
        self.last: tuple[int, float] | None = None  # the last evaluated step and its value

    def on_step_end(self, trainer, step: int, row: dict) -> None:
        value = row.get(self.column, math.nan)
        if value is None or math.isnan(value):
            return
        self.last = (step, float(value))
        if value > self.best_value:
            self.best_step, self.best_value = step, float(value)
            self.weights = {
                key: tensor.detach().to("cpu", copy=True) for key, tensor in trainer.model.state_dict().items()
            }
            log.info("step %d: best dev %s so far (%.4f), kept", step, self.measure, value)

    def restore(self, model) -> bool:
        """Load the kept weights into ``model``; False (and nothing changes) when no step was evaluated."""
        if self.weights is None:
            return False
        model.load_state_dict(self.weights)
        return True

    def record(self, keep: str, last_step: int) -> dict:
        """What the training log and the model card say of the model kept: ``keep`` (best | last), the step kept,
        the last step, and with a dev evaluation the measure, the kept step's value and the last evaluated one."""
        kept_step = self.best_step if keep == "best" and self.best_step is not None else last_step
        record = {"keep": keep, "step": kept_step, "steps": last_step}
        if self.best_step is not None:
            assert self.last is not None  # set with every best step
            kept_value = self.best_value if kept_step == self.best_step else self.last[1]
            record |= {
                "measure": self.measure,
                "value": kept_value,
                "last_value": self.last[1],
                "best_step": self.best_step,
            }
        return record

    # --------------------------------------------------------------------------------------- state
    def state_dict(self) -> dict:
        return {
            "best_step": self.best_step,
            "best_value": self.best_value,
            "weights": self.weights,
            "last": list(self.last) if self.last else None,
        }

    def load_state_dict(self, state: dict) -> None:
        self.best_step, self.best_value = state["best_step"], float(state["best_value"])
        self.weights = (
            {key: torch.as_tensor(value) for key, value in state["weights"].items()}
            if state["weights"] is not None
            else None
        )
        self.last = tuple(state["last"]) if state["last"] else None
