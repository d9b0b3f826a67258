"""The summary of the runs (Tables 1 and 2 of the STAR/ADORE paper): one row per run with the evaluation split's
measures and pairwise errors, and significance markers against baseline groups.

This module holds the summary's settings (the config's ``summary`` section and its cross-references), the reading
of each run's metrics.json and per_query.parquet, the Markdown summary and the stage function that writes it all.
The tests behind the markers, and what a marker means, are in :mod:`hardneg.evaluation.summary_markers`; which way
a measure is better and its column title in :mod:`hardneg.evaluation.summary_measures`. The Markdown summary shows
every corrected p-value under the legend, and every test is kept (``summary_tests.parquet``, raw and corrected p)
so each marker can be checked.
"""

from __future__ import annotations

import json
import math
import os
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pyarrow as pa

from hardneg.errors import ConfigError, DataError
from hardneg.evaluation.pairwise import TOTAL_MEASURE, top_measure
from hardneg.evaluation.significance import CORRECTIONS, p_text
from hardneg.evaluation.summary_markers import Group, markers, significance_tests
from hardneg.evaluation.summary_measures import lower_is_better, measure_label
from hardneg.io import artifacts
from hardneg.io.atomic import write_text
from hardneg.io.text import markdown_table
from hardneg.schema.values import check_evaluated_measure, check_run, section_values

if TYPE_CHECKING:
    import pandas as pd

# results/tables/ holds the cross-run tables and results/summary.* the summary: no run may be named so.

_TOP_ERRORS_KEY = re.compile(r"top(\d+)_pairwise_errors")


@dataclass(frozen=True)
class SummarySettings:
    """The config's ``summary`` section as the plan resolves it
    (:meth:`hardneg.pipeline.report_plan.ReportPlan.summary_settings`: ``measures`` given), but ``runs``
    (:meth:`hardneg.pipeline.report_plan.ReportPlan.summary_runs`)."""

    measures: tuple[str, ...]
    p_value: float
    groups: tuple[Group, ...]
    correction: str = "holm"

    @classmethod
    def from_config(cls, section: dict) -> SummarySettings:
        values = section_values(section, ("runs", "measures", "p_value", "correction", "groups"), "summary")
        groups = tuple(
            Group(
                **{
                    **section_values(group, ("marker", "label", "runs"), f"summary.groups.{i}"),
                    "runs": tuple(group["runs"]),
                }
            )
            for i, group in enumerate(values["groups"])
        )
        if values["correction"] not in CORRECTIONS:
            raise ConfigError(
                "summary.correction", f"unknown correction {values['correction']!r}; one of {', '.join(CORRECTIONS)}"
            )
        return cls(
            measures=tuple(values["measures"]),
            p_value=float(values["p_value"]),
            groups=groups,
            correction=values["correction"],
        )


def check_summary_config(config: dict) -> None:
    """Cross-references of a validated config's ``summary`` section: its runs exist, its measures are evaluated,
    the groups' markers differ. Raises a :class:`ConfigError` naming the key. The runs of a group need not be in
    the config: those outside the summary are left out of it."""
    section = config["summary"]
    for i, run in enumerate(section["runs"] or []):
        check_run(config, run, f"summary.runs.{i}")
        if run in section["runs"][:i]:
            raise ConfigError(f"summary.runs.{i}", f"run {run!r} is listed twice")
    for i, measure in enumerate(section["measures"] or []):
        check_evaluated_measure(config, measure, f"summary.measures.{i}")
    markers: dict = {}
    for i, group in enumerate(section["groups"]):
        if group["marker"] in markers:
            raise ConfigError(
                f"summary.groups.{i}.marker",
                f"marker {group['marker']!r} is already the marker of summary.groups.{markers[group['marker']]}",
            )
        markers[group["marker"]] = i
        # a group's runs outside the summary (trimmed from a copy of the config too) are left out, not refused:
        # hardneg.pipeline.report_plan.ReportPlan.summary_settings


# ------------------------------------------------------------------------------------------------ inputs
def as_paths(value) -> list[str]:
    """A list of paths from one path or several (Snakemake gives a named input of one file as a string)."""
    return [str(value)] if isinstance(value, (str, os.PathLike)) else [str(path) for path in value]


def pairwise_depth(metrics: dict, path: str | os.PathLike) -> int:
    """The K of a metrics.json's top-K pairwise errors (its key ``top<K>_pairwise_errors``)."""
    depths = [
        int(match.group(1)) for key in metrics.get("pairwise_errors", {}) if (match := _TOP_ERRORS_KEY.fullmatch(key))
    ]
    if len(depths) != 1:
        raise DataError(
            path,
            None,
            "metrics.json has no top-K pairwise errors (pairwise_errors.top<K>_pairwise_"
            "errors): evaluate the run again",
        )
    return depths[0]


def read_metrics(path: str | os.PathLike) -> dict:
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except FileNotFoundError:
        raise DataError(path, None, "metrics file does not exist") from None
    except json.JSONDecodeError as exc:
        raise DataError(path, exc.lineno, f"invalid JSON: {exc.msg}") from None


def per_query_frame(path: str | os.PathLike, measures: list[str]) -> pd.DataFrame:
    """A per_query.parquet as a frame: index query id, one column per measure of ``measures``."""
    table = artifacts.read_table(artifacts.PER_QUERY_METRICS, path).to_pandas()
    frame = table.pivot(index="qid", columns="measure", values="value")
    missing = [m for m in measures if m not in frame.columns]
    if missing:
        raise DataError(path, None, f"no per-query values of {', '.join(missing)}: evaluate the run again")
    return frame[measures]


# ------------------------------------------------------------------------------------------------ output
def _value(measure: str, value: float, lower_bound: bool) -> str:
    text = f"{value:.1f}" if lower_is_better(measure) else f"{value:.3f}"
    return f"≥ {text}" if lower_bound else text


_CORRECTION_TEXT = {
    "holm": "corrected with Holm's step-down method",
    "bonferroni": "corrected with Bonferroni's method",
    "none": "uncorrected",
}


def _legend(
    groups: tuple[Group, ...], runs: list[str], settings: SummarySettings, split: str, queries: list[int], families: int
) -> list[str]:
    count = f"the {queries[0]} queries" if len(set(queries)) == 1 else "the queries"
    lines = [
        f"Evaluation split `{split}`, {count} with a relevant document. Pairwise errors are per query (fewer is "
        f"better); ≥ marks a lower bound (the run's ranking stops before some relevant documents, counted as "
        f"ranked just after it)."
    ]
    if not groups:
        return lines + ["", "No baseline groups (summary.groups): no significance markers."]
    family = (
        f" over the {families} tests of each measure, one per run and baseline run"
        if settings.correction != "none"
        else ""
    )
    lines += [
        "",
        f"Markers: a value carries a group's marker when a two-sided paired t-test "
        f"(scipy.stats.ttest_rel over {count} of split `{split}`, paired by query) gives a p-value below "
        f"{settings.p_value:g}, {_CORRECTION_TEXT[settings.correction]}{family}, and a better mean "
        f"against every run of the group in the summary, the run itself aside (never for a lower bound). "
        f"Every test, raw and corrected p: summary_tests.parquet.",
        "",
    ]
    for group in groups:
        present = [run for run in group.runs if run in runs]
        absent = [run for run in group.runs if run not in runs]
        members = ", ".join(present) + (f"; {', '.join(absent)} not in the summary" if present and absent else "")
        members = members or ", ".join(group.runs)
        name = f"{group.label} ({members})" if group.label else members
        lines.append(
            f"- {group.marker} {name}"
            + ("" if present else ": no run of this group is in the summary; it marks nothing")
        )
    return lines


def p_value_table(tests: pd.DataFrame, measures: list[str], settings: SummarySettings) -> list[str]:
    """The p-values behind the markers as Markdown lines: a row per (run, baseline run) tested, a column per
    measure, each cell the corrected p (``–``: no test, every difference 0) and, in brackets, the smallest
    difference the queries could detect (:func:`hardneg.evaluation.significance.detectable_difference`) beside the
    difference found; an empty list without tests."""
    if tests.empty:
        return []
    cells = {
        (r, b, m): (p, d, x)
        for r, b, m, p, d, x in zip(
            tests["run"],
            tests["baseline"],
            tests["measure"],
            tests["p_corrected"],
            tests["mean_difference"],
            tests["detectable"],
        )
    }
    pairs = list(dict.fromkeys(zip(tests["run"], tests["baseline"])))
    queries = int(tests["num_queries"].max())
    lines = [
        "",
        f"p-values of the two-sided paired t-tests, {_CORRECTION_TEXT[settings.correction]} (– : no test, "
        f"every difference 0); in brackets the difference found and the smallest difference these "
        f"{queries:,} queries could detect (p < {settings.p_value:g}, 80% power, from the spread of the "
        f"per-query differences): a difference below it is seldom significant, whatever the method "
        f"does:",
        "",
    ]
    rows = [
        [run, baseline, *(_p_cell(*cells.get((run, baseline, m), (float("nan"),) * 3)) for m in measures)]
        for run, baseline in pairs
    ]
    header = ["run", "baseline", *(measure_label(m) for m in measures)]
    return lines + markdown_table(header, rows, "ll" + "r" * len(measures))


def _p_cell(p: float, difference: float, detectable: float) -> str:
    """A cell of the p-value table: ``0.040 (+0.012; ≥ 0.025)``."""
    if math.isnan(detectable):
        return p_text(p)
    return f"{p_text(p)} ({difference:+.3f}; ≥ {detectable:.3f})"


def summary_markdown(
    table: pd.DataFrame, measures: list[str], settings: SummarySettings, tests: pd.DataFrame | None = None
) -> str:
    """The summary as Markdown: a row per run of ``table`` (the rows of summary.parquet), each value followed by
    its markers, then the legend and, given ``tests`` (the rows of summary_tests.parquet), the corrected p-value
    of each test."""
    import pandas as pd  # pandas: only where a frame is made (the DAG is planned without it)

    tests = tests if tests is not None else pd.DataFrame(columns=artifacts.SUMMARY_TESTS.schema.names)
    split = table["split"].iloc[0] if len(table) else ""
    lines = [
        f"# Summary: split `{split}`",
        "",
    ]
    rows = [
        [
            row["run"],
            row["method"],
            *(
                _value(m, row[m], m == TOTAL_MEASURE and row["total_is_lower_bound"]) + row[f"{m} markers"]
                for m in measures
            ),
        ]
        for row in table.to_dict("records")
    ]
    lines += markdown_table(["run", "method", *(measure_label(m) for m in measures)], rows, "ll" + "r" * len(measures))
    families = len(set(zip(tests["run"], tests["baseline"])))
    lines += [""] + _legend(
        settings.groups, list(table["run"]), settings, split, [int(q) for q in table["num_queries"]], families
    )
    lines += p_value_table(tests, measures, settings)
    return "\n".join(lines) + "\n"


def write_summary(
    runs: list[str],
    methods: dict[str, str],
    metrics_paths,
    per_query_paths,
    settings: dict,
    markdown_path: str | os.PathLike,
    table_path: str | os.PathLike,
    tests_path: str | os.PathLike,
) -> pd.DataFrame:
    """Stage function: the summary of ``runs`` (in order; ``methods``: run → method name) from each run's
    metrics.json and per_query.parquet (paths aligned with ``runs``) under ``settings`` (the config's ``summary``
    section). Writes the Markdown table (with the corrected p-values under its legend), summary.parquet (means and
    markers) and summary_tests.parquet (every t-test: means, t, two-sided p raw and corrected); returns the
    summary's rows."""
    import pandas as pd  # pandas: only where a frame is made (the DAG is planned without it)

    settings_ = SummarySettings.from_config(settings)
    metrics_paths, per_query_paths = as_paths(metrics_paths), as_paths(per_query_paths)
    if not runs:
        raise ConfigError(
            "summary.runs", "no run to summarise: name runs in summary.runs or targets, or evaluate one first"
        )
    records = {run: read_metrics(path) for run, path in zip(runs, metrics_paths, strict=True)}
    depths = {pairwise_depth(records[run], path) for run, path in zip(runs, metrics_paths)}
    if len(depths) != 1:
        raise DataError(metrics_paths[0], None, f"the runs' top-K pairwise errors differ in K ({sorted(depths)})")
    depth = depths.pop()
    measures = list(settings_.measures) + [top_measure(depth), TOTAL_MEASURE]
    per_query = {run: per_query_frame(path, measures) for run, path in zip(runs, per_query_paths, strict=True)}
    lower_bounds = {
        run: {TOTAL_MEASURE} if records[run]["pairwise_errors"]["total_is_lower_bound"] else set() for run in runs
    }
    tests = significance_tests(
        per_query,
        measures,
        settings_.groups,
        settings_.p_value,
        lower_bounds,
        sources=dict(zip(runs, per_query_paths)),
        correction=settings_.correction,
    )
    found = markers(tests, runs, measures, settings_.groups)
    rows = []
    for run, path in zip(runs, metrics_paths):
        record = records[run]
        missing = [m for m in settings_.measures if m not in record.get("measures", {})]
        if missing:
            raise DataError(path, None, f"metrics.json has no {', '.join(missing)}: evaluate the run again")
        errors = record["pairwise_errors"]
        means = {
            **{m: float(record["measures"][m]) for m in settings_.measures},
            top_measure(depth): float(errors[f"top{depth}_pairwise_errors"]),
            TOTAL_MEASURE: float(errors["total_pairwise_errors"]),
        }
        row = {"run": run, "method": methods[run], "split": record["split"], "num_queries": record["num_queries"]}
        for measure in measures:
            row[measure], row[f"{measure} markers"] = means[measure], found[(run, measure)]
        rows.append({**row, "total_is_lower_bound": bool(errors["total_is_lower_bound"])})
    splits = {row["split"] for row in rows}
    if len(splits) != 1:
        raise DataError(metrics_paths[0], None, f"the runs were evaluated on different splits ({sorted(splits)})")
    table = pd.DataFrame(rows)
    kind = artifacts.summary_kind(measures)
    artifacts.write_table(pa.Table.from_pandas(table, preserve_index=False), kind, table_path)
    tests_table = (
        pa.Table.from_pandas(tests, preserve_index=False)
        if len(tests)
        else artifacts.SUMMARY_TESTS.schema.empty_table()
    )
    artifacts.write_table(tests_table, artifacts.SUMMARY_TESTS, tests_path)
    write_text(markdown_path, summary_markdown(table, measures, settings_, tests))
    return table
