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

Targets: at least 1.5x at 256-token documents and 2x at 512, peak memory no higher than the trainer's.

Where Tevatron is installed (its PyPI release, 0.1.0, in the ``bench`` extra), its training step joins: its
``DenseModel`` (the [CLS] vector, unnormalised, softmax over every passage of the batch at temperature 1) on the
same batches as its collator pads them (queries to 64, passages to ``--doc-length``: ``padding="max_length"``),
against hardneg's step with the same pooling and temperature; losses and gradients compared first.

Mining (``--part mining``): the ``--negatives`` best-ranked of each training query's top ``--depth`` documents,
judged positives left out, from SciFact's raw files (BEIR's jsonl and qrels), each side in a process of its own,
timed from the process's start (interpreter, imports, model load included) to its negatives on disk:

* hardneg, cold: the workflow's stage functions one after the other (the jobs of a mining run, without
  Snakemake): prepare the dataset, tokenize, encode the corpus (one shard), build a Flat index, encode and search
  the training queries, the positives' scores, the candidate pool, the policy's selection (``keep``, ``top``);
* hardneg, with the corpus embeddings existing (the pipeline's common case: the miner's run encoded its corpus for
  its own evaluation): from the index build on;
* sentence-transformers: the texts read from the same files into a ``Dataset`` of (query, positive) pairs and
  ``mine_hard_negatives`` (``range_max`` the depth, ``sampling_strategy="top"``, the same corpus and encoding
  batch) with ``output_format="n-tuple"``.

Both sides read documents as ``title [SEP] text`` cut at ``--doc-length`` word pieces. Agreement: per query, the
share of hardneg's negatives that sentence-transformers also selects (the same model and texts: equal but for
ties and float rounding). Targets: at least 1.0x cold, 3x with existing embeddings.

    .venv/bin/pip install -e '.[bench]'    # accelerate (the sentence-transformers trainer) and Tevatron
    python benchmarks/vs_sentence_transformers.py --data ../shared/data/scifact [--doc-length 256] [--steps 4]
                                                  [--part training|mining|both] [--depth 200] [--negatives 8]

Each side's result is kept as soon as it finishes (the record so far: benchmarks/out/
vs_sentence_transformers.partial.json). A side that fails, or that passes 90% of the memory the machine had
available when it started (it is stopped then, before the kernel's out-of-memory killer takes it or this script),
is shown in its table row with the cause (exit status or signal, its peak memory, its last error lines) in place of
its numbers, and the other sides' results stay (benchmarks/report.run_side).

Prints markdown tables and one JSON line, and writes benchmarks/out/vs_sentence_transformers.json.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
from report import (machine, machine_line, measured_steps, process_memory, reset_peak_memory, run_side, save,
                    summary)

STARTED = time.perf_counter()  # a mining side's clock starts with its process (as near as Python can tell)

from hardneg.datasets.prepare import prepare_dataset
from hardneg.dense.backbone import ModelSpec
from hardneg.dense.data import TrainQueries
from hardneg.dense.steps import ContrastiveMethod
from hardneg.dense.model import BiEncoder
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


def hardneg_model(args, *, like_tevatron: bool = False) -> BiEncoder:
    """MiniLM as hardneg's bi-encoder: mean-pooled and normalised (as sentence-transformers' MiniLM), or, to
    compare with Tevatron, the [CLS] vector unnormalised (as Tevatron's DenseModel)."""
    pooling = {"pooling": "cls", "normalize": False} if like_tevatron else {"pooling": "mean", "normalize": True}
    params = validate_params({"model": {"name": "minilm", **pooling, "doc_max_length": args.doc_length,
                                        "query_max_length": QUERY_LENGTH}})
    return BiEncoder.create(ModelSpec.from_params(params["model"]), vocab_size=30522, pad_token_id=0,
                            max_length=args.doc_length, seed=args.seed)


def method_of(work: dict, *, like_tevatron: bool = False) -> ContrastiveMethod:
    return ContrastiveMethod(work["train"], work["queries"], work["corpus"], negatives=work["negatives"],
                             per_query=1, loss="ce", temperature=1.0 if like_tevatron else 1 / SCALE)


def has_tevatron() -> bool:
    import importlib.util

    return importlib.util.find_spec("tevatron") is not None


def tevatron_model(args):
    """Tevatron's DenseModel (the PyPI release, 0.1.0) over MiniLM, one encoder shared by queries and passages,
    as its trainer builds it; the arguments it reads given directly."""
    from types import SimpleNamespace

    from tevatron.modeling import DenseModel
    from transformers import AutoModel

    encoder = AutoModel.from_pretrained(str(model_source("minilm")))
    return DenseModel(lm_q=encoder, lm_p=encoder, pooler=None, model_args=None,
                      data_args=SimpleNamespace(train_n_passages=2),
                      train_args=SimpleNamespace(negatives_x_device=False, per_device_train_batch_size=args.batch))


def tevatron_inputs(args, work: dict, batch) -> dict:
    """A hardneg batch as Tevatron's collator gives it: the queries padded to their maximum length, each query's
    positive then its negative (target 2i), padded to the passages' maximum length (``padding="max_length"``)."""
    def padded(texts, rows, width):
        ids = np.zeros((len(rows), width), dtype=np.int64)
        mask = np.zeros((len(rows), width), dtype=np.int64)
        for i, row in enumerate(rows):
            n = int(texts.lengths[row])
            ids[i, :n], mask[i, :n] = texts.ids[row, :n], 1
        return {"input_ids": torch.from_numpy(ids), "attention_mask": torch.from_numpy(mask)}

    b = len(batch.positive)
    passages = np.stack([batch.doc_rows[:b], batch.doc_rows[b:2 * b]], axis=1).reshape(-1)
    return {"query": padded(work["queries"], batch.query_rows, QUERY_LENGTH),
            "passage": padded(work["corpus"], passages, args.doc_length)}


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


def tevatron_agreement(args, work: dict) -> dict:
    """hardneg's loss ([CLS], unnormalised, temperature 1) and Tevatron's on the same weights and batch."""
    ours, theirs = hardneg_model(args, like_tevatron=True).eval(), tevatron_model(args).eval()
    method = method_of(work, like_tevatron=True)
    batch = method.make_batch(work["batches"][0], np.random.default_rng(0))
    loss, _ = method.loss(ours, batch, "cpu")
    loss.backward()
    theirs.training = True  # the training branch of DenseModel.forward (the loss) with dropout off
    their_loss = theirs(**tevatron_inputs(args, work, batch)).loss
    their_loss.backward()
    mine = torch.cat([p.grad.flatten() for p in ours.query_encoder.parameters() if p.grad is not None])
    other = torch.cat([p.grad.flatten() for name, p in theirs.lm_q.named_parameters()
                       if p.grad is not None and not name.startswith("pooler")])
    loss, their_loss = float(loss.detach()), float(their_loss.detach())
    return {"hardneg_loss": loss, "tevatron_loss": their_loss,
            "loss_relative_difference": abs(loss - their_loss) / abs(their_loss),
            "gradient_relative_difference": float((mine - other).norm() / other.norm())}


def hardneg_side(args, work: dict, *, like_tevatron: bool = False) -> dict:
    model = hardneg_model(args, like_tevatron=like_tevatron).train()
    return measured_steps(model, method_of(work, like_tevatron=like_tevatron), lambda index: work["batches"][index],
                          args.steps, lr=2e-5)


def tevatron_side(args, work: dict) -> dict:
    """Tevatron's training step (its trainer's: the model's loss, backward, AdamW), one untimed step first."""
    model = tevatron_model(args).train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=2e-5)
    method = method_of(work, like_tevatron=True)
    times, before = [], 0
    for index in range(args.steps + 1):
        inputs = tevatron_inputs(args, work, method.make_batch(work["batches"][index], np.random.default_rng(index)))
        started = time.perf_counter()
        model(**inputs).loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        times.append(time.perf_counter() - started)
        if index == 0:
            before = reset_peak_memory()
    return {"step_memory_bytes": process_memory("VmHWM") - before, **summary(times[1:])}


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


# ------------------------------------------------------------------------------------------------------ mining
def read_beir(path: Path) -> tuple[dict, dict, dict]:
    """SciFact's raw files: ``{docid: title [SEP] text}``, ``{qid: text}`` and the training qrels
    ``{qid: {docid, ...}}`` (relevance above 0)."""
    docs = {}
    with open(path / "corpus.jsonl", encoding="utf-8") as lines:
        for line in lines:
            row = json.loads(line)
            title, text = row.get("title") or "", row.get("text") or ""
            docs[str(row["_id"])] = f"{title} [SEP] {text}" if title.strip() else text
    with open(path / "queries.jsonl", encoding="utf-8") as lines:
        queries = {str(row["_id"]): row["text"] for row in map(json.loads, lines)}
    qrels: dict[str, set] = {}
    with open(path / "qrels" / "train.tsv", encoding="utf-8") as lines:
        for line in list(lines)[1:]:
            qid, docid, score = line.rstrip("\n").split("\t")
            if int(score) > 0:
                qrels.setdefault(qid, set()).add(docid)
    return docs, queries, qrels


def mine_hardneg(args, folder: Path, *, cold: bool) -> dict:
    """hardneg's stages from raw files (``cold``) or from the index build on, under ``folder``; returns the
    seconds of each stage and the negatives ``{qid: [docid, ...]}``."""
    from hardneg.dense.encode import encode_corpus_shard
    from hardneg.dense.search import build_index_stage, dense_search_split
    from hardneg.mining.negatives import positive_scores_stage
    from hardneg.mining.pool import pool_stage
    from hardneg.mining.selection import select_stage

    data, cache, emb = folder / "data", folder / "cache", folder / "embeddings"
    out = folder / ("cold" if cold else "warm")
    out.mkdir(parents=True, exist_ok=True)
    seconds, clock = {}, time.perf_counter()

    def stage(name: str) -> None:
        nonlocal clock
        now = time.perf_counter()
        seconds[name], clock = now - clock, now

    if cold:
        prepare_dataset({"adapter": "beir", "path": str(Path(args.data).resolve()), "splits": ["train"]}, data)
        stage("prepare")
        build_cache(model_source("minilm"), data / "corpus.parquet", {"train": data / "queries" / "train.parquet"},
                    cache, doc_max_length=args.doc_length, query_max_length=QUERY_LENGTH)
        stage("tokenize")
        encode_corpus_shard(folder / "model", cache, 0, 1, emb / "corpus.npy", emb / "corpus.ids.parquet",
                            batch_size=args.mine_batch, device="cpu")
        stage("encode corpus")
    build_index_stage(emb / "corpus.npy", "Flat", out / "flat.faiss", threads=args.threads)
    stage("index")
    dense_search_split(folder / "model", cache, "train", out / "flat.faiss", emb / "corpus.ids.parquet",
                       ranking_path=out / "train.parquet", trec_path=None, query_npy=out / "queries_train.npy",
                       query_ids=out / "queries_train.ids.parquet", top_k=args.depth, batch_size=args.mine_batch,
                       device="cpu")
    stage("encode + search queries")
    qrels = data / "qrels" / "train.parquet"
    positive_scores_stage(out / "queries_train.npy", out / "queries_train.ids.parquet", emb / "corpus.npy",
                          emb / "corpus.ids.parquet", qrels, out / "positives.parquet")
    pool_stage(out / "train.parquet", qrels, out / "pool.parquet", depth=args.depth,
               positives_path=out / "positives.parquet")
    select_stage(out / "pool.parquet", out / "hardnegs.parquet", out / "selection.json",
                 policy={"keep": args.negatives, "sampling": "top"})
    stage("pool + selection")
    table = artifacts.read_table(artifacts.HARDNEGS, out / "hardnegs.parquet")
    negatives: dict[str, list] = {}
    for qid, docid in zip(table["qid"].to_pylist(), table["docid"].to_pylist()):
        negatives.setdefault(qid, []).append(docid)
    return {"stage_seconds": seconds, "negatives": negatives}


def mine_st(args) -> dict:
    """``mine_hard_negatives`` on the same files; returns the negatives ``{qid: [docid, ...]}``."""
    from datasets import Dataset
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.util import mine_hard_negatives

    docs, queries, qrels = read_beir(Path(args.data))
    pairs = [(queries[qid], docs[docid]) for qid in sorted(qrels) for docid in sorted(qrels[qid])]
    dataset = Dataset.from_dict({"query": [q for q, _ in pairs], "positive": [d for _, d in pairs]})
    model = SentenceTransformer(str(model_source("minilm")), device="cpu")
    model.max_seq_length = args.doc_length
    mined = mine_hard_negatives(dataset, model, corpus=list(docs.values()), range_max=args.depth,
                                num_negatives=args.negatives, sampling_strategy="top", batch_size=args.mine_batch,
                                output_format="n-tuple", verbose=False)
    qid_of = {text: qid for qid, text in queries.items()}
    docids_of: dict[str, list] = {}
    for docid, text in docs.items():
        docids_of.setdefault(text, []).append(docid)
    negatives = {}
    for row in mined:
        found = [row[f"negative_{i}"] for i in range(1, args.negatives + 1)]
        negatives[qid_of[row["query"]]] = [docids_of[text][0] for text in found]
    return {"negatives": negatives}


def mining_side(args, name: str) -> dict:
    """One mining side in this process; its seconds count from the process's start, less the saving of the
    miner's model before hardneg's cold run (the model exists in both cases)."""
    folder, untimed = args.work / "mining", 0.0
    if name == "mine-hardneg-cold":
        import shutil

        from hardneg.dense.tokenizer import load_tokenizer

        began = time.perf_counter()
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        hardneg_model(args).save(folder / "model", tokenizer=load_tokenizer(model_source("minilm")))
        untimed = time.perf_counter() - began
    if name == "mine-st":
        record = mine_st(args)
    else:
        record = mine_hardneg(args, folder, cold=name == "mine-hardneg-cold")
    return {"seconds": time.perf_counter() - STARTED - untimed, "peak_memory_bytes": process_memory("VmHWM"),
            **record}

def side(args, name: str, record: dict, key: str) -> dict:
    """Run side ``name`` in a process of its own (benchmarks/report.run_side) into ``record[key]``: its result, or
    ``{"failed": cause}``; the whole record is saved at once, so a later side that fails loses nothing."""
    command = [sys.executable, __file__, "--side", name, "--data", args.data, "--work", str(args.work)]
    for option in ("doc_length", "batch", "steps", "threads", "seed", "depth", "negatives", "mine_batch"):
        command += [f"--{option.replace('_', '-')}", str(getattr(args, option))]
    record[key] = run_side(command, cwd=Path(__file__).parent)
    if "failed" in record[key]:
        print(f"the {name} side failed: {record[key]['failed']}", file=sys.stderr)
    save_partial(args, record)
    return record[key]


def ratio(record: dict, numerator: str, denominator: str, field: str) -> float | None:
    """``record[numerator][field] / record[denominator][field]``; None when either side failed."""
    if "failed" in record[numerator] or "failed" in record[denominator]:
        return None
    return record[numerator][field] / record[denominator][field]


def training(args, record: dict) -> dict:
    work = setup(args, args.work)
    record["agreement"] = agreement(args, work)
    side(args, "hardneg", record, "hardneg")
    side(args, "st", record, "sentence_transformers")
    record["speed_ratio"] = ratio(record, "sentence_transformers", "hardneg", "median_seconds")
    record["memory_ratio"] = ratio(record, "hardneg", "sentence_transformers", "step_memory_bytes")
    if has_tevatron():
        record["tevatron_agreement"] = tevatron_agreement(args, work)
        side(args, "hardneg-cls", record, "hardneg_cls")
        side(args, "tevatron", record, "tevatron")
        record["tevatron_speed_ratio"] = ratio(record, "tevatron", "hardneg_cls", "median_seconds")
        record["tevatron_memory_ratio"] = ratio(record, "hardneg_cls", "tevatron", "step_memory_bytes")
    return record


def mining(args, record: dict) -> dict:
    for name in ("mine-hardneg-cold", "mine-hardneg-warm", "mine-st"):
        side(args, name, record, name.removeprefix("mine-").replace("-", "_"))
    theirs = record["st"].pop("negatives", None)
    overlaps = {}
    for name in ("hardneg_cold", "hardneg_warm"):
        ours = record[name].pop("negatives", None)
        if ours is None or theirs is None:
            continue
        shared = [len(set(ours[qid]) & set(theirs.get(qid, []))) / len(ours[qid]) for qid in ours]
        overlaps[name] = {"queries": len(ours), "queries_sentence_transformers": len(theirs),
                          "mean_overlap": float(np.mean(shared)), "identical_queries": int(sum(o == 1 for o in shared))}
    record["agreement"] = overlaps
    record["cold_ratio"] = ratio(record, "st", "hardneg_cold", "seconds")
    record["warm_ratio"] = ratio(record, "st", "hardneg_warm", "seconds")
    return record


def save_partial(args, record: dict) -> None:
    """The record so far, in benchmarks/out/vs_sentence_transformers.partial.json."""
    out = Path(__file__).parent / "out" / "vs_sentence_transformers.partial.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(getattr(args, "record", record), indent=2, default=str) + "\n")


def failed_row(label: str, result: dict, columns: int) -> str:
    """The row of a side that failed: its cause where its numbers would be."""
    return f"| {label} | failed: {result['failed']} |" + " |" * (columns - 1)


def step_rows(record: dict, sides) -> list[str]:
    """A table row per (side, label): median and minimum step seconds, step memory (or why the side failed)."""
    return [failed_row(label, record[name], 3) if "failed" in record[name] else
            f"| {label} | {record[name]['median_seconds']:.2f} | {record[name]['min_seconds']:.2f} | "
            f"{record[name]['step_memory_bytes'] / 2 ** 30:.2f} |" for name, label in sides]


def times(value: float | None) -> str:
    return "– (a side failed)" if value is None else f"{value:.2f}x"


def training_table(s: dict, record: dict) -> str:
    a = record["agreement"]
    lines = [f"Training step: all-MiniLM-L6-v2, {s['batch']} SciFact queries (64 word pieces) x {2 * s['batch']} "
             f"documents ({s['doc_length']} word pieces), one hard negative and in-batch negatives, scale 20, "
             f"{s['threads']} threads, {s['steps']} timed steps a side", "",
             "| training step | median s | min s | step memory GiB |", "|---|---|---|---|"]
    lines += step_rows(record, (("hardneg", "hardneg (ContrastiveMethod, warm-up's loss)"),
                                ("sentence_transformers", "sentence-transformers trainer, MultipleNegativesRankingLoss")))
    lines += ["", f"Speed-up (median step): {times(record['speed_ratio'])}; memory hardneg / trainer: "
                  f"{times(record['memory_ratio'])}. Agreement on the same weights and batch: losses "
                  f"{a['hardneg_loss']:.6f} and {a['sentence_transformers_loss']:.6f} (relative difference "
                  f"{a['loss_relative_difference']:.1e}), gradients {a['gradient_relative_difference']:.1e} apart "
                  f"(relative)."]
    if "tevatron" in record:
        t = record["tevatron_agreement"]
        lines += ["", "| training step, [CLS] unnormalised, temperature 1 | median s | min s | step memory GiB |",
                  "|---|---|---|---|"]
        lines += step_rows(record, (("hardneg_cls", "hardneg (ContrastiveMethod)"),
                                    ("tevatron", "Tevatron 0.1.0 DenseModel, its collator's max_length padding")))
        lines += ["", f"Speed-up (median step): {times(record['tevatron_speed_ratio'])}; memory hardneg / "
                      f"Tevatron: {times(record['tevatron_memory_ratio'])}. Agreement: losses {t['hardneg_loss']:.6f} and "
                      f"{t['tevatron_loss']:.6f} ({t['loss_relative_difference']:.1e}), gradients "
                      f"{t['gradient_relative_difference']:.1e} apart."]
    return "\n".join(lines)


def mining_table(s: dict, record: dict) -> str:
    a = record["agreement"].get("hardneg_cold")
    stages = ", ".join(f"{name} {seconds:.1f}" for name, seconds in
                       record["hardneg_cold"].get("stage_seconds", {}).items()) or "– (the side failed)"
    lines = [f"Mining: all-MiniLM-L6-v2, SciFact's training queries with a judged positive against "
             f"its corpus (documents at {s['doc_length']} word pieces), the {s['negatives']} best-ranked of each "
             f"query's top {s['depth']} (judged positives left out), encoding batch {s['mine_batch']}, "
             f"{s['threads']} threads, each side a process from its start to its negatives on disk", "",
             "| mining | seconds | peak memory GiB |", "|---|---|---|"]
    for name, label in (("hardneg_cold", "hardneg from raw files (prepare, tokenize, encode, Flat index, search, "
                                         "pool, selection)"),
                        ("hardneg_warm", "hardneg with the corpus embeddings existing (index, search, pool, "
                                         "selection)"),
                        ("st", "sentence-transformers mine_hard_negatives (texts read, encode, search, select)")):
        r = record[name]
        lines.append(failed_row(label, r, 2) if "failed" in r else
                     f"| {label} | {r['seconds']:.1f} | {r['peak_memory_bytes'] / 2 ** 30:.2f} |")
    agreement = "– (a side failed)" if a is None else (
        f"{a['mean_overlap']:.3f} of hardneg's negatives a query are also sentence-transformers' "
        f"({a['identical_queries']} of {a['queries']} queries the same set; sentence-transformers returns "
        f"{a['queries_sentence_transformers']} queries)")
    lines += ["", f"Speed-up: {times(record['cold_ratio'])} cold, {times(record['warm_ratio'])} with existing "
                  f"embeddings. hardneg's stages (s, in the process): {stages}. Agreement: {agreement}."]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", required=True, help="SciFact in BEIR's layout (../shared/data/scifact)")
    parser.add_argument("--part", choices=("training", "mining", "both"), default="both")
    parser.add_argument("--doc-length", type=int, default=256, help="document word pieces")
    parser.add_argument("--batch", type=int, default=32, help="queries a training step")
    parser.add_argument("--steps", type=int, default=4, help="timed training steps a side")
    parser.add_argument("--depth", type=int, default=200, help="mining depth (sentence-transformers' range_max)")
    parser.add_argument("--negatives", type=int, default=8, help="negatives mined a query")
    parser.add_argument("--mine-batch", type=int, default=64, help="texts a forward pass when mining")
    parser.add_argument("--threads", type=int, default=2, help="torch's CPU threads")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--work", type=Path, default=Path(__file__).parent / "out" / "vs_sentence_transformers",
                        help="where the prepared data and the tokenized cache are kept between runs")
    parser.add_argument("--side", help=argparse.SUPPRESS)
    args = parser.parse_args()
    args.data, args.work = str(Path(args.data).resolve()), args.work.resolve()  # the sides run in benchmarks/
    torch.set_num_threads(args.threads)
    args.work.mkdir(parents=True, exist_ok=True)
    if args.side in ("mine-hardneg-cold", "mine-hardneg-warm", "mine-st"):
        print(json.dumps(mining_side(args, args.side)))
        return
    if args.side:
        work = setup(args, args.work)
        sides = {"hardneg": hardneg_side, "st": st_side, "tevatron": tevatron_side,
                 "hardneg-cls": lambda a, w: hardneg_side(a, w, like_tevatron=True)}
        print(json.dumps(sides[args.side](args, work)))
        return
    setting = {k: getattr(args, k) for k in ("doc_length", "batch", "steps", "depth", "negatives", "mine_batch",
                                             "threads", "seed")}
    record = {"setting": setting, "machine": machine(torch.device("cpu"), args.threads)}
    args.record = record  # saved whole after each side (save_partial)
    tables = []
    if args.part in ("training", "both"):
        record["training"] = {}
        tables.append(training_table(setting, training(args, record["training"])))
    if args.part in ("mining", "both"):
        record["mining"] = {}
        tables.append(mining_table(setting, mining(args, record["mining"])))
    print("\n\n".join(tables + [machine_line(record["machine"])]))
    save("vs_sentence_transformers", record)


if __name__ == "__main__":
    main()
