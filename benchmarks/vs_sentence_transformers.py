"""hardneg against sentence-transformers, side by side on the same model (the packaged all-MiniLM-L6-v2), texts
(SciFact), lengths, threads and batch.

Training step (``--part training``): one hard negative per query and in-batch negatives, softmax cross-entropy
of each query over every document of the batch at scale 20 (sentence-transformers' MultipleNegativesRankingLoss;
hardneg's warm-up with normalised mean-pooled vectors and temperature 0.05):

* agreement first: the two losses on the same weights and the same token batch (hardneg's tokenized cache, fed
  to the loss module as sentence features), and their gradients;
* then the time of a step and the memory it adds, each side in a process of its own: hardneg's step
  (``ContrastiveMethod``: length-homogeneous chunks, then backward and AdamW) against the sentence-transformers
  trainer (``SentenceTransformerTrainer`` with ``MultipleNegativesRankingLoss``, its data collator tokenizing the
  texts each step). The batches are ``--batch`` training queries of SciFact with a judged positive and a random
  negative document (seeded, the same rows on both sides); documents are ``title [SEP] text`` cut at
  ``--doc-length`` word pieces, queries at 64. One untimed step, then ``--steps`` timed ones; a step's memory is
  the rise of the peak resident set (VmHWM, reset through /proc/self/clear_refs) over the resident set before.

Targets (issue: faster than what users pick instead): at least 1.5x at 256-token documents and 2x at 512, peak
memory no higher than the trainer's.

    .venv/bin/pip install -e '.[bench]'    # the sentence-transformers trainer needs accelerate
    python benchmarks/vs_sentence_transformers.py --data ../shared/data/scifact [--doc-length 256] [--steps 4]

Prints markdown tables and one JSON line, and writes benchmarks/out/vs_sentence_transformers.json.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
from report import machine, machine_line, measured_steps, process_memory, reset_peak_memory, save, summary

from hardneg.datasets.prepare import prepare_dataset
from hardneg.dense.data import TrainQueries
from hardneg.dense.methods import ContrastiveMethod
from hardneg.dense.model import BiEncoder, ModelSpec
from hardneg.dense.pretrained import model_source
from hardneg.dense.tokenized import TokenizedTexts, build_cache
from hardneg.io import artifacts
from hardneg.pipeline.config import validate_params

QUERY_LENGTH = 64
SCALE = 20.0  # MultipleNegativesRankingLoss's default; hardneg's temperature 0.05


class FixedNegatives:
    """One negative a query, drawn once from the seed (the same rows for both sides)."""

    def __init__(self, rows: np.ndarray):
        self.rows = rows

    def sample(self, queries: np.ndarray, per_query: int, rng) -> np.ndarray:
        return self.rows[queries][:, None]


def setup(args, work: Path) -> dict:
    """SciFact prepared and tokenized with MiniLM's tokenizer under ``work``; the training rows and batches."""
    data = work / "data"
    if not (data / "corpus.parquet").exists():
        prepare_dataset({"adapter": "beir", "path": str(Path(args.data).resolve()), "splits": ["train"]}, data)
    cache = work / f"cache{args.doc_length}"
    if not (cache / "cache.json").exists():
        build_cache(model_source("minilm"), data / "corpus.parquet", {"train": data / "queries" / "train.parquet"},
                    cache, doc_max_length=args.doc_length, query_max_length=QUERY_LENGTH)
    queries, corpus = TokenizedTexts(cache, "queries_train"), TokenizedTexts(cache, "corpus")
    qrels = artifacts.read_table(artifacts.QRELS, data / "qrels" / "train.parquet")
    train = TrainQueries(qrels, queries.row_ids, corpus.row_ids)
    rng = np.random.default_rng(args.seed)
    negatives = FixedNegatives(rng.integers(0, len(corpus.row_ids), len(train)))
    batches = [rng.choice(len(train), args.batch, replace=False) for _ in range(args.steps + 1)]
    return {"data": data, "queries": queries, "corpus": corpus, "train": train, "negatives": negatives,
            "batches": batches}


def hardneg_model(args) -> BiEncoder:
    params = validate_params({"model": {"name": "minilm", "pooling": "mean", "normalize": True,
                                        "doc_max_length": args.doc_length, "query_max_length": QUERY_LENGTH}})
    return BiEncoder.create(ModelSpec.from_params(params["model"]), vocab_size=30522, pad_token_id=0,
                            max_length=args.doc_length, seed=args.seed)


def method_of(work: dict) -> ContrastiveMethod:
    return ContrastiveMethod(work["train"], work["queries"], work["corpus"], negatives=work["negatives"],
                             per_query=1, loss="ce", temperature=1 / SCALE)


def agreement(args, work: dict) -> dict:
    """The two losses and gradients on the same weights and token batch (dropout off)."""
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss

    ours = hardneg_model(args).eval()
    theirs = SentenceTransformer(str(model_source("minilm")), device="cpu").eval()  # the same weights
    method = method_of(work)
    batch = method.make_batch(work["batches"][0], np.random.default_rng(0))
    off_diagonal = batch.relevant.copy()
    off_diagonal[np.arange(len(batch.positive)), batch.positive] = False
    if off_diagonal.any():
        raise SystemExit("the agreement batch has a document relevant to two of its queries: choose another --seed")
    loss, _ = method.loss(ours, batch, "cpu")
    loss.backward()
    features = [work["queries"].batch(batch.query_rows), work["corpus"].batch(batch.doc_rows[:len(batch.positive)]),
                work["corpus"].batch(batch.doc_rows[len(batch.positive):])]
    mnrl = MultipleNegativesRankingLoss(theirs, scale=SCALE)
    their_loss = mnrl(features, None)
    their_loss.backward()
    mine = torch.cat([p.grad.flatten() for p in ours.query_encoder.parameters() if p.grad is not None])
    other = torch.cat([p.grad.flatten() for p in theirs[0].auto_model.parameters() if p.grad is not None])
    loss, their_loss = float(loss.detach()), float(their_loss.detach())
    return {"hardneg_loss": loss, "sentence_transformers_loss": their_loss,
            "loss_relative_difference": abs(loss - their_loss) / abs(their_loss),
            "gradient_relative_difference": float((mine - other).norm() / other.norm())}


def hardneg_side(args, work: dict) -> dict:
    model = hardneg_model(args).train()
    return measured_steps(model, method_of(work), lambda index: work["batches"][index], args.steps, lr=2e-5)


def _document(corpus, row: int) -> str:
    """``title [SEP] text`` (the tokenizer reads ``[SEP]`` as its separator: the ids of hardneg's cache), or the
    text alone when the title is blank."""
    title, text = corpus["title"][row].as_py(), corpus["text"][row].as_py()
    return f"{title} [SEP] {text}" if title.strip() else text


def st_side(args, work: dict) -> dict:
    """The sentence-transformers trainer on the same rows, one step a batch, timed by a callback."""
    from datasets import Dataset
    from sentence_transformers import (SentenceTransformer, SentenceTransformerTrainer,
                                       SentenceTransformerTrainingArguments)
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss
    from transformers import TrainerCallback

    corpus = artifacts.read_table(artifacts.CORPUS, work["data"] / "corpus.parquet")
    queries = artifacts.read_table(artifacts.QUERIES, work["data"] / "queries" / "train.parquet")
    doc_row = {docid: row for row, docid in enumerate(corpus["docid"].to_pylist())}
    query_row = {qid: row for row, qid in enumerate(queries["qid"].to_pylist())}
    method = method_of(work)
    anchors, positives, negatives = [], [], []
    for index, rows in enumerate(work["batches"]):
        batch = method.make_batch(rows, np.random.default_rng(index))
        for i, query in enumerate(batch.query_rows):
            anchors.append(queries["text"][query_row[work["queries"].row_ids[query]]].as_py())
            for out, doc in ((positives, batch.doc_rows[i]), (negatives, batch.doc_rows[len(rows) + i])):
                out.append(_document(corpus, doc_row[work["corpus"].row_ids[doc]]))
    model = SentenceTransformer(str(model_source("minilm")), device="cpu")
    model.max_seq_length = args.doc_length
    dataset = Dataset.from_dict({"anchor": anchors, "positive": positives, "negative": negatives})
    times: list[float] = []

    class Clock(TrainerCallback):
        def on_step_begin(self, *a, **k):
            self.started = time.perf_counter()

        def on_step_end(self, *a, **k):
            times.append(time.perf_counter() - self.started)
            if len(times) == 1:  # after the untimed step: the peak resident set starts again from here
                self.before = reset_peak_memory()

    clock = Clock()
    with tempfile.TemporaryDirectory(prefix="st-trainer-") as out:
        training = SentenceTransformerTrainingArguments(
            output_dir=out, per_device_train_batch_size=args.batch, max_steps=args.steps + 1, learning_rate=2e-5,
            warmup_ratio=0.0, save_strategy="no", logging_strategy="no", report_to=[], use_cpu=True,
            dataloader_drop_last=True, seed=args.seed, disable_tqdm=True)
        trainer = SentenceTransformerTrainer(model=model, args=training, train_dataset=dataset,
                                             loss=MultipleNegativesRankingLoss(model, scale=SCALE),
                                             callbacks=[clock])
        trainer.train()
    return {"step_memory_bytes": process_memory("VmHWM") - clock.before, **summary(times[1:])}


def side(args, name: str) -> dict:
    command = [sys.executable, __file__, "--side", name, "--data", args.data, "--work", str(args.work)]
    for key in ("doc_length", "batch", "steps", "threads", "seed"):
        command += [f"--{key.replace('_', '-')}", str(getattr(args, key))]
    done = subprocess.run(command, capture_output=True, text=True, cwd=Path(__file__).parent)
    if done.returncode != 0:
        sys.exit(f"the {name} side failed:\n{done.stderr[-4000:]}")
    return json.loads(done.stdout.splitlines()[-1])


def table(record: dict) -> str:
    s, a = record["setting"], record["agreement"]
    lines = [f"Training step: all-MiniLM-L6-v2, {s['batch']} SciFact queries (64 word pieces) x {2 * s['batch']} "
             f"documents ({s['doc_length']} word pieces), one hard negative and in-batch negatives, scale 20, "
             f"{s['threads']} threads, {s['steps']} timed steps a side", "",
             "| training step | median s | min s | step memory GiB |", "|---|---|---|---|"]
    for name, label in (("hardneg", "hardneg (ContrastiveMethod, warm-up's loss)"),
                        ("sentence_transformers", "sentence-transformers trainer, MultipleNegativesRankingLoss")):
        r = record[name]
        lines.append(f"| {label} | {r['median_seconds']:.2f} | {r['min_seconds']:.2f} | "
                     f"{r['step_memory_bytes'] / 2 ** 30:.2f} |")
    m = record["machine"]
    lines += ["", f"Speed-up (median step): {record['speed_ratio']:.2f}x; memory hardneg / trainer: "
                  f"{record['memory_ratio']:.2f}x. Agreement on the same weights and batch: losses "
                  f"{a['hardneg_loss']:.6f} and {a['sentence_transformers_loss']:.6f} (relative difference "
                  f"{a['loss_relative_difference']:.1e}), gradients {a['gradient_relative_difference']:.1e} apart "
                  f"(relative).",
              machine_line(m)]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", required=True, help="SciFact in BEIR's layout (../shared/data/scifact)")
    parser.add_argument("--doc-length", type=int, default=256, help="document word pieces")
    parser.add_argument("--batch", type=int, default=32, help="queries a step")
    parser.add_argument("--steps", type=int, default=4, help="timed steps a side")
    parser.add_argument("--threads", type=int, default=2, help="torch's CPU threads")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--work", type=Path, default=Path(__file__).parent / "out" / "vs_sentence_transformers",
                        help="where the prepared data and the tokenized cache are kept between runs")
    parser.add_argument("--side", help=argparse.SUPPRESS)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    args.work.mkdir(parents=True, exist_ok=True)
    work = setup(args, args.work)
    if args.side:
        print(json.dumps((hardneg_side if args.side == "hardneg" else st_side)(args, work)))
        return
    record = {"setting": {k: getattr(args, k) for k in ("doc_length", "batch", "steps", "threads", "seed")},
              "machine": machine(torch.device("cpu"), args.threads), "agreement": agreement(args, work),
              "hardneg": side(args, "hardneg"), "sentence_transformers": side(args, "st")}
    record["speed_ratio"] = record["sentence_transformers"]["median_seconds"] / record["hardneg"]["median_seconds"]
    memory = {side: record[side]["step_memory_bytes"] for side in ("hardneg", "sentence_transformers")}
    record["memory_ratio"] = memory["hardneg"] / memory["sentence_transformers"]
    print(table(record))
    save("vs_sentence_transformers", record)


if __name__ == "__main__":
    main()
