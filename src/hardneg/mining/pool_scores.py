"""A scorer's scores of a candidate pool's pairs and of the judged positives of its queries: a cross-encoder's
probabilities of relevance, which a pool's cross-encoder columns (``ce_score``, ``best_positive_ce_score``) and the
policies' ``ce_threshold`` and ``ce_margin`` read (RocketQA's denoising: a mined "negative" the cross-encoder
scores as relevant is likely an unlabelled positive); or a teacher's scores as it ranks, which a run that distils
learns from (:mod:`hardneg.methods.contrastive`).

The scorer is any ``score_pairs(model_dir, queries, corpus, pairs, *, batch_size, device)`` callable returning one
score per (qid, docid) row of ``pairs``: a method's :attr:`hardneg.methods.registry.Method.score_pairs` (the
cross-encoder's probabilities), or a re-ranking method's ``rerank`` made one by :func:`rerank_scorer` (a ColBERT
teacher's MaxSim, a cross-encoder's logit). The rule ``score_pool`` writes a cross-encoder's two tables once per
pool, and the rule ``teacher_pool_scores`` a teacher's, beside the pool under the miner; ``hardneg verify``
computes the cross-encoder's again the same way.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hardneg.io import artifacts
from hardneg.mining.pool import candidate_rows

if TYPE_CHECKING:
    import torch

ScorePairs = Callable[..., np.ndarray]


def rerank_scorer(rerank: Callable[..., pa.Table]) -> ScorePairs:
    """A scorer (see the module docstring) from a re-ranking method's ``rerank`` hook (:attr:`hardneg.methods.
    registry.Method.rerank`): each query's pairs, in the order given, are the ranking it re-ranks (to their number),
    and each pair gets the score it ranks by there (float32, the method's units: a ColBERT's MaxSim, a
    cross-encoder's logit); NaN for a pair it drops (a document the tokenized corpus left out: an empty one)."""

    def score_pairs(
        model_dir, queries, corpus, pairs: pa.Table, *, batch_size: int, device: str | torch.device
    ) -> np.ndarray:
        unique = pairs.select(["qid", "docid"]).group_by(["qid", "docid"], use_threads=False).aggregate([])
        codes = pc.dictionary_encode(unique["qid"]).combine_chunks().indices.to_numpy(zero_copy_only=False)
        order = np.argsort(codes, kind="stable")
        starts = np.searchsorted(codes[order], codes[order], side="left")
        ranks = np.empty(len(codes), dtype=np.int32)
        ranks[order] = np.arange(len(codes)) - starts + 1  # each query's pairs ranked 1, 2, ... as they come
        ranking = unique.append_column("rank", pa.array(ranks, pa.int32())).append_column(
            "score", pa.array(np.zeros(len(codes), np.float32))
        )
        ranked = rerank(
            model_dir,
            queries,
            corpus,
            ranking.cast(artifacts.RANKING.schema),
            depth=max(int(ranks.max()), 1),
            batch_size=batch_size,
            device=device,
        ).select(["qid", "docid", "score"])
        given = pairs.select(["qid", "docid"]).append_column("position", pa.array(np.arange(pairs.num_rows)))
        joined = given.join(ranked, ["qid", "docid"], join_type="left outer", use_threads=False).sort_by("position")
        return joined["score"].to_numpy(zero_copy_only=False).astype(np.float32)  # a null (dropped pair): NaN

    return score_pairs


def _pair_scores(
    score_pairs: ScorePairs, model_dir, queries, corpus, pairs: pa.Table, *, batch_size: int, device: str | torch.device
) -> pa.Array:
    if pairs.num_rows == 0:
        return pa.array([], pa.float32())
    scores = np.asarray(
        score_pairs(model_dir, queries, corpus, pairs.select(["qid", "docid"]), batch_size=batch_size, device=device),
        dtype=np.float32,
    )
    if scores.shape != (pairs.num_rows,):
        raise ValueError(f"the scorer gave {scores.shape} scores for {pairs.num_rows} pairs")
    return pa.array(scores, pa.float32())


def score_pool(
    score_pairs: ScorePairs,
    model_dir,
    queries,
    corpus,
    ranking: pa.Table,
    qrels: pa.Table,
    *,
    depth: int,
    batch_size: int = 64,
    device: str | torch.device = "cpu",
) -> tuple[pa.Table, pa.Table]:
    """The scorer's scores of the pool's candidates and of the judged positives of its queries.

    :param score_pairs: the scorer (see the module docstring); ``model_dir`` is passed to it as is.
    :param queries: the split's tokenized queries, as the scorer reads them.
    :param corpus: the tokenized corpus, likewise.
    :param ranking: the miner's RANKING table of the split.
    :param qrels: the split's QRELS table.
    :param depth: the pool's depth: the candidates are :func:`hardneg.mining.pool.candidate_rows`.
    :returns: (a RANKING table: the candidates with the miner's rank and the scorer's score as ``score``; a
        POSITIVE_SCORES table: every relevant pair (relevance >= 1) of the ranking's queries with its score).
    """
    candidates = candidate_rows(ranking, qrels, depth)
    queries_ranked = pc.unique(ranking["qid"]) if ranking.num_rows else pa.array([], pa.string())
    positives = qrels.filter(
        pc.and_(pc.is_in(qrels["qid"], value_set=queries_ranked), pc.greater_equal(qrels["relevance"], 1))
    )
    candidate_scores = candidates.set_column(
        candidates.schema.get_field_index("score"),
        "score",
        _pair_scores(score_pairs, model_dir, queries, corpus, candidates, batch_size=batch_size, device=device),
    )
    positive_scores = positives.select(["qid", "docid", "relevance"]).append_column(
        "score", _pair_scores(score_pairs, model_dir, queries, corpus, positives, batch_size=batch_size, device=device)
    )
    return (candidate_scores.cast(artifacts.RANKING.schema), positive_scores.cast(artifacts.POSITIVE_SCORES.schema))


def score_pool_stage(
    score_pairs: ScorePairs,
    model_dir,
    queries,
    corpus,
    ranking_path: str | os.PathLike,
    qrels_path: str | os.PathLike,
    candidates_path: str | os.PathLike,
    positives_path: str | os.PathLike,
    *,
    depth: int,
    batch_size: int = 64,
    device: str | torch.device = "cpu",
) -> tuple[pa.Table, pa.Table]:
    """:func:`score_pool` over the miner's ranking and the split's qrels read from their files, both tables written
    (atomically; RANKING and POSITIVE_SCORES Parquet)."""
    ranking = artifacts.read_table(artifacts.RANKING, ranking_path)
    qrels = artifacts.read_table(artifacts.QRELS, qrels_path)
    candidates, positives = score_pool(
        score_pairs, model_dir, queries, corpus, ranking, qrels, depth=depth, batch_size=batch_size, device=device
    )
    artifacts.write_table(candidates, artifacts.RANKING, candidates_path)
    artifacts.write_table(positives, artifacts.POSITIVE_SCORES, positives_path)
    return candidates, positives


__all__ = ["rerank_scorer", "score_pool", "score_pool_stage"]
