"""Static hard-negative mining (STAR, Zhan et al. SIGIR 2021): the mining model's top-ranked non-relevant documents.

Inputs are the mining model's ranking of the training queries (a RUN table), the training qrels, and optionally
the mining model's scores of the relevant pairs (a POSITIVE_SCORES table, needed for margin filters). The output
is a HARDNEGS table: for each query its kept negatives with their rank and score under the mining model.

Everything is vectorised over all rows at once (Arrow hash lookups, NumPy group arithmetic on sorted query codes);
the only Python loop is one per query when negatives are sampled at random, to seed each query's generator. The
stage mines a large run in blocks of whole queries (:func:`query_blocks`), which gives the same list.
"""

from __future__ import annotations

import hashlib
import logging
import os
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hardneg.io import artifacts, logs

log = logging.getLogger(__name__)

SAMPLING = ("top", "random")
_PAIR_CHUNK = 1 << 16  # rows of embeddings gathered at once by positive_scores (bounds memory)


def value_codes(values: pa.ChunkedArray | pa.Array, value_set: pa.Array) -> np.ndarray:
    """Index of each value in ``value_set`` as int64, -1 where absent."""
    index = pc.index_in(values, value_set=value_set)
    return pc.fill_null(index, -1).to_numpy().astype(np.int64, copy=False) if len(values) else np.zeros(0, np.int64)


def isin(values: np.ndarray, value_set: np.ndarray) -> np.ndarray:
    """``np.isin`` through Arrow's hash set, several times faster on tens of millions of int64 keys."""
    if len(values) == 0:
        return np.zeros(0, dtype=bool)
    values = pa.array(values)
    return pc.is_in(values, value_set=pa.array(value_set, type=values.type)).to_numpy(zero_copy_only=False)


def relevant_judgements(table: pa.Table) -> pa.Table:
    """The rows of a qrels-like table (a ``relevance`` column) that judge the document relevant (1 or more)."""
    return table.filter(pc.greater_equal(table["relevance"], 1))


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


def _query_seed(seed: int, qid: str) -> list[int]:
    """Seed material of one query's generator: stable across runs and processes (unlike ``hash``)."""
    digest = hashlib.blake2b(qid.encode("utf-8"), digest_size=8).digest()
    return [seed, int.from_bytes(digest, "little")]


def _group_bounds(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For codes sorted so that equal codes are contiguous: (start, size) of each group and each row's group."""
    if len(codes) == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64)
    is_start = np.r_[True, codes[1:] != codes[:-1]]
    starts = np.flatnonzero(is_start)
    sizes = np.diff(np.r_[starts, len(codes)])
    return starts, sizes, np.cumsum(is_start) - 1


def _check_options(depth, rank_range, keep, sampling, seed, margin, relative_margin, positives) -> None:
    if depth < 1:
        raise ValueError(f"depth must be at least 1, got {depth}")
    if rank_range is not None:
        low, high = rank_range
        if not 1 <= low <= high:
            raise ValueError(f"rank_range must be (low, high) with 1 <= low <= high, got {tuple(rank_range)}")
    if keep is not None and keep < 1:
        raise ValueError(f"keep must be at least 1 (or None for all), got {keep}")
    if sampling not in SAMPLING:
        raise ValueError(f"sampling must be one of {', '.join(SAMPLING)}, got {sampling!r}")
    if seed < 0:
        raise ValueError(f"seed must be non-negative, got {seed}")
    for name, value in (("margin", margin), ("relative_margin", relative_margin)):
        if value is not None:
            if value < 0:
                raise ValueError(f"{name} must be non-negative, got {value}")
            if positives is None:
                raise ValueError(f"{name} needs the positives' scores (a positive_scores table)")


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
    _check_options(depth, rank_range, keep, sampling, seed, margin, relative_margin, positives)
    qid_values = pc.unique(run["qid"]) if run.num_rows else pa.array([], pa.string())  # in first-appearance order
    query = value_codes(run["qid"], qid_values)
    rank = run["rank"].to_numpy().astype(np.int64, copy=False) if run.num_rows else np.zeros(0, np.int64)

    # Row indices into ``run``, narrowed by each filter; kept sorted by (query, rank) throughout.
    rows = np.flatnonzero(rank <= depth)
    q, r = query[rows], rank[rows]
    dq = np.diff(q)
    if len(rows) > 1 and not np.all((dq > 0) | ((dq == 0) & (np.diff(r) >= 0))):  # runs usually come sorted
        rows = rows[np.lexsort((r, q))]  # stable: rank ties keep run order
    del q, r, dq

    relevant = relevant_judgements(qrels)
    relevant_docs = pc.unique(relevant["docid"])
    if len(relevant_docs) and len(rows):
        # A (query, document) pair as one integer: query code * number of relevant documents + document code.
        width = len(relevant_docs)
        rel_q, rel_d = value_codes(relevant["qid"], qid_values), value_codes(relevant["docid"], relevant_docs)
        relevant_keys = rel_q[rel_q >= 0] * width + rel_d[rel_q >= 0]
        doc = value_codes(run["docid"].take(pa.array(rows)), relevant_docs)
        is_positive = (doc >= 0) & isin(query[rows] * width + doc, relevant_keys)
        rows = rows[~is_positive]

    if rank_range is not None:
        low, high = rank_range
        rows = rows[(rank[rows] >= low) & (rank[rows] <= high)]

    if (margin is not None or relative_margin is not None) and len(rows):
        best = np.full(len(qid_values), np.nan)
        pos = relevant_judgements(positives)
        pos_q = value_codes(pos["qid"], qid_values)
        pos_score = pos["score"].to_numpy().astype(np.float64) if pos.num_rows else np.zeros(0)
        np.fmax.at(best, pos_q[pos_q >= 0], pos_score[pos_q >= 0])  # fmax: NaN (no positive yet) loses
        threshold = best[query[rows]]
        score = run["score"].take(pa.array(rows)).to_numpy().astype(np.float64)
        ok = np.ones(len(rows), dtype=bool)
        if margin is not None:
            ok &= score <= threshold - margin
        if relative_margin is not None:
            ok &= score <= threshold * (1.0 - relative_margin)
        rows = rows[ok | np.isnan(threshold)]

    if keep is not None and len(rows):
        starts, sizes, group = _group_bounds(query[rows])
        position = np.arange(len(rows)) - starts[group]
        if sampling == "top":
            rows = rows[position < keep]
        else:
            chosen = position < np.where(sizes > keep, 0, keep)[group]  # small queries keep all
            names = qid_values.to_pylist()
            for g in np.flatnonzero(sizes > keep):
                rng = np.random.default_rng(_query_seed(seed, names[query[rows[starts[g]]]]))
                chosen[starts[g] + rng.choice(sizes[g], size=keep, replace=False)] = True
            rows = rows[chosen]

    out = run.take(pa.array(rows, pa.int64())).select(artifacts.HARDNEGS.schema.names)
    return out.cast(artifacts.HARDNEGS.schema).combine_chunks()


MINE_BLOCK_ROWS = 1 << 20  # run rows mined at a time (whole queries)


def query_blocks(run: pa.Table, block_rows: int = MINE_BLOCK_ROWS) -> list[tuple[int, int]]:
    """Row ranges [lo, hi) of ``run`` that hold whole queries, about ``block_rows`` rows each, when every query's
    rows are contiguous (as a search writes them); one range over the whole run otherwise."""
    n = run.num_rows
    if n == 0:
        return [(0, 0)]
    codes = value_codes(run["qid"], pc.unique(run["qid"]))  # in first-appearance order: contiguous iff never decreasing
    if np.any(np.diff(codes) < 0):
        return [(0, n)]
    starts = np.flatnonzero(np.r_[True, codes[1:] != codes[:-1]])
    after = np.searchsorted(starts, np.arange(block_rows, n, block_rows), side="left")
    bounds = np.r_[0, np.unique(starts[after[after < len(starts)]]), n]
    return [(int(lo), int(hi)) for lo, hi in zip(bounds[:-1], bounds[1:])]


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
        "sampling": {"enum": ["top", "random"], "default": "top",
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
