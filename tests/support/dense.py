"""Tiny dense-retrieval fixtures shared by the dense tests: a synthetic dataset, a tokenizer, a cache."""

import os
import signal
import time
from pathlib import Path

from hardneg.datasets.prepare import prepare_dataset
from hardneg.dense.tokenized import build_cache
from hardneg.dense.tokenizer import train_wordpiece

TINY_DATA = {"adapter": "synthetic", "seed": 5, "num_docs": 300, "docs_per_cluster": 30,
             "num_queries": {"train": 120, "test": 40}, "concept_vocab": 200, "synonym_rate": 0.5}
TINY_MODEL = {"hidden_size": 32, "num_hidden_layers": 1, "num_attention_heads": 2, "intermediate_size": 64}


def build_tiny(root: Path) -> dict:
    """Prepare the tiny dataset, a WordPiece tokenizer and the tokenized cache under ``root``."""
    data, tokenizer, cache = root / "data", root / "tokenizer", root / "cache"
    prepare_dataset(TINY_DATA, data)
    train_wordpiece(data / "corpus.parquet", tokenizer, vocab_size=8000,
                    query_paths=[data / "queries" / "train.parquet"])
    build_cache(tokenizer, data / "corpus.parquet", {s: data / "queries" / f"{s}.parquet" for s in ("train", "test")},
                cache, doc_max_length=64, query_max_length=16)
    return {"data": data, "tokenizer": tokenizer, "cache": cache}


def tiny_reranker(root: Path, create) -> dict:
    """:func:`build_tiny` under ``root`` with what a re-ranker's tests read: ``spec`` (the tiny model, documents cut
    at 64 tokens and queries at 16), its tokenizer ``tok``, ``model`` = ``create(spec, tokenizer)`` in eval mode,
    and the tokenized ``queries`` (test split), ``train_queries`` and ``corpus``."""
    from hardneg.dense.backbone import ModelSpec
    from hardneg.dense.tokenized import TokenizedTexts
    from hardneg.dense.tokenizer import load_tokenizer
    from hardneg.pipeline.config import validate_params

    tiny = build_tiny(root)
    spec = ModelSpec.from_params(validate_params({"model": {"builtin": TINY_MODEL, "doc_max_length": 64,
                                                            "query_max_length": 16}})["model"])
    tokenizer = load_tokenizer(tiny["tokenizer"])
    return {**tiny, "spec": spec, "tok": tokenizer, "model": create(spec, tokenizer).eval(),
            "queries": TokenizedTexts(tiny["cache"], "queries_test"), "corpus": TokenizedTexts(tiny["cache"], "corpus"),
            "train_queries": TokenizedTexts(tiny["cache"], "queries_train")}


def kill_after_checkpoint_and_resume(launch, out: Path) -> str:
    """Start ``launch(out, sleep)`` (a training subprocess, slowed by ``sleep`` seconds a step, stderr piped as
    text), SIGKILL it once it has written ``out/ckpt/state.json``, start it again unslowed, and return the second
    run's stderr. Asserts that the kill interrupted training and that the second run resumed."""
    checkpoint = out / "ckpt" / "state.json"
    first = launch(out, 0.3)
    deadline = time.time() + 120
    while not checkpoint.exists() and time.time() < deadline and first.poll() is None:
        time.sleep(0.05)
    assert checkpoint.exists(), "no checkpoint was written before the deadline"
    os.kill(first.pid, signal.SIGKILL)
    first.wait()
    assert not (out / "model").exists()  # the kill really interrupted training
    second = launch(out, 0.0)
    assert second.wait(timeout=300) == 0, second.stderr.read()
    stderr = second.stderr.read()
    assert "resuming from step" in stderr
    return stderr
