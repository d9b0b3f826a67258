"""The ADORE PQ experiment (Table 3 of the STAR/ADORE paper), in one place: ADORE trained with each index of the
config's ``pq_matrix.indexes`` over the documents of ``pq_matrix.docs`` and evaluated with every one of them.

* :func:`expand_config`: one generated ADORE run per training index (:func:`run_name`), added when the config is
  validated;
* :func:`cells`, :func:`index_runs`, :func:`index_table_inputs`: what the experiment's rules read
  (rules/pq_matrix.smk), from the run plan;
* :func:`write_pq_matrix` and :func:`write_index_table`: the matrix (training index × evaluation index) and the
  table of each run evaluated with its own index beside its training time;
* :func:`report_pages`: their Markdown pages in the Snakemake report;
* :data:`FIGURE`: the figure ``pq_matrix``, the matrix as a heat map (:func:`write_pq_matrix_figure`);
* :data:`EXPERIMENT`: its declaration, which the workflow iterates (:mod:`hardneg.experiments`).
"""

from __future__ import annotations

import copy
import json
import os
import statistics
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from hardneg.errors import ConfigError, DataError
from hardneg.evaluation.summary import as_paths
from hardneg.evaluation.summary_measures import measure_label
from hardneg.evaluation.tables import spread
from hardneg.evaluation.timing import number_cell, training_time, unrecorded_note
from hardneg.experiments.declaration import Experiment
from hardneg.figures.declaration import Figure
from hardneg.figures.plot import new_figure, save_png, write_data
from hardneg.index import slug
from hardneg.io import artifacts
from hardneg.io.atomic import atomic_path, write_text
from hardneg.io.text import markdown_table
from hardneg.methods.adore import METHOD as ADORE  # the method of the generated runs
from hardneg.schema.names import seed_runs

if TYPE_CHECKING:
    import pandas as pd


def run_name(factory: str) -> str:
    """Name of the generated ADORE run trained with index ``factory``."""
    return f"adore_pq_{slug(factory)}"


def expand_config(config: dict) -> bool:
    """Add one ADORE run per training index of ``pq_matrix`` (kept if the user already defined it); False when
    the config has no experiment."""
    matrix = config.get("pq_matrix")
    if not matrix:
        return False
    for factory in matrix["indexes"]:
        params = copy.deepcopy(matrix.get("params", {}))
        params.setdefault("index", {})["factory"] = factory
        params.setdefault(ADORE.name, {})["index"] = factory
        entry = {"method": ADORE.name, "inputs": {"docs": matrix["docs"]}, "params": params}
        if matrix.get("seeds"):
            entry["seeds"] = list(matrix["seeds"])
        config["runs"].setdefault(run_name(factory), entry)
    return True


# ------------------------------------------------------------------------------------------- the plan's
def cells(plan) -> list[tuple[str, str, list[str]]]:
    """(training index, evaluation index, metrics.json of each seed) of every cell of the matrix (``plan``: the
    run plan): one file per seed of the generated run (``pq_matrix.seeds``), one without seeds."""
    indexes = plan.config["pq_matrix"]["indexes"]
    runs = {a: seed_runs(run_name(a), plan.config["runs"][run_name(a)]) for a in indexes}
    return [(a, b, [plan.layout.metrics(run, slug(b)) for run in runs[a]]) for a in indexes for b in indexes]


def index_runs(plan) -> list[tuple[str, str]]:
    """(index, ADORE run trained with it) of each index of ``pq_matrix.indexes``."""
    if not plan.config.get("pq_matrix"):
        raise ConfigError(
            "pq_matrix",
            "the table of ADORE with each index lists the runs of the PQ experiment: "
            "add a pq_matrix section (docs, indexes)",
        )
    return [(index, run_name(index)) for index in plan.config["pq_matrix"]["indexes"]]


def index_table_inputs(plan) -> dict:
    """Each ADORE run of the experiment: its ``metrics`` evaluated with the index it trained with (its own
    metrics.json, searched with its ``index.factory``, or else the matrix's cell) and its ``train_log``."""
    pairs = index_runs(plan)
    return {
        "metrics": [
            plan.layout.metrics(run)
            if plan.params(run)["index"]["factory"] == index
            else plan.layout.metrics(run, slug(index))
            for index, run in pairs
        ],
        "train_log": [plan.layout.train_log(run) for _, run in pairs],
    }


def report_pages(plan) -> dict:
    """The experiment's Markdown pages in the report (none without a ``pq_matrix`` section): path → (title,
    category, caption file of workflow/report/, figures that come with it)."""
    if not plan.config.get("pq_matrix"):
        return {}
    layout = plan.layout
    return {
        layout.table("adore_indexes", "md"): (
            "ADORE with each index: effectiveness and training time",
            "Summary",
            "adore_indexes.rst",
            [],
        ),
        layout.experiment("pq_matrix", "matrix.md"): (
            "ADORE with product-quantised indexes: trained with index A, evaluated with index B",
            "Experiments",
            "pq_matrix.rst",
            [],
        ),
    }


# ---------------------------------------------------------------------------------------------- writers
def write_pq_matrix(
    cells: dict,
    indexes: list[str],
    measures: list[str],
    table_path: str | os.PathLike,
    markdown_path: str | os.PathLike,
) -> pa.Table:
    """``cells`` maps (training index, evaluation index) to the metrics.json of each seed of the run trained with
    that index (one path, or a list: :func:`cells`); writes one row per cell, each measure the mean over the seeds
    (with ``seeds``, their number, and ``<measure> sd``, the sample standard deviation, 0 for one seed), and a
    Markdown matrix per measure (rows: the index ADORE trained with; columns: the index it is evaluated with), a
    cell over several seeds as mean ± sd."""
    rows, texts = [], {}
    for (train_index, eval_index), paths in cells.items():
        values: dict[str, list[float]] = {m: [] for m in measures}
        for path in [paths] if isinstance(paths, (str, os.PathLike)) else paths:
            with open(path, encoding="utf-8") as handle:
                metrics = json.load(handle)["measures"]
            for m in measures:
                values[m].append(float(metrics[m]))
        rows.append(
            {
                "train_index": train_index,
                "eval_index": eval_index,
                **{m: statistics.fmean(values[m]) for m in measures},
                "seeds": len(values[measures[0]]),
                **{f"{m} sd": statistics.stdev(v) if len(v) > 1 else 0.0 for m, v in values.items()},
            }
        )
        texts[(train_index, eval_index)] = {m: spread(v, 4) for m, v in values.items()}
    table = pa.Table.from_pylist(rows)
    with atomic_path(table_path) as tmp:
        pq.write_table(table, tmp)
    seeds = sorted({row["seeds"] for row in rows})
    lines = ["# ADORE: training index × evaluation index", ""]
    if seeds != [1]:
        lines += [
            f"Each cell: the mean ± standard deviation over {'/'.join(map(str, seeds))} seeds (pq_matrix.seeds).",
            "",
        ]
    for measure in measures:
        lines += [
            f"## {measure}",
            "",
            *markdown_table(
                ["trained with \\ evaluated with", *indexes],
                [[a, *(texts[(a, b)][measure] for b in indexes)] for a in indexes],
            ),
            "",
        ]
    write_text(markdown_path, "\n".join(lines))
    return table


def write_index_table(
    indexes: list[str],
    runs: list[str],
    metrics_paths,
    train_logs,
    benchmarks: list[str],
    measures: list[str],
    docs: str,
    markdown_path: str | os.PathLike,
    table_path: str | os.PathLike,
) -> pd.DataFrame:
    """Stage function: for each index of ``indexes`` the ADORE run trained with it (``runs``), its mean of each
    of ``measures`` evaluated with that same index (``metrics_paths``), and its training time (``train_logs``,
    ``benchmarks``), all aligned; ``docs`` is the run whose documents the index holds. Markdown and Parquet
    (:func:`hardneg.io.artifacts.adore_indexes_kind`)."""
    import pandas as pd  # pandas: only where a frame is made (the DAG is planned without it)

    rows = []
    for index, run, path, log, bench in zip(
        indexes, runs, as_paths(metrics_paths), as_paths(train_logs), benchmarks, strict=True
    ):
        with open(path, encoding="utf-8") as handle:
            values = json.load(handle)["measures"]
        missing = [m for m in measures if m not in values]
        if missing:
            raise DataError(path, None, f"metrics.json has no {', '.join(missing)}: evaluate the run again")
        rows.append(
            {"index": index, "run": run, **{m: float(values[m]) for m in measures}, **training_time(log, bench)}
        )
    kind = artifacts.adore_indexes_kind(measures)
    table = pd.DataFrame(rows, columns=kind.schema.names)
    artifacts.write_table(pa.Table.from_pandas(table, schema=kind.schema, preserve_index=False), kind, table_path)
    lines = [
        "# ADORE with each index",
        "",
        f"ADORE trained with each index of pq_matrix.indexes over the documents of run `{docs}`, evaluated "
        f"with that same index; training time as in training_time.md (wall clock, machine-dependent).",
        "",
    ]
    header = ["index", "run", *(measure_label(m) for m in measures), "seconds", "steps", "seconds per step"]
    cells_of_rows = []
    for row in rows:
        cells = [
            row["index"],
            row["run"],
            *(f"{row[m]:.3f}" for m in measures),
            number_cell(row["seconds"], 1),
            str(row["steps"]),
            number_cell(row["seconds_per_step"], 3),
        ]
        cells_of_rows.append(cells)
    lines += markdown_table(header, cells_of_rows, "ll" + "r" * (len(measures) + 3))
    write_text(markdown_path, "\n".join(lines + unrecorded_note(rows, benchmarks)) + "\n")
    return table


def experiment_runs(plan) -> set[str]:
    """The runs of the experiment: its ADORE runs (none without a ``pq_matrix`` section)."""
    if not plan.config.get("pq_matrix"):
        return set()
    return {run for _, run in index_runs(plan)}


def factory_uses(config: dict) -> list[tuple[str, str, str]]:
    """(``pq_matrix.indexes.<i>``, factory, the run whose documents it indexes) of each index of the matrix."""
    matrix = config.get("pq_matrix")
    if not matrix:
        return []
    return [(f"pq_matrix.indexes.{i}", factory, matrix["docs"]) for i, factory in enumerate(matrix["indexes"])]


# ---------------------------------------------------------------------------------------------- the figure
# Figure ``pq_matrix`` (STAR/ADORE paper, Table 3): the matrix as a heat map, one measure (``figures.pq_matrix``),
# rows the index ADORE trained with, columns the index it is evaluated with, each cell annotated with its value. It
# reads ``results/pq_matrix/matrix.parquet`` (:func:`write_pq_matrix`) and is drawn by rules/figures.smk, as the
# papers' figures are.
FIGURE_KIND = artifacts.FIGURE_MATRIX


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
        schema=FIGURE_KIND.schema,
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
    table = write_data(matrix_table(matrix_path, measure), FIGURE_KIND, data_path)
    draw_pq_matrix(table, png_path)
    return table


def _figure_inputs(plan, spec: dict, key: str) -> dict:
    if not plan.config.get("pq_matrix"):
        raise ConfigError("pq_matrix", f"{key} draws the ADORE PQ matrix: the config has no pq_matrix section")
    plan.report.check_evaluated_measure(spec["measure"], f"{key}.measure")
    return {"matrix": plan.layout.experiment("pq_matrix", "matrix.parquet")}


FIGURE = Figure(
    "pq_matrix",
    caption="pq_matrix_heatmap.rst",
    inputs=_figure_inputs,
    params=lambda spec, plan: {"measure": spec["measure"]},
    build=lambda inputs, params, data_path, png_path: write_pq_matrix_figure(
        inputs["matrix"], params["measure"], data_path, png_path
    ),
)


EXPERIMENT = Experiment(
    name="pq_matrix",
    summary="ADORE trained with each index of pq_matrix.indexes and evaluated with every one (Table 3)",
    rule_file="pq_matrix.smk",
    rules=("pq_matrix", "adore_index_table"),
    reserved_names={"pq_matrix": "the ADORE PQ experiment"},
    expand_config=expand_config,
    runs=experiment_runs,
    report_pages=report_pages,
    factory_uses=factory_uses,
    figures=(FIGURE,),
)
