"""A scorer's probabilities of relevance of a candidate pool's pairs and of the judged positives of its queries:
what a pool's cross-encoder columns (``ce_score``, ``best_positive_ce_score``) and the policies' ``ce_threshold``
and ``ce_margin`` read (RocketQA's denoising: a mined "negative" the cross-encoder scores as relevant is likely an
unlabelled positive).

The scorer is any ``score_pairs(model_dir, queries, corpus, pairs, *, batch_size, device)`` callable returning one
probability per (qid, docid) row of ``pairs`` (:attr:`hardneg.methods.registry.Method.score_pairs`: the
cross-encoder method's). The rule ``score_pool`` writes both tables once per pool, beside it under the miner;
``hardneg verify`` computes them again the same way.
"""

from __future__ import annotations

import os
from collections.abc import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hardneg.io import artifacts
from hardneg.mining.pool import candidate_rows

ScorePairs = Callable[..., np.ndarray]


def _probabilities(score_pairs: ScorePairs, model_dir, queries, corpus, pairs: pa.Table, *, batch_size: int,
                   device: str) -> pa.Array:
    if pairs.num_rows == 0:
        return pa.array([], pa.float32())
    scores = np.asarray(score_pairs(model_dir, queries, corpus, pairs.select(["qid", "docid"]),
                                    batch_size=batch_size, device=device), dtype=np.float32)
    if scores.shape != (pairs.num_rows,):
        raise ValueError(f"the scorer gave {scores.shape} scores for {pairs.num_rows} pairs")
    return pa.array(scores, pa.float32())


def score_pool(score_pairs: ScorePairs, model_dir, queries, corpus, ranking: pa.Table, qrels: pa.Table, *,
               depth: int, batch_size: int = 64, device: str = "cpu") -> tuple[pa.Table, pa.Table]:
    """The scorer's probabilities of the pool's candidates and of the judged positives of its queries.

    :param score_pairs: the scorer (see the module docstring); ``model_dir`` is passed to it as is.
    :param queries: the split's tokenized queries, as the scorer reads them.
    :param corpus: the tokenized corpus, likewise.
    :param ranking: the miner's RUN table of the split.
    :param qrels: the split's QRELS table.
    :param depth: the pool's depth: the candidates are :func:`hardneg.mining.pool.candidate_rows`.
    :returns: (a RUN table: the candidates with the miner's rank and the probability as ``score``; a
        POSITIVE_SCORES table: every relevant pair (relevance >= 1) of the ranking's queries with its probability).
    """
    candidates = candidate_rows(ranking, qrels, depth)
    queries_ranked = pc.unique(ranking["qid"]) if ranking.num_rows else pa.array([], pa.string())
    positives = qrels.filter(pc.and_(pc.is_in(qrels["qid"], value_set=queries_ranked),
                                     pc.greater_equal(qrels["relevance"], 1)))
    candidate_scores = candidates.set_column(candidates.schema.get_field_index("score"), "score",
                                             _probabilities(score_pairs, model_dir, queries, corpus, candidates,
                                                            batch_size=batch_size, device=device))
    positive_scores = positives.select(["qid", "docid", "relevance"]).append_column(
        "score", _probabilities(score_pairs, model_dir, queries, corpus, positives, batch_size=batch_size,
                                device=device))
    return (candidate_scores.cast(artifacts.RUN.schema),
            positive_scores.cast(artifacts.POSITIVE_SCORES.schema))


def score_pool_stage(score_pairs: ScorePairs, model_dir, queries, corpus, run_path: str | os.PathLike,
                     qrels_path: str | os.PathLike, candidates_path: str | os.PathLike,
                     positives_path: str | os.PathLike, *, depth: int, batch_size: int = 64,
                     device: str = "cpu") -> tuple[pa.Table, pa.Table]:
    """:func:`score_pool` over the miner's ranking and the split's qrels read from their files, both tables written
    (atomically; RUN and POSITIVE_SCORES Parquet)."""
    ranking = artifacts.read_table(artifacts.RUN, run_path)
    qrels = artifacts.read_table(artifacts.QRELS, qrels_path)
    candidates, positives = score_pool(score_pairs, model_dir, queries, corpus, ranking, qrels, depth=depth,
                                       batch_size=batch_size, device=device)
    artifacts.write_table(candidates, artifacts.RUN, candidates_path)
    artifacts.write_table(positives, artifacts.POSITIVE_SCORES, positives_path)
    return candidates, positives


__all__ = ["score_pool", "score_pool_stage"]
