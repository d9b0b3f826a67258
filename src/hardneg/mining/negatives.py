"""Static hard-negative mining (STAR, Zhan et al. SIGIR 2021): the mining model's top-ranked non-relevant documents.

Inputs are the mining model's ranking of the training queries (a RANKING table), the training qrels, and optionally
the mining model's scores of the relevant pairs (a POSITIVE_SCORES table, needed for margin filters). The output
is a HARDNEGS table: for each query its kept negatives with their rank and score under the mining model.

Mining is a selection policy (:mod:`hardneg.mining.policies`) applied to the candidate pool of the ranking
(:mod:`hardneg.mining.pool`): the miner's options are the policy's. The workflow builds the pool once
(:func:`hardneg.mining.pool.pool_stage`) and selects each run's list from it
(:func:`hardneg.mining.selection.select_stage`).
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from typing import cast

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hardneg.io import artifacts
from hardneg.mining.policies import POLICY_SCHEMA, Policy
from hardneg.mining.pool import build_pool
from hardneg.mining.rows import relevant_judgements, value_codes
from hardneg.mining.selection import select

log = logging.getLogger(__name__)

_PAIR_CHUNK = 1 << 16  # rows of embeddings gathered at once by positive_scores (bounds memory)


def positive_scores(
    query_emb: np.ndarray, qids: list[str], doc_emb: np.ndarray, docids: list[str] | np.ndarray, qrels: pa.Table
) -> pa.Table:
    """Inner-product score of every relevant pair (relevance >= 1) of ``qrels`` whose query is in ``qids``.

    These are the scores the margin filters of ``mine_hard_negatives`` and the audit compare negatives with.
    Only the embedding rows of relevant pairs are read, 65,536 pairs at a time, so ``doc_emb`` may be a
    memory map of a whole corpus. A relevant document without an embedding (an empty document, which dense runs
    leave out under ``empty_documents: exclude``) has no score: its pairs are left out, with a logged warning.
    Pairs whose query is not in ``qids`` are left out too.

    :param query_emb: query embeddings, shape (len(qids), dim), float16 or float32 (a memory map is fine); row i
        embeds ``qids[i]``.
    :param qids: the query id of each row of ``query_emb`` (a list, NumPy array or Arrow string array).
    :param doc_emb: document embeddings, shape (len(docids), dim), float16 or float32 (a memory map is fine); row
        j embeds ``docids[j]``.
    :param docids: the document id of each row of ``doc_emb`` (a list, NumPy array or Arrow string array).
    :param qrels: a QRELS table: ``qid``, ``docid``, ``relevance``.
    :returns: a POSITIVE_SCORES table in ``qrels`` row order: ``qid``, ``docid`` (strings), ``relevance``
        (int32), ``score`` (float32: the inner product of the two embeddings, computed in float32).
    :raises ValueError: ``qids`` and ``query_emb`` (or ``docids`` and ``doc_emb``) differ in length, or an id
        is repeated.
    """
    if len(qids) != len(query_emb) or len(docids) != len(doc_emb):
        raise ValueError(
            f"ids and embeddings differ in length: {len(qids)} qids for {len(query_emb)} query rows, "
            f"{len(docids)} docids for {len(doc_emb)} document rows"
        )
    qid_set, docid_set = artifacts.string_array(qids), artifacts.string_array(docids)
    for ids, what in ((qid_set, "qid"), (docid_set, "docid")):
        if len(pc.unique(ids)) != len(ids):
            raise ValueError(f"the {what}s of the embedding rows are not unique")
    pairs = relevant_judgements(qrels)
    q_rows = value_codes(pairs["qid"], qid_set)
    pairs = pairs.filter(pa.array(q_rows >= 0))
    q_rows = q_rows[q_rows >= 0]
    d_rows = value_codes(pairs["docid"], docid_set)
    if (d_rows < 0).any():
        missing = pairs["docid"].filter(pa.array(d_rows < 0))
        log.warning(
            "%d relevant pair(s) name a document without an embedding (e.g. %r: an empty document, left "
            "out of dense runs under empty_documents: exclude); they have no positive score",
            len(missing),
            missing[0].as_py(),
        )
        pairs, q_rows, d_rows = pairs.filter(pa.array(d_rows >= 0)), q_rows[d_rows >= 0], d_rows[d_rows >= 0]
    scores = np.empty(len(q_rows), dtype=np.float32)
    for start in range(0, len(q_rows), _PAIR_CHUNK):
        stop = start + _PAIR_CHUNK
        q = np.asarray(query_emb[q_rows[start:stop]], dtype=np.float32)
        d = np.asarray(doc_emb[d_rows[start:stop]], dtype=np.float32)
        scores[start:stop] = np.einsum("ij,ij->i", q, d)
    return pa.table(
        {
            "qid": pairs["qid"],
            "docid": pairs["docid"],
            "relevance": pairs["relevance"],
            "score": pa.array(scores, pa.float32()),
        },
        schema=artifacts.POSITIVE_SCORES.schema,
    )


def mine_hard_negatives(
    ranking: pa.Table,
    qrels: pa.Table,
    positives: pa.Table | None = None,
    *,
    depth: int = 200,
    rank_range: tuple[int, int] | None = None,
    keep: int | None = None,
    sampling: str = "top",
    seed: int = 0,
    margin: float | None = None,
    relative_margin: float | None = None,
    max_score: float | None = None,
    min_score: float | None = None,
) -> pa.Table:
    """Select hard negatives from ``ranking``, the mining model's ranking (a RANKING table) of the training queries.

    Per query, in this order:

    1. take the rows with rank <= ``depth``;
    2. drop every document judged relevant (relevance >= 1) for that query in ``qrels``; judged non-relevant
       (relevance 0) documents stay;
    3. if ``rank_range`` = (low, high) is given, keep ranks low..high (inclusive, 1-based);
    4. with ``margin``, keep negatives scoring <= best positive score - margin; with ``relative_margin``, scoring
       <= best positive score - |best positive score| * relative_margin (a larger margin filters more whatever the
       score's sign). Both apply when both are given.
       The best positive score is the query's maximum in ``positives`` (POSITIVE_SCORES); a query without one
       keeps its negatives;
    5. with ``max_score``, keep negatives scoring <= max_score; with ``min_score``, scoring >= min_score (the
       negative's own score in the ranking, compared at float32 precision);
    6. keep at most ``keep`` negatives: the best-ranked (``sampling="top"``) or a uniform sample without
       replacement (``"random"``) drawn by a NumPy generator seeded from (``seed``, qid), so a query's sample
       depends on neither the other queries nor their order.

    Scores are the ranking's (the mining model's, e.g. inner products). Deterministic: the same inputs and seed give
    the same table.

    :param ranking: the mining model's RANKING table of the training queries: ``qid``, ``docid``, ``rank`` (1-based),
        ``score``; rows in any order.
    :param qrels: the training QRELS table (``qid``, ``docid``, ``relevance``).
    :param positives: a POSITIVE_SCORES table (``qid``, ``docid``, ``relevance``, ``score``) under the mining
        model, as ``positive_scores`` gives it; needed only by ``margin`` and ``relative_margin``.
    :param depth: the deepest rank mined from (at least 1).
    :param rank_range: (low, high): keep only ranks low to high, inclusive, 1-based, ``1 <= low <= high``; None:
        every rank down to ``depth``.
    :param keep: the most negatives kept per query (at least 1); None: all.
    :param sampling: which ``keep`` negatives: ``"top"`` (the best-ranked) or ``"random"``.
    :param seed: the seed of ``"random"`` sampling (non-negative).
    :param margin: keep only negatives scoring at most the query's best positive score minus ``margin``, in the
        ranking's score units (non-negative); None: no such filter.
    :param relative_margin: keep only negatives scoring at most the best positive score − |best positive score| ×
        ``relative_margin`` (in [0, 1]); None: no such filter.
    :param max_score: keep only negatives scoring at most this, in the ranking's score units; None: no such filter.
    :param min_score: keep only negatives scoring at least this (at most ``max_score``); None: no such filter.
    :returns: a HARDNEGS table: ``qid``, ``docid`` (strings), ``rank`` (int32, the rank in ``ranking``, 1-based),
        ``score`` (float32, the score in ``ranking``), ordered by query (in order of first appearance in
        ``ranking``) then rank. A query left without negatives has no row.
    :raises ValueError: ``depth`` or ``keep`` below 1, a ``rank_range`` that is not ``1 <= low <= high``, an
        unknown ``sampling``, a negative ``seed``, ``margin`` or ``relative_margin``, a ``min_score`` above
        ``max_score``, or a margin without ``positives``.
    """
    for name, value in (("margin", margin), ("relative_margin", relative_margin)):
        if value is not None and positives is None:
            raise ValueError(f"{name} needs the positives' scores (a positive_scores table)")
    policy = Policy(
        # a list too (as YAML gives it): Policy checks that it is a pair
        rank_range=None if rank_range is None else cast("tuple[int, int]", tuple(rank_range)),
        keep=keep,
        sampling=sampling,
        margin=margin,
        relative_margin=relative_margin,
        max_score=max_score,
        min_score=min_score,
    )
    return select(build_pool(ranking, qrels, positives, depth=depth), policy, seed=seed).negatives


def positive_scores_stage(
    query_emb_path: str | os.PathLike,
    query_ids_path: str | os.PathLike,
    doc_emb_path: str | os.PathLike,
    doc_ids_path: str | os.PathLike,
    qrels_path: str | os.PathLike,
    positives_path: str | os.PathLike,
) -> pa.Table:
    """Stage function: ``positive_scores`` from files, written to ``positives_path`` (POSITIVE_SCORES Parquet).

    Both embedding matrices are memory-mapped: only the rows of relevant pairs are read.

    :param query_emb_path: the query embeddings (``.npy``, shape (queries, dim), float16 or float32), e.g. a dense
        run's ``embeddings/queries_train.npy``.
    :param query_ids_path: the ROW_IDS Parquet file naming each row of ``query_emb_path``.
    :param doc_emb_path: the corpus embeddings (``.npy``, shape (documents, dim)), e.g. ``embeddings/corpus.npy``.
    :param doc_ids_path: the ROW_IDS Parquet file naming each row of ``doc_emb_path``.
    :param qrels_path: the QRELS Parquet file of the queries' split.
    :param positives_path: the POSITIVE_SCORES Parquet file to write (atomically).
    :returns: the POSITIVE_SCORES table written (see ``positive_scores``).
    :raises DataError: an id or qrels file that is missing or does not match its schema.
    :raises FileNotFoundError: a missing ``.npy`` file.
    :raises ValueError: ids and embedding rows that differ in number, or a repeated id.
    """
    query_emb = np.load(query_emb_path, mmap_mode="r")
    doc_emb = np.load(doc_emb_path, mmap_mode="r")
    qids = artifacts.read_table(artifacts.ROW_IDS, query_ids_path)["id"]
    docids = artifacts.read_table(artifacts.ROW_IDS, doc_ids_path)["id"]  # Arrow strings, not Python objects
    qrels = artifacts.read_table(artifacts.QRELS, qrels_path)
    scores = positive_scores(query_emb, qids, doc_emb, docids, qrels)
    log.info("scored %d relevant pairs of %d queries", scores.num_rows, len(pc.unique(scores["qid"])))
    artifacts.write_table(scores, artifacts.POSITIVE_SCORES, positives_path)
    return scores


@dataclass(frozen=True)
class MiningParams:
    """Static hard-negative mining (``params.mining`` of a method with a ``miner`` role): the candidate pool
    (``depth``, ``duplicates``), the policy that selects from it (``policy``, a name of the config's
    ``policies``, or the policy keys) and the share of queries it may leave without a negative
    (``max_queries_without``). Its keys and defaults are :data:`MINING_SCHEMA`."""

    depth: int
    duplicates: bool
    policy: str | None
    max_queries_without: float
    rank_range: list[int] | None
    exclude_duplicates: bool
    margin: float | None
    relative_margin: float | None
    max_score: float | None
    min_score: float | None
    ce_threshold: float | None
    ce_margin: float | None
    keep: int | None
    sampling: str


# The policy keys of a run's mining section: those of a named policy but its depth (the pool's depth is the run's).
POLICY_KEYS = [key for key in POLICY_SCHEMA["properties"] if key != "depth"]

MINING_SCHEMA: dict = {
    "type": "object",
    "additionalProperties": False,
    "default": {},
    "description": "static hard-negative mining with the model of the miner run: the candidate pool of its ranking "
    "of the training split (results/<miner>/pools/), shared by every run that asks for the same "
    "pool, and the policy selecting this run's negatives from it (results/<run>/hardnegs.parquet)",
    "properties": {
        "depth": {
            "type": "integer",
            "minimum": 1,
            "default": 200,
            "description": "the pool: this top-k of each training query (documents judged relevant removed)",
        },
        "duplicates": {
            "type": "boolean",
            "default": True,
            "description": "mark in the pool the candidates that duplicate a judged positive of their "
            "query (exact or near duplicates, found once per dataset: "
            "results/datasets/<dataset>/duplicates.parquet)",
        },
        "policy": {
            "type": ["string", "null"],
            "default": None,
            "description": "a policy of the config's `policies` section, by name (then the policy keys "
            "below stay unset); null: the policy is the keys below",
        },
        "max_queries_without": {
            "type": "number",
            "minimum": 0,
            "maximum": 1,
            "default": 0.5,
            "description": "the largest share of the pool's queries the policy may leave "
            "without a hard negative (they train on random negatives); a "
            "selection leaving more fails, naming the policy",
        },
        **{key: POLICY_SCHEMA["properties"][key] for key in POLICY_KEYS},
    },
}
