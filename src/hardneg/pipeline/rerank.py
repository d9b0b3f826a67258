"""Stage function of the rerank rule: a re-ranking model's ranking of one split, from another run's top-k."""

from __future__ import annotations

import logging

log = logging.getLogger(__name__)


def rerank_split(model_dir, cache_dir, split: str, candidates_path, *, run_path, trec_path, depth: int,
                 batch_size: int = 64, tag: str = "rerank", device: str = "auto"):
    """Re-rank the top-``depth`` of each query of the ranking at ``candidates_path`` with the ColBERT model at
    ``model_dir`` (:func:`hardneg.methods.colbert.maxsim.rerank`) and write the run (Parquet + TREC)."""
    from hardneg.dense.tokenized import TokenizedTexts
    from hardneg.dense.trainer import resolve_device
    from hardneg.io.rankings import read_run, write_run
    from hardneg.methods.colbert.maxsim import ColBERT, rerank

    model = ColBERT.load(model_dir)
    queries = TokenizedTexts(cache_dir, f"queries_{split}")
    corpus = TokenizedTexts(cache_dir, "corpus")
    candidates = read_run(candidates_path)
    run = rerank(model, queries, corpus, candidates, depth=depth, batch_size=batch_size, device=resolve_device(device))
    log.info("re-ranked the top %d of %d queries of %s", depth, len(set(candidates["qid"].to_pylist())),
             candidates_path)
    write_run(run, run_path, trec_path, tag)
    return run
