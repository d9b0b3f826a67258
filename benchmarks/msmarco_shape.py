"""MS MARCO passage's shape on one machine: 8.8M documents of 768 dimensions (27 GB of float32, more than a
24 GiB machine's memory), 6,980 dev queries, 20,000 mining queries, 200 ADORE steps.

    python benchmarks/msmarco_shape.py [--docs 8841823] [--dim 768] [--work DIR] [--stages ...]

No model encodes anything: the embeddings are generated straight to disk, in blocks, seeded (documents around
1,024 random topic directions; each query near one document, which is its one judged positive), because what
is measured is every stage that touches the corpus at its real size. Each stage runs in a process of its own;
its wall time and its peak resident set (VmHWM: what the process holds, page cache of files read through
ordinary reads excluded) are recorded:

* ``generate``: the corpus matrix, the queries and their qrels written in blocks;
* ``flat_dev``: exact search of the dev queries, top 1,000, streamed from the matrix on disk
  (:class:`hardneg.index.streamed.StreamedFlat`: a Flat index of it cannot be held), written as a ranking;
* ``flat_vs_faiss``: throughput of that streamed search against Faiss's own ``IndexFlatIP`` over the same blocks
  (already in memory, reading not timed), on ``--compare-queries`` dev queries;
* ``ivfpq_build``: ``IVF<n>,PQ96`` (PQ with 96 sub-vectors, the compression ADORE's paper trains against) built
  through the workflow's stage function, reading the matrix block by block;
* ``ivfpq_dev``: the dev queries searched in it (``nprobe``), top 1,000;
* ``mine``: the 20,000 training queries searched in it, top 200, then the workflow's mining stages: the
  positives' exact scores, the candidate pool and the selection (8 a query, best first);
* ``adore``: ADORE steps (32 queries, top 200, LambdaLoss with the paper's ΔMRR weights) of a query encoder
  (a built-in BERT of 2 layers with 768 dimensions: the shape of the vectors is what the index sees) against
  the IVF-PQ index, the fixed documents read from the matrix on disk;
* ``evaluate``: MRR@10 and R@1000 of both dev rankings (ir-measures, through the workflow's evaluation);
* ``encode_sample``: the one stage the generated matrix skips, encoding, sampled: a BERT-base-shaped encoder (12
  layers, 768 dimensions, random weights: the same arithmetic as a trained one) encodes ``--encode-sample``
  passages of 40 to 120 word pieces (MS MARCO's passages average about 56 words) with the workflow's encoding
  (length-sorted batches of 64), and the rate gives the hours the corpus would take;
* ``bm25_texts``: texts for the lexical stages, from the synthetic generator (the workflow's ``synthetic``
  dataset adapter): ``--docs`` passages of a one-word title and 19 to 91 words (56 in all on average, as MS
  MARCO's passages) and ``--dev`` queries with their judged documents;
* ``bm25_index``: the workflow's ``bm25_index`` stage function over them (Anserini's indexer, 2 threads,
  positions and document vectors stored, one segment; the Java heap the rule's default memory gives);
* ``bm25_dev``: the workflow's ``bm25_search`` stage function alone, as its job runs it: the dev queries read,
  searched (top 1,000, k1 0.9, b 0.4), the ranking written as Parquet and TREC; then its MRR@10 and R@1000;
* ``bm25_vs_raw``: the same stage function against Pyserini's ``LuceneSearcher.batch_search`` over the same
  index, queries, k and threads (``benchmarks/bm25_raw.py``'s raw side), in one process: a warm-up of each,
  then ``--bm25-rounds`` rounds alternating which goes first; the rankings compared (this process holds both
  sides' runs at once, so its peak is not the stage's).

From the stages, the table extrapolates the hours of a full MS MARCO run's corpus-sized stages on this machine:
encoding the corpus, the exact dev search, the IVF-PQ build and mining all 502,939 training queries (the
``mine`` stage's time scaled by the query count).

Targets: every stage within a 24 GiB machine with peak RSS at most 8 GB; the streamed exact search's throughput
within 1.5x of IndexFlatIP's over the same blocks. Prints a Markdown table and one JSON line, and writes
benchmarks/out/msmarco_shape.json. ``--docs 300000`` runs the same chain small, in minutes.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from report import machine_line, process_memory, save

STAGES = ("generate", "flat_dev", "flat_vs_faiss", "ivfpq_build", "ivfpq_dev", "mine", "adore", "evaluate",
          "encode_sample", "bm25_texts", "bm25_index", "bm25_dev", "bm25_vs_raw")
PASSAGE_WORDS = (19, 91)  # the text's words, drawn uniformly: 55 on average, 56 with the one-word title
BM25_MEM_MB = 6000  # the bm25_index and bm25_search rules' default memory, which sets the Java heap
MSMARCO_TRAIN_QUERIES = 502_939
TOPICS = 1024
QUERY_NOISE = 5.0  # a query's cosine to its document about 0.2: at 8.8M documents, some of its topic's rank above it
BLOCK = 262_144  # rows generated, read and searched at a time (768 MiB at 768 dimensions)
GB = 10**9


def unit(rows: np.ndarray) -> np.ndarray:
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def ids_table(prefix: str, n: int):
    import pyarrow as pa

    return pa.table({"id": pa.array([f"{prefix}{i}" for i in range(n)], pa.string())})


# ---------------------------------------------------------------------------------------------------- stages
def generate(args, work: Path) -> dict:
    """Documents: a topic direction plus as much noise, unit length. A query: one document plus five times as
    much noise (cosine about 0.2 to it), that document judged relevant."""
    import pyarrow as pa

    from hardneg.io import artifacts
    from hardneg.io.npyfile import NpyRows, NpyWriter

    rng = np.random.default_rng(args.seed)
    topics = unit(rng.standard_normal((TOPICS, args.dim), dtype=np.float32))
    out = NpyWriter(work / "corpus.npy", (args.docs, args.dim), np.float32)
    for lo in range(0, args.docs, BLOCK):
        block = np.random.default_rng([args.seed, lo])
        n = min(BLOCK, args.docs - lo)
        noise = unit(block.standard_normal((n, args.dim), dtype=np.float32))
        out.write(unit(topics[block.integers(0, TOPICS, n)] + noise))
    out.close()
    artifacts.write_table(ids_table("D", args.docs), artifacts.ROW_IDS, work / "corpus.ids.parquet")
    corpus = NpyRows(work / "corpus.npy")
    for split, count in (("dev", args.dev), ("train", args.train)):
        relevant = np.sort(rng.choice(args.docs, count, replace=False))
        noise = unit(rng.standard_normal((count, args.dim), dtype=np.float32))
        queries = unit(corpus.take(relevant) + QUERY_NOISE * noise).astype(np.float32)
        np.save(work / f"queries_{split}.npy", queries)
        artifacts.write_table(ids_table(f"{split}-Q", count), artifacts.ROW_IDS, work / f"queries_{split}.ids.parquet")
        qrels = pa.table({"qid": [f"{split}-Q{i}" for i in range(count)], "docid": [f"D{d}" for d in relevant],
                          "relevance": pa.array(np.ones(count, np.int32))})
        (work / "qrels").mkdir(exist_ok=True)
        artifacts.write_table(qrels, artifacts.QRELS, work / "qrels" / f"{split}.parquet")
    return {"corpus_bytes": (work / "corpus.npy").stat().st_size}


def _search_to_run(index, work: Path, split: str, k: int, out: Path) -> int:
    from hardneg.dense.search import write_search_ranking
    from hardneg.io import artifacts

    vectors = np.load(work / f"queries_{split}.npy")
    qids = artifacts.read_table(artifacts.ROW_IDS, work / f"queries_{split}.ids.parquet")["id"]
    docids = artifacts.read_table(artifacts.ROW_IDS, work / "corpus.ids.parquet")["id"]
    return write_search_ranking(index, vectors, qids, docids, k, out, tag="shape")


def flat_dev(args, work: Path) -> dict:
    from hardneg.index.streamed import StreamedFlat

    rows = _search_to_run(StreamedFlat(work / "corpus.npy", block_rows=BLOCK), work, "dev", 1000,
                          work / "flat_dev.parquet")
    return {"rows": rows}


def flat_vs_faiss(args, work: Path) -> dict:
    """Streamed search (reading included) against IndexFlatIP over the same blocks held in memory (one at a
    time; reading and adding not timed), merged the same way: queries x documents a second, each."""
    import faiss

    from hardneg.index.streamed import StreamedFlat
    from hardneg.io.npyfile import NpyRows

    queries = np.load(work / "queries_dev.npy")[:args.compare_queries]
    started = time.perf_counter()
    ours = StreamedFlat(work / "corpus.npy", block_rows=BLOCK).search(queries, 1000)
    streamed = time.perf_counter() - started
    corpus, heap, searching = NpyRows(work / "corpus.npy"), faiss.ResultHeap(len(queries), 1000, keep_max=True), 0.0
    for lo in range(0, args.docs, BLOCK):
        index = faiss.IndexFlatIP(args.dim)
        index.add(corpus.read(lo, lo + BLOCK))
        began = time.perf_counter()
        scores, ids = index.search(queries, min(1000, index.ntotal))
        heap.add_result(scores, ids + lo)
        searching += time.perf_counter() - began
        del index
    heap.finalize()
    pairs = len(queries) * args.docs
    return {"queries": len(queries), "streamed_seconds": streamed, "faiss_seconds": searching,
            "streamed_pairs_per_second": pairs / streamed, "faiss_pairs_per_second": pairs / searching,
            "ratio": streamed / searching, "same_top10": float((ours[1][:, :10] == heap.I[:, :10]).mean())}


def ivfpq_build(args, work: Path) -> dict:
    from hardneg.dense.search import build_index_stage

    factory = f"IVF{args.ivf},PQ96"
    build_index_stage(work / "corpus.npy", factory, work / "ivfpq.faiss", train_size=args.train_size,
                      seed=args.seed, threads=args.threads)
    return {"factory": factory, "index_bytes": (work / "ivfpq.faiss").stat().st_size}


def _ivfpq(args, work: Path):
    from hardneg.index import load_index, set_search_params

    index = load_index(work / "ivfpq.faiss")
    set_search_params(index, f"nprobe={args.nprobe}")
    return index


def ivfpq_dev(args, work: Path) -> dict:
    return {"rows": _search_to_run(_ivfpq(args, work), work, "dev", 1000, work / "ivfpq_dev.parquet"),
            "nprobe": args.nprobe}


def mine(args, work: Path) -> dict:
    from hardneg.mining.negatives import positive_scores_stage
    from hardneg.mining.selection import select_stage
    from hardneg.mining.pool import pool_stage

    seconds, clock = {}, time.perf_counter()
    _search_to_run(_ivfpq(args, work), work, "train", 200, work / "mine_train.parquet")
    seconds["search"] = time.perf_counter() - clock
    qrels = work / "qrels" / "train.parquet"
    positive_scores_stage(work / "queries_train.npy", work / "queries_train.ids.parquet", work / "corpus.npy",
                          work / "corpus.ids.parquet", qrels, work / "positives_train.parquet")
    pool_stage(work / "mine_train.parquet", qrels, work / "pool_train.parquet", depth=200,
               positives_path=work / "positives_train.parquet")
    selection = select_stage(work / "pool_train.parquet", work / "hardnegs_train.parquet",
                             work / "selection_train.json", policy={"keep": 8, "sampling": "top"})
    seconds["positives + pool + selection"] = time.perf_counter() - clock - seconds["search"]
    return {"stage_seconds": seconds, "negatives": selection.kept}


class RandomTokens:
    """Texts as word pieces: seeded ids of lengths ``low`` to ``high`` (with [CLS] and [SEP]), as the tokenized
    cache's ``batch`` gives them (``lengths`` and ``batch``, which the encoding and ADORE's step read)."""

    def __init__(self, count: int, seed: int, low: int, high: int):
        rng = np.random.default_rng(seed)
        self.lengths = rng.integers(low, high + 1, count)
        self.ids = rng.integers(1000, 30000, (count, high))

    def batch(self, rows: np.ndarray) -> dict:
        import torch

        width = int(self.lengths[rows].max())
        mask = np.arange(width)[None, :] < self.lengths[rows][:, None]
        return {"input_ids": torch.from_numpy(np.where(mask, self.ids[rows, :width], 0)),
                "attention_mask": torch.from_numpy(mask.astype(np.int64))}


def adore(args, work: Path) -> dict:
    import torch

    from hardneg.dense.backbone import ModelSpec
    from hardneg.dense.model import BiEncoder
    from hardneg.methods.adore.step import AdoreMethod
    from hardneg.pipeline.config import validate_params

    torch.set_num_threads(args.threads)
    params = validate_params({"model": {"name": "builtin", "pooling": "cls", "query_max_length": 32,
                                        "doc_max_length": 32,
                                        "builtin": {"hidden_size": args.dim, "num_hidden_layers": 2,
                                                    "num_attention_heads": 12, "intermediate_size": 4 * args.dim}}})
    model = BiEncoder.create(ModelSpec.from_params(params["model"]), vocab_size=30522, pad_token_id=0,
                             max_length=64, seed=args.seed).train()

    class Train:  # what AdoreMethod reads of the training queries: their rows and relevant documents
        pass

    relevant = _relevant_rows(work, "train")
    Train.query_rows, Train.relevant = np.arange(len(relevant)), [np.array([r]) for r in relevant]
    corpus = np.load(work / "corpus.npy", mmap_mode="r")
    method = AdoreMethod(Train, RandomTokens(len(relevant), args.seed, 4, 16), corpus, _ivfpq(args, work), top_k=200,
                         cut=200, weighted=True, normalize="pairs", append_missing="when_none", temperature=1.0)
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=5e-6)
    rng, parts = np.random.default_rng(args.seed), {"encode": 0.0, "search": 0.0, "loss": 0.0, "backward": 0.0}
    started = time.perf_counter()
    for _ in range(args.adore_steps):
        loss, _ = method.loss(model, rng.choice(len(relevant), 32, replace=False), torch.device("cpu"))
        began = time.perf_counter()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        parts["backward"] += time.perf_counter() - began
        for name, seconds in method.step_timings.items():
            parts[name] += seconds
    steps = time.perf_counter() - started
    return {"steps": args.adore_steps, "seconds_per_step": steps / args.adore_steps,
            "share": {name: seconds / steps for name, seconds in parts.items()}}


def encode_sample(args, work: Path) -> dict:
    import torch

    from hardneg.dense.backbone import ModelSpec
    from hardneg.dense.encode import encode_rows
    from hardneg.dense.model import BiEncoder
    from hardneg.pipeline.config import validate_params

    torch.set_num_threads(args.threads)
    params = validate_params({"model": {"name": "builtin", "pooling": "cls", "query_max_length": 32,
                                        "doc_max_length": 128,
                                        "builtin": {"hidden_size": 768, "num_hidden_layers": 12,
                                                    "num_attention_heads": 12, "intermediate_size": 3072}}})
    model = BiEncoder.create(ModelSpec.from_params(params["model"]), vocab_size=30522, pad_token_id=0,
                             max_length=128, seed=args.seed)
    texts = RandomTokens(args.encode_sample, args.seed, 40, 120)
    encode_rows(model, texts, np.arange(64), "doc", batch_size=64)  # warm-up, not timed
    started = time.perf_counter()
    encode_rows(model, texts, np.arange(args.encode_sample), "doc", batch_size=64)
    seconds = time.perf_counter() - started
    return {"passages": args.encode_sample, "mean_length": float(texts.lengths.mean()),
            "passages_per_second": args.encode_sample / seconds}


def _relevant_rows(work: Path, split: str) -> np.ndarray:
    from hardneg.io import artifacts

    docids = artifacts.read_table(artifacts.QRELS, work / "qrels" / f"{split}.parquet")["docid"].to_pylist()
    return np.array([int(d[1:]) for d in docids])


def evaluate(args, work: Path) -> dict:
    from hardneg.evaluation.metrics import evaluate as measure
    from hardneg.io import artifacts

    qrels = artifacts.read_table(artifacts.QRELS, work / "qrels" / "dev.parquet")
    return {name: measure(artifacts.read_table(artifacts.RANKING, work / f"{name}.parquet"), qrels,
                          ["RR@10", "R@1000"])[0] for name in ("flat_dev", "ivfpq_dev")}


def bm25_texts(args, work: Path) -> dict:
    from hardneg.datasets.prepare import prepare_dataset

    cfg = {"adapter": "synthetic", "seed": args.seed, "num_docs": args.docs, "num_queries": {"dev": args.dev},
           "doc_length": list(PASSAGE_WORDS), "title_length": [1, 1]}
    prepare_dataset(cfg, work / "texts")
    return {"corpus_bytes": (work / "texts" / "corpus.parquet").stat().st_size}


def bm25_index(args, work: Path) -> dict:
    from bm25_raw import folder_bytes

    from hardneg.bm25 import build_index, heap_for

    facts = build_index(work / "texts" / "corpus.parquet", work / "bm25", threads=args.threads,
                        max_heap=heap_for(BM25_MEM_MB))
    return {"documents": facts["num_docs"],
            "index_bytes": folder_bytes(work / "bm25")}


def bm25_dev(args, work: Path) -> dict:
    from hardneg.bm25 import heap_for
    from hardneg.bm25.search import retrieve_split
    from hardneg.evaluation.metrics import evaluate as measure
    from hardneg.io import artifacts

    run = retrieve_split(work / "bm25", work / "texts" / "queries" / "dev.parquet", work / "bm25_dev.parquet",
                         work / "bm25_dev.trec", top_k=1000, threads=args.threads, max_heap=heap_for(BM25_MEM_MB))
    qrels = artifacts.read_table(artifacts.QRELS, work / "texts" / "qrels" / "dev.parquet")
    return {"rows": run.num_rows, **measure(run, qrels, ["RR@10", "R@1000"])[0]}


def bm25_vs_raw(args, work: Path) -> dict:
    import statistics

    from bm25_raw import alternate, raw_search, same_ranking

    from hardneg.bm25 import heap_for
    from hardneg.bm25.index import lucene_dir
    from hardneg.bm25.java import start_jvm
    from hardneg.bm25.search import retrieve_split
    from hardneg.io import artifacts

    start_jvm(heap_for(BM25_MEM_MB))
    from pyserini.search.lucene import LuceneSearcher  # after the JVM started

    queries_path = work / "texts" / "queries" / "dev.parquet"
    queries = artifacts.read_table(artifacts.QUERIES, queries_path)
    searcher = LuceneSearcher(str(lucene_dir(work / "bm25")))
    searcher.set_bm25(0.9, 0.4)  # the stage's default k1 and b
    sides = {"stage": lambda: retrieve_split(work / "bm25", queries_path, work / "vs_raw.parquet",
                                             work / "vs_raw.trec", top_k=1000, threads=args.threads),
             "raw": lambda: raw_search(searcher, queries, 1000, args.threads)}
    runs, seconds = alternate(sides, args.bm25_rounds)
    searcher.close()
    median = {name: statistics.median(values) for name, values in seconds.items()}
    return {"queries": len(queries), "seconds": seconds, "same_ranking": same_ranking(runs["stage"], runs["raw"]),
            "speed_ratio": median["raw"] / median["stage"]}


# ------------------------------------------------------------------------------------------------ the driver
def run_stage(args, stage: str) -> dict:
    command = [sys.executable, __file__, "--stage", stage, "--work", str(args.work)]
    for key in ("docs", "dim", "dev", "train", "ivf", "nprobe", "train_size", "adore_steps", "compare_queries",
                "encode_sample", "bm25_rounds", "threads", "seed"):
        command += [f"--{key.replace('_', '-')}", str(getattr(args, key))]
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, cwd=Path(__file__).parent)
    if done.returncode != 0:
        sys.exit(f"stage {stage} failed:\n{done.stderr[-4000:]}")
    record = json.loads(done.stdout.splitlines()[-1])
    record["wall_seconds"] = time.perf_counter() - started
    print(f"{stage}: {record['wall_seconds']:.0f} s, peak RSS {record['peak_rss_bytes'] / GB:.2f} GB", flush=True)
    return record


def table(record: dict) -> str:
    s = record["setting"]
    lines = [f"{s['docs']:,} documents x {s['dim']} dimensions (float32, {s['docs'] * s['dim'] * 4 / GB:.1f} GB on "
             f"disk), {s['dev']:,} dev queries, {s['train']:,} mining queries, IVF{s['ivf']},PQ96 searched with "
             f"nprobe {s['nprobe']}, {s['adore_steps']} ADORE steps, {s['threads']} threads", "",
             "| stage | wall s | peak RSS GB |", "|---|---:|---:|"]
    for stage in STAGES:
        if stage in record["stages"]:
            r = record["stages"][stage]
            lines.append(f"| {stage} | {r['wall_seconds']:.0f} | {r['peak_rss_bytes'] / GB:.2f} |")
    stages = record["stages"]
    if "flat_vs_faiss" in stages:
        c = stages["flat_vs_faiss"]
        lines += ["", f"Exact search: streamed from disk {c['streamed_pairs_per_second'] / 1e6:.0f}M query-document "
                      f"pairs a second against IndexFlatIP's {c['faiss_pairs_per_second'] / 1e6:.0f}M over the same "
                      f"blocks in memory ({c['ratio']:.2f}x its time; {c['queries']} queries; the same top 10 for "
                      f"{c['same_top10']:.3f} of the ranks)."]
    if "evaluate" in stages:
        e = stages["evaluate"]
        lines.append(f"Dev MRR@10 / R@1000: exact {e['flat_dev']['RR@10']:.3f} / {e['flat_dev']['R@1000']:.3f}, "
                     f"IVF-PQ {e['ivfpq_dev']['RR@10']:.3f} / {e['ivfpq_dev']['R@1000']:.3f}.")
    if "adore" in stages:
        a = stages["adore"]
        lines.append(f"ADORE: {a['seconds_per_step']:.2f} s a step; shares " +
                     ", ".join(f"{name} {share:.0%}" for name, share in a["share"].items()) + ".")
    if "bm25_dev" in stages:
        b = stages["bm25_dev"]
        lines.append(f"BM25 dev ranking (top 1,000): MRR@10 {b['RR@10']:.3f}, R@1000 {b['R@1000']:.3f}.")
    if "bm25_vs_raw" in stages:
        b = stages["bm25_vs_raw"]
        stage, raw = (min(b["seconds"][name]) for name in ("stage", "raw"))
        lines.append(f"BM25 of the {b['queries']:,} dev queries, top 1,000: the `bm25_search` stage function "
                     f"{stage:.0f} s (best of {len(b['seconds']['stage'])}) against `LuceneSearcher.batch_search` "
                     f"{raw:.0f} s: {b['speed_ratio']:.2f}x its speed (medians); the same rankings and scores: "
                     f"{b['same_ranking']}.")
    if {"encode_sample", "flat_dev", "ivfpq_build", "mine"} <= set(stages):
        hours = extrapolate(record)
        lines.append("Extrapolated to a full MS MARCO run on this machine (hours): " +
                     ", ".join(f"{name} {value:.1f}" for name, value in hours.items()) + ".")
    return "\n".join(lines + [machine_line(record["machine"])])


def extrapolate(record: dict) -> dict:
    """Hours of a full run's corpus-sized stages on this machine, from the stages measured at this shape."""
    s, stages = record["setting"], record["stages"]
    return {"encoding the corpus (BERT-base)": s["docs"] / stages["encode_sample"]["passages_per_second"] / 3600,
            "exact dev search": stages["flat_dev"]["wall_seconds"] / 3600,
            "IVF-PQ build": stages["ivfpq_build"]["wall_seconds"] / 3600,
            f"mining {MSMARCO_TRAIN_QUERIES:,} training queries":
                stages["mine"]["wall_seconds"] * MSMARCO_TRAIN_QUERIES / s["train"] / 3600}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, default=8_841_823, help="documents (MS MARCO passage: 8,841,823)")
    parser.add_argument("--dim", type=int, default=768)
    parser.add_argument("--dev", type=int, default=6_980, help="dev queries searched (MS MARCO dev small: 6,980)")
    parser.add_argument("--train", type=int, default=20_000, help="training queries mined and trained on")
    parser.add_argument("--ivf", type=int, default=4096, help="inverted lists of the IVF-PQ index")
    parser.add_argument("--nprobe", type=int, default=64)
    parser.add_argument("--train-size", type=int, default=262_144, help="vectors the IVF-PQ index trains on")
    parser.add_argument("--adore-steps", type=int, default=200)
    parser.add_argument("--compare-queries", type=int, default=1000, help="dev queries of flat_vs_faiss")
    parser.add_argument("--encode-sample", type=int, default=512, help="passages encode_sample encodes")
    parser.add_argument("--bm25-rounds", type=int, default=2, help="timed rounds of bm25_vs_raw after its warm-up")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--work", type=Path, default=Path(__file__).parent / "out" / "msmarco_shape",
                        help="where the 27 GB matrix and everything else is written")
    parser.add_argument("--stages", nargs="+", choices=STAGES, default=list(STAGES))
    parser.add_argument("--keep", action="store_true", help="keep the work folder (by default removed at the end)")
    parser.add_argument("--stage", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.stage:
        import faiss

        faiss.omp_set_num_threads(args.threads)
        result = globals()[args.stage](args, args.work)
        print(json.dumps({**result, "peak_rss_bytes": process_memory("VmHWM")}))
        return
    from report import machine

    import torch

    if "generate" in args.stages:
        shutil.rmtree(args.work, ignore_errors=True)
    args.work.mkdir(parents=True, exist_ok=True)
    setting = {k: getattr(args, k) for k in ("docs", "dim", "dev", "train", "ivf", "nprobe", "train_size",
                                             "adore_steps", "threads", "seed")}
    record = {"setting": setting, "machine": machine(torch.device("cpu"), args.threads), "stages": {}}
    earlier = Path(__file__).parent / "out" / "msmarco_shape.json"
    if "generate" not in args.stages and earlier.exists():  # more stages of the same setting: added to the record
        kept = json.loads(earlier.read_text())
        if kept["setting"] == setting:
            record["stages"] = kept["stages"]
    for stage in args.stages:
        record["stages"][stage] = run_stage(args, stage)
    print(table(record))
    save("msmarco_shape", record)
    if not args.keep:
        shutil.rmtree(args.work, ignore_errors=True)


if __name__ == "__main__":
    main()
