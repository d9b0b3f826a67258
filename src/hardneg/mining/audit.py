"""Audit of a mined hard-negative list: is it hard, is it different from BM25's, does it hide false negatives?

:func:`audit_hard_negatives` computes one AUDIT row per training query and a JSON-serialisable summary, and
:func:`selection_summary` what the selection policy did to the candidate pool; :func:`audit_stage` runs both
from files and writes the report (:mod:`hardneg.mining.audit_report` renders it as Markdown). One query's
positives and negatives as plain text (``hardneg audit <run> --qid Q``) are :mod:`hardneg.results.query_view`'s.

Margins are (negative score - best positive score) under the mining model, in its score units (inner products):
a negative with margin >= 0 scores at or above every positive and is a suspected false negative.

Empty documents (no title, no text) are marked: under the dataset's ``empty_documents: keep`` they are encoded,
all with one vector, and can be mined for many queries; the audit counts them per query (``empty_negatives``)
and flags them in the report. Under ``exclude`` (the default) none can appear.
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hardneg.datasets.empty_documents import empty_docids
from hardneg.io import artifacts
from hardneg.io.atomic import write_text
from hardneg.mining.audit_report import write_audit
from hardneg.mining.rows import isin, relevant_judgements, value_codes

log = logging.getLogger(__name__)

MARGIN_QUANTILES = (0.0, 0.1, 0.25, 0.5, 0.75, 0.9, 1.0)
MARGIN_BINS = 10
_UNRANKED = np.iinfo(np.int64).max  # best positive rank of a query with no relevant document ranked within depth


def _pair_keys(q: np.ndarray, d: np.ndarray, width: int) -> np.ndarray:
    """One integer per (query code, document code) pair; -1 where either is absent."""
    return np.where((q >= 0) & (d >= 0), q * width + d, -1)


def _float_or_none(value) -> float | None:
    return None if value is None or not np.isfinite(value) else float(value)


def audit_hard_negatives(
    hardnegs: pa.Table,
    ranking: pa.Table | None,
    qrels: pa.Table,
    positives: pa.Table,
    bm25_ranking: pa.Table | None = None,
    *,
    depth: int = 200,
    empty_docids=None,
) -> tuple[dict, pa.Table]:
    """Audit a hard-negative list: is it hard, is it different from BM25's, does it hide false negatives?

    The training queries are those of ``qrels`` with a relevant document (relevance >= 1), in order of first
    appearance in ``qrels``. A margin is (negative score − the query's best positive score), in the mining
    model's score units (inner products); a negative with margin >= 0 scores at or above every positive and is a
    suspected false negative. Negatives of queries without a relevant document are counted but not audited.

    :param hardnegs: the HARDNEGS table to audit (``qid``, ``docid``, ``rank``, ``score``).
    :param ranking: the mining model's RANKING table of the training queries, which ``hardnegs`` was mined from;
        None for a list imported from elsewhere (:mod:`hardneg.imports`): no best positive rank then, and the
        summary's ``best_positive_rank`` is None.
    :param qrels: the training QRELS table.
    :param positives: the POSITIVE_SCORES table under the mining model; a query's best positive score is its
        maximum there.
    :param bm25_ranking: a BM25 RANKING table of the training queries to compare the negatives with; None: no
        comparison.
    :param depth: the rank depth (1-based, inclusive) of the best-positive search in ``ranking`` and of BM25's top
        list in ``bm25_ranking``.
    :param empty_docids: the ids of the corpus's empty documents (no title, no text), e.g.
        ``hardneg.datasets.empty_documents.empty_docids(corpus_path)``; None: not checked.
    :type empty_docids: list[str] | None
    :returns: (summary, table). ``table`` is an AUDIT table, one row per training query: ``qid``;
        ``best_positive_rank`` (int32: best rank of a relevant document in ``ranking`` within ``depth``, else null);
        ``best_positive_score`` (float32, null without a score in ``positives``); ``num_negatives`` (int32);
        ``bm25_overlap`` (float32: share of the query's negatives in BM25's top ``depth``; null without
        ``bm25_ranking`` or without negatives); ``min_margin`` and ``max_margin`` (float32, null without negatives or
        without a best positive score); ``suspected_false_negatives`` (int32: negatives with margin >= 0; null
        without a best positive score); ``empty_negatives`` (int32: negatives among ``empty_docids``; null when
        ``empty_docids`` is None). ``summary`` is a JSON-serialisable dict: ``depth``; ``num_queries`` (training
        queries); ``queries_with_negatives``; ``queries_without_negatives`` (a count) and
        ``queries_without_negatives_qids``; ``num_negatives``; ``negatives_of_other_queries`` (negatives of
        queries without a relevant document); ``negatives_per_query`` (``mean``, ``median``, ``min``, ``max``);
        ``bm25_overlap_mean`` (null without ``bm25_ranking``); ``margin`` (``count``, ``quantiles`` keyed ``"0"``
        to ``"1"``, ``histogram`` with ``edges`` and ``counts`` of 10 bins) over the negatives of queries with a
        best positive score; ``best_positive_rank`` (``at_1``, ``within_10``, ``within_depth``,
        ``beyond_depth``: shares of the training queries); ``suspected_false_negatives`` (``count`` and
        ``pairs``: ``qid``, ``docid``, ``negative_score``, ``best_positive_score``, ``excess`` (the margin),
        ``empty_document``, largest excess first); ``empty_negatives`` (``count``, ``queries``, ``docids``; null
        when ``empty_docids`` is None).
    """
    relevant = relevant_judgements(qrels)
    train = _distinct(relevant["qid"])
    negatives = _training_negatives(hardnegs, train)
    best_rank = _best_positive_ranks(ranking, relevant, train, depth)
    best_score = _best_positive_scores(positives, train)
    margin = negatives.score - best_score[negatives.query]
    suspected = margin >= 0  # NaN (no best positive score) compares False
    is_empty = _empty_mask(negatives.table, empty_docids)
    if bm25_ranking is not None:
        overlap = _bm25_overlap(bm25_ranking, negatives, train, depth)
    else:
        overlap = np.full(len(train), np.nan)
    empty_known = empty_docids is not None
    table = _audit_table(train, best_rank, best_score, negatives, overlap, margin, suspected, is_empty, empty_known)
    summary = _summary(
        table,
        margin[np.isfinite(margin)],
        _suspects(negatives, best_score, margin, suspected, is_empty, empty_known),
        depth=depth,
        with_bm25=bm25_ranking is not None,
        foreign=negatives.foreign,
        empty=_empty_summary(negatives, is_empty) if empty_known else None,
    )
    if ranking is None:
        summary["best_positive_rank"] = None
    return summary, table


def _distinct(column: pa.ChunkedArray) -> pa.Array:
    """The distinct strings of ``column``, in order of first appearance (an empty string array for no rows)."""
    return pc.unique(column) if len(column) else pa.array([], pa.string())


@dataclass(frozen=True)
class _Negatives:
    """The negatives of the training queries, in the order of the HARDNEGS table: ``table`` (their rows),
    ``query`` (each one's training-query code, int64), ``score`` (float64, NaN where null), ``per_query`` (their
    count per training query) and ``foreign`` (how many negatives of queries without a relevant document were
    left out)."""

    table: pa.Table
    query: np.ndarray
    score: np.ndarray
    per_query: np.ndarray
    foreign: int


def _training_negatives(hardnegs: pa.Table, train: pa.Array) -> _Negatives:
    """Reads the HARDNEGS table and the training query ids; returns the negatives of those queries."""
    codes = value_codes(hardnegs["qid"], train)
    foreign = int((codes < 0).sum())
    table = hardnegs.filter(pa.array(codes >= 0)) if foreign else hardnegs
    query = codes[codes >= 0]
    score = table["score"].to_numpy().astype(np.float64) if table.num_rows else np.zeros(0)
    return _Negatives(table, query, score, np.bincount(query, minlength=len(train)), foreign)


def _best_positive_ranks(ranking: pa.Table | None, relevant: pa.Table, train: pa.Array, depth: int) -> np.ndarray:
    """Reads the miner's RANKING (None: none) and the relevant judgements; returns per training query the best
    (smallest) rank, within ``depth``, of one of its relevant documents as int64, :data:`_UNRANKED` where none."""
    if ranking is None:
        ranking = artifacts.RANKING.schema.empty_table()
    shallow = ranking.filter(pc.less_equal(ranking["rank"], depth))
    relevant_docs = _distinct(relevant["docid"])
    width = max(len(relevant_docs), 1)
    relevant_keys = _pair_keys(
        value_codes(relevant["qid"], train), value_codes(relevant["docid"], relevant_docs), width
    )
    ranked_q = value_codes(shallow["qid"], train)
    ranked_keys = _pair_keys(ranked_q, value_codes(shallow["docid"], relevant_docs), width)
    hit = (ranked_keys >= 0) & isin(ranked_keys, relevant_keys)
    best_rank = np.full(len(train), _UNRANKED)
    if shallow.num_rows:
        np.minimum.at(best_rank, ranked_q[hit], shallow["rank"].to_numpy().astype(np.int64)[hit])
    return best_rank


def _best_positive_scores(positives: pa.Table, train: pa.Array) -> np.ndarray:
    """Reads the POSITIVE_SCORES table; returns per training query the maximum score of its relevant documents
    (float64), NaN where it has none."""
    best_score = np.full(len(train), np.nan)
    pos = relevant_judgements(positives)
    pos_q = value_codes(pos["qid"], train)
    if pos.num_rows:
        np.fmax.at(best_score, pos_q[pos_q >= 0], pos["score"].to_numpy().astype(np.float64)[pos_q >= 0])
    return best_score


def _empty_mask(negs: pa.Table, empty_docids) -> np.ndarray:
    """Reads the negatives' rows and the empty documents' ids (None: not checked); returns whether each negative
    is an empty document (all False when none are known)."""
    empty_set = pa.array(sorted(set(empty_docids or ())), pa.string())
    if not len(empty_set):
        return np.zeros(negs.num_rows, dtype=bool)
    return value_codes(negs["docid"], empty_set) >= 0


def _bm25_overlap(bm25_ranking: pa.Table, negatives: _Negatives, train: pa.Array, depth: int) -> np.ndarray:
    """Reads a BM25 RANKING; returns per training query the share of its negatives within BM25's top ``depth``
    for that query (float64), NaN for a query without negatives."""
    neg_docs = _distinct(negatives.table["docid"])
    top = bm25_ranking.filter(pc.less_equal(bm25_ranking["rank"], depth))
    dwidth = max(len(neg_docs), 1)
    bm25_keys = _pair_keys(value_codes(top["qid"], train), value_codes(top["docid"], neg_docs), dwidth)
    neg_keys = _pair_keys(negatives.query, value_codes(negatives.table["docid"], neg_docs), dwidth)
    in_bm25 = isin(neg_keys, bm25_keys[bm25_keys >= 0])
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.bincount(negatives.query, weights=in_bm25, minlength=len(train)) / negatives.per_query


def _audit_table(
    train: pa.Array,
    best_rank: np.ndarray,
    best_score: np.ndarray,
    negatives: _Negatives,
    overlap: np.ndarray,
    margin: np.ndarray,
    suspected: np.ndarray,
    is_empty: np.ndarray,
    empty_known: bool,
) -> pa.Table:
    """Reads the per-query values (``best_rank``, ``best_score``, ``overlap``) and the per-negative ones
    (``margin``, ``suspected``, ``is_empty``); returns the AUDIT table, one row per training query (see
    :func:`audit_hard_negatives`)."""
    n = len(train)
    query = negatives.query
    min_margin, max_margin = np.full(n, np.nan), np.full(n, np.nan)
    np.fmin.at(min_margin, query, margin)
    np.fmax.at(max_margin, query, margin)
    ranked = best_rank < _UNRANKED
    no_score = np.isnan(best_score)
    return pa.table(
        {
            "qid": train,
            "best_positive_rank": pa.array(np.where(ranked, best_rank, 0), pa.int32(), mask=~ranked),
            "best_positive_score": pa.array(best_score, pa.float32(), mask=no_score),
            "num_negatives": pa.array(negatives.per_query, pa.int32()),
            "bm25_overlap": pa.array(overlap, pa.float32(), mask=~np.isfinite(overlap)),
            "min_margin": pa.array(min_margin, pa.float32(), mask=np.isnan(min_margin)),
            "max_margin": pa.array(max_margin, pa.float32(), mask=np.isnan(max_margin)),
            "suspected_false_negatives": pa.array(
                np.bincount(query[suspected], minlength=n), pa.int32(), mask=no_score
            ),
            "empty_negatives": pa.array(
                np.bincount(query[is_empty], minlength=n), pa.int32(), mask=np.full(n, not empty_known)
            ),
        },
        schema=artifacts.AUDIT.schema,
    )


def _suspects(
    negatives: _Negatives,
    best_score: np.ndarray,
    margin: np.ndarray,
    suspected: np.ndarray,
    is_empty: np.ndarray,
    empty_known: bool,
) -> pa.Table:
    """Reads the negatives and which are suspected false negatives; returns those (``qid``, ``docid``,
    ``negative_score``, ``best_positive_score``, ``excess`` = margin, ``empty_document``, null when not checked),
    largest excess first."""
    keep = pa.array(suspected)
    return pa.table(
        {
            "qid": negatives.table["qid"].filter(keep),
            "docid": negatives.table["docid"].filter(keep),
            "negative_score": negatives.score[suspected],
            "best_positive_score": best_score[negatives.query][suspected],
            "excess": margin[suspected],
            "empty_document": pa.array(
                is_empty[suspected], pa.bool_(), mask=np.full(int(suspected.sum()), not empty_known)
            ),
        }
    ).sort_by([("excess", "descending"), ("qid", "ascending"), ("docid", "ascending")])


def _empty_summary(negatives: _Negatives, is_empty: np.ndarray) -> dict:
    """Reads the negatives and which are empty documents; returns the summary's ``empty_negatives``: ``count``
    (negatives), ``queries`` (training queries with one) and ``docids`` (the distinct empty documents, sorted)."""
    return {
        "count": int(is_empty.sum()),
        "queries": len(np.unique(negatives.query[is_empty])),
        "docids": sorted(set(negatives.table["docid"].filter(pa.array(is_empty)).to_pylist())),
    }


def _summary(
    table: pa.Table,
    margins: np.ndarray,
    suspects: pa.Table,
    *,
    depth: int,
    with_bm25: bool,
    foreign: int,
    empty: dict | None = None,
) -> dict:
    """The audit's summary (JSON-serialisable).

    Keys: depth; num_queries (training queries); queries_with_negatives; queries_without_negatives (a count) and
    queries_without_negatives_qids; num_negatives; negatives_of_other_queries (negatives of queries without a
    relevant document, not audited); negatives_per_query {mean, median, min, max} over the training queries;
    bm25_overlap_mean (mean of the per-query shares; null without BM25); margin {count, quantiles {"0".."1"},
    histogram {edges, counts}} over all negatives of queries with a best positive score; best_positive_rank
    {at_1, within_10, within_depth, beyond_depth} as shares of the training queries; suspected_false_negatives
    {count, pairs: [{qid, docid, negative_score, best_positive_score, excess, empty_document}] sorted by excess,
    largest first}; empty_negatives {count (negatives that are empty documents), queries (training queries with
    one), docids (the distinct empty documents among the negatives)}, null when the corpus was not checked.
    """
    num_neg = table["num_negatives"].to_numpy()
    n = table.num_rows
    without = table.filter(pc.equal(table["num_negatives"], 0))["qid"].to_pylist()
    ranks = table["best_positive_rank"].to_numpy(zero_copy_only=False)  # float with NaN for null
    known = ~np.isnan(ranks)

    def share(mask) -> float | None:
        return float(np.mean(mask)) if n else None

    overlap = pc.mean(table["bm25_overlap"]).as_py() if with_bm25 else None
    if len(margins):
        counts, edges = np.histogram(margins, bins=MARGIN_BINS)
        margin = {
            "count": int(len(margins)),
            "quantiles": {f"{q:g}": float(v) for q, v in zip(MARGIN_QUANTILES, np.quantile(margins, MARGIN_QUANTILES))},
            "histogram": {"edges": [float(e) for e in edges], "counts": [int(c) for c in counts]},
        }
    else:
        margin = {
            "count": 0,
            "quantiles": {f"{q:g}": None for q in MARGIN_QUANTILES},
            "histogram": {"edges": [], "counts": []},
        }

    pairs = suspects.to_pylist()
    return {
        "depth": depth,
        "num_queries": n,
        "queries_with_negatives": int((num_neg > 0).sum()),
        "queries_without_negatives": len(without),
        "queries_without_negatives_qids": without,
        "num_negatives": int(num_neg.sum()),
        "negatives_of_other_queries": foreign,
        "negatives_per_query": {
            "mean": float(num_neg.mean()) if n else None,
            "median": float(np.median(num_neg)) if n else None,
            "min": int(num_neg.min()) if n else None,
            "max": int(num_neg.max()) if n else None,
        },
        "bm25_overlap_mean": _float_or_none(overlap),
        "margin": margin,
        "best_positive_rank": {
            "at_1": share(known & (np.nan_to_num(ranks) == 1)),
            "within_10": share(known & (np.nan_to_num(ranks) <= 10)),
            "within_depth": share(known),
            "beyond_depth": share(~known),
        },
        "suspected_false_negatives": {"count": len(pairs), "pairs": pairs},
        "empty_negatives": empty,
    }


def selection_summary(selection: dict, pool: pa.Table, hardnegs: pa.Table) -> dict:
    """What the audit reports of a selection from a candidate pool: the policy and its name, the candidates, what
    each filter removed (in order) and what was kept, as the selection's JSON records them
    (:func:`hardneg.mining.selection.select_stage`), and the duplicates of a judged positive: ``pool`` (candidates
    that duplicate one, exact and near), ``negatives`` (of those, the ones selected: none when the policy excludes
    duplicates)."""
    marked = pool.filter(pc.is_valid(pool["duplicate_of"]))
    kinds = marked["duplicate_kind"].to_pylist()
    chosen = set(zip(hardnegs["qid"].to_pylist(), hardnegs["docid"].to_pylist()))
    selected = sum((q, d) in chosen for q, d in zip(marked["qid"].to_pylist(), marked["docid"].to_pylist()))
    return {
        "policy": selection["policy"],
        "name": selection["name"],
        "candidates": selection["candidates"],
        "removed": selection["removed"],
        "kept": selection["kept"],
        "duplicates": {
            "pool": len(kinds),
            "exact": kinds.count("exact"),
            "near": kinds.count("near"),
            "negatives": int(selected),
        },
    }


def audit_stage(
    hardnegs_path: str | os.PathLike,
    ranking_path: str | os.PathLike | None,
    qrels_path: str | os.PathLike,
    positives_path: str | os.PathLike,
    markdown_path: str | os.PathLike,
    parquet_path: str | os.PathLike,
    *,
    bm25_ranking_path: str | os.PathLike | None = None,
    summary_path: str | os.PathLike | None = None,
    depth: int = 200,
    corpus_path: str | os.PathLike | None = None,
    selection_path: str | os.PathLike | None = None,
    pool_path: str | os.PathLike | None = None,
) -> dict:
    """Stage function: ``audit_hard_negatives`` from files, written as a Markdown report, AUDIT Parquet and JSON.

    :param hardnegs_path: the HARDNEGS Parquet file to audit (a mining run's ``hardnegs.parquet``).
    :param ranking_path: the mining model's RANKING Parquet file of the training queries; None for an imported list.
    :param qrels_path: the training split's QRELS Parquet file.
    :param positives_path: the POSITIVE_SCORES Parquet file under the mining model.
    :param markdown_path: the Markdown report to write (atomically).
    :param parquet_path: the AUDIT Parquet file to write (atomically), one row per training query.
    :param bm25_ranking_path: a BM25 RANKING Parquet file of the training queries to compare with; None: no comparison.
    :param summary_path: where to write the summary as JSON; None: not written.
    :param depth: as in ``audit_hard_negatives``.
    :param corpus_path: the dataset's CORPUS Parquet file: with it, the negatives that are empty documents are
        counted and marked; None: not checked.
    :param selection_path: the selection's JSON (``hardnegs_selection.json``): with ``pool_path``, the summary's
        ``selection`` (:func:`selection_summary`); without, it has none.
    :param pool_path: the CANDIDATES Parquet file the selection selected from.
    :returns: the summary (see ``audit_hard_negatives``).
    :raises DataError: an input file that is missing or does not match its schema.
    """
    summary, table = audit_hard_negatives(
        artifacts.read_table(artifacts.HARDNEGS, hardnegs_path),
        artifacts.read_table(artifacts.RANKING, ranking_path) if ranking_path is not None else None,
        artifacts.read_table(artifacts.QRELS, qrels_path),
        artifacts.read_table(artifacts.POSITIVE_SCORES, positives_path),
        artifacts.read_table(artifacts.RANKING, bm25_ranking_path) if bm25_ranking_path else None,
        depth=depth,
        empty_docids=empty_docids(corpus_path) if corpus_path else None,
    )
    if selection_path is not None and pool_path is not None:
        with open(selection_path, encoding="utf-8") as handle:
            selection = json.load(handle)
        summary["selection"] = selection_summary(
            selection,
            artifacts.read_table(artifacts.CANDIDATES, pool_path),
            artifacts.read_table(artifacts.HARDNEGS, hardnegs_path),
        )
    write_audit(summary, table, markdown_path, parquet_path)
    if summary_path is not None:
        write_text(summary_path, json.dumps(summary, indent=2) + "\n")
    log.info(
        "audited %d queries: %d negatives, %d queries without negatives, %d suspected false negatives",
        summary["num_queries"],
        summary["num_negatives"],
        summary["queries_without_negatives"],
        summary["suspected_false_negatives"]["count"],
    )
    empty = summary["empty_negatives"]
    if empty and empty["count"]:
        log.warning(
            "%d hard negatives of %d queries are empty documents (e.g. %s)",
            empty["count"],
            empty["queries"],
            ", ".join(empty["docids"][:5]),
        )
    return summary
