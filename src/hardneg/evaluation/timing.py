"""Training-time tables: the training time of each trained run (Table 4 of the STAR/ADORE paper) and ADORE with
each index of the PQ experiment (Table 5).

A run's training time is the wall clock of its training job as Snakemake's benchmark record gives it
(``results/<run>/benchmarks/train.tsv``, column ``s``: the whole job, loading included; a resumed job counts
its last attempt only), its steps those of its training log. These are the only figures of the summary a seed
does not reproduce: they depend on the machine and its load.
"""

from __future__ import annotations

import csv
import json
import os

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from hardneg.errors import DataError
from hardneg.evaluation.summary import as_paths, measure_label
from hardneg.io import artifacts
from hardneg.io.atomic import write_text

ANCE = "ance"  # the method Table 4 of the paper measures speed-ups against
# The parts of an episodic run's work (hardneg.pipeline.plan.Plan.refresh_benchmarks): training, and refreshing
# its negatives
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
    return None if any(value is None for value in seconds) else float(sum(seconds))


def training_time(train_log: str | os.PathLike, benchmark) -> dict:
    """``seconds`` (wall clock of the training job, None without a benchmark record), ``steps`` and
    ``seconds_per_step`` (None without seconds or steps) of one run. ``benchmark``: the training job's record, or
    a list of the records of all the jobs of a run that trains in episodes (its training and its refreshes)."""
    seconds = jobs_seconds(benchmark) if isinstance(benchmark, list) else benchmark_seconds(benchmark)
    steps = training_steps(train_log)
    return {"seconds": seconds, "steps": steps,
            "seconds_per_step": seconds / steps if seconds is not None and steps else None}


def _number(value, digits: int) -> str:
    return "—" if value is None or pd.isna(value) else f"{value:.{digits}f}"


def _unrecorded_note(rows: list[dict], benchmarks: list[str]) -> list[str]:
    missing = [f"{row['run']} ({path if isinstance(path, str) else 'its episodes: ' + ', '.join(path)})"
               for row, path in zip(rows, benchmarks) if row["seconds"] is None]
    return ["", f"No benchmark record (a job run outside Snakemake): {', '.join(missing)}."] if missing else []


def write_training_time_table(runs: list[str], methods: dict[str, str], train_logs,
                              benchmarks: list[str], markdown_path: str | os.PathLike,
                              table_path: str | os.PathLike) -> pd.DataFrame:
    """Stage function: the training time of each run of ``runs`` (``methods``: run → method; ``train_logs`` and
    ``benchmarks``, the training jobs' benchmark records, aligned with ``runs``) as Markdown and Parquet
    (:data:`hardneg.io.artifacts.TRAINING_TIME`). With a run of method ``ance`` among them, each run's speed-up is
    the ANCE run's seconds over its own (the first ANCE run's, when there are several)."""
    rows = [{"run": run, "method": methods[run], **training_time(log, bench)}
            for run, log, bench in zip(runs, as_paths(train_logs), benchmarks, strict=True)]
    ance = next((row for row in rows if row["method"] == ANCE and row["seconds"]), None)
    for row in rows:
        row["speedup_vs_ance"] = ance["seconds"] / row["seconds"] if ance and row["seconds"] else None
    table = pd.DataFrame(rows, columns=artifacts.TRAINING_TIME.schema.names)
    artifacts.write_table(pa.Table.from_pandas(table, schema=artifacts.TRAINING_TIME.schema, preserve_index=False),
                          artifacts.TRAINING_TIME, table_path)
    speedup = ance is not None
    lines = ["# Training time", "",
             "Wall-clock seconds of each run's training job (Snakemake's benchmark record, "
             "results/<run>/benchmarks/train.tsv: the whole job, loading included), its optimiser steps "
             "(train_log.parquet) and seconds per step; for a run training in episodes (ANCE), all its episodes' "
             "training jobs and the jobs refreshing their negatives (benchmarks/refresh_costs.md). Wall-clock "
             "times depend on the machine and its load.", "",
             "| run | method | seconds | steps | seconds per step |" + (" speed-up against ANCE |" if speedup else ""),
             "|---|---|---:|---:|---:|" + ("---:|" if speedup else "")]
    for row in rows:
        cells = [row["run"], row["method"], _number(row["seconds"], 1), str(row["steps"]),
                 _number(row["seconds_per_step"], 3)]
        if speedup:
            cells.append(_number(row["speedup_vs_ance"], 1) + ("×" if row["speedup_vs_ance"] else ""))
        lines.append("| " + " | ".join(cells) + " |")
    if not rows:
        lines += ["", "No run of the summary trains."]
    if speedup:
        lines += ["", f"Speed-up: the seconds of run {ance['run']} (method {ANCE}) over each run's."]
    else:
        lines += ["", f"No run of method `{ANCE}` is among them, so there is no speed-up column (Table 4 of the "
                      f"STAR/ADORE paper gives speed-ups against ANCE)."]
    write_text(markdown_path, "\n".join(lines + _unrecorded_note(rows, benchmarks)) + "\n")
    return table


def write_adore_index_table(indexes: list[str], runs: list[str], metrics_paths, train_logs,
                            benchmarks: list[str], measures: list[str], docs: str,
                            markdown_path: str | os.PathLike, table_path: str | os.PathLike) -> pd.DataFrame:
    """Stage function: for each index of ``indexes`` the ADORE run trained with it (``runs``), its mean of each
    of ``measures`` evaluated with that same index (``metrics_paths``), and its training time (``train_logs``,
    ``benchmarks``), all aligned; ``docs`` is the run whose documents the index holds. Markdown and Parquet
    (:func:`hardneg.io.artifacts.adore_indexes_kind`)."""
    rows = []
    for index, run, path, log, bench in zip(indexes, runs, as_paths(metrics_paths), as_paths(train_logs), benchmarks,
                                            strict=True):
        with open(path, encoding="utf-8") as handle:
            values = json.load(handle)["measures"]
        missing = [m for m in measures if m not in values]
        if missing:
            raise DataError(path, None, f"metrics.json has no {', '.join(missing)}: evaluate the run again")
        rows.append({"index": index, "run": run, **{m: float(values[m]) for m in measures},
                     **training_time(log, bench)})
    kind = artifacts.adore_indexes_kind(measures)
    table = pd.DataFrame(rows, columns=kind.schema.names)
    artifacts.write_table(pa.Table.from_pandas(table, schema=kind.schema, preserve_index=False), kind, table_path)
    lines = ["# ADORE with each index", "",
             f"ADORE trained with each index of pq_matrix.indexes over the documents of run `{docs}`, evaluated "
             f"with that same index; training time as in training_time.md (wall clock, machine-dependent).", "",
             "| index | run | " + " | ".join(measure_label(m) for m in measures) + " | seconds | steps | "
             "seconds per step |",
             "|---|---|" + "---:|" * (len(measures) + 3)]
    for row in rows:
        cells = [row["index"], row["run"], *(f"{row[m]:.3f}" for m in measures), _number(row["seconds"], 1),
                 str(row["steps"]), _number(row["seconds_per_step"], 3)]
        lines.append("| " + " | ".join(cells) + " |")
    write_text(markdown_path, "\n".join(lines + _unrecorded_note(rows, benchmarks)) + "\n")
    return table


def write_refresh_costs(run: str, checkpoints: list[dict], markdown_path: str | os.PathLike,
                        table_path: str | os.PathLike) -> pd.DataFrame:
    """Stage function: an episodic run's seconds per checkpoint, training it and refreshing the negatives it mines
    (:data:`hardneg.io.artifacts.REFRESH_COSTS`), from ``checkpoints`` as
    :meth:`hardneg.pipeline.plan.Plan.refresh_benchmarks` gives them (the benchmark records of each part's jobs), as
    Markdown and Parquet: what sizes the Trainer:Inferencer split of a cluster."""
    rows = []
    for entry in checkpoints:
        row = {"checkpoint": entry["checkpoint"]}
        for part in REFRESH_PARTS:
            row[f"{part}_seconds"] = jobs_seconds(entry[part]) if entry[part] else (None if part == "train" else 0.0)
        parts = [row[f"{part}_seconds"] for part in REFRESH_PARTS if part != "train"]
        row["refresh_seconds"] = None if any(value is None for value in parts) else float(sum(parts))
        row["episodes_fed"] = len(entry["mine"]) // 2
        rows.append(row)
    table = pd.DataFrame(rows, columns=artifacts.REFRESH_COSTS.schema.names)
    artifacts.write_table(pa.Table.from_pandas(table, schema=artifacts.REFRESH_COSTS.schema, preserve_index=False),
                          artifacts.REFRESH_COSTS, table_path)
    trained = [row for row in rows if row["checkpoint"] is not None]
    train_total = sum(row["train_seconds"] or 0.0 for row in trained)
    refresh_total = sum(row["refresh_seconds"] or 0.0 for row in rows)
    lines = [f"# Refresh costs of {run}", "",
             "Wall-clock seconds (Snakemake's benchmark records; they depend on the machine and its load) of each "
             "checkpoint's training job and of the refresh its checkpoint feeds: encoding the corpus, building the "
             "index, searching the training queries, and mining the hard negatives of each episode trained on "
             "them. The first row is the warm-up's (inputs.init), whose model mines the first episodes' negatives.",
             "",
             "| checkpoint | train | encode | index | search | mine | refresh | episodes fed |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for row in rows:
        name = "warm-up" if row["checkpoint"] is None else f"episode {row['checkpoint']}"
        cells = [name, *(_number(row[f"{part}_seconds"], 1) for part in REFRESH_PARTS),
                 _number(row["refresh_seconds"], 1), str(row["episodes_fed"])]
        lines.append("| " + " | ".join(cells) + " |")
    ratio = f"{refresh_total / train_total:.2f}" if train_total else "—"
    lines += ["", f"In all: {train_total:.1f} s training, {refresh_total:.1f} s refreshing (refresh / training "
                  f"{ratio}). With the asynchronous refresh (ance.lag 1) a refresh runs beside the next episode's "
                  f"training: one Inferencer per Trainer keeps up when a checkpoint's refresh takes no longer than "
                  f"an episode's training."]
    write_text(markdown_path, "\n".join(lines) + "\n")
    return table
