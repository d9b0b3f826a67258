"""Figure ``epoch_curves`` (the Adaptive Batch Scheduling report, Figs. 3-5): for each run, the mean training
loss of every epoch and dev MRR@100 at the end of every epoch, side by side, one line per run.

The points come from the training logs: the mean of the ``loss`` column over each epoch's optimiser steps, and
the ``dev_rr100`` value of the epoch's last step (a run evaluates it there with ``train.dev_every: epoch``,
:mod:`hardneg.dense.dev_eval`). Epochs are numbered from 1. Harder batches give a higher in-batch loss for the
same model, so the loss panel compares schedules' hardness as much as their progress; the MRR panel compares
what they learn.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from hardneg.errors import DataError
from hardneg.figures.declaration import Figure, evaluated_train_logs, run_logs, runs_and_labels
from hardneg.figures.plot import PALETTE, new_figure, save_png, write_data
from hardneg.io import artifacts

if TYPE_CHECKING:
    pass

KIND = artifacts.FIGURE_EPOCHS
COLUMN = "dev_rr100"


def epoch_table(train_logs: Mapping[str, str | os.PathLike], labels: Mapping[str, str] | None = None) -> pa.Table:
    """Per run (``train_logs``: run → ``train_log.parquet``, in legend order) and epoch, the mean loss and the
    dev MRR@100 of the epoch's last step, as a table of kind :data:`hardneg.io.artifacts.FIGURE_EPOCHS` with each
    run's legend text (``labels[run]``, default its name). A log without steps, or whose epochs' last steps were
    not evaluated on dev, is a :class:`DataError` naming it."""
    import pandas as pd  # pandas: only where a frame is made (the DAG is planned without it)

    labels = labels or {}
    frames = []
    for run, path in train_logs.items():
        if not os.path.exists(path):
            raise DataError(path, None, "training log does not exist")
        steps = pq.read_table(path).to_pandas()
        if not len(steps) or COLUMN not in steps.columns:
            raise DataError(
                path,
                None,
                f"no per-epoch dev evaluation in this training log (no {COLUMN} column): "
                f"train the run with params.train.dev_every: epoch",
            )
        steps = steps.sort_values("step")
        epochs = steps.groupby("epoch", sort=True)
        last = epochs.tail(1).set_index("epoch")[COLUMN]
        if last.isna().any():
            raise DataError(
                path,
                None,
                f"epoch {int(last.index[last.isna()][0])} ends without a dev evaluation: train "
                f"the run with params.train.dev_every: epoch",
            )
        frames.append(
            pd.DataFrame(
                {
                    "run": run,
                    "label": labels.get(run, run),
                    "epoch": last.index.to_numpy(np.int64) + 1,
                    "loss": epochs["loss"].mean().to_numpy(np.float64),
                    "dev_rr100": last.to_numpy(np.float64),
                }
            )
        )
    return pa.Table.from_pandas(pd.concat(frames, ignore_index=True), schema=KIND.schema, preserve_index=False)


def draw_epochs(table: pa.Table, path: str | os.PathLike) -> None:
    """Draw ``table`` (kind FIGURE_EPOCHS): loss per epoch (left) and dev MRR@100 per epoch (right), one line
    per run, its best MRR@100 in the legend. PNG at ``path``."""
    data = table.to_pandas()
    figure, (loss_axis, mrr_axis) = new_figure(10.0, 4.4, panels=2)
    for number, run in enumerate(dict.fromkeys(data["run"])):
        rows = data[data["run"] == run]
        style = {
            "color": PALETTE[number % len(PALETTE)],
            "marker": "o",
            "markersize": 4,
            "linestyle": "-" if number < len(PALETTE) else "--",
        }
        loss_axis.plot(rows["epoch"], rows["loss"], **style)
        mrr_axis.plot(
            rows["epoch"],
            rows["dev_rr100"],
            label=f"{rows['label'].iloc[0]} (best {rows['dev_rr100'].max():.3f})",
            **style,
        )
    for axis, name in ((loss_axis, "mean training loss"), (mrr_axis, "dev MRR@100")):
        axis.set_xlabel("epoch")
        axis.set_ylabel(name)
        axis.grid(True, alpha=0.3)
        axis.xaxis.get_major_locator().set_params(integer=True)
    mrr_axis.legend(loc="best", fontsize="x-small")
    loss_axis.set_title("Training loss per epoch", fontsize="medium")
    mrr_axis.set_title("Dev MRR@100 at the end of each epoch", fontsize="medium")
    save_png(figure, path)


def write_epoch_curves(
    train_logs: Mapping[str, str | os.PathLike],
    labels: Mapping[str, str] | None,
    data_path: str | os.PathLike,
    png_path: str | os.PathLike,
) -> pa.Table:
    """Compute the data (:func:`epoch_table`), write it to ``data_path`` (Parquet) and draw it to ``png_path``."""
    table = write_data(epoch_table(train_logs, labels), KIND, data_path)
    draw_epochs(table, png_path)
    return table


def _inputs(plan, spec: dict, key: str) -> dict:
    return evaluated_train_logs(
        plan,
        spec,
        key,
        lambda every: every == "epoch",
        "draws dev MRR@100 at the end of every epoch: set it to 'epoch'",
    )


FIGURE = Figure(
    "epoch_curves",
    caption="epoch_curves.rst",
    inputs=_inputs,
    params=runs_and_labels,
    build=lambda inputs, params, data_path, png_path: write_epoch_curves(
        run_logs(inputs, params), params["labels"], data_path, png_path
    ),
)
