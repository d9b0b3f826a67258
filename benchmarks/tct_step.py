"""TCT-ColBERT's training step with and without its teacher: what scoring the batch with a frozen ColBERT costs.

The paper (Lin, Yang and Lin, 2021) reports +33% training time for the teacher; the target here is at most 1.5x
the step without it. Both steps are hardneg.methods.tct.step.TctMethod's, on the same student:

* student: a BiEncoder (mean pooling, ColBERT's input markers) over a seeded random BERT of ``--layers``,
  ``--hidden``, ``--heads``, ``--intermediate`` (2 layers of 256 by default, so a run takes a minute or two on
  two CPU threads) and a 30522-token vocabulary;
* teacher: a ColBERT of the same backbone size (its own seeded weights), 128-dimensional token vectors,
  frozen;
* data: synthetic token ids in a tokenized cache written to a temporary folder: queries of 6 to
  ``--query-length`` - 1 tokens (the markers pad them to ``--query-length`` with [MASK]), documents of
  ``--doc-length`` / 2 to ``--doc-length`` tokens, one positive per query; each row of a batch of
  ``--batch-size`` queries has its positive and one random negative, every query scored against the 2B
  documents (the paper's setting);
* a step: make_batch, loss (with the teacher: its scoring of the batch, then the KD loss; without: the
  student's cross-entropy, TCT's hard-negative variant), backward, AdamW update, zero_grad.

One untimed step per side first, then ``--rounds`` rounds of ``--steps`` steps per side, alternating which side
goes first. The table gives the min and median step times, their ratio, and the teacher's share of a step
(the method's own wall-clock record of its teacher scoring, synchronised on a GPU).

    python benchmarks/tct_step.py                      # defaults: CPU, 2 threads
    python benchmarks/tct_step.py --device cuda --layers 12 --hidden 768 --heads 12 --intermediate 3072

Prints a markdown table and one JSON line, and writes benchmarks/out/tct_step.json.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import torch
from report import autocast, machine, machine_line, model_arguments, save, summary, synchronize

from hardneg.dense.data import RandomNegatives, TrainQueries
from hardneg.dense.markers import Markers
from hardneg.dense.model import BiEncoder
from hardneg.dense.tokenized import TokenizedTexts
from hardneg.dense.maxsim import ColBERT
from hardneg.methods.tct.step import TctMethod

VOCAB = 30522  # BERT's: the embedding table is most of a small model's parameters (and of AdamW's update)
PAD, CLS, SEP, MASK, QUERY_MARKER, DOC_MARKER = 0, 101, 102, 103, 1, 2  # BERT's ids ([unused0], [unused1])
FIRST_WORD = 1000
COLBERT_DIM = 128


def write_texts(cache: Path, name: str, lengths: np.ndarray, rng: np.random.Generator) -> None:
    """A text set of the tokenized cache's layout: random word ids between [CLS] and [SEP], ``lengths`` tokens."""
    width = int(lengths.max())
    ids = np.full((len(lengths), width), PAD, dtype=np.int32)
    for row, length in enumerate(lengths):
        ids[row, 0], ids[row, length - 1] = CLS, SEP
        ids[row, 1:length - 1] = rng.integers(FIRST_WORD, VOCAB, length - 2)
    np.save(cache / f"{name}.ids.npy", ids)
    np.save(cache / f"{name}.len.npy", lengths.astype(np.int32))
    pq.write_table(pa.table({"id": [f"{name}{row}" for row in range(len(lengths))]}), cache / f"{name}.rows.parquet")


def synthetic_data(cache: Path, args, rng: np.random.Generator):
    """Queries and documents in ``cache``; query i's single positive is document i."""
    num_queries, num_docs = 8 * args.batch_size, 40 * args.batch_size
    cache.mkdir(parents=True, exist_ok=True)
    (cache / "cache.json").write_text(json.dumps({"pad_token_id": PAD}) + "\n")
    write_texts(cache, "queries", rng.integers(6, args.query_length, num_queries), rng)
    write_texts(cache, "corpus", rng.integers(args.doc_length // 2, args.doc_length + 1, num_docs), rng)
    query_texts, doc_texts = TokenizedTexts(cache, "queries"), TokenizedTexts(cache, "corpus")
    qrels = pa.table({"qid": query_texts.row_ids, "docid": doc_texts.row_ids[:num_queries],
                      "relevance": pa.array(np.ones(num_queries, dtype=np.int32))})
    return TrainQueries(qrels, query_texts.row_ids, doc_texts.row_ids), query_texts, doc_texts


def backbone(args, seed: int):
    from transformers import BertConfig, BertModel

    torch.manual_seed(seed)
    config = BertConfig(vocab_size=VOCAB, hidden_size=args.hidden, num_hidden_layers=args.layers,
                        num_attention_heads=args.heads, intermediate_size=args.intermediate, pad_token_id=PAD,
                        max_position_embeddings=max(512, args.doc_length + 1))
    return BertModel(config, add_pooling_layer=False)








def run(args, device: torch.device) -> dict:
    rng = np.random.default_rng(args.seed)
    markers = Markers(query=QUERY_MARKER, doc=DOC_MARKER, mask=MASK, pad=PAD, sep=SEP, query_length=args.query_length)
    with tempfile.TemporaryDirectory(prefix="tct-step-") as tmp:
        train, query_texts, doc_texts = synthetic_data(Path(tmp), args, rng)
        student = BiEncoder(backbone(args, args.seed), None, pooling="mean", markers=markers).to(device).train()
        teacher = ColBERT(backbone(args, args.seed + 1), markers, dim=COLBERT_DIM).to(device)
        common = dict(negatives=RandomNegatives(train), per_query=1, loss="ce", temperature=1.0)
        sides = {"teacher": TctMethod(train, query_texts, doc_texts, teacher=teacher, **common),
                 "no_teacher": TctMethod(train, query_texts, doc_texts, **common)}
        optimizer = torch.optim.AdamW(student.parameters(), lr=1e-5)
        steps = iter(range(10 ** 9))

        def step(side: str) -> tuple[float, float]:
            method, index = sides[side], next(steps)
            queries = np.random.default_rng([args.seed, index]).choice(len(train), args.batch_size, replace=False)
            synchronize(device)
            started = time.perf_counter()
            with autocast(device, args.precision):  # as the trainer: the forward under autocast, not the update
                loss, _ = method.loss(student, method.make_batch(queries, np.random.default_rng([args.seed, index])),
                                      device)
            loss.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            synchronize(device)
            return time.perf_counter() - started, method.step_timings.get("teacher", 0.0)

        for side in sides:  # warm-up
            step(side)
        seconds = {side: [] for side in sides}
        teacher_seconds = []
        for round_ in range(args.rounds):
            for side in (sides if round_ % 2 == 0 else reversed(list(sides))):
                for _ in range(args.steps):
                    took, teacher_took = step(side)
                    seconds[side].append(took)
                    if side == "teacher":
                        teacher_seconds.append(teacher_took)
    sides = {side: summary(s) for side, s in seconds.items()}
    with_teacher, without = sides["teacher"], sides["no_teacher"]
    teacher_median = statistics.median(teacher_seconds)
    return {**sides,
            "teacher_scoring": {"min_seconds": min(teacher_seconds), "median_seconds": teacher_median,
                                "share_of_median_step": teacher_median / with_teacher["median_seconds"]},
            "ratio_of_medians": with_teacher["median_seconds"] / without["median_seconds"],
            "ratio_of_mins": with_teacher["min_seconds"] / without["min_seconds"],
            "parameters": {"student": sum(p.numel() for p in student.parameters()),
                           "teacher": sum(p.numel() for p in teacher.parameters())}}


def table(record: dict) -> str:
    s = record["setting"]
    lines = [f"TCT-ColBERT step, batch {s['batch_size']} queries x {2 * s['batch_size']} documents, queries "
             f"{s['query_length']} tokens, documents {s['doc_length'] // 2}-{s['doc_length']}, {s['layers']} layers of "
             f"{s['hidden']}, {s['rounds']} rounds of {s['steps']} steps per side", "",
             "| step | min s | median s |", "|---|---|---|"]
    for side, label in (("no_teacher", "student only (contrastive)"), ("teacher", "with the ColBERT teacher (KD)")):
        lines.append(f"| {label} | {record[side]['min_seconds']:.3f} | {record[side]['median_seconds']:.3f} |")
    t = record["teacher_scoring"]
    lines.append(f"| teacher scoring within the step | {t['min_seconds']:.3f} | {t['median_seconds']:.3f} |")
    lines.append(f"| ratio with / without | {record['ratio_of_mins']:.2f}x | {record['ratio_of_medians']:.2f}x |")
    m = record["machine"]
    lines += ["", f"Teacher's share of the median step: {100 * t['share_of_median_step']:.0f}% "
              f"(paper: +33% training time; target at most 1.5x).",
              machine_line(m, s["precision"])]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    model_arguments(parser)  # --query-length: tokens of a marked query ([MASK]-padded)
    parser.add_argument("--batch-size", type=int, default=32, help="queries per batch (2x as many documents)")
    parser.add_argument("--steps", type=int, default=3, help="timed steps per side and round")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--precision", choices=("fp32", "bf16"), default="fp32", help="bf16: autocast, as training")
    args = parser.parse_args()
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise SystemExit("--device cuda: no CUDA device is available")
    torch.set_num_threads(args.threads)
    result = run(args, device)
    setting = {key: getattr(args, key) for key in ("layers", "hidden", "heads", "intermediate", "batch_size",
                                                   "query_length", "doc_length", "steps", "rounds", "seed",
                                                   "precision")}
    record = {"setting": setting, "machine": machine(device, args.threads), **result}
    print(table(record))
    save("tct_step", record)


if __name__ == "__main__":
    main()
