"""Figure ``pairwise_errors`` (STAR/ADORE paper, Fig. 3): how per-query pairwise errors are distributed over the
evaluation queries, for several runs. Each run is one empirical CDF (the share of queries with at most x errors),
one panel per measure: ``PairwiseErrors@200`` (non-relevant documents above a relevant one within the top 200)
and ``PairwiseErrors`` (over the whole corpus; a lower bound for a ranking cut before some relevant document,
such as BM25's). The values are read from each run's ``per_query.parquet`` (see :mod:`hardneg.evaluation.pairwise`)."""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from hardneg.errors import DataError
from hardneg.evaluation.pairwise import TOTAL_MEASURE
from hardneg.figures.declaration import Figure, figure_runs, paths
from hardneg.figures.plot import PALETTE, new_figure, save_png, write_data
from hardneg.io import artifacts

if TYPE_CHECKING:
    pass

log = logging.getLogger(__name__)

KIND = artifacts.FIGURE_DISTRIBUTION


def distribution_table(per_query: Mapping[str, str | os.PathLike], measures: Sequence[str]) -> pa.Table:
    """The empirical CDF of each measure over each run's queries.

    ``per_query`` maps run names to their ``per_query.parquet`` (qid, measure, value). Returns a table of kind
    :data:`hardneg.io.artifacts.FIGURE_DISTRIBUTION`: per run (in the order given) and measure, one row per query in
    increasing value (ties by qid), with ``share`` = the fraction of that run's queries whose value is at most
    the row's value. A measure missing from a file is a :class:`DataError` naming the file."""
    import pandas as pd  # pandas: only where a frame is made (the DAG is planned without it)

    frames = []
    for run, path in per_query.items():
        table = artifacts.read_table(artifacts.PER_QUERY_METRICS, path).to_pandas()
        for measure in measures:
            rows = table[table["measure"] == measure]
            if rows.empty:
                known = ", ".join(sorted(table["measure"].unique()))
                raise DataError(path, None, f"no per-query values of measure {measure!r} (it has: {known})")
            rows = rows.sort_values(["value", "qid"], kind="stable")
            values = rows["value"].to_numpy(np.float64)
            share = np.searchsorted(values, values, side="right") / len(values)
            frames.append(
                pd.DataFrame(
                    {"run": run, "measure": measure, "qid": rows["qid"].to_numpy(), "value": values, "share": share}
                )
            )
    return pa.Table.from_pandas(pd.concat(frames, ignore_index=True), schema=KIND.schema, preserve_index=False)


def axis_label(measure: str) -> str:
    """The x-axis label of a measure: pairwise errors in words, any other measure by its name."""
    if measure == TOTAL_MEASURE:
        return "pairwise errors per query (whole corpus)"
    if measure.startswith(f"{TOTAL_MEASURE}@"):
        return f"pairwise errors per query (top {measure.split('@', 1)[1]})"
    return f"{measure} per query"


def draw_pairwise_errors(table: pa.Table, path: str | os.PathLike) -> None:
    """Draw the CDFs of ``table`` (kind FIGURE_DISTRIBUTION): one panel per measure, one step curve per run (the
    legend gives each run's mean), x on a symmetric log scale (counts from 0 to thousands). PNG at ``path``."""
    data = table.to_pandas()
    measures = list(dict.fromkeys(data["measure"]))
    runs = list(dict.fromkeys(data["run"]))
    figure, axes = new_figure(5.2 * len(measures), 4.2, panels=len(measures))
    for ax, measure in zip(axes, measures):
        for number, run in enumerate(runs):
            rows = data[(data["run"] == run) & (data["measure"] == measure)]
            values, share = rows["value"].to_numpy(), rows["share"].to_numpy()
            ax.step(
                np.r_[values[0], values],
                np.r_[0.0, share],
                where="post",
                linewidth=1.6,
                color=PALETTE[number % len(PALETTE)],
                label=f"{run} (mean {values.mean():.1f})",
            )
        ax.set_xscale("symlog", linthresh=1.0)
        ax.set_xlim(left=0)
        ax.set_ylim(0, 1.01)
        ax.set_xlabel(axis_label(measure))
        ax.set_ylabel("share of queries with at most x errors")
        ax.grid(True, alpha=0.3)
        ax.legend(loc="upper left", fontsize="small")
    figure.suptitle(f"Pairwise errors per query ({data['qid'].nunique()} evaluation queries)")
    save_png(figure, path)


def write_pairwise_errors(
    per_query: Mapping[str, str | os.PathLike],
    measures: Sequence[str],
    data_path: str | os.PathLike,
    png_path: str | os.PathLike,
) -> pa.Table:
    """Compute the figure's data (:func:`distribution_table`), write it to ``data_path`` (Parquet) and draw it
    to ``png_path``. Returns the data."""
    table = write_data(distribution_table(per_query, measures), KIND, data_path)
    draw_pairwise_errors(table, png_path)
    return table


def _inputs(plan, spec: dict, key: str) -> dict:
    runs = figure_runs(plan, spec["runs"], f"{key}.runs")
    return {"per_query": [plan.layout.per_query(run) for run in runs]}


def _build(inputs, params, data_path, png_path) -> pa.Table:
    return write_pairwise_errors(
        dict(zip(params["runs"], paths(inputs["per_query"]))), params["measures"], data_path, png_path
    )


FIGURE = Figure(
    "pairwise_errors",
    caption="pairwise_errors.rst",
    inputs=_inputs,
    params=lambda spec, plan: {"runs": spec["runs"], "measures": spec["measures"]},
    build=_build,
)
