"""How many optimiser steps a training makes, and when they are too few to train: the arithmetic behind the
console warning of :func:`hardneg.pipeline.train.training_warnings`, which ``hardneg init`` uses to choose
epochs (:mod:`hardneg.pipeline.starter`). It imports no torch, so the command line stays quick."""

from __future__ import annotations

import math

from hardneg.dense.data import ShuffledBatches

# Training of epochs of fewer optimiser steps than MIN_STEPS_PER_EPOCH, and of fewer than MIN_TOTAL_STEPS in all,
# hardly leaves the learning-rate warm-up: the model barely moves (more epochs are one of the fixes).
MIN_STEPS_PER_EPOCH = 20
MIN_TOTAL_STEPS = 100


def optimiser_steps(num_rows: int, *, batch_size: int, grad_accumulation: int, epochs: int) -> tuple[int, int]:
    """Optimiser steps of one epoch and of the whole training, as the trainer counts them for a fresh shuffle of
    the training rows each epoch (:class:`hardneg.dense.data.ShuffledBatches`: batches of ``batch_size`` rows, a
    last one of a single row dropped; one step per ``grad_accumulation`` batches; at least one step in all).

    :param num_rows: training rows (queries, or (query, positive) judgements with ``train.rows: judgement``).
    :param batch_size: rows of a micro-batch (``train.batch_size``).
    :param grad_accumulation: micro-batches per optimiser step (``train.grad_accumulation``).
    :param epochs: passes over the rows (``train.epochs``).
    :returns: (steps of one epoch, steps in all).

    >>> optimiser_steps(150, batch_size=32, grad_accumulation=1, epochs=4)
    (5, 20)
    """
    batches = ShuffledBatches(num_rows, batch_size, 0).num_batches(0)  # the count does not depend on the seed
    return math.ceil(batches / grad_accumulation), max(1, math.ceil(batches * epochs / grad_accumulation))


def too_few_steps(per_epoch: int, total: int) -> bool:
    """Whether training of epochs of ``per_epoch`` optimiser steps, ``total`` in all, is too short to train: fewer
    than :data:`MIN_STEPS_PER_EPOCH` per epoch and fewer than :data:`MIN_TOTAL_STEPS` in all."""
    return per_epoch < MIN_STEPS_PER_EPOCH and total < MIN_TOTAL_STEPS
