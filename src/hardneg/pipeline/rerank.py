"""Stage functions of a re-ranking model's rules: its ranking of one split from another run's top-k (rule
``rerank``), its probabilities of a candidate pool's pairs (rule ``score_pool``) and, as a teacher, its scores of
them (rule ``teacher_pool_scores``)."""

from __future__ import annotations

import logging

from hardneg import methods
from hardneg.dense.raw_texts import TokenizedWithRaw
from hardneg.dense.tokenized import TokenizedTexts
from hardneg.dense.train_config import resolve_device
from hardneg.io import artifacts
from hardneg.io.rankings import read_ranking, write_ranking
from hardneg.mining.pool_scores import rerank_scorer, score_pool_stage

log = logging.getLogger(__name__)


def text_sets(cache_dir, split: str, texts: tuple | None = None) -> tuple[TokenizedTexts, TokenizedTexts]:
    """The tokenized queries of ``split`` and the tokenized corpus of the cache; with ``texts`` (the split's
    QUERIES file and the CORPUS file) each also carries its raw texts
    (:class:`hardneg.dense.raw_texts.TokenizedWithRaw`), which a pretrained cross-encoder forms its pairs from."""
    if texts is None:
        return TokenizedTexts(cache_dir, f"queries_{split}"), TokenizedTexts(cache_dir, "corpus")
    queries_path, corpus_path = texts
    return (
        TokenizedWithRaw(cache_dir, f"queries_{split}", queries_path, artifacts.QUERIES),
        TokenizedWithRaw(cache_dir, "corpus", corpus_path, artifacts.CORPUS),
    )


def rerank_split(
    method: str,
    model_dir,
    cache_dir,
    split: str,
    candidates_path,
    *,
    ranking_path,
    trec_path,
    depth: int,
    batch_size: int = 64,
    tag: str = "rerank",
    device: str = "auto",
    method_modules=(),
    texts: tuple | None = None,
):
    """Re-rank the top-``depth`` of each query of the ranking at ``candidates_path`` with the model at
    ``model_dir``, as re-ranking method ``method`` declares (``Method.rerank``), and write the ranking (Parquet +
    TREC). ``method_modules``: the module declaring ``method`` when it is not one of :mod:`hardneg.methods`;
    ``texts``: the split's QUERIES file and the CORPUS file, for a model that reads raw texts (:func:`text_sets`)."""
    methods.load_modules(list(method_modules))
    queries, corpus = text_sets(cache_dir, split, texts)
    candidates = read_ranking(candidates_path)
    rerank = methods.get(method).rerank
    assert rerank is not None, f"method {method} re-ranks nothing"
    ranking = rerank(
        model_dir, queries, corpus, candidates, depth=depth, batch_size=batch_size, device=resolve_device(device)
    )
    log.info(
        "re-ranked the top %d of %d queries of %s", depth, len(set(candidates["qid"].to_pylist())), candidates_path
    )
    write_ranking(ranking, ranking_path, trec_path, tag)
    return ranking


def score_pool_split(
    method: str,
    model_dir,
    cache_dir,
    split: str,
    ranking_path,
    qrels_path,
    *,
    candidates_path,
    positives_path,
    depth: int,
    batch_size: int = 64,
    device: str = "auto",
    method_modules=(),
    texts: tuple | None = None,
    teacher: bool = False,
):
    """Score the candidate pool of depth ``depth`` of the miner's ranking at ``ranking_path`` and the split's judged
    positives with the model at ``model_dir`` and write both tables (:func:`hardneg.mining.pool_scores.
    score_pool_stage`): as method ``method`` scores pairs (``Method.score_pairs``: probabilities), or, with
    ``teacher``, as it re-ranks (``Method.rerank``: the scores it ranks by, a teacher's for distillation).
    ``texts``: as :func:`rerank_split`'s."""
    methods.load_modules(list(method_modules))
    declared = methods.get(method)
    hook = declared.rerank if teacher else declared.score_pairs
    scorer = rerank_scorer(hook) if teacher and hook else hook
    if scorer is None:
        raise ValueError(f"method {method!r} {'re-ranks' if teacher else 'scores pairs'} nothing")
    queries, corpus = text_sets(cache_dir, split, texts)
    candidates, positives = score_pool_stage(
        scorer,
        model_dir,
        queries,
        corpus,
        ranking_path,
        qrels_path,
        candidates_path,
        positives_path,
        depth=depth,
        batch_size=batch_size,
        device=resolve_device(device),
    )
    log.info(
        "scored %d candidates and %d positives of %s with %s%s",
        candidates.num_rows,
        positives.num_rows,
        ranking_path,
        model_dir,
        " as a teacher" if teacher else "",
    )
    return candidates, positives
