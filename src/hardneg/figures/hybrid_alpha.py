"""Figure ``hybrid_alpha``: a hybrid (fusion) run's tuned metric against the weight α that combines its dense
and sparse scores, with the α the tuning chose. It reads the run's ``fusion_tuning.parquet`` (alpha, value,
chosen: one row per α tried) and ``fusion_tuning.json`` (``measure``, ``split`` and the chosen ``alpha``), which
the fusion tuning writes (:meth:`hardneg.io.layout.Layout.fusion_tuning`)."""

from __future__ import annotations

import json
import logging
import os

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from hardneg.errors import ConfigError, DataError
from hardneg.figures.declaration import Figure
from hardneg.figures.plot import PALETTE, new_figure, save_png, write_data
from hardneg.io import artifacts

log = logging.getLogger(__name__)

KIND = artifacts.FIGURE_ALPHA
TUNING_COLUMNS = {"alpha": pa.float64(), "value": pa.float64(), "chosen": pa.bool_()}
SUMMARY_KEYS = ("measure", "split", "alpha")


def alpha_table(tuning_path: str | os.PathLike, summary_path: str | os.PathLike) -> pa.Table:
    """The tuning's (alpha, value, chosen) rows in increasing alpha, with the measure and split of the summary.

    Returns a table of kind :data:`hardneg.io.artifacts.FIGURE_ALPHA`. Missing columns or keys, or a summary whose
    ``alpha`` is not the row marked chosen, are a :class:`DataError` naming the file."""
    for path in (tuning_path, summary_path):
        if not os.path.exists(path):
            raise DataError(path, None, "fusion tuning file does not exist")
    tuning = pq.read_table(tuning_path)
    missing = [c for c in TUNING_COLUMNS if c not in tuning.column_names]
    if missing or tuning.num_rows == 0:
        raise DataError(
            tuning_path,
            None,
            f"not a fusion tuning table: missing column(s) {', '.join(missing)}"
            if missing
            else "no alpha was tuned (empty table)",
        )
    with open(summary_path, encoding="utf-8") as handle:
        summary = json.load(handle)
    absent = [k for k in SUMMARY_KEYS if k not in summary]
    if absent:
        raise DataError(summary_path, None, f"missing key(s) {', '.join(absent)}")
    tuning = tuning.select(list(TUNING_COLUMNS)).cast(pa.schema(TUNING_COLUMNS)).sort_by("alpha")
    chosen = tuning.filter(tuning["chosen"])["alpha"].to_pylist()
    if chosen != [float(summary["alpha"])]:
        raise DataError(
            summary_path,
            None,
            f"alpha {summary['alpha']} is not the one row marked chosen in {tuning_path} ({chosen or 'none'})",
        )
    rows = tuning.num_rows
    return pa.table(
        {
            **{c: tuning[c] for c in TUNING_COLUMNS},
            "measure": [str(summary["measure"])] * rows,
            "split": [str(summary["split"])] * rows,
        },
        schema=KIND.schema,
    )


def draw_hybrid_alpha(table: pa.Table, path: str | os.PathLike, run: str) -> None:
    """Draw ``table`` (kind FIGURE_ALPHA): the metric against α (line with markers) and the chosen α (a dashed
    line and a larger marker). ``run`` names the hybrid run (title). PNG at ``path``."""
    measure, split = table["measure"][0].as_py(), table["split"][0].as_py()
    chosen = table.filter(pc.field("chosen"))
    alpha, value = chosen["alpha"][0].as_py(), chosen["value"][0].as_py()
    figure, (ax,) = new_figure(6.0, 4.0)
    ax.plot(
        table["alpha"].to_numpy(),
        table["value"].to_numpy(),
        marker="o",
        markersize=4,
        color=PALETTE[0],
        linewidth=1.6,
        label=f"{measure} on {split}",
    )
    ax.axvline(alpha, color=PALETTE[3], linestyle="--", linewidth=1.0)
    ax.scatter([alpha], [value], s=80, color=PALETTE[3], zorder=3, label=f"chosen α = {alpha:g} ({value:.4f})")
    ax.set_xlabel("α (fusion weight)")
    ax.set_ylabel(f"{measure} ({split} split)")
    ax.grid(True, alpha=0.3)
    ax.legend(loc="best", fontsize="small")
    ax.set_title(f"{run}: {measure} against α", fontsize="medium")
    save_png(figure, path)


def write_hybrid_alpha(
    run: str,
    tuning_path: str | os.PathLike,
    summary_path: str | os.PathLike,
    data_path: str | os.PathLike,
    png_path: str | os.PathLike,
) -> pa.Table:
    """Compute the figure's data (:func:`alpha_table`), write it to ``data_path`` (Parquet) and draw it to
    ``png_path``. Returns the data."""
    table = write_data(alpha_table(tuning_path, summary_path), KIND, data_path)
    draw_hybrid_alpha(table, png_path, run)
    return table


def _inputs(plan, spec: dict, key: str) -> dict:
    run = spec["run"]
    if run is None:
        raise ConfigError(f"{key}.run", "no hybrid run is named: set it to a fusion run whose weight is tuned")
    plan.report.check_run(run, f"{key}.run")
    if run not in plan.fusion.tuned_runs:
        raise ConfigError(
            f"{key}.run",
            f"run {run!r} tunes no fusion weight: name a hybrid run whose alpha is tuned (params.alpha: null)",
        )
    return {"tuning": plan.layout.fusion_tuning(run, "parquet"), "summary": plan.layout.fusion_tuning(run, "json")}


FIGURE = Figure(
    "hybrid_alpha",
    caption="hybrid_alpha.rst",
    inputs=_inputs,
    params=lambda spec, plan: {"run": spec["run"]},
    build=lambda inputs, params, data_path, png_path: write_hybrid_alpha(
        params["run"], inputs["tuning"], inputs["summary"], data_path, png_path
    ),
)
