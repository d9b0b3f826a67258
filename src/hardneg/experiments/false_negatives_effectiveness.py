"""The false-negative experiment's effectiveness page (``results/false_negatives/effectiveness.{parquet,md}``,
rule ``false_negatives_effectiveness``): with the section's ``train``, the STAR run trained on each policy's
negatives against the reference policy's run, measure by measure, with paired tests over the evaluation queries
(:func:`hardneg.evaluation.compare.compare_runs`). :mod:`hardneg.experiments.false_negatives` declares the
experiment and generates the runs."""

from __future__ import annotations

import os

import pyarrow as pa

from hardneg.evaluation.compare import compare_runs
from hardneg.evaluation.significance import p_text
from hardneg.evaluation.summary import as_paths, per_query_frame
from hardneg.evaluation.summary_measures import measure_label
from hardneg.io import artifacts
from hardneg.io.artifacts import ArtifactKind
from hardneg.io.atomic import write_text
from hardneg.io.text import markdown_table

EFFECTIVENESS = ArtifactKind(
    "false_negatives_effectiveness",
    pa.schema(
        [
            ("policy", pa.string()),
            ("run", pa.string()),  # the generated STAR run trained on the policy's negatives
            ("measure", pa.string()),
            ("num_queries", pa.int64()),  # evaluation queries, paired by query id
            ("mean", pa.float64()),
            ("delta", pa.float64()),  # mean - the reference's mean (0 for the reference)
            ("wins", pa.int64()),
            ("ties", pa.int64()),
            ("losses", pa.int64()),  # against the reference, per query
            ("p_t", pa.float64()),  # two-sided paired t-test (null for the reference)
            ("p_randomisation", pa.float64()),  # two-sided paired randomisation test
            ("p_t_corrected", pa.float64()),  # corrected over the policies compared with the reference
            ("p_randomisation_corrected", pa.float64()),
            ("effect_size", pa.float64()),  # Cohen's d_z
        ]
    ),
    "the runs of the false-negative experiment, one per policy, on the evaluation split: each measure's mean and "
    "paired tests against the reference policy's run",
)


def effectiveness_table(
    policies: list[str], runs: list[str], per_query_paths, measures: list[str], *, correction: str = "holm"
) -> pa.Table:
    """Each policy's run against the reference policy's on each measure, query by query.

    :param policies: the policies, the reference first; ``runs``: the run trained on each (aligned).
    :param per_query_paths: each run's per_query.parquet (aligned), over the same evaluation queries.
    :param measures: the measures compared (each in every per_query file).
    :param correction: how the p-values are corrected over the policies compared with the reference (``holm``,
        ``bonferroni``, ``none``), per measure and kind of test.
    :returns: an :data:`EFFECTIVENESS` table, one row per policy and measure (measures outer, policies inner); the
        reference's rows have delta 0 and no tests.
    :raises DataError: a per_query file missing or without a measure; :raises HardnegError: runs evaluated on
        different queries.
    """
    frames = {run: per_query_frame(path, measures) for run, path in zip(runs, per_query_paths, strict=True)}
    rows = []
    for measure in measures:
        values = {run: frames[run][measure] for run in runs}
        sources = {run: str(path) for run, path in zip(runs, per_query_paths)}
        comparison = compare_runs(values, measure, correction=correction, sources=sources) if len(runs) > 1 else None
        queries = len(values[runs[0]])
        rows.append(
            {
                "policy": policies[0],
                "run": runs[0],
                "measure": measure,
                "num_queries": queries,
                "mean": float(values[runs[0]].mean()),
                "delta": 0.0,
                "wins": 0,
                "ties": queries,
                "losses": 0,
                "p_t": None,
                "p_randomisation": None,
                "p_t_corrected": None,
                "p_randomisation_corrected": None,
                "effect_size": None,
            }
        )
        for policy, row in zip(policies[1:], comparison.rows if comparison else ()):
            rows.append(
                {
                    "policy": policy,
                    "run": row.run,
                    "measure": measure,
                    "num_queries": queries,
                    "mean": row.mean,
                    "delta": row.delta,
                    "wins": row.wins,
                    "ties": row.ties,
                    "losses": row.losses,
                    "p_t": row.p_t,
                    "p_randomisation": row.p_randomisation,
                    "p_t_corrected": row.p_t_corrected,
                    "p_randomisation_corrected": row.p_randomisation_corrected,
                    "effect_size": row.effect_size,
                }
            )
    return pa.Table.from_pylist(rows, schema=EFFECTIVENESS.schema)


def effectiveness_markdown(table: pa.Table, *, split: str, correction: str = "holm") -> str:
    """The effectiveness table as a Markdown page: one row per policy, per measure its mean, Δ against the
    reference and the corrected p-values of the paired t-test and randomisation test."""
    frame = table.to_pandas()
    measures = list(dict.fromkeys(frame["measure"]))
    order = list(dict.fromkeys(frame["policy"]))
    header = ["policy", "run"] + [
        part for m in measures for part in (measure_label(m), f"Δ {measure_label(m)}", "p t-test", "p rand.")
    ]
    lines = [
        "# False negatives: training on each policy's negatives",
        "",
        f"One STAR run per policy, each continuing the miner on the negatives its policy selected, evaluated on "
        f"split `{split}` (queries paired by id) against the reference `{order[0]}`.",
        "",
    ]
    rows = []
    for policy in order:
        mine = frame[frame["policy"] == policy].set_index("measure")
        cells = [f"**{policy}** (reference)" if policy == order[0] else policy, mine["run"].iloc[0]]
        for measure in measures:
            row = mine.loc[measure]
            first = policy == order[0]
            cells += [
                f"{row['mean']:.3f}",
                "" if first else f"{row['delta']:+.3f}",
                "" if first else p_text(_float(row["p_t_corrected"])),
                "" if first else p_text(_float(row["p_randomisation_corrected"])),
            ]
        rows.append(cells)
    lines += markdown_table(header, rows, "ll" + "r" * (len(header) - 2))
    name = {"holm": "Holm's step-down correction", "bonferroni": "Bonferroni's correction", "none": "no correction"}[
        correction
    ]
    lines += [
        "",
        f"Two-sided paired tests of the per-query differences (scipy.stats.ttest_rel and the randomisation "
        f"test, hardneg.evaluation.significance), p-values with {name} over the policies compared with the "
        f"reference, per measure. Every test, raw and corrected: effectiveness.parquet.",
    ]
    return "\n".join(lines) + "\n"


def _float(value) -> float:
    import pandas as pd  # pandas: only where a frame is made (the DAG is planned without it)

    return float("nan") if value is None or pd.isna(value) else float(value)


def write_effectiveness(
    policies: list[str],
    runs: list[str],
    per_query_paths,
    measures: list[str],
    split: str,
    table_path: str | os.PathLike,
    markdown_path: str | os.PathLike,
    *,
    correction: str = "holm",
) -> pa.Table:
    """Stage function: :func:`effectiveness_table` written as Parquet (:data:`EFFECTIVENESS`) and Markdown
    (:func:`effectiveness_markdown`; ``split``: the evaluation split, named on the page), both atomically."""
    table = effectiveness_table(policies, runs, as_paths(per_query_paths), measures, correction=correction)
    artifacts.write_table(table, EFFECTIVENESS, table_path)
    write_text(markdown_path, effectiveness_markdown(table, split=split, correction=correction))
    return table
