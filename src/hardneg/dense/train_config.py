"""What a training is asked to do: its settings (:class:`TrainConfig`, a run's ``params.train``), the part of a
longer schedule one job trains (:class:`Window`, an episode), and what the settings build: the device
(:func:`resolve_device`) and the optimiser (:func:`make_optimizer`). :class:`hardneg.dense.trainer.Trainer`
trains with them."""

from __future__ import annotations

import os
from dataclasses import dataclass, fields

import torch

from hardneg.dense.distributed import resolve_processes
from hardneg.schema.values import section_values


@dataclass(frozen=True)
class TrainConfig:
    """Training settings: exactly the keys of a run's ``params.train`` section, plus the run's ``seed``.

    Their meaning and defaults are in the schema (``$defs/dense_params/properties/train``); there is no second
    copy of the defaults here. Build it with :meth:`from_params` from a validated section.
    """

    split: str
    epochs: int
    batch_size: int
    learning_rate: float
    optimizer: str  # adamw | lamb
    weight_decay: float
    warmup_ratio: float
    grad_accumulation: int
    max_grad_norm: float | None
    precision: str  # fp32 | fp16 | bf16 (autocast where the device runs it, see hardneg.dense.precision)
    gradient_checkpointing: bool
    grad_cache_chunk: int  # texts per encoder pass with gradient caching (0 = off); read by the method's step
    checkpoint_every: int  # optimiser steps; 0 = none
    log_every: int
    tensorboard: bool  # write the step log to a TensorBoard log while training (hardneg.dense.tensorboard)
    loss: str | None
    temperature: float
    device: str
    gpus: int
    processes: int | None
    dev_every: int | str  # optimiser steps between dev evaluations (0 = none), or "epoch": each epoch's last step
    dev_split: str
    dev_search: str  # candidates | corpus | both (hardneg.dense.dev_candidates)
    dev_depth: int  # documents each candidate source gives a dev query
    keep: str  # auto | best | last: the model saved (hardneg.dense.model_selection)
    select_by: str  # the dev measure keep: best compares (RR@10 | RR@100)
    rows: str  # query | judgement: one training row per query, or per (query, positive) judgement
    seed: int

    @classmethod
    def from_params(cls, section: dict, seed: int, *, where: str = "params.train") -> TrainConfig:
        """From a validated ``params.train`` section; ``ConfigError`` naming ``<where>.<key>`` for an unknown
        or a missing key (:func:`hardneg.pipeline.config.validate_params` fills a hand-written section's defaults)."""
        names = [f.name for f in fields(cls) if f.name != "seed"]
        return cls(**section_values(section, names, where), seed=seed)

    @property
    def num_processes(self) -> int:
        """Training processes: ``processes``, else one per GPU when ``gpus`` > 1, else 1."""
        return resolve_processes(self.processes, self.gpus)


def resolve_device(name: str = "auto") -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(name)


def make_optimizer(params, config: TrainConfig):
    decay: list[torch.nn.Parameter] = []
    no_decay: list[torch.nn.Parameter] = []
    for name, param in params:
        if param.requires_grad:
            (no_decay if param.ndim < 2 or "norm" in name.lower() else decay).append(param)
    groups = [{"params": decay, "weight_decay": config.weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    if config.optimizer == "adamw":
        return torch.optim.AdamW(groups, lr=config.learning_rate)
    if config.optimizer == "lamb":
        from pytorch_optimizer import Lamb  # torch optimisers: imported only when training

        return Lamb(groups, lr=config.learning_rate)
    raise ValueError(f"unknown optimizer {config.optimizer!r}")


@dataclass(frozen=True)
class Window:
    """A part of a longer training (an episode, :mod:`hardneg.pipeline.episodes`): the learning-rate schedule and
    the data
    order are those of ``total_steps`` optimiser steps (as many epochs as they take, the last one cut short), and
    this job trains from step ``start`` to step ``stop``. ``start_state``: the trainer state at step ``start``
    (what the previous part wrote; None when ``start`` is 0); at step ``stop`` the state is written to
    ``stop_state`` (a folder, as a checkpoint with ``fingerprint``) for the next part."""

    total_steps: int
    start: int
    stop: int
    start_state: dict | None
    stop_state: str | os.PathLike
    fingerprint: str

    def __post_init__(self):
        if not 0 <= self.start < self.stop <= self.total_steps:
            raise ValueError(
                f"a training window needs 0 <= start < stop <= total_steps, got {self.start}, "
                f"{self.stop}, {self.total_steps}"
            )
        if (self.start_state is None) != (self.start == 0):
            raise ValueError("a training window starting after step 0 continues a trainer state, and only it does")
