"""Figure ``pq_matrix`` (STAR/ADORE paper, Table 3): the ADORE PQ matrix as a heat map, one measure, rows the
index ADORE trained with, columns the index it is evaluated with, each cell annotated with its value. It reads
``results/pq_matrix/matrix.parquet`` (:func:`hardneg.experiments.write_pq_matrix`: one row per cell, one column
per measure)."""

from __future__ import annotations

import logging
import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from hardneg.errors import ConfigError, DataError
from hardneg.figures._plot import new_figure, save_png, write_data
from hardneg.figures.declaration import Figure
from hardneg.io import artifacts

log = logging.getLogger(__name__)

KIND = artifacts.FIGURE_MATRIX


def matrix_table(matrix_path: str | os.PathLike, measure: str) -> pa.Table:
    """The cells of the PQ matrix file (train_index, eval_index and one column per measure) for ``measure``, in
    the file's order. Returns a table of kind :data:`hardneg.io.artifacts.FIGURE_MATRIX`."""
    if not os.path.exists(matrix_path):
        raise DataError(matrix_path, None, "PQ matrix file does not exist")
    matrix = pq.read_table(matrix_path)
    for column in ("train_index", "eval_index", measure):
        if column not in matrix.column_names:
            raise DataError(
                matrix_path,
                None,
                f"not a PQ matrix with measure {measure!r}: no column {column!r} (it "
                f"has {', '.join(matrix.column_names)})",
            )
    return pa.table(
        {
            "train_index": matrix["train_index"],
            "eval_index": matrix["eval_index"],
            "measure": [measure] * matrix.num_rows,
            "value": matrix[measure].cast(pa.float64()),
        },
        schema=KIND.schema,
    )


def draw_pq_matrix(table: pa.Table, path: str | os.PathLike) -> None:
    """Draw ``table`` (kind FIGURE_MATRIX) as an annotated heat map (rows: training index; columns: evaluation
    index, both in order of first appearance; the best value of each column in bold). PNG at ``path``."""
    data = table.to_pandas()
    rows, columns = list(dict.fromkeys(data["train_index"])), list(dict.fromkeys(data["eval_index"]))
    values = np.full((len(rows), len(columns)), np.nan)
    for cell in data.itertuples():
        values[rows.index(cell.train_index), columns.index(cell.eval_index)] = cell.value
    measure = data["measure"].iloc[0]
    figure, (ax,) = new_figure(1.3 * len(columns) + 2.6, 1.0 * len(rows) + 1.8)
    image = ax.imshow(values, cmap="viridis", aspect="auto")
    middle = np.nanmin(values) + (np.nanmax(values) - np.nanmin(values)) / 2
    best = np.nanmax(values, axis=0)  # per evaluation index, the training index that serves it best is in bold
    for i in range(len(rows)):
        for j in range(len(columns)):
            ax.text(
                j,
                i,
                f"{values[i, j]:.4f}",
                ha="center",
                va="center",
                color="black" if values[i, j] > middle else "white",
                fontweight="bold" if values[i, j] == best[j] else "normal",
            )
    ax.set_xticks(range(len(columns)), columns)
    ax.set_yticks(range(len(rows)), rows)
    ax.set_xlabel("index evaluated with")
    ax.set_ylabel("index ADORE trained with")
    figure.colorbar(image, ax=ax, label=measure)
    ax.set_title(f"ADORE {measure}: training index × evaluation index", fontsize="medium")
    save_png(figure, path)


def write_pq_matrix_figure(
    matrix_path: str | os.PathLike, measure: str, data_path: str | os.PathLike, png_path: str | os.PathLike
) -> pa.Table:
    """Compute the figure's data (:func:`matrix_table`), write it to ``data_path`` (Parquet) and draw it to
    ``png_path``. Returns the data."""
    table = write_data(matrix_table(matrix_path, measure), KIND, data_path)
    draw_pq_matrix(table, png_path)
    return table


def _inputs(plan, spec: dict, key: str) -> dict:
    if not plan.config.get("pq_matrix"):
        raise ConfigError("pq_matrix", f"{key} draws the ADORE PQ matrix: the config has no pq_matrix section")
    plan.report.check_evaluated_measure(spec["measure"], f"{key}.measure")
    return {"matrix": plan.layout.experiment("pq_matrix", "matrix.parquet")}


FIGURE = Figure(
    "pq_matrix",
    caption="pq_matrix_heatmap.rst",
    inputs=_inputs,
    params=lambda spec, plan: {"measure": spec["measure"]},
    build=lambda inputs, params, data_path, png_path: write_pq_matrix_figure(
        inputs["matrix"], params["measure"], data_path, png_path
    ),
)
