"""Figures ``training_curves`` (STAR/ADORE paper, Fig. 4: random, static and dynamic hard negatives) and
``adore_vs_adore_l`` (Fig. 5: ADORE and ADORE\\L): dev MRR@10 against optimiser steps, one curve per run.

The points are the training log's ``dev_rr10`` column (:mod:`hardneg.dense.dev_eval`): RR@10 of the dev split,
evaluated every ``train.dev_every`` optimiser steps and at the last step, NaN on the other steps. A run whose log
has no such column, or no evaluated step, was trained without dev evaluation: a :class:`DataError` names its log.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from hardneg.figures.declaration import Figure, evaluated_train_logs, run_logs, runs_and_labels
from hardneg.figures.plot import PALETTE, log_steps, new_figure, save_png, write_data
from hardneg.io import artifacts

if TYPE_CHECKING:
    pass

log = logging.getLogger(__name__)

KIND = artifacts.FIGURE_CURVES
TITLES = {
    "training_curves": "Dev MRR@10 during training: random, static and dynamic hard negatives",
    "adore_vs_adore_l": "Dev MRR@10 during training: ADORE and ADORE\\L",
}
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")


def curve_table(train_logs: Mapping[str, str | os.PathLike], labels: Mapping[str, str] | None = None) -> pa.Table:
    """The dev-evaluated steps of each run's ``train_log.parquet`` (``train_logs``: run → path, in legend order).

    Returns a table of kind :data:`hardneg.io.artifacts.FIGURE_CURVES`: per run, one row per step whose ``dev_rr10``
    is not NaN (in step order), with the run's legend text (``labels[run]``, default the run's name)."""
    import pandas as pd  # pandas: only where a frame is made (the DAG is planned without it)

    from hardneg.dense.dev_eval import COLUMN  # here: the Snakefile reads this module, and dev_eval imports torch

    labels = labels or {}
    frames = []
    for run, path in train_logs.items():
        rows = log_steps(
            path,
            COLUMN,
            f"no dev evaluation in this training log (no {COLUMN} values): train the run "
            f"with params.train.dev_every > 0",
        )
        frames.append(
            pd.DataFrame(
                {
                    "run": run,
                    "label": labels.get(run, run),
                    "step": rows["step"].to_numpy(np.int64),
                    "dev_rr10": rows[COLUMN].to_numpy(np.float64),
                }
            )
        )
    return pa.Table.from_pandas(pd.concat(frames, ignore_index=True), schema=KIND.schema, preserve_index=False)


def draw_curves(table: pa.Table, path: str | os.PathLike, title: str) -> None:
    """Draw ``table`` (kind FIGURE_CURVES): dev MRR@10 against optimiser steps, one line with markers per run,
    the best value of each run in its legend entry. PNG at ``path``."""
    data = table.to_pandas()
    figure, (ax,) = new_figure(6.4, 4.2)
    for number, run in enumerate(dict.fromkeys(data["run"])):
        rows = data[data["run"] == run]
        ax.plot(
            rows["step"],
            rows["dev_rr10"],
            marker=MARKERS[number % len(MARKERS)],
            markersize=4,
            linewidth=1.6,
            color=PALETTE[number % len(PALETTE)],
            label=f"{rows['label'].iloc[0]} (best {rows['dev_rr10'].max():.3f})",
        )
    ax.set_xlabel("optimiser step")
    ax.set_ylabel("dev MRR@10")
    ax.set_xlim(left=0)
    ax.grid(True, alpha=0.3)
    ax.legend(loc="best", fontsize="small")
    ax.set_title(title, fontsize="medium")
    save_png(figure, path)


def write_curves(
    name: str,
    train_logs: Mapping[str, str | os.PathLike],
    labels: Mapping[str, str] | None,
    data_path: str | os.PathLike,
    png_path: str | os.PathLike,
) -> pa.Table:
    """Figure ``name`` (``training_curves`` or ``adore_vs_adore_l``, which sets the title): compute the data
    (:func:`curve_table`), write it to ``data_path`` (Parquet) and draw it to ``png_path``. Returns the data."""
    table = write_data(curve_table(train_logs, labels), KIND, data_path)
    draw_curves(table, png_path, TITLES[name])
    return table


def _dev_curve_inputs(plan, spec: dict, key: str) -> dict:
    return evaluated_train_logs(
        plan, spec, key, bool, "draws dev MRR@10 during training: set it above 0 (e.g. a tenth of the steps)"
    )


def _figure(name: str) -> Figure:
    def build(inputs, params, data_path, png_path) -> pa.Table:
        return write_curves(name, run_logs(inputs, params), params["labels"], data_path, png_path)

    return Figure(name, caption=f"{name}.rst", inputs=_dev_curve_inputs, params=runs_and_labels, build=build)


TRAINING_CURVES = _figure("training_curves")
ADORE_VS_ADORE_L = _figure("adore_vs_adore_l")
