"""README.md's results tables, made from the ``metrics.json`` files under ``results/``: one row per run (MRR@10,
nDCG@10, R@100 and the pairwise errors of Table 1 of the STAR/ADORE paper) and the Adaptive Batch Scheduling
table (each schedule without and with Condenser pre-training). Which runs they show, and with which labels, is
the config's ``tables`` section (validated: :func:`table_rows` reads one of its lists).

``hardneg table`` prints the first for the runs that have metrics; ``benchmarks/synthetic_results.py`` builds every
run of the default config and prints both. A test builds the main target from nothing and finds its rows in
README.md as printed, so the numbers there are what the code at that commit gives.
"""

from __future__ import annotations

import json
import math
import os
import statistics
from pathlib import Path

from hardneg.errors import DataError, HardnegError
from hardneg.io.text import markdown_table

MEASURES = [("RR@10", "MRR@10"), ("nDCG@10", "nDCG@10"), ("R@100", "R@100")]
ABS_MEASURES = [("RR@10", "MRR@10"), ("RR@100", "MRR@100"), ("R@100", "R@100")]


_PAIRWISE = ("top200_pairwise_errors", "total_pairwise_errors")


def _json_type(value) -> str:
    """What a JSON value is, in JSON's words."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    kinds: dict[type, str] = {str: "a string", list: "an array", dict: "an object"}
    return kinds.get(type(value), type(value).__name__)


def _broken(path: Path, line: int | None, problem: str) -> DataError:
    return DataError(path, line, f"{problem}; rebuild it with snakemake --force {path}")


def _field(path: Path, record: dict, keys: tuple[str, ...], kind: str):
    """The value under ``keys`` (nested) of ``record``, checked to be a JSON ``kind``: ``object``, ``boolean``
    or ``number`` (finite). A DataError naming the key (``measures.RR@10``) otherwise."""
    value = record
    for depth, key in enumerate(keys):
        if key not in value:
            raise _broken(path, None, f"{'.'.join(keys[: depth + 1])} is missing")
        value = value[key]
    name = ".".join(keys)
    if kind == "number":
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise _broken(path, None, f"{name} is {_json_type(value)} ({json.dumps(value)[:40]}), not a number")
        if not math.isfinite(value):
            raise _broken(path, None, f"{name} is {json.dumps(value)}, not a finite number")
    elif _json_type(value) != f"a{'n' if kind == 'object' else ''} {kind}":
        raise _broken(path, None, f"{name} is {_json_type(value)}, not a{'n' if kind == 'object' else ''} {kind}")
    return value


def read_metrics(path: str | os.PathLike, measures: list[str], *, pairwise: bool = True) -> dict:
    """The record of a run's ``metrics.json`` at ``path``, checked to hold what the tables print: a finite number
    under ``measures`` for each of ``measures`` and, with ``pairwise``, the ``pairwise_errors`` (top-200 and total
    as finite numbers, ``total_is_lower_bound`` as a boolean). A DataError naming the file (and the line, for a
    JSON syntax error) and what is wrong otherwise."""
    path = Path(path)
    if not path.is_file():
        raise DataError(path, None, "not a file: a run's metrics.json is the JSON file its evaluation writes")
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as exc:
        raise _broken(path, None, f"invalid UTF-8 ({exc.reason} at byte {exc.start})") from None
    except json.JSONDecodeError as exc:
        raise _broken(path, exc.lineno, f"invalid JSON: {exc.msg} (column {exc.colno})") from None
    if not isinstance(record, dict):
        raise _broken(path, None, f"holds {_json_type(record)}, not the JSON object of a run's metrics")
    _field(path, record, ("measures",), "object")
    for measure in measures:
        _field(path, record, ("measures", measure), "number")
    if pairwise:
        _field(path, record, ("pairwise_errors",), "object")
        for key in _PAIRWISE:
            _field(path, record, ("pairwise_errors", key), "number")
        _field(path, record, ("pairwise_errors", "total_is_lower_bound"), "boolean")
    return record


def _metrics(results: str | os.PathLike, run: str, measures: list[str], *, pairwise: bool = True) -> dict:
    path = Path(results) / run / "metrics.json"
    if not path.exists():
        raise HardnegError(f"run {run} has no metrics: {path} is missing; build it with snakemake {path}")
    return read_metrics(path, measures, pairwise=pairwise)


def spread(values: list[float], digits: int) -> str:
    """One value as it is; several as their mean ± sample standard deviation (n - 1), both to ``digits``."""
    if len(values) == 1:
        return f"{values[0]:.{digits}f}"
    return f"{statistics.fmean(values):.{digits}f} ± {statistics.stdev(values):.{digits}f}"


def runs_table(
    results: str | os.PathLike,
    rows: list[tuple[str, str]],
    replicates: dict[str, list[str]] | None = None,
    baseline: str | None = None,
    p_value: float = 0.05,
) -> str:
    """The Markdown table of ``rows`` (run, label): the evaluation split's MRR@10, nDCG@10, R@100, and the
    pairwise errors per query in the top 200 and over the whole corpus (marked ≥ where the ranking stops short, so
    the count is a lower bound). A run with replicates (``replicates``: run → its runs, one per seed;
    :func:`hardneg.pipeline.replicates.replicates`) is one row of the mean ± standard deviation over the
    replicates that have metrics, its label saying over how many seeds (``(3 seeds)``, ``(1 of 3 seeds)``).
    ``baseline``: a run compared with every other row on MRR@10 query by query (:func:`baseline_cell`), in a last
    column."""
    compared = [f"MRR@10 vs {baseline}: Δ (p; smallest detectable)"] if baseline else []
    header = ["run", *(label for _, label in MEASURES), "top-200 pairwise errors", "total pairwise errors", *compared]
    cells = []
    replicates = replicates or {}
    for run, label in rows:
        members = replicates.get(run, [run])
        present = [member for member in members if (Path(results) / member / "metrics.json").is_file()] or [run]
        records = [_metrics(results, member, [m for m, _ in MEASURES]) for member in present]
        errors = [record["pairwise_errors"] for record in records]
        bound = " (≥)" if any(e["total_is_lower_bound"] for e in errors) else ""
        seeds = (
            ""
            if len(members) == 1
            else f" ({len(members)} seeds)"
            if len(present) == len(members)
            else f" ({len(present)} of {len(members)} seeds)"
        )
        cell = []
        if baseline:
            cell = [baseline_cell(results, run, baseline, p_value) if len(members) == 1 else "seeds: see above"]
        cells.append(
            [
                f"{label}{seeds}",
                *(spread([r["measures"][m] for r in records], 3) for m, _ in MEASURES),
                spread([e["top200_pairwise_errors"] for e in errors], 1),
                f"{spread([e['total_pairwise_errors'] for e in errors], 1)}{bound}",
                *cell,
            ]
        )
    return "\n".join(markdown_table(header, cells)) + "\n"


def baseline_cell(
    results: str | os.PathLike, run: str, baseline: str, p_value: float = 0.05, measure: str = "RR@10"
) -> str:
    """``run`` against ``baseline`` on the evaluation split's ``measure``, query by query (their
    ``per_query.parquet``): the mean difference, the two-sided paired t-test's p and the smallest difference these
    queries could detect at ``p_value`` with 80% power
    (:func:`hardneg.evaluation.significance.detectable_difference`), e.g. ``+0.012 (p 0.210; ≥ 0.031)``; ``–``
    for the baseline itself."""
    # numpy and pyarrow, with the summary's tables: kept out of the command line's start
    from hardneg.evaluation.significance import detectable_difference, p_text
    from hardneg.evaluation.summary import per_query_frame
    from hardneg.evaluation.summary_markers import paired_t_test

    if run == baseline:
        return "–"
    frames = {
        name: per_query_frame(Path(results) / name / "per_query.parquet", [measure])[measure]
        for name in (run, baseline)
    }
    try:
        test = paired_t_test(frames[run], frames[baseline])
    except ValueError:
        raise DataError(
            Path(results) / run / "per_query.parquet",
            None,
            f"run {run!r} was evaluated on other queries than the baseline {baseline!r}: no paired comparison",
        ) from None
    differences = (frames[run] - frames[baseline].reindex(frames[run].index)).to_numpy()
    return (
        f"{test.run_mean - test.baseline_mean:+.3f} (p {p_text(test.p)}; "
        f"≥ {detectable_difference(differences, p_value):.3f})"
    )


def table_rows(rows: list[dict]) -> list[tuple[str, str]]:
    """(run, label) of each row of a table of the config (``tables.results``, ``tables.distillation``,
    ``tables.abs.rows``);
    a row without a label is labelled with its run."""
    return [(row["run"], row["label"] or row["run"]) for row in rows]


def abs_table(results: str | os.PathLike, section: dict) -> str:
    """The runs of the ABS report's tables (``section``: the config's ``tables.abs``): each batch schedule of
    ``rows`` under each pre-training of ``pretraining`` (the prefix of its runs' names)."""
    cells = []
    for block in section["pretraining"]:
        prefix, pretraining = block["prefix"], block["label"]
        for run, label in table_rows(section["rows"]):
            measures = _metrics(results, f"{prefix}{run}", [m for m, _ in ABS_MEASURES], pairwise=False)["measures"]
            cells.append([f"{label} (`{prefix}{run}`)", pretraining, *(f"{measures[m]:.3f}" for m, _ in ABS_MEASURES)])
    header = ["batches", "pre-training", *(label for _, label in ABS_MEASURES)]
    return "\n".join(markdown_table(header, cells)) + "\n"


def available_rows(results: str | os.PathLike, tables: dict, runs: list[str] | None = None) -> list[tuple[str, str]]:
    """The rows to show: ``runs`` (with their label in the config's ``tables`` where it has one), or else every run
    of the results and TCT tables of ``tables`` that has metrics under ``results``, in the tables' order."""
    rows = table_rows(tables["results"]) + table_rows(tables["distillation"])
    labels = dict(rows)
    if runs:
        return [(run, labels.get(run, run)) for run in runs]
    return [(run, label) for run, label in rows if (Path(results) / run / "metrics.json").is_file()]
