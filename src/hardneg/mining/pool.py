"""Mine once, select by policy: the candidate pool (a CANDIDATES table) that the selection policies read.

The pool holds, for each training query, the mining model's ranking down to a depth with the documents judged
relevant removed (:func:`candidate_rows`); :func:`hardneg.mining.negatives.mine_hard_negatives` is a policy
applied to it. Beside
the miner's rank and score each row carries what the policies of :mod:`hardneg.mining.policies` filter on: the
query's best positive score under the miner, BM25's rank and score of the document, a cross-encoder's
probability of relevance of the pair and of the query's best positive, and whether the document duplicates one
of the query's positives.

Every column is computed vectorised over all rows (Arrow hash lookups, NumPy group maxima). The stage builds a
large ranking in blocks of whole queries (:func:`hardneg.mining.rows.query_blocks`), each block with only its
queries' rows of the other tables, which gives the same file.
"""

from __future__ import annotations

import functools
import logging
import os
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hardneg.io import artifacts, logs
from hardneg.mining.duplicates import duplicate_partners, flag_duplicates_of_positives
from hardneg.mining.rows import MINE_BLOCK_ROWS, isin, query_blocks, relevant_judgements, value_codes

log = logging.getLogger(__name__)

# (qids, docids) of the pool rows -> (duplicate_of, duplicate_kind), two string arrays aligned with them, null
# where the document duplicates none of the query's positives; e.g.
# ``lambda q, d: hardneg.mining.duplicates.flag_duplicates_of_positives(pairs, q, d, qrels)``.
DuplicateFlagger = Callable[[pa.Array, pa.Array], tuple[pa.Array, pa.Array]]
Duplicates = DuplicateFlagger | tuple[pa.Array, pa.Array] | None


@dataclass(frozen=True)
class Pool:
    """A candidate pool: the ranking of ``split`` by ``miner`` to ``depth``, with BM25's ranks where ``bm25`` names
    a run, a cross-encoder's probabilities where ``cross_encoder`` names one, and duplicates of positives marked
    when ``duplicates``."""

    miner: str
    split: str
    depth: int
    bm25: str | None
    cross_encoder: str | None
    duplicates: bool
    dataset: str

    @property
    def name(self) -> str:
        """The pool's file name (without ``.parquet``): ``<split>_top<depth>``, then ``_bm25-<run>``,
        ``_ce-<run>`` and ``_nodup`` (duplicates not marked) where they apply."""
        parts = [f"{self.split}_top{self.depth}"]
        if self.bm25:
            parts.append(f"bm25-{self.bm25}")
        if self.cross_encoder:
            parts.append(f"ce-{self.cross_encoder}")
        if not self.duplicates:
            parts.append("nodup")
        return "_".join(parts)


def _best_per_query(table: pa.Table | None, queries: pa.Array, query: np.ndarray) -> pa.Array:
    """Per pool row (query code ``query`` into ``queries``), the maximum ``score`` of the relevant rows
    (relevance >= 1) of the POSITIVE_SCORES-like ``table`` for its query, as float32; null where none."""
    if table is None:
        return pa.nulls(len(query), pa.float32())
    relevant = relevant_judgements(table)
    best = np.full(len(queries), np.nan)
    codes = value_codes(relevant["qid"], queries)
    if relevant.num_rows:
        scores = relevant["score"].to_numpy().astype(np.float64)
        np.fmax.at(best, codes[codes >= 0], scores[codes >= 0])  # fmax: NaN (nothing yet) loses
    values = best[query]
    return pa.array(values, pa.float32(), mask=np.isnan(values))


class _Pairs:
    """The (qid, docid) pairs of the pool rows, coded once for every table joined to them: a pair as one integer,
    query code * number of documents + document code."""

    def __init__(self, qid: pa.Array, docid: pa.Array):
        self.n = len(qid)
        self.queries, self.docs = pc.unique(qid), pc.unique(docid)
        self.keys = value_codes(qid, self.queries) * len(self.docs) + value_codes(docid, self.docs)

    def rows(self, table: pa.Table) -> np.ndarray:
        """For each pool row, the index of the first row of ``table`` (``qid``, ``docid`` columns) with its pair, -1
        where none: a hash join that keeps the pool's order and length."""
        if self.n == 0 or table.num_rows == 0:
            return np.full(self.n, -1, np.int64)
        side_q, side_d = value_codes(table["qid"], self.queries), value_codes(table["docid"], self.docs)
        present = np.flatnonzero((side_q >= 0) & (side_d >= 0))  # rows about other pairs cannot match
        if len(present) == 0:
            return np.full(self.n, -1, np.int64)
        side_keys = side_q[present] * len(self.docs) + side_d[present]
        found = value_codes(pa.array(self.keys), pa.array(side_keys))  # index_in gives the first occurrence
        return np.where(found >= 0, present[np.maximum(found, 0)], -1)


def _joined(column: pa.ChunkedArray, rows: np.ndarray, type_: pa.DataType) -> pa.Array:
    """``column`` taken at ``rows`` (-1: null), cast to ``type_``."""
    taken = column.take(pa.array(np.maximum(rows, 0))) if len(column) else pa.nulls(len(rows), type_)
    values = pc.if_else(pa.array(rows >= 0), taken, pa.scalar(None, taken.type))
    return values.cast(type_).combine_chunks() if isinstance(values, pa.ChunkedArray) else values.cast(type_)


def _check_probabilities(table: pa.Table | None, name: str) -> None:
    if table is None or table.num_rows == 0:
        return
    scores = pc.drop_null(table["score"]).to_numpy().astype(np.float64)
    bad = ~((scores >= 0) & (scores <= 1))  # NaN is bad too
    if bad.any():
        raise ValueError(
            f"{name}: cross-encoder scores must be probabilities in [0, 1]; {int(bad.sum())} are not "
            f"(e.g. {scores[bad][0]!r}): apply the sigmoid (or softmax) to the logits first"
        )


def _duplicate_columns(duplicates: Duplicates, qid: pa.Array, docid: pa.Array) -> tuple[pa.Array, pa.Array]:
    n = len(qid)
    if duplicates is None:
        return pa.nulls(n, pa.string()), pa.nulls(n, pa.string())
    if callable(duplicates):
        if n == 0:  # nothing to flag: spare the caller's function an empty call
            return pa.nulls(0, pa.string()), pa.nulls(0, pa.string())
        flags = duplicates(qid, docid)
    else:
        flags = duplicates
    if len(flags) != 2:
        raise ValueError("duplicates must give two arrays: (duplicate_of, duplicate_kind)")
    of, kind = (artifacts.string_array(array) for array in flags)
    if len(of) != n or len(kind) != n:
        raise ValueError(
            f"duplicates must be aligned with the {n} pool rows, got {len(of)} duplicate_of and "
            f"{len(kind)} duplicate_kind values"
        )
    if not pc.equal(pc.is_null(of), pc.is_null(kind)).to_numpy(zero_copy_only=False).all():
        raise ValueError("duplicate_of and duplicate_kind must be null in the same rows (null: not a duplicate)")
    return of, kind


def candidate_rows(ranking: pa.Table, qrels: pa.Table, depth: int) -> pa.Table:
    """The rows of ``ranking`` (a RANKING table) that are candidates: per query, rank <= ``depth`` less the documents
    judged relevant (relevance >= 1) for that query in ``qrels`` (judged non-relevant ones stay), ordered by query
    (in order of first appearance in ``ranking``) then rank, rank ties in ranking order; a RANKING table, one chunk per
    column.

    :raises ValueError: ``depth`` below 1.
    """
    if depth < 1:
        raise ValueError(f"depth must be at least 1, got {depth}")
    qid_values = (
        pc.unique(ranking["qid"]) if ranking.num_rows else pa.array([], pa.string())
    )  # in first-appearance order
    query = value_codes(ranking["qid"], qid_values)
    rank = ranking["rank"].to_numpy().astype(np.int64, copy=False) if ranking.num_rows else np.zeros(0, np.int64)

    # Row indices into ``ranking``, narrowed by each filter; kept sorted by (query, rank) throughout.
    rows = np.flatnonzero(rank <= depth)
    q, r = query[rows], rank[rows]
    dq = np.diff(q)
    if len(rows) > 1 and not np.all((dq > 0) | ((dq == 0) & (np.diff(r) >= 0))):  # rankings usually come sorted
        rows = rows[np.lexsort((r, q))]  # stable: rank ties keep ranking order
    del q, r, dq

    relevant = relevant_judgements(qrels)
    relevant_docs = pc.unique(relevant["docid"])
    if len(relevant_docs) and len(rows):
        # A (query, document) pair as one integer: query code * number of relevant documents + document code.
        width = len(relevant_docs)
        rel_q, rel_d = value_codes(relevant["qid"], qid_values), value_codes(relevant["docid"], relevant_docs)
        relevant_keys = rel_q[rel_q >= 0] * width + rel_d[rel_q >= 0]
        doc = value_codes(ranking["docid"].take(pa.array(rows)), relevant_docs)
        is_positive = (doc >= 0) & isin(query[rows] * width + doc, relevant_keys)
        rows = rows[~is_positive]

    return ranking.take(pa.array(rows, pa.int64())).combine_chunks()


def build_pool(
    ranking: pa.Table,
    qrels: pa.Table,
    positives: pa.Table | None = None,
    *,
    depth: int,
    bm25: pa.Table | None = None,
    ce_scores: pa.Table | None = None,
    ce_positive_scores: pa.Table | None = None,
    duplicates: Duplicates = None,
) -> pa.Table:
    """The candidate pool of the training queries ranked in ``ranking``: a CANDIDATES table.

    Its rows are, per query, the rows of ``ranking`` with rank <= ``depth`` minus the documents judged relevant
    (relevance >= 1) for that query in ``qrels`` (judged non-relevant ones, relevance 0, stay), ordered by query
    (in order of first appearance in ``ranking``) then rank, rank ties in ranking order: exactly the rows, and the
    order, of :func:`candidate_rows`. The other tables only add columns.

    :param ranking: the mining model's RANKING table of the training queries (``qid``, ``docid``, ``rank`` 1-based,
        ``score`` in the miner's units, e.g. inner products); rows in any order.
    :param qrels: the training QRELS table (``qid``, ``docid``, ``relevance``).
    :param positives: a POSITIVE_SCORES table under the mining model (``positive_scores``): a query's
        ``best_positive_score`` is the maximum ``score`` of its rows with relevance >= 1; None: all null.
    :param depth: the deepest rank of ``ranking`` in the pool (at least 1).
    :param bm25: a BM25 RANKING table of the same queries: ``bm25_rank`` and ``bm25_score`` of the pair (its first row
        when repeated); null where the document is not in BM25's ranking of the query, or with None.
    :param ce_scores: a cross-encoder's scores of the pool's pairs as a RANKING-shaped table (``qid``, ``docid``,
        ``score``; a ``rank`` column, as a re-ranking writes it, is ignored), each score a probability of
        relevance in [0, 1]: ``ce_score`` of the pair (its first row when repeated), null where the pair has no
        row, or with None.
    :param ce_positive_scores: the cross-encoder's scores of the judged pairs as a POSITIVE_SCORES-shaped table
        (``qid``, ``docid``, ``relevance``, ``score`` a probability in [0, 1]): ``best_positive_ce_score`` is the
        query's maximum over its rows with relevance >= 1; null where it has none, or with None.
    :param duplicates: which pool rows duplicate a judged positive of their query: a callable
        ``(qids, docids) -> (duplicate_of, duplicate_kind)`` called once with the pool's ``qid`` and ``docid``
        columns (string arrays; not called on an empty pool), e.g. ``lambda q, d:
        flag_duplicates_of_positives(pairs, q, d, qrels)`` of :mod:`hardneg.mining.duplicates`; or the two arrays
        themselves, aligned with the pool's rows (as a previous ``build_pool`` of the same inputs orders them).
        ``duplicate_of`` names the positive (a docid), ``duplicate_kind`` says how (``"exact"`` or ``"near"``),
        both null in the same rows: those that duplicate nothing. None: both columns null.
    :returns: a CANDIDATES table: ``qid``, ``docid`` (strings), ``rank`` (int32) and ``score`` (float32) from
        ``ranking``; ``best_positive_score``, ``bm25_rank`` (int32), ``bm25_score``, ``ce_score``,
        ``best_positive_ce_score`` (float32); ``duplicate_of``, ``duplicate_kind`` (strings). A query left
        without candidates has no row.
    :raises ValueError: ``depth`` below 1, a cross-encoder score outside [0, 1] (or NaN), or ``duplicates``
        whose arrays are not aligned with the pool's rows or are null in different rows.
    """
    _check_probabilities(ce_scores, "ce_scores")
    _check_probabilities(ce_positive_scores, "ce_positive_scores")
    candidates = candidate_rows(ranking, qrels, depth)
    qid, docid = candidates["qid"].combine_chunks(), candidates["docid"].combine_chunks()
    n = candidates.num_rows
    pairs = _Pairs(qid, docid) if bm25 is not None or ce_scores is not None else None
    queries = pairs.queries if pairs is not None else pc.unique(qid)
    query = value_codes(qid, queries)

    bm25_rank, bm25_score = pa.nulls(n, pa.int32()), pa.nulls(n, pa.float32())
    if bm25 is not None and pairs is not None:
        rows = pairs.rows(bm25)
        bm25_rank, bm25_score = _joined(bm25["rank"], rows, pa.int32()), _joined(bm25["score"], rows, pa.float32())
    ce_score = pa.nulls(n, pa.float32())
    if ce_scores is not None and pairs is not None:
        ce_score = _joined(ce_scores["score"], pairs.rows(ce_scores), pa.float32())
    duplicate_of, duplicate_kind = _duplicate_columns(duplicates, qid, docid)

    return pa.table(
        {
            "qid": qid,
            "docid": docid,
            "rank": candidates["rank"],
            "score": candidates["score"],
            "best_positive_score": _best_per_query(positives, queries, query),
            "bm25_rank": bm25_rank,
            "bm25_score": bm25_score,
            "ce_score": ce_score,
            "best_positive_ce_score": _best_per_query(ce_positive_scores, queries, query),
            "duplicate_of": duplicate_of,
            "duplicate_kind": duplicate_kind,
        },
        schema=artifacts.CANDIDATES.schema,
    )


def _flag_positives(partners: pa.Table, qrels: pa.Table, qids: pa.Array, docids: pa.Array):
    return flag_duplicates_of_positives(partners, qids, docids, qrels)


class _ByQuery:
    """The rows of a table by query code (the codes of a ranking's queries, in first-appearance order), so that each
    block of whole queries takes only its own rows instead of scanning the whole table again."""

    def __init__(self, table: pa.Table, queries: pa.Array):
        self.table = table
        codes = value_codes(table["qid"], queries)  # -1: a query outside the ranking, never taken
        self.order = None if np.all(np.diff(codes) >= 0) else np.argsort(codes, kind="stable")
        self.sorted_codes = codes if self.order is None else codes[self.order]

    def rows(self, first: int, stop: int) -> pa.Table:
        """The rows of the queries coded ``first`` to ``stop - 1``, in table order."""
        lo, hi = np.searchsorted(self.sorted_codes, [first, stop], side="left")
        if self.order is None:
            return self.table.slice(int(lo), int(hi - lo))  # zero-copy
        return self.table.take(pa.array(np.sort(self.order[lo:hi])))


def pool_stage(
    ranking_path: str | os.PathLike,
    qrels_path: str | os.PathLike,
    pool_path: str | os.PathLike,
    *,
    depth: int,
    positives_path: str | os.PathLike | None = None,
    bm25_path: str | os.PathLike | None = None,
    ce_path: str | os.PathLike | None = None,
    ce_positives_path: str | os.PathLike | None = None,
    duplicates: DuplicateFlagger | None = None,
    duplicates_path: str | os.PathLike | None = None,
    block_rows: int = MINE_BLOCK_ROWS,
) -> int:
    """Stage function: ``build_pool`` from files, written to ``pool_path`` (CANDIDATES Parquet).

    Every query's candidates depend on its own rows only, so the pool is built in blocks of whole queries
    (``query_blocks``), each with only its queries' rows of the other tables, and each block's pool is written as
    it comes (``hardneg.io.artifacts.TableWriter``): the same file as building the whole pool at once. The other
    tables are read whole (their rows of queries outside the ranking are never used).

    :param ranking_path: the mining model's RANKING Parquet file of the training queries.
    :param qrels_path: the training split's QRELS Parquet file.
    :param pool_path: the CANDIDATES Parquet file to write (atomically).
    :param depth: the deepest rank of the ranking in the pool (at least 1).
    :param positives_path: a POSITIVE_SCORES Parquet file under the mining model (``positive_scores_stage``);
        None: ``best_positive_score`` null.
    :param bm25_path: a BM25 RANKING Parquet file of the same queries; None: ``bm25_rank``, ``bm25_score`` null.
    :param ce_path: a RANKING Parquet file of a cross-encoder's scores of the candidates (a re-ranking of
        ``ranking_path``), scores being probabilities in [0, 1]; None: ``ce_score`` null.
    :param ce_positives_path: a POSITIVE_SCORES Parquet file of the cross-encoder's probabilities of the judged
        pairs; None: ``best_positive_ce_score`` null.
    :param duplicates: a callable ``(qids, docids) -> (duplicate_of, duplicate_kind)`` as ``build_pool`` takes
        it, called once per block on the block's pool rows; None: the duplicate columns null.
    :param duplicates_path: instead of ``duplicates``, a DUPLICATES Parquet file of the corpus
        (:func:`hardneg.mining.duplicates.duplicates_stage`): a candidate is marked when it duplicates a judged
        positive of its query in ``qrels_path`` (:func:`hardneg.mining.duplicates.flag_duplicates_of_positives`).
    :param block_rows: the approximate number of ranking rows built at a time (whole queries); a ranking whose queries'
        rows are not contiguous is built at once.
    :returns: the number of candidates written (rows of the file).
    :raises DataError: an input file that is missing or does not match its schema.
    :raises ValueError: as ``build_pool``; both ``duplicates`` and ``duplicates_path`` given.
    """
    ranking = artifacts.read_table(artifacts.RANKING, ranking_path)
    qrels = relevant_judgements(artifacts.read_table(artifacts.QRELS, qrels_path))  # only these leave the pool
    if duplicates_path is not None:
        if duplicates is not None:
            raise ValueError("give duplicates or duplicates_path, not both")
        partners = duplicate_partners(artifacts.read_table(artifacts.DUPLICATES, duplicates_path))
        duplicates = functools.partial(_flag_positives, partners, qrels)

    def optional(kind: artifacts.ArtifactKind, path) -> pa.Table | None:
        return artifacts.read_table(kind, path) if path else None

    sides = {
        "qrels": qrels,
        "positives": optional(artifacts.POSITIVE_SCORES, positives_path),
        **dict(bm25=optional(artifacts.RANKING, bm25_path)),  # noqa: C408 (a key, not a method's name)
        "ce_scores": optional(artifacts.RANKING, ce_path),
        "ce_positive_scores": optional(artifacts.POSITIVE_SCORES, ce_positives_path),
    }
    queries = pc.unique(ranking["qid"]) if ranking.num_rows else pa.array([], pa.string())
    codes = value_codes(ranking["qid"], queries)
    by_query = {name: _ByQuery(table, queries) for name, table in sides.items() if table is not None}

    num_queries = missing_ce = 0
    with artifacts.TableWriter(artifacts.CANDIDATES, pool_path) as writer:
        for lo, hi in query_blocks(ranking, block_rows):
            first, stop = (int(codes[lo:hi].min()), int(codes[lo:hi].max()) + 1) if hi > lo else (0, 0)
            part = {name: index.rows(first, stop) for name, index in by_query.items()}
            pool = build_pool(
                ranking.slice(lo, hi - lo),
                part.pop("qrels"),
                part.pop("positives", None),
                depth=depth,
                duplicates=duplicates,
                **part,
            )
            num_queries += len(pc.unique(pool["qid"]))
            missing_ce += pool["ce_score"].null_count if ce_path else 0
            writer.write(pool)
    if missing_ce:
        log.warning(
            "%d of %d candidates have no cross-encoder score in %s: the cross-encoder filters keep them",
            missing_ce,
            writer.rows,
            ce_path,
        )
    logs.progress(
        log,
        "pooled %d candidates for %d of %d queries (depth %d; best positive score %s, BM25 %s, "
        "cross-encoder %s, duplicates %s)",
        writer.rows,
        num_queries,
        len(queries),
        depth,
        "yes" if positives_path else "no",
        "yes" if bm25_path else "no",
        "yes" if ce_path else "no",
        "yes" if duplicates else "no",
        last=True,
    )
    return writer.rows
