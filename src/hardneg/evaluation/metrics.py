"""Effectiveness evaluation of a ranking against qrels with ir-measures (pytrec_eval / trec_eval semantics).

Every query of the split that has at least one relevant document counts: a query the ranking does not answer
scores 0 (as ``trec_eval -c``). Queries without any relevant document are left out of every mean.
"""

from __future__ import annotations

import json
import math
import os

import ir_measures
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hardneg.errors import ConfigError
from hardneg.io import artifacts
from hardneg.io.atomic import write_text
from hardneg.io.logs import console
from hardneg.io.npyfile import NpyRows
from hardneg.io.rankings import read_ranking
from hardneg.schema.names import QUOTE_LIMIT, quoted

_MAX_CUTOFF = 2**31 - 1  # trec_eval keeps a cutoff in a C int


def parse_measures(names: list[str]) -> list:
    """ir-measures measures from their names (``RR@10``, ``nDCG@10``, ``P(rel=2)@5``, ``AP``).

    A name ir-measures cannot parse, or a cutoff (``@k``) that is not a positive integer of at most 2**31 - 1
    (trec_eval stops the process on ``P@0``), is a :class:`~hardneg.errors.ConfigError` of key
    ``evaluation.measures`` naming the measure."""
    measures = []
    for name in names:
        try:
            measure = ir_measures.parse_measure(name)
        except (ValueError, NameError, SyntaxError, TypeError) as exc:
            raise ConfigError(
                "evaluation.measures", f"{quoted(name)} is not an ir-measures measure ({str(exc)[:QUOTE_LIMIT]})"
            ) from None
        cutoff = measure.params.get("cutoff")
        if cutoff is not None and (
            isinstance(cutoff, bool) or not isinstance(cutoff, int) or not 1 <= cutoff <= _MAX_CUTOFF
        ):
            raise ConfigError(
                "evaluation.measures",
                f"{quoted(name)} has cutoff {quoted(cutoff)}: a cutoff (the number of top-ranked documents the "
                f"measure reads) must be a positive integer, at most {_MAX_CUTOFF}, e.g. "
                f"{measure.NAME}@10",
            )
        measures.append(measure)
    return measures


def _qrels_frame(qrels: pa.Table):
    return qrels.to_pandas().rename(columns={"qid": "query_id", "docid": "doc_id"}).astype({"relevance": int})


def _ranking_frame(ranking: pa.Table):
    frame = ranking.select(["qid", "docid", "score"]).to_pandas().rename(columns={"qid": "query_id", "docid": "doc_id"})
    frame["score"] = frame["score"].astype(np.float64)
    return frame


def warn_coverage(ranking: pa.Table, judged: list[str], label: str = "the ranking") -> int:
    """Warn, on the console and in the log, when a ranking answers few of the judged queries (those with a
    relevant document): fewer than half of them, or none, or when no query is judged at all. A query the ranking
    does not answer scores 0, so such a ranking's means mostly measure the mismatch (a ranking of another split or
    dataset, qrels of another split). Returns how many judged queries the ranking answers. ``label`` names the
    ranking in the message."""
    answered = (
        int(
            pc.count_distinct(
                ranking.filter(pc.is_in(ranking["qid"], value_set=pa.array(judged, pa.string())))["qid"]
            ).as_py()
        )
        if judged
        else 0
    )
    if not judged:
        console("the qrels judge no document relevant (relevance >= 1): every mean of %s is 0", label)
    elif answered == 0:
        console(
            "%s answers none of the %d judged queries of the qrels: every mean is 0; are the ranking and the "
            "qrels of the same dataset and split?",
            label,
            len(judged),
        )
    elif 2 * answered < len(judged):
        console(
            "%s answers only %d of the %d judged queries of the qrels (under half): a query it does not answer "
            "scores 0 in every mean; are the ranking and the qrels of the same dataset and split?",
            label,
            answered,
            len(judged),
        )
    return answered


def evaluate(
    ranking: pa.Table, qrels: pa.Table, measure_names: list[str], *, label: str = "the ranking", warn: bool = True
) -> tuple[dict, pa.Table]:
    """Evaluate a ranking against qrels with ir-measures (pytrec_eval / trec_eval semantics).

    The judged queries are those of ``qrels`` with a relevant document (relevance >= 1); every one counts, and a
    judged query the ranking does not answer scores 0 (as ``trec_eval -c``). Queries without a relevant document
    are left out, and so are the ranking's rows of queries not judged.

    :param ranking: a RANKING table (``qid``, ``docid``, ``score``; documents are ordered by score, as trec_eval does).
    :param qrels: a QRELS table (``qid``, ``docid``, ``relevance``; graded measures read the grades).
    :param measure_names: ir-measures measure names, e.g. ``["RR@10", "nDCG@10", "R@1000", "AP"]``.
    :param label: how the ranking is named in the coverage warning.
    :param warn: warn, on the console and in the log, when the ranking answers fewer than half of the judged queries.
    :returns: (means, per_query): ``means`` maps each name of ``measure_names`` to its mean over the judged
        queries (0.0 when no query is judged); ``per_query`` is a PER_QUERY_METRICS table, one row per (measure,
        judged query): ``qid`` (string), ``measure`` (string, the name as given), ``value`` (float64), by measure
        then qid.
    :raises ConfigError: a name ir-measures cannot parse, or a cutoff (``@k``) that is not a positive integer of
        at most 2**31 - 1; the error names ``evaluation.measures``.
    """
    measures = parse_measures(measure_names)
    judged = sorted(set(qrels.filter(pc.greater_equal(qrels["relevance"], 1))["qid"].to_pylist()))
    if warn:
        warn_coverage(ranking, judged, label)
    ranking = ranking.filter(pc.is_in(ranking["qid"], value_set=pa.array(judged, pa.string())))
    values = {(str(m), q): 0.0 for m in measures for q in judged}
    if ranking.num_rows:
        for metric in ir_measures.iter_calc(measures, _qrels_frame(qrels), _ranking_frame(ranking)):
            key = (str(metric.measure), metric.query_id)
            if key in values:  # queries without a relevant document are not counted
                values[key] = float(metric.value)
    by_name = dict(zip(map(str, measures), measure_names))
    per_query = pa.table(
        {
            "qid": [q for (_, q) in values],
            "measure": [by_name[m] for (m, _) in values],
            "value": list(values.values()),
        },
        schema=artifacts.PER_QUERY_METRICS.schema,
    )
    means = {
        name: float(np.mean([values[(str(m), q)] for q in judged])) if judged else 0.0
        for m, name in zip(measures, measure_names)
    }
    return means, per_query


def write_metrics(
    path: str | os.PathLike,
    *,
    run_name: str,
    dataset: str,
    split: str,
    num_queries: int,
    measures: dict,
    provenance: dict,
    extra: dict | None = None,
) -> dict:
    """Write a run's ``metrics.json`` atomically.

    :param path: the file to write, e.g. ``results/<run>/metrics.json``.
    :param run_name: the run's name (key ``run``).
    :param dataset: the dataset's name.
    :param split: the evaluation split.
    :param num_queries: the number of judged queries the means are over.
    :param measures: measure name → mean.
    :param provenance: the provenance block (``hardneg.io.provenance.provenance``: config hash, seed, Python,
        platform, package versions).
    :param extra: further keys, written after ``measures`` (``evaluate_run`` adds ``pairwise_errors`` and
        ``splits``).
    :returns: the record written: ``run``, ``dataset``, ``split``, ``num_queries``, ``measures``, the keys of
        ``extra``, ``provenance``.
    :raises ValueError: a value JSON cannot hold (NaN or infinite); nothing is written then.
    """
    record = {
        "run": run_name,
        "dataset": dataset,
        "split": split,
        "num_queries": num_queries,
        "measures": measures,
        **(extra or {}),
        "provenance": provenance,
    }
    write_text(path, json.dumps(record, indent=2, sort_keys=False, allow_nan=False) + "\n")
    return record


def _pairwise_rows(by_query, depth: int) -> pa.Table:
    """Per-query pairwise errors as rows of the per-query table (measures ``PairwiseErrors@<depth>`` and
    ``PairwiseErrors``), so figures and significance tests read them like any measure."""
    from hardneg.evaluation.pairwise import TOTAL_MEASURE, top_measure  # pandas: slow to import, needed only here

    qids = [str(q) for q in by_query.index]
    return pa.table(
        {
            "qid": qids * 2,
            "measure": [top_measure(depth)] * len(qids) + [TOTAL_MEASURE] * len(qids),
            "value": np.concatenate(
                [by_query["top_errors"].to_numpy(np.float64), by_query["total_errors"].to_numpy(np.float64)]
            ),
        },
        schema=artifacts.PER_QUERY_METRICS.schema,
    )


def _row_ids(path) -> list[str]:
    return artifacts.read_table(artifacts.ROW_IDS, path)["id"].to_pylist()


def evaluate_run(
    rankings: dict[str, str | os.PathLike],
    qrels_dir: str | os.PathLike,
    resolved: dict,
    metrics_path: str | os.PathLike,
    per_query_path: str | os.PathLike,
    measures: list[str] | None = None,
    embeddings: dict | None = None,
    pairwise_depth: int = 200,
) -> dict:
    """Stage function: evaluate a run's ranking of each split against that split's qrels and write the results.

    The evaluation split is ``resolved["evaluation"]["split"]``. Pairwise errors are those of the evaluation split
    (``hardneg.evaluation.pairwise``): exact over the whole corpus when ``embeddings`` is given, else from the
    ranking alone (a lower bound where it misses a relevant document).

    :param rankings: split name → that split's RANKING Parquet file; the evaluation split must be among them.
    :param qrels_dir: the dataset's qrels folder (``results/datasets/<dataset>/qrels``), holding
        ``<split>.parquet`` for each split of ``rankings``.
    :param resolved: the run's resolved configuration (``results/<run>/config.yaml``): ``name``,
        ``dataset.name``, ``seed``, ``evaluation.split`` and ``evaluation.measures``.
    :param metrics_path: the ``metrics.json`` to write (see ``write_metrics``): ``measures`` holds the evaluation
        split's means, ``splits`` every split's means, ``pairwise_errors`` the evaluation split's mean top-K and
        total pairwise errors (``top<depth>_pairwise_errors``, ``total_pairwise_errors``, null when no query is
        judged) and ``total_is_lower_bound``, ``num_queries`` the judged queries of the evaluation split.
    :param per_query_path: the PER_QUERY_METRICS Parquet file to write: the evaluation split's value of each
        measure for each judged query, and each query's pairwise errors as measures ``PairwiseErrors@<depth>``
        and ``PairwiseErrors``.
    :param measures: the measure names; None: ``resolved["evaluation"]["measures"]``.
    :param embeddings: for a dense run, the files that give exact corpus ranks: ``query_npy`` and ``query_ids``
        (the evaluation split's query embeddings and their ROW_IDS file), ``doc_npy`` and ``doc_ids`` (the
        corpus embeddings and theirs); None: ranks from the ranking alone.
    :param pairwise_depth: K of the top-K pairwise errors.
    :returns: the record written to ``metrics_path``.
    :raises ValueError: ``rankings`` has no file for the evaluation split.
    :raises ConfigError: a measure ir-measures cannot parse.
    :raises DataError: a ranking or qrels file that is missing or does not match its schema, or a ranking score
        that is not finite.
    """
    # pandas: slow to import, needed only here
    from hardneg.evaluation.pairwise import full_corpus_ranks, per_query_pairwise_errors, relevant_ranks, summarise
    from hardneg.io.provenance import provenance

    measures = measures or resolved["evaluation"]["measures"]
    split = resolved["evaluation"]["split"]
    if split not in rankings:
        raise ValueError(f"no ranking file for the evaluation split {split!r}")
    by_split, headline, per_query = {}, None, None
    for name, path in rankings.items():
        ranking = read_ranking(path)  # a score that is not finite is an error naming its row
        qrels = artifacts.read_table(artifacts.QRELS, os.path.join(qrels_dir, f"{name}.parquet"))
        means, table = evaluate(ranking, qrels, measures, label=str(path))
        by_split[name] = means
        if name == split:
            headline, per_query = means, table
            full_ranks = None
            if embeddings:
                full_ranks = full_corpus_ranks(
                    np.load(embeddings["query_npy"]),
                    _row_ids(embeddings["query_ids"]),
                    NpyRows(embeddings["doc_npy"]),  # read in blocks, never mapped whole
                    artifacts.read_table(artifacts.ROW_IDS, embeddings["doc_ids"])["id"],
                    relevant_ranks(ranking, qrels),
                )
            by_query = per_query_pairwise_errors(ranking, qrels, depth=pairwise_depth, full_ranks=full_ranks)
            # a mean over no judged query is NaN, which JSON cannot hold: null
            errors = {
                key: None if isinstance(value, float) and not math.isfinite(value) else value
                for key, value in summarise(by_query, pairwise_depth).items()
            }
            per_query = pa.concat_tables([per_query, _pairwise_rows(by_query, pairwise_depth)])
    assert headline is not None and per_query is not None  # the evaluation split is among the rankings
    artifacts.write_table(per_query, artifacts.PER_QUERY_METRICS, per_query_path)
    num_queries = len(
        set(per_query.filter(pc.is_in(per_query["measure"], value_set=pa.array(measures)))["qid"].to_pylist())
    )
    return write_metrics(
        metrics_path,
        run_name=resolved["name"],
        dataset=resolved["dataset"]["name"],
        split=split,
        num_queries=num_queries,
        measures=headline,
        provenance=provenance(resolved),
        extra={"pairwise_errors": errors, "splits": by_split},
    )
