"""Static hard-negative mining (STAR, Zhan et al. SIGIR 2021): the mining model's top-ranked non-relevant documents.

Inputs are the mining model's ranking of the training queries (a RUN table), the training qrels, and optionally
the mining model's scores of the relevant pairs (a POSITIVE_SCORES table, needed for margin filters). The output
is a HARDNEGS table: for each query its kept negatives with their rank and score under the mining model.

Mining is a selection policy (:mod:`hardneg.mining.policies`) applied to the candidate pool of the ranking
(:mod:`hardneg.mining.pool`): the miner's options are the policy's. The stage mines a large run in blocks of whole
queries (:func:`hardneg.mining.rows.query_blocks`), which gives the same list.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hardneg.io import artifacts, logs
from hardneg.mining.policies import SAMPLING, Policy, select
from hardneg.mining.pool import build_pool
from hardneg.mining.rows import MINE_BLOCK_ROWS, query_blocks, relevant_judgements, value_codes

log = logging.getLogger(__name__)

_PAIR_CHUNK = 1 << 16  # rows of embeddings gathered at once by positive_scores (bounds memory)


def positive_scores(query_emb: np.ndarray, qids: list[str], doc_emb: np.ndarray, docids: list[str] | np.ndarray,
                    qrels: pa.Table) -> pa.Table:
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
        raise ValueError(f"ids and embeddings differ in length: {len(qids)} qids for {len(query_emb)} query rows, "
                         f"{len(docids)} docids for {len(doc_emb)} document rows")
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
        log.warning("%d relevant pair(s) name a document without an embedding (e.g. %r: an empty document, left "
                    "out of dense runs under empty_documents: exclude); they have no positive score",
                    len(missing), missing[0].as_py())
        pairs, q_rows, d_rows = pairs.filter(pa.array(d_rows >= 0)), q_rows[d_rows >= 0], d_rows[d_rows >= 0]
    scores = np.empty(len(q_rows), dtype=np.float32)
    for start in range(0, len(q_rows), _PAIR_CHUNK):
        stop = start + _PAIR_CHUNK
        q = np.asarray(query_emb[q_rows[start:stop]], dtype=np.float32)
        d = np.asarray(doc_emb[d_rows[start:stop]], dtype=np.float32)
        scores[start:stop] = np.einsum("ij,ij->i", q, d)
    return pa.table({"qid": pairs["qid"], "docid": pairs["docid"], "relevance": pairs["relevance"],
                     "score": pa.array(scores, pa.float32())}, schema=artifacts.POSITIVE_SCORES.schema)


def mine_hard_negatives(run: pa.Table, qrels: pa.Table, positives: pa.Table | None = None, *, depth: int = 200,
                        rank_range: tuple[int, int] | None = None, keep: int | None = None, sampling: str = "top",
                        seed: int = 0, margin: float | None = None,
                        relative_margin: float | None = None) -> pa.Table:
    """Select hard negatives from the mining model's ranking ``run`` (RUN table) of the training queries.

    Per query, in this order:

    1. take the rows with rank <= ``depth``;
    2. drop every document judged relevant (relevance >= 1) for that query in ``qrels``; judged non-relevant
       (relevance 0) documents stay;
    3. if ``rank_range`` = (low, high) is given, keep ranks low..high (inclusive, 1-based);
    4. with ``margin``, keep negatives scoring <= best positive score - margin; with ``relative_margin``, scoring
       <= best positive score * (1 - relative_margin) (meant for positive scores). Both apply when both are given.
       The best positive score is the query's maximum in ``positives`` (POSITIVE_SCORES); a query without one
       keeps its negatives;
    5. keep at most ``keep`` negatives: the best-ranked (``sampling="top"``) or a uniform sample without
       replacement (``"random"``) drawn by a NumPy generator seeded from (``seed``, qid), so a query's sample
       depends on neither the other queries nor their order.

    Scores are the run's (the mining model's, e.g. inner products). Deterministic: the same inputs and seed give
    the same table.

    :param run: the mining model's RUN table of the training queries: ``qid``, ``docid``, ``rank`` (1-based),
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
        run's score units (non-negative); None: no such filter.
    :param relative_margin: keep only negatives scoring at most the best positive score × (1 − ``relative_margin``)
        (non-negative; meant for positive scores); None: no such filter.
    :returns: a HARDNEGS table: ``qid``, ``docid`` (strings), ``rank`` (int32, the rank in ``run``, 1-based),
        ``score`` (float32, the score in ``run``), ordered by query (in order of first appearance in ``run``) then
        rank. A query left without negatives has no row.
    :raises ValueError: ``depth`` or ``keep`` below 1, a ``rank_range`` that is not ``1 <= low <= high``, an
        unknown ``sampling``, a negative ``seed``, ``margin`` or ``relative_margin``, or a margin without
        ``positives``.
    """
    for name, value in (("margin", margin), ("relative_margin", relative_margin)):
        if value is not None and positives is None:
            raise ValueError(f"{name} needs the positives' scores (a positive_scores table)")
    policy = Policy(rank_range=None if rank_range is None else tuple(rank_range), keep=keep, sampling=sampling,
                    margin=margin, relative_margin=relative_margin)
    return select(build_pool(run, qrels, positives, depth=depth), policy, seed=seed).negatives


def mine_stage(run_path: str | os.PathLike, qrels_path: str | os.PathLike, hardnegs_path: str | os.PathLike, *,
               positives_path: str | os.PathLike | None = None, depth: int = 200,
               rank_range: tuple[int, int] | list[int] | None = None, keep: int | None = None,
               sampling: str = "top", seed: int = 0, margin: float | None = None,
               relative_margin: float | None = None, block_rows: int = MINE_BLOCK_ROWS) -> int:
    """Stage function: ``mine_hard_negatives`` from files, written to ``hardnegs_path`` (HARDNEGS Parquet).

    Every query is mined on its own, so the run is mined in blocks of whole queries (``query_blocks``) and each
    block's negatives are written as they come (``hardneg.io.artifacts.TableWriter``): the same file as mining
    the whole run at once.

    :param run_path: the mining model's RUN Parquet file of the training queries.
    :param qrels_path: the training split's QRELS Parquet file.
    :param hardnegs_path: the HARDNEGS Parquet file to write (atomically).
    :param positives_path: a POSITIVE_SCORES Parquet file (``positive_scores_stage``); needed only by the margins.
    :param depth: as in ``mine_hard_negatives``.
    :param rank_range: as in ``mine_hard_negatives``; a two-element list is accepted too (as YAML gives it).
    :param keep: as in ``mine_hard_negatives``.
    :param sampling: as in ``mine_hard_negatives``.
    :param seed: as in ``mine_hard_negatives``.
    :param margin: as in ``mine_hard_negatives``.
    :param relative_margin: as in ``mine_hard_negatives``.
    :param block_rows: the approximate number of run rows mined at a time (whole queries); a run whose queries'
        rows are not contiguous is mined at once.
    :returns: the number of hard negatives written (rows of the file).
    :raises DataError: an input file that is missing or does not match its schema.
    :raises ValueError: an option ``mine_hard_negatives`` rejects.
    """
    run = artifacts.read_table(artifacts.RUN, run_path)
    qrels = artifacts.read_table(artifacts.QRELS, qrels_path)
    positives = artifacts.read_table(artifacts.POSITIVE_SCORES, positives_path) if positives_path else None
    ranks = tuple(rank_range) if rank_range is not None else None
    num_queries = 0
    with artifacts.TableWriter(artifacts.HARDNEGS, hardnegs_path) as writer:
        for lo, hi in query_blocks(run, block_rows):
            hardnegs = mine_hard_negatives(run.slice(lo, hi - lo), qrels, positives, depth=depth,
                                           rank_range=ranks, keep=keep, sampling=sampling, seed=seed,
                                           margin=margin, relative_margin=relative_margin)
            num_queries += len(pc.unique(hardnegs["qid"]))
            writer.write(hardnegs)
    logs.progress(log, "mined %d hard negatives for %d of %d queries (depth %d, rank_range %s, keep %s, "
                  "sampling %s, margin %s, relative_margin %s)", writer.rows, num_queries, len(pc.unique(run["qid"])),
                  depth, rank_range, keep, sampling, margin, relative_margin, last=True)
    return writer.rows


def positive_scores_stage(query_emb_path: str | os.PathLike, query_ids_path: str | os.PathLike,
                          doc_emb_path: str | os.PathLike, doc_ids_path: str | os.PathLike,
                          qrels_path: str | os.PathLike, positives_path: str | os.PathLike) -> pa.Table:
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
    """Static hard-negative mining (``params.mining`` of a method with a ``miner`` role): the arguments of
    :func:`mine_hard_negatives`. Its keys and defaults are :data:`MINING_SCHEMA`."""

    depth: int
    rank_range: list[int] | None
    keep: int | None
    sampling: str
    margin: float | None
    relative_margin: float | None


MINING_SCHEMA = {
    "type": "object", "additionalProperties": False, "default": {},
    "description": "static hard-negative mining with the model of the miner run, from its ranking of the training "
                   "split (results/<run>/hardnegs.parquet)",
    "properties": {
        "depth": {"type": "integer", "minimum": 1, "default": 200,
                  "description": "mine from this top-k of each training query (documents judged relevant removed)"},
        "rank_range": {"type": ["array", "null"], "items": {"type": "integer", "minimum": 1}, "minItems": 2,
                       "maxItems": 2, "default": None,
                       "description": "keep only ranks in [first, last] (1-based, both included; first <= last); "
                                      "null: every rank down to depth"},
        "keep": {"type": ["integer", "null"], "minimum": 1, "default": None,
                 "description": "negatives kept per query (null: all)"},
        "sampling": {"enum": list(SAMPLING), "default": "top",
                     "description": "which `keep` negatives: the best-ranked (top) or a uniform sample seeded by the "
                                    "run's seed and the query (random)"},
        "margin": {"type": ["number", "null"], "default": None,
                   "description": "keep negatives scoring at most best positive - margin, in the miner's score "
                                  "units (not negative; null: no such filter)"},
        "relative_margin": {"type": ["number", "null"], "minimum": 0, "maximum": 1, "default": None,
                            "description": "keep negatives scoring at most (1 - relative_margin) x best positive "
                                           "(meant for positive scores; null: no such filter)"},
    },
}
