"""Training-time tables: the training time of each trained run (Table 4 of the STAR/ADORE paper) and ADORE with
each index of the PQ experiment (Table 5).

A run's training time is the wall clock of its training job as Snakemake's benchmark record gives it
(``results/<run>/benchmarks/train.tsv``, column ``s``: the whole job, loading included; a resumed job counts
its last attempt only), its steps those of its training log. These are the only figures of the summary a seed
does not reproduce: they depend on the machine and its load.
"""

from __future__ import annotations

import csv
import os
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.parquet as pq

from hardneg.errors import DataError
from hardneg.evaluation.summary import as_paths
from hardneg.io import artifacts
from hardneg.io.atomic import write_text
from hardneg.io.text import markdown_table

if TYPE_CHECKING:
    import pandas as pd

# The parts of an episodic run's work (hardneg.pipeline.episode_plan.EpisodePlan.refresh_benchmarks): training,
# and refreshing its negatives
REFRESH_PARTS = ("train", "encode", "index", "search", "mine")


def benchmark_seconds(path: str | os.PathLike) -> float | None:
    """Wall-clock seconds of a job from its Snakemake benchmark record (TSV, column ``s``; the mean over the
    rows of a repeated benchmark); None when the job left no record (it ran outside Snakemake)."""
    if not os.path.exists(path):
        return None
    with open(path, encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle, delimiter="\t"))
    if not rows or "s" not in rows[0]:
        raise DataError(path, 1, "not a Snakemake benchmark record: no column 's' (wall-clock seconds)")
    seconds = []
    for line, row in enumerate(rows, start=2):
        try:
            seconds.append(float(row["s"]))
        except (TypeError, ValueError):
            raise DataError(path, line, f"wall-clock seconds {row['s']!r} is not a number") from None
    return sum(seconds) / len(seconds)


def training_steps(train_log: str | os.PathLike) -> int:
    """The optimiser steps of a training log (its last ``step``; 0 for a run that did not train)."""
    table = pq.read_table(train_log)
    if "step" not in table.column_names:
        raise DataError(train_log, None, "not a training log: no column 'step'")
    steps = table["step"].to_pylist()
    return int(max(steps)) if steps else 0


def jobs_seconds(paths) -> float | None:
    """Wall-clock seconds of the jobs of benchmark records ``paths`` together (None when one left no record)."""
    seconds = [benchmark_seconds(path) for path in paths]
    known = [value for value in seconds if value is not None]
    return None if len(known) < len(seconds) else float(sum(known))


def training_time(train_log: str | os.PathLike, benchmark) -> dict:
    """``seconds`` (wall clock of the training job, None without a benchmark record), ``steps`` and
    ``seconds_per_step`` (None without seconds or steps) of one run. ``benchmark``: the training job's record, or
    a list of the records of all the jobs of a run that trains in episodes (its training and its refreshes)."""
    seconds = jobs_seconds(benchmark) if isinstance(benchmark, list) else benchmark_seconds(benchmark)
    steps = training_steps(train_log)
    return {
        "seconds": seconds,
        "steps": steps,
        "seconds_per_step": seconds / steps if seconds is not None and steps else None,
    }


def number_cell(value, digits: int) -> str:
    import pandas as pd  # pandas: only where a frame is made (the DAG is planned without it)

    return "—" if value is None or pd.isna(value) else f"{value:.{digits}f}"


def unrecorded_note(rows: list[dict], benchmarks: list[str]) -> list[str]:
    missing = [
        f"{row['run']} ({path if isinstance(path, str) else 'its episodes: ' + ', '.join(path)})"
        for row, path in zip(rows, benchmarks)
        if row["seconds"] is None
    ]
    return ["", f"No benchmark record (a job run outside Snakemake): {', '.join(missing)}."] if missing else []


def write_training_time_table(
    runs: list[str],
    methods: dict[str, str],
    train_logs,
    benchmarks: list[str],
    markdown_path: str | os.PathLike,
    table_path: str | os.PathLike,
    reference: tuple[str, str] | None = None,
) -> pd.DataFrame:
    """Stage function: the training time of each run of ``runs`` (``methods``: run → method; ``train_logs`` and
    ``benchmarks``, the training jobs' benchmark records, aligned with ``runs``) as Markdown and Parquet
    (:data:`hardneg.io.artifacts.TRAINING_TIME`). ``reference``: (method, label) of the method speed-ups are
    measured against (the one declaring ``Method.speed_reference``: ANCE, as in Table 4 of the STAR/ADORE paper).
    With a run of that method among them, each run's speed-up is that run's seconds over its own (the first such
    run's, when there are several)."""
    import pandas as pd  # pandas: only where a frame is made (the DAG is planned without it)

    method, label = reference if reference is not None else (None, None)
    rows = [
        {"run": run, "method": methods[run], **training_time(log, bench)}
        for run, log, bench in zip(runs, as_paths(train_logs), benchmarks, strict=True)
    ]
    ance = next((row for row in rows if method is not None and row["method"] == method and row["seconds"]), None)
    for row in rows:
        row["speedup_vs_ance"] = ance["seconds"] / row["seconds"] if ance and row["seconds"] else None
    table = pd.DataFrame(rows, columns=artifacts.TRAINING_TIME.schema.names)
    artifacts.write_table(
        pa.Table.from_pandas(table, schema=artifacts.TRAINING_TIME.schema, preserve_index=False),
        artifacts.TRAINING_TIME,
        table_path,
    )
    speedup = ance is not None
    lines = [
        "# Training time",
        "",
        "Wall-clock seconds of each run's training job (Snakemake's benchmark record, "
        "results/<run>/benchmarks/train.tsv: the whole job, loading included), its optimiser steps "
        "(train_log.parquet) and seconds per step; for a run training in episodes (ANCE), all its episodes' "
        "training jobs and the jobs refreshing their negatives (benchmarks/refresh_costs.md). Wall-clock "
        "times depend on the machine and its load.",
        "",
    ]
    header = ["run", "method", "seconds", "steps", "seconds per step", *([f"speed-up against {label}"] * speedup)]
    cells_of_rows = []
    for row in rows:
        cells = [
            row["run"],
            row["method"],
            number_cell(row["seconds"], 1),
            str(row["steps"]),
            number_cell(row["seconds_per_step"], 3),
        ]
        if speedup:
            cells.append(number_cell(row["speedup_vs_ance"], 1) + ("×" if row["speedup_vs_ance"] else ""))
        cells_of_rows.append(cells)
    lines += markdown_table(header, cells_of_rows, "llrrr" + "r" * speedup)
    if not rows:
        lines += ["", "No run of the summary trains."]
    if ance is not None:
        lines += ["", f"Speed-up: the seconds of run {ance['run']} (method {method}) over each run's."]
    elif method is not None:
        lines += [
            "",
            f"No run of method `{method}` is among them, so there is no speed-up column (Table 4 of the "
            f"STAR/ADORE paper gives speed-ups against {label}).",
        ]
    else:
        lines += ["", "No method is declared as the reference of speed-ups, so there is no speed-up column."]
    write_text(markdown_path, "\n".join(lines + unrecorded_note(rows, benchmarks)) + "\n")
    return table


def write_refresh_costs(
    run: str, checkpoints: list[dict], markdown_path: str | os.PathLike, table_path: str | os.PathLike
) -> pd.DataFrame:
    """Stage function: an episodic run's seconds per checkpoint, training it and refreshing the negatives it mines
    (:data:`hardneg.io.artifacts.REFRESH_COSTS`), from ``checkpoints`` as
    :meth:`hardneg.pipeline.episode_plan.EpisodePlan.refresh_benchmarks` gives them (the benchmark records of each
    part's jobs), as Markdown and Parquet: what sizes the Trainer:Inferencer split of a cluster."""
    import pandas as pd  # pandas: only where a frame is made (the DAG is planned without it)

    rows = []
    for entry in checkpoints:
        row = {"checkpoint": entry["checkpoint"]}
        for part in REFRESH_PARTS:
            row[f"{part}_seconds"] = jobs_seconds(entry[part]) if entry[part] else (None if part == "train" else 0.0)
        parts = [row[f"{part}_seconds"] for part in REFRESH_PARTS if part != "train"]
        row["refresh_seconds"] = None if any(value is None for value in parts) else float(sum(parts))
        # mining: the checkpoint's positive scores and pool, then one selection per episode it feeds
        row["episodes_fed"] = max(len(entry["mine"]) - 2, 0)
        rows.append(row)
    table = pd.DataFrame(rows, columns=artifacts.REFRESH_COSTS.schema.names)
    artifacts.write_table(
        pa.Table.from_pandas(table, schema=artifacts.REFRESH_COSTS.schema, preserve_index=False),
        artifacts.REFRESH_COSTS,
        table_path,
    )
    trained = [row for row in rows if row["checkpoint"] is not None]
    train_total = sum(row["train_seconds"] or 0.0 for row in trained)
    refresh_total = sum(row["refresh_seconds"] or 0.0 for row in rows)
    lines = [
        f"# Refresh costs of {run}",
        "",
        "Wall-clock seconds (Snakemake's benchmark records; they depend on the machine and its load) of each "
        "checkpoint's training job and of the refresh its checkpoint feeds: encoding the corpus, building the "
        "index, searching the training queries, and mining the hard negatives of each episode trained on "
        "them. The first row is the warm-up's (inputs.init), whose model mines the first episodes' negatives.",
        "",
    ]
    cells = [
        [
            "warm-up" if row["checkpoint"] is None else f"episode {row['checkpoint']}",
            *(number_cell(row[f"{part}_seconds"], 1) for part in REFRESH_PARTS),
            number_cell(row["refresh_seconds"], 1),
            str(row["episodes_fed"]),
        ]
        for row in rows
    ]
    header = ["checkpoint", "train", "encode", "index", "search", "mine", "refresh", "episodes fed"]
    lines += markdown_table(header, cells, "l" + "r" * 7)
    ratio = f"{refresh_total / train_total:.2f}" if train_total else "—"
    lines += [
        "",
        f"In all: {train_total:.1f} s training, {refresh_total:.1f} s refreshing (refresh / training "
        f"{ratio}). With the asynchronous refresh (ance.lag 1) a refresh runs beside the next episode's "
        f"training: one Inferencer per Trainer keeps up when a checkpoint's refresh takes no longer than "
        f"an episode's training.",
    ]
    write_text(markdown_path, "\n".join(lines) + "\n")
    return table
