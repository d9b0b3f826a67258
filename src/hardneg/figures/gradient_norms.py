"""Figure ``gradient_norms`` (ANCE paper, Fig. 8): the pre-clip gradient norm of every optimiser step of runs
trained on the same data with different negatives (ANCE's, in-batch, random, BM25), one curve per run on a log
scale, and each run's mean.

The points are the training logs' ``grad_norm`` column, which every method's log has (the trainer records the
total gradient norm before clipping, :class:`hardneg.dense.trainer.Trainer`). ANCE's argument: negatives that the
model already ranks far below the positive have near-zero loss and so near-zero gradient norms, and training on
them converges slowly; its own negatives, from the whole corpus by the current model, give far larger norms. The
figure's ``reference`` run (ANCE) is compared with every other run by the ratio of their mean norms
(:func:`mean_ratios`), shown in the legend.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from hardneg.errors import ConfigError
from hardneg.figures.declaration import Figure, check_labels, figure_runs, run_logs, runs_and_labels
from hardneg.figures.plot import PALETTE, log_steps, new_figure, save_png, write_data
from hardneg.io import artifacts

if TYPE_CHECKING:
    pass

KIND = artifacts.FIGURE_GRAD_NORMS
TITLE = "Pre-clip gradient norm per optimiser step"


def norm_table(train_logs: Mapping[str, str | os.PathLike], labels: Mapping[str, str] | None = None) -> pa.Table:
    """Every step's ``grad_norm`` of each run's ``train_log.parquet`` (``train_logs``: run → path, in legend order),
    as a table of kind :data:`hardneg.io.artifacts.FIGURE_GRAD_NORMS` with each run's legend text (``labels[run]``,
    default its name). A log without the column, or without steps, is a :class:`DataError` naming it."""
    import pandas as pd  # pandas: only where a frame is made (the DAG is planned without it)

    labels = labels or {}
    frames = []
    for run, path in train_logs.items():
        steps = log_steps(
            path, "grad_norm", "no gradient norms in this training log (no 'grad_norm' values): the run trained no step"
        )
        frames.append(
            pd.DataFrame(
                {
                    "run": run,
                    "label": labels.get(run, run),
                    "step": steps["step"].to_numpy(np.int64),
                    "grad_norm": steps["grad_norm"].to_numpy(np.float64),
                }
            )
        )
    return pa.Table.from_pandas(pd.concat(frames, ignore_index=True), schema=KIND.schema, preserve_index=False)


def mean_ratios(table: pa.Table, reference: str) -> dict[str, float]:
    """run → the ``reference`` run's mean gradient norm over that run's (the reference's own is 1)."""
    means = table.to_pandas().groupby("run", sort=False)["grad_norm"].mean()
    if reference not in means:
        raise ValueError(f"the reference run {reference!r} is not among the figure's runs ({', '.join(means.index)})")
    return {run: float(means[reference] / mean) for run, mean in means.items()}


def draw_norms(table: pa.Table, path: str | os.PathLike, reference: str) -> None:
    """Draw ``table`` (kind FIGURE_GRAD_NORMS): gradient norm against step on a log scale, one line per run, its
    mean and the reference's mean over it in the legend. PNG at ``path``."""
    data, ratios = table.to_pandas(), mean_ratios(table, reference)
    figure, (ax,) = new_figure(6.4, 4.2)
    for number, run in enumerate(dict.fromkeys(data["run"])):
        rows = data[data["run"] == run]
        mean = rows["grad_norm"].mean()
        note = "" if run == reference else f"; {reference} / this: {ratios[run]:.3g}×"
        ax.plot(
            rows["step"],
            rows["grad_norm"],
            linewidth=1.2,
            color=PALETTE[number % len(PALETTE)],
            label=f"{rows['label'].iloc[0]} (mean {mean:.3g}{note})",
        )
    ax.set_yscale("log")
    ax.set_xlabel("optimiser step")
    ax.set_ylabel("gradient norm (before clipping)")
    ax.set_xlim(left=0)
    ax.grid(True, alpha=0.3, which="both")
    ax.legend(loc="best", fontsize="small")
    ax.set_title(TITLE, fontsize="medium")
    save_png(figure, path)


def write_gradient_norms(
    train_logs: Mapping[str, str | os.PathLike],
    labels: Mapping[str, str] | None,
    reference: str,
    data_path: str | os.PathLike,
    png_path: str | os.PathLike,
) -> pa.Table:
    """Compute the data (:func:`norm_table`), write it to ``data_path`` (Parquet) and draw it to ``png_path``."""
    table = write_data(norm_table(train_logs, labels), KIND, data_path)
    draw_norms(table, png_path, reference)
    return table


def reference_run(spec: dict) -> str | None:
    """The run the figure compares the others with (its config section ``spec``): ``reference``, else the first
    of its runs (None without runs)."""
    return spec["reference"] or (spec["runs"][0] if spec["runs"] else None)


def _inputs(plan, spec: dict, key: str) -> dict:
    runs = figure_runs(plan, spec["runs"], f"{key}.runs")
    for position, run in enumerate(runs):
        if not plan.method(run).trains:
            raise ConfigError(f"{key}.runs.{position}", f"run {run!r} trains nothing, so it has no gradient norms")
    check_labels(spec, runs, key)
    if spec["reference"] is not None and spec["reference"] not in runs:
        raise ConfigError(f"{key}.reference", f"run {spec['reference']!r} is not one of {key}.runs")
    return {"train_logs": [plan.layout.train_log(run) for run in runs]}


FIGURE = Figure(
    "gradient_norms",
    caption="gradient_norms.rst",
    inputs=_inputs,
    params=lambda spec, plan: {**runs_and_labels(spec, plan), "reference": reference_run(spec)},
    build=lambda inputs, params, data_path, png_path: write_gradient_norms(
        run_logs(inputs, params), params["labels"], params["reference"], data_path, png_path
    ),
)
