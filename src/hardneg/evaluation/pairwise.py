"""Pairwise errors of a ranking (STAR/ADORE paper, Table 1): for each relevant document, the non-relevant
documents ranked above it, summed per query and averaged over queries.

* top-K pairwise errors count only the non-relevant documents within the top K;
* total pairwise errors count every non-relevant document of the corpus ranked above it. This needs each
  relevant document's rank in the whole corpus: exact for dense runs (from the query and corpus embeddings),
  a lower bound for a ranking that stops before some relevant document (BM25 top-k), flagged as such.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hardneg.io.artifacts import string_array

if TYPE_CHECKING:
    import pandas as pd

    from hardneg.io.npyfile import NpyRows


def relevant_ranks(ranking: pa.Table, qrels: pa.Table) -> pd.DataFrame:
    """The rank in ``ranking`` of every relevant (query, document) pair of ``qrels``.

    :param ranking: a RANKING table (``qid``, ``docid``, ``rank``).
    :param qrels: a QRELS table; the pairs are its rows with relevance >= 1, in its row order.
    :returns: a pandas DataFrame with columns ``qid``, ``docid`` and ``rank`` (the ranking's rank, 1-based; NaN where
        the ranking does not rank the document), one row per relevant pair.
    """
    rel = qrels.filter(pc.greater_equal(qrels["relevance"], 1)).select(["qid", "docid"]).to_pandas()
    ranked = ranking.select(["qid", "docid", "rank"]).to_pandas()
    return rel.merge(ranked, on=["qid", "docid"], how="left")


DOC_BLOCK = 16_384  # documents scored at a time: 16 MiB of scores for 256 queries, whatever the corpus's size


def full_corpus_ranks(
    query_emb: np.ndarray,
    qids: list[str],
    doc_emb: np.ndarray | NpyRows,
    docids,
    pairs: pd.DataFrame,
    batch: int = 256,
    doc_block: int = DOC_BLOCK,
) -> np.ndarray:
    """The exact rank in the whole corpus of each (query, document) pair, by inner product.

    A pair's rank is 1 + the number of documents scoring strictly above it. Queries are scored ``batch`` at a time
    against ``doc_block`` documents at a time (converted to float32 block by block: a float16 or memory-mapped
    matrix is never copied whole), in two passes: each pair's own score, then the documents above it, both from
    the same block products, so that a document tied with the relevant one is never counted above it.

    :param query_emb: query embeddings, shape (len(qids), dim), float16 or float32; row i embeds ``qids[i]``.
    :param qids: the query id of each row of ``query_emb``; every query of ``pairs`` must be among them.
    :param doc_emb: corpus embeddings, shape (len(docids), dim), float16 or float32 (a memory map or a
        ``hardneg.io.npyfile.NpyRows`` is fine).
    :param docids: the document id of each row of ``doc_emb`` (a list or an Arrow string array).
    :type docids: list[str] | pa.Array
    :param pairs: the pairs to rank: a DataFrame with columns ``qid`` and ``docid`` (``relevant_ranks`` gives it).
    :param batch: queries scored at a time.
    :param doc_block: documents scored at a time.
    :returns: int64 ranks (1-based), shape (len(pairs),), aligned with the rows of ``pairs``. A document without an
        embedding (an empty document left out under ``empty_documents: exclude``) ranks after every embedded
        one: ``len(docids) + 1``.
    """
    q_index = {q: i for i, q in enumerate(qids)}
    q_rows = pairs["qid"].map(q_index).to_numpy()
    found = pc.index_in(pa.array(pairs["docid"], pa.string()), value_set=string_array(docids))
    unranked = found.is_null().to_numpy(zero_copy_only=False)
    d_rows = pc.fill_null(found, 0).to_numpy().astype(np.int64)
    ranks = np.empty(len(pairs), dtype=np.int64)
    order = np.argsort(q_rows, kind="stable")
    unique_q = np.unique(q_rows)
    num_docs = len(doc_emb)

    def block_scores(queries: np.ndarray):
        for start in range(0, num_docs, doc_block):
            yield start, queries @ np.asarray(doc_emb[start : start + doc_block], dtype=np.float32).T

    for lo in range(0, len(unique_q), batch):
        chunk = unique_q[lo : lo + batch]
        position = {q: i for i, q in enumerate(chunk)}
        members = order[np.isin(q_rows[order], chunk)]  # the pairs of these queries
        rows = np.array([position[q] for q in q_rows[members]], dtype=np.int64)
        docs = d_rows[members]
        queries = np.asarray(query_emb[chunk], dtype=np.float32)
        own = np.zeros(len(members), dtype=np.float32)
        for start, scores in block_scores(queries):
            inside = (docs >= start) & (docs < start + scores.shape[1])
            own[inside] = scores[rows[inside], docs[inside] - start]
        above = np.zeros(len(members), dtype=np.int64)
        for _, scores in block_scores(queries):
            above += (scores[rows] > own[:, None]).sum(axis=1)
        ranks[members] = 1 + above
    ranks[unranked] = len(docids) + 1
    return ranks


def top_measure(depth: int) -> str:
    """The per-query measure name of top-``depth`` pairwise errors in ``per_query.parquet``."""
    return f"PairwiseErrors@{depth}"


TOTAL_MEASURE = "PairwiseErrors"  # total pairwise errors of a query, in per_query.parquet


def pairwise_errors(
    ranking: pa.Table,
    qrels: pa.Table,
    *,
    depth: int = 200,
    full_ranks: np.ndarray | None = None,
    num_docs: int | None = None,
) -> dict:
    """Mean over the judged queries of their top-``depth`` and total pairwise errors.

    A relevant document's pairwise errors are the non-relevant documents ranked above it; a query's are the sum
    over its relevant documents (see ``per_query_pairwise_errors``).

    :param ranking: a RANKING table (``qid``, ``docid``, ``rank``).
    :param qrels: a QRELS table; relevant pairs have relevance >= 1.
    :param depth: K of the top-K pairwise errors.
    :param full_ranks: exact corpus ranks of the relevant pairs of ``qrels``, in their row order
        (``full_corpus_ranks``); None: the ranking's ranks, a relevant document it misses placed just after the query's
        last rank (a lower bound).
    :param num_docs: not used.
    :returns: ``top<depth>_pairwise_errors`` and ``total_pairwise_errors`` (floats, means over the queries with a
        relevant document; NaN when there is none) and ``total_is_lower_bound`` (bool: some total comes from a
        ranking that misses a relevant document, without ``full_ranks``).
    """
    return summarise(per_query_pairwise_errors(ranking, qrels, depth=depth, full_ranks=full_ranks), depth)


def summarise(per_query: pd.DataFrame, depth: int) -> dict:
    """The means over queries of :func:`per_query_pairwise_errors` (the figures of ``metrics.json``)."""
    return {
        f"top{depth}_pairwise_errors": float(per_query["top_errors"].mean()),
        "total_pairwise_errors": float(per_query["total_errors"].mean()),
        "total_is_lower_bound": bool(per_query.attrs["total_is_lower_bound"]),
    }


def per_query_pairwise_errors(
    ranking: pa.Table, qrels: pa.Table, *, depth: int = 200, full_ranks: np.ndarray | None = None
) -> pd.DataFrame:
    """Top-``depth`` and total pairwise errors of each query with a relevant document.

    For each relevant document at rank r with a relevant documents above it, its total errors are r − 1 − a (the
    non-relevant documents above it); its top-``depth`` errors are the same when r <= ``depth``, else ``depth``
    minus the number of the query's relevant documents within ``depth`` (every non-relevant document of the top
    ``depth``). A query's errors are the sums over its relevant documents.

    :param ranking: a RANKING table (``qid``, ``docid``, ``rank``).
    :param qrels: a QRELS table; relevant pairs have relevance >= 1.
    :param depth: K of the top-K pairwise errors.
    :param full_ranks: exact corpus ranks of the relevant pairs of ``qrels``, in their row order
        (``full_corpus_ranks``); None: the ranking's ranks, a relevant document it misses placed just after the query's
        last rank in the ranking (rank 1 when the ranking does not answer the query).
    :returns: a pandas DataFrame indexed by ``qid`` with float columns ``top_errors`` and ``total_errors``;
        ``attrs["total_is_lower_bound"]`` is true when, without ``full_ranks``, the ranking misses some relevant
        document (its totals are then lower bounds).
    """
    import pandas as pd  # pandas: only where a frame is made (the DAG is planned without it)

    pairs = relevant_ranks(ranking, qrels)
    if pairs.empty:  # no relevant judgement: no pair to count
        per_query = pd.DataFrame(
            {"top_errors": pd.Series(dtype="float64"), "total_errors": pd.Series(dtype="float64")},
            index=pd.Index([], name="qid"),
        )
        per_query.attrs["total_is_lower_bound"] = False
        return per_query
    ranking_depth = ranking.group_by("qid").aggregate([("rank", "max")]).to_pandas().set_index("qid")["rank_max"]
    missing = pairs["rank"].isna()
    if full_ranks is not None:
        total_rank = pd.Series(full_ranks, index=pairs.index, dtype="float64")
    else:
        fallback = pairs["qid"].map(ranking_depth).fillna(0) + 1
        total_rank = pairs["rank"].where(~missing, fallback)
    pairs = pairs.assign(total_rank=total_rank)
    # Relevant documents ranked above each one do not count as errors.
    pairs["total_above"] = pairs.groupby("qid")["total_rank"].rank(method="first") - 1
    pairs["total_errors"] = pairs["total_rank"] - 1 - pairs["total_above"]
    in_top = pairs["total_rank"] <= depth
    top_relevant = in_top.groupby(pairs["qid"]).transform("sum")
    pairs["top_errors"] = np.where(in_top, pairs["total_rank"] - 1 - pairs["total_above"], depth - top_relevant)
    per_query = pairs.groupby("qid")[["top_errors", "total_errors"]].sum()
    per_query.attrs["total_is_lower_bound"] = full_ranks is None and bool(missing.any())
    return per_query
