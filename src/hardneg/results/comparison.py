"""Finished runs compared query by query, read from their files under a results folder: what ``hardneg compare``
prints (:mod:`hardneg.results.comparison_text`) and the comparison page shows (:mod:`hardneg.report.comparison_page`).

The per-query values of a run on its evaluation split are those of ``results/<run>/per_query.parquet`` (every
measure it was evaluated with, pairwise errors included). On another split the run ranked
(``evaluation.extra_splits``), and for a measure its evaluation left out, they are computed here from its ranking
``rankings/<split>.parquet`` and the dataset's qrels with :func:`hardneg.evaluation.metrics.evaluate`, for any
ir-measures measure. The statistics are
:func:`hardneg.evaluation.compare.compare_runs`'s.

For the queries that changed most, each run's top documents come from its ranking of the split, with their
relevance (the dataset's qrels) and whether the run trained on them as hard negatives: its own mined list
(``results/<run>/hardnegs.parquet``, the static hard negatives its training read; an episodic run's, ANCE's, is its
last episode's, ``results/<run>/episodes/<e>/hardnegs.parquet``; runs that train on none, such as BM25, the
warm-up's sampled BM25 negatives or ADORE's dynamic ones, have no list). A document is marked as a
hard negative of the query itself (only a training query can have some) and with the number of other training
queries it was a hard negative of.

A run repeated over seeds (its replicates ``<run>_seed<s>`` have folders under the results folder:
:mod:`hardneg.pipeline.replicates`) is also compared over its seeds (:class:`SeedSpread`): each replicate's mean of
the measure over the split's queries, their mean ± standard deviation, and Welch's t-test of a run's seed means
against the reference's, the seeds being the samples (the query-by-query statistics are those of the runs named).
"""

from __future__ import annotations

import json
import os
import statistics
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from hardneg.errors import ConfigError, HardnegError
from hardneg.evaluation.compare import Comparison, compare_runs
from hardneg.evaluation.metrics import evaluate
from hardneg.evaluation.significance import RESAMPLES, SEED
from hardneg.io import artifacts
from hardneg.io.layout import EPISODES, episode_run, refuse_old_rankings
from hardneg.io.rankings import read_ranking
from hardneg.io.text import text_snippet
from hardneg.results.run_files import RunFiles
from hardneg.schema.names import replicate_seed


@dataclass(frozen=True)
class ShownDocument:
    """A document of a run's ranking as the comparison shows it: ``relevance`` is its grade in the qrels (None:
    not judged), ``hard_negative`` whether the run trained on it as a hard negative of this query, and
    ``other_queries`` of how many other training queries; ``snippet`` is its title and text on one line (raw
    text from the data: escape it where it is shown)."""

    rank: int
    docid: str
    relevance: int | None
    hard_negative: bool
    other_queries: int
    snippet: str


@dataclass(frozen=True)
class RelevantDocument:
    """A relevant document of a query (grade >= 1) and its rank in each run (None: not in its ranking)."""

    docid: str
    relevance: int
    ranks: dict[str, int | None]
    snippet: str


@dataclass(frozen=True)
class ChangedQuery:
    """One of the queries that changed most: its text (None: not among the split's queries), each run's value
    and difference against the reference, each run's top documents and the query's relevant documents."""

    qid: str
    text: str | None
    values: dict[str, float]
    deltas: dict[str, float]
    rankings: dict[str, list[ShownDocument]]
    relevant: list[RelevantDocument]


@dataclass(frozen=True)
class SeedSpread:
    """A run over its seeds: each replicate (the run first) and its mean of the measure, and Welch's p-value against
    the reference's seed means (None for the reference, or when either has fewer than two seeds)."""

    run: str
    replicates: list[str]
    means: list[float]
    p_welch: float | None = None

    @property
    def mean(self) -> float:
        return statistics.fmean(self.means)

    @property
    def sd(self) -> float | None:
        """The sample standard deviation (n - 1) of the seed means, as the results table gives it; None for one
        seed."""
        return statistics.stdev(self.means) if len(self.means) > 1 else None


@dataclass(frozen=True)
class RunsComparison:
    """Runs compared on one split of one dataset: the statistics (``comparison``), where each run's values come
    from (``sources``), the hard-negative list behind each run's marks (``hard_negatives``: run → file, None for
    a run that trains on none) and the queries that changed most, ``depth`` documents of each ranking shown."""

    comparison: Comparison
    dataset: str
    split: str
    sources: dict[str, str]
    hard_negatives: dict[str, str | None]
    queries: list[ChangedQuery] = field(default_factory=list)
    depth: int = 10
    seeds: list[SeedSpread] = field(default_factory=list)


def _metrics_split(files: RunFiles) -> tuple[str, str]:
    """(the evaluation split of a run's metrics.json, the file)."""
    path = files.layout.metrics(files.run)
    try:
        with open(path, encoding="utf-8") as handle:
            record = json.load(handle)
    except FileNotFoundError:
        raise HardnegError(
            f"run {files.run} is not evaluated: {path} is missing; build it with snakemake --cores all {path}"
        ) from None
    except json.JSONDecodeError as error:
        raise HardnegError(
            f"{path}, line {error.lineno}: not valid JSON ({error.msg}); build it again with "
            f"snakemake --cores all --force {path}"
        ) from None
    if not isinstance(record, dict) or not isinstance(record.get("split"), str):
        raise HardnegError(
            f"{path} names no evaluation split (key 'split'); build it again with snakemake --cores all --force {path}"
        )
    return record["split"], path


def _stored_values(files: RunFiles, measure: str) -> tuple[pd.Series, str] | None:
    """A run's per-query values of ``measure`` on its evaluation split, from its per_query.parquet; None when it
    was not evaluated with ``measure`` (they are then evaluated from its ranking)."""
    path = files.layout.per_query(files.run)
    if not Path(path).exists():
        raise HardnegError(
            f"run {files.run} has no per-query values: {path} is missing; build it with snakemake "
            f"--cores all {files.layout.metrics(files.run)}"
        )
    table = artifacts.read_table(artifacts.PER_QUERY_METRICS, path)
    mine = table.filter(pc.equal(table["measure"], measure))
    if mine.num_rows == 0:
        return None
    return pd.Series(mine["value"].to_numpy(), index=mine["qid"].to_pylist(), name=files.run), path


def _computed_values(files: RunFiles, measure: str, split: str) -> tuple[pd.Series, str]:
    """A run's per-query values of ``measure`` on ``split``, evaluated from its ranking and the qrels."""
    path = files.layout.ranking(files.run, split)
    if not Path(path).exists():
        raise HardnegError(
            f"run {files.run} has no ranking of split {split!r}: {path} is missing (a run ranks "
            f"evaluation.split and evaluation.extra_splits)"
        )
    try:
        _, per_query = evaluate(
            read_ranking(path), artifacts.read_table(artifacts.QRELS, files.qrels(split)), [measure], label=str(path)
        )
    except ConfigError as error:
        raise HardnegError(f"measure {measure!r}: {error.message}") from None
    return pd.Series(per_query["value"].to_numpy(), index=per_query["qid"].to_pylist(), name=files.run), path


def _split(files: list[RunFiles], split: str | None) -> tuple[str, dict[str, str]]:
    """The split compared (``split``, or the runs' common evaluation split) and each run's evaluation split."""
    evaluated = {run_files.run: _metrics_split(run_files) for run_files in files}
    if split is None:
        if len({name for name, _ in evaluated.values()}) > 1:
            listed = ", ".join(f"{name} ({path})" for name, path in evaluated.values())
            raise HardnegError(
                f"the runs were evaluated on different splits: {listed}; compare them on one split "
                f"they all ranked (--split)"
            )
        split = next(iter(evaluated.values()))[0]
    return split, {run: name for run, (name, _) in evaluated.items()}


def _hard_negatives(files: RunFiles) -> str | None:
    """The list a run's final model trained on: its own ``hardnegs.parquet``, or for an episodic run (ANCE) that of
    its last episode with one (each episode trains on a list of its own); None for a run that trains on none."""
    path = Path(files.layout.hard_negatives(files.run))
    if path.exists():
        return str(path)
    episodes = Path(files.layout.run_dir(files.run)) / EPISODES
    indexes = sorted(int(e.name) for e in episodes.glob("*") if e.name.isdigit()) if episodes.is_dir() else []
    for index in reversed(indexes):
        path = Path(files.layout.hard_negatives(episode_run(files.run, index)))
        if path.exists():
            return str(path)
    return None


def _shown_queries(
    comparison: Comparison,
    files: dict[str, RunFiles],
    split: str,
    qids: list[str],
    depth: int,
    hard_negatives: dict[str, str | None],
    snippet_chars: int,
) -> list[ChangedQuery]:
    """What the comparison shows of each query of ``qids``."""
    if not qids:
        return []
    first = files[comparison.reference]
    texts = artifacts.read_matching_rows(artifacts.QUERIES, first.queries(split), "qid", qids)
    texts = dict(zip(texts["qid"].to_pylist(), texts["text"].to_pylist()))
    qrels = artifacts.read_matching_rows(artifacts.QRELS, first.qrels(split), "qid", qids)
    grades: dict[tuple[str, str], int] = {
        (q, d): int(r) for q, d, r in zip(*(qrels[c].to_pylist() for c in ("qid", "docid", "relevance")))
    }
    rankings: dict[str, pa.Table] = {}
    for run, run_files in files.items():
        ranking = read_ranking(run_files.layout.ranking(run, split), filters=[("qid", "in", qids)])
        rankings[run] = ranking.sort_by([("qid", "ascending"), ("rank", "ascending")])
    top: dict[str, dict[str, list[tuple[int, str]]]] = {run: {} for run in files}
    ranks: dict[str, dict[tuple[str, str], int]] = {run: {} for run in files}
    for run, ranking in rankings.items():
        for qid, docid, rank in zip(*(ranking[c].to_pylist() for c in ("qid", "docid", "rank"))):
            ranks[run].setdefault((qid, docid), rank)
            shown = top[run].setdefault(qid, [])
            if len(shown) < depth:
                shown.append((rank, docid))
    shown_docids = sorted(
        {d for run in top.values() for docs in run.values() for _, d in docs}
        | {d for (_, d), g in grades.items() if g >= 1}
    )
    corpus = artifacts.read_matching_rows(artifacts.CORPUS, first.corpus(), "docid", shown_docids)
    snippets = {
        d: text_snippet(t, x, snippet_chars)
        for d, t, x in zip(*(corpus[c].to_pylist() for c in ("docid", "title", "text")))
    }
    marked: dict[str, tuple[set, dict]] = {}  # run → ({(qid, docid)}, docid → training queries)
    for run, path in hard_negatives.items():
        if path is None:
            continue
        rows = artifacts.read_matching_rows(artifacts.HARDNEGS, path, "docid", shown_docids)
        pairs = set(zip(rows["qid"].to_pylist(), rows["docid"].to_pylist()))
        queries_of: dict[str, set] = {}
        for qid, docid in pairs:
            queries_of.setdefault(docid, set()).add(qid)
        marked[run] = (pairs, queries_of)

    def document(run: str, qid: str, rank: int, docid: str) -> ShownDocument:
        pairs, queries_of = marked.get(run, (set(), {}))
        mine = (qid, docid) in pairs
        return ShownDocument(
            rank,
            docid,
            grades.get((qid, docid)),
            mine,
            len(queries_of.get(docid, ())) - int(mine),
            snippets.get(docid, "(not in the corpus)"),
        )

    deltas = comparison.deltas()
    out = []
    for qid in qids:
        relevant = sorted(
            ((d, g) for (q, d), g in grades.items() if q == qid and g >= 1), key=lambda item: (-item[1], item[0])
        )
        out.append(
            ChangedQuery(
                qid=qid,
                text=texts.get(qid),
                values={run: float(comparison.values.at[qid, run]) for run in comparison.runs},
                deltas={run: float(deltas.at[qid, run]) for run in deltas.columns},
                rankings={
                    run: [document(run, qid, rank, docid) for rank, docid in top[run].get(qid, [])]
                    for run in comparison.runs
                },
                relevant=[
                    RelevantDocument(
                        docid,
                        grade,
                        {run: ranks[run].get((qid, docid)) for run in comparison.runs},
                        snippets.get(docid, "(not in the corpus)"),
                    )
                    for docid, grade in relevant
                ],
            )
        )
    return out


def replicates_on_disk(run: str, results: str | os.PathLike) -> list[str]:
    """The replicates of ``run`` (``<run>_seed<s>``) whose metrics exist under ``results``, by seed."""
    folder = Path(results)
    found = [
        (replicate_seed(path.name, run), path.name)
        for path in folder.glob(f"{run}_seed*")
        if (path / "metrics.json").is_file()
    ]
    return [name for _, name in sorted(entry for entry in found if entry[0] is not None)]


def _seed_spreads(runs: list[str], results, measure: str, split: str, first: dict[str, pd.Series]) -> list[SeedSpread]:
    """The runs over their seeds (:class:`SeedSpread`), when any of them has replicates; else none."""
    # scipy.stats (a second to import): only where a test is run
    from scipy.stats import ttest_ind

    members = {run: [run, *replicates_on_disk(run, results)] for run in runs}
    if all(len(names) == 1 for names in members.values()):
        return []
    means = {}
    for run, names in members.items():
        means[run] = [float(first[run].mean())]
        for name in names[1:]:
            files = RunFiles.open(name, results)
            stored = _stored_values(files, measure) if _metrics_split(files)[0] == split else None
            means[run].append(float((stored or _computed_values(files, measure, split))[0].mean()))
    reference = means[runs[0]]
    spreads = []
    for run in runs:
        mine = means[run]
        p = None
        if run != runs[0] and len(mine) > 1 and len(reference) > 1:
            with warnings.catch_warnings():  # scipy's precision note on near-equal samples: the p-value says it
                warnings.simplefilter("ignore", RuntimeWarning)
                p = float(ttest_ind(mine, reference, equal_var=False).pvalue)
            p = None if p != p else p  # NaN: both runs' seed means constant
        spreads.append(SeedSpread(run, members[run], mine, p))
    return spreads


def compare_results(
    runs: list[str],
    *,
    results: str | os.PathLike = "results",
    measure: str = "RR@10",
    split: str | None = None,
    top: int = 5,
    depth: int = 10,
    correction: str = "holm",
    resamples: int = RESAMPLES,
    seed: int = SEED,
    snippet_chars: int = 160,
) -> RunsComparison:
    """Compare finished runs query by query (see the module docstring): each run after the first against the
    first.

    :param runs: the runs' names, the reference first; at least two, each once.
    :param results: the results folder.
    :param measure: the measure compared: one the runs were evaluated with (on their evaluation split), or any
        ir-measures measure on another split.
    :param split: the split whose queries are compared; None: the runs' evaluation split (the same for all).
    :param top: how many of the queries that changed most are shown with the runs' rankings.
    :param depth: how many documents of each ranking are shown.
    :param correction: ``holm``, ``bonferroni`` or ``none`` (over the runs compared with the first).
    :param resamples: resamples of the randomisation test.
    :param seed: seed of the randomisation test.
    :param snippet_chars: characters of a document's title and text shown.
    :returns: the comparison.
    :raises HardnegError: fewer than two runs or a run named twice; a run without results folder, resolved
        config, metrics.json or per_query.parquet; a measure a run was not evaluated with; runs of different
        datasets, or evaluated on different splits when ``split`` is None; a missing ranking, queries or qrels
        file. Each error names the file or the argument. A :class:`~hardneg.errors.ResultsLayoutError` when
        ``results`` holds rankings where an earlier version put them.
    """
    if len(runs) < 2:
        raise HardnegError("a comparison needs at least two runs")
    twice = next((run for i, run in enumerate(runs) if run in runs[:i]), None)
    if twice is not None:
        raise HardnegError(f"run {twice} is named twice: each run is compared once")
    refuse_old_rankings(results)
    files = {run: RunFiles.open(run, results) for run in runs}
    datasets = {run: run_files.dataset for run, run_files in files.items()}
    if len(set(datasets.values())) > 1:
        listed = ", ".join(f"{run}: {dataset}" for run, dataset in datasets.items())
        raise HardnegError(f"the runs rank different datasets ({listed}); compared runs rank the same queries")
    split, evaluated = _split(list(files.values()), split)
    values, sources = {}, {}
    for run, run_files in files.items():
        stored = _stored_values(run_files, measure) if evaluated[run] == split else None
        values[run], sources[run] = stored or _computed_values(run_files, measure, split)
    comparison = compare_runs(values, measure, correction=correction, resamples=resamples, seed=seed, sources=sources)
    hard_negatives = {run: _hard_negatives(run_files) for run, run_files in files.items()}
    queries = _shown_queries(
        comparison, files, split, comparison.most_changed(top), depth, hard_negatives, snippet_chars
    )
    seeds = _seed_spreads(runs, results, measure, split, values)
    return RunsComparison(
        comparison,
        datasets[runs[0]],
        split,
        {run: str(path) for run, path in sources.items()},
        hard_negatives,
        queries,
        depth,
        seeds,
    )
