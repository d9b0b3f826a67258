"""Scale benchmark: the dense chain on the synthetic generator at 100,000 and 1,000,000 documents.

    python benchmarks/scale.py --docs 100000 1000000

For each size it writes a config and runs Snakemake in benchmarks/out/scale/<docs>/ (a workflow directory of its
own): dataset preparation, BM25 (index, search of the train and test splits, evaluation), the tokenizer and the
tokenized cache, a warm-up model trained for one short epoch (training is not what is measured), corpus
encoding (2 shards, then gathered), a Flat Faiss index, dense search of the train and test splits, evaluation,
and the static hard negatives a STAR run mines from the warm-up (positive scores, mining at depth 200, audit).

It then reads every job's Snakemake benchmark record (``results/**/benchmarks/*.tsv``: wall seconds ``s`` and
``max_rss``, sampled by Snakemake every 0.5 s for a job's first 15 s and every 30 s after) and the peak resident
memory each job's process logged when it ended (the kernel's high-water mark, ``ru_maxrss``: no sample can miss
it), and prints a Markdown table: each job's wall time and peak RSS at both sizes and their growth; then two
checks at the largest size:

* encoding, indexing and mining: every job's peak RSS (the larger of the two measures) <= the bytes of the
  corpus embedding matrix + 2 GB;
* time: the wall seconds of all jobs but training grow at most 12x from the smallest size to the largest.

The table goes to benchmarks/out/scale.md too. ``--report`` re-reads the records of earlier runs without
running anything.
"""

from __future__ import annotations

import argparse
import csv
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import yaml

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "benchmarks" / "out" / "scale"
MIB = 2**20
HEADROOM = 2 * 10**9  # "embedding bytes + 2 GB"
MAX_GROWTH = 12.0
FACTORY = "Flat"

# (group, job-name pattern): the groups of the checks; the first match names a job's group.
GROUPS = [
    ("data", r"prepare_dataset|train_tokenizer_.*|tokenize_.*"),
    ("bm25", r"bm25_.*"),
    ("training", r"train"),
    ("encoding", r"encode_corpus_shard_\d+|gather_embeddings"),
    ("indexing", r"build_faiss_index_.*"),
    ("search", r"dense_search_.*"),
    ("mining", r"positive_scores|mine_hard_negatives|audit_hard_negatives"),
    ("evaluation", r"evaluate.*|run_config"),
]
CHECKED_MEMORY = ("encoding", "indexing", "mining")
NOT_TIMED = ("training",)
PEAK_LINE = re.compile(r"peak resident memory: (\d+) KiB")


def config(docs: int, train_queries: int, test_queries: int, seed: int) -> dict:
    model = {"vocab_size": 8000, "doc_max_length": 64, "query_max_length": 32,
             "builtin": {"hidden_size": 64, "num_hidden_layers": 1, "num_attention_heads": 2,
                         "intermediate_size": 128}}
    dense = {"model": model, "train": {"epochs": 1, "batch_size": 64, "learning_rate": 0.001, "checkpoint_every": 0,
                                       "tensorboard": False},
             "encode": {"shards": 2, "batch_size": 256}, "index": {"factory": FACTORY}, "search": {"top_k": 200}}
    return {
        "seed": seed, "dataset": "scale", "targets": [],
        "evaluation": {"split": "test", "measures": ["RR@10", "R@100", "nDCG@10"]},
        "datasets": {"scale": {"adapter": "synthetic", "num_docs": docs,
                               "num_queries": {"train": train_queries, "test": test_queries}}},
        "runs": {
            "bm25": {"method": "bm25", "params": {"top_k": 200}},
            "warmup": {"method": "warmup", "inputs": {"negatives": "bm25"},
                       "params": {**dense, "negatives": {"per_query": 1, "depth": 100}}},
            # only STAR's mining is built (its hard negatives and their audit), not its training
            "star": {"method": "star", "inputs": {"init": "warmup", "negatives": "warmup", "bm25": "bm25"},
                     "params": {**dense, "mining": {"depth": 200}}},
        },
    }


TARGETS = ["results/bm25/metrics.json", "results/warmup/metrics.json", "results/star/hardnegs.parquet",
           "results/star/hardnegs_audit.md"]


def run_size(docs: int, args) -> float:
    """Build the targets for ``docs`` documents; the seconds Snakemake took."""
    workdir = OUT / str(docs)
    (workdir / "config").mkdir(parents=True, exist_ok=True)
    cfg = config(docs, args.train_queries, args.test_queries, args.seed)
    (workdir / "config" / "config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    started = time.perf_counter()
    subprocess.run([str(Path(sys.executable).with_name("snakemake")), "--snakefile", str(REPO / "Snakefile"),
                    "--directory", str(workdir), "--cores", str(args.cores), *TARGETS], check=True)
    return time.perf_counter() - started


def _number(value: str) -> float | None:
    try:
        return float(value)
    except (TypeError, ValueError):
        return None  # "NA": the job ended before Snakemake's first sample


def _logged_peak(log: Path) -> float | None:
    """The peak RSS (MiB) the job's process logged when it ended, if it did."""
    if not log.exists():
        return None
    found = PEAK_LINE.findall(log.read_text(encoding="utf-8", errors="replace"))
    return int(found[-1]) / 1024 if found else None


def records(workdir: Path) -> dict[str, dict]:
    """Every job's record: ``<run or dataset>/<job>`` → seconds, Snakemake's max_rss and the logged peak (MiB),
    its group."""
    out = {}
    for tsv in sorted((workdir / "results").glob("**/benchmarks/*.tsv")):
        owner = tsv.parent.parent.name
        job = tsv.stem
        with tsv.open() as handle:
            row = list(csv.DictReader(handle, delimiter="\t"))[-1]
        group = next((name for name, pattern in GROUPS if re.fullmatch(pattern, job)), "other")
        out[f"{owner}/{job}"] = {"s": _number(row["s"]), "max_rss": _number(row["max_rss"]),
                                 "peak": _logged_peak(tsv.parent.parent / "logs" / f"{job}.log"), "group": group}
    return out


def embedding_bytes(workdir: Path) -> int:
    matrix = np.load(workdir / "results" / "warmup" / "embeddings" / "corpus.npy", mmap_mode="r")
    return int(matrix.nbytes)


def _peak(record: dict | None) -> float | None:
    if record is None:
        return None
    values = [v for v in (record["max_rss"], record["peak"]) if v is not None]
    return max(values) if values else None


def _fmt(value, digits: int = 1) -> str:
    return "–" if value is None else f"{value:,.{digits}f}"


def _ratio(small, large) -> str:
    return "–" if not small or large is None else f"{large / small:.1f}×"


def table(sizes: list[int]) -> tuple[str, bool]:
    """The Markdown table and checks for the records of ``sizes`` (smallest and largest compared)."""
    small, large = min(sizes), max(sizes)
    recs = {size: records(OUT / str(size)) for size in (small, large)}
    names = sorted(set(recs[small]) | set(recs[large]),
                   key=lambda n: ([g for g, _ in GROUPS].index((recs[large].get(n) or recs[small][n])["group"])
                                  if (recs[large].get(n) or recs[small][n])["group"] in dict(GROUPS) else 99, n))
    label = {size: f"{size // 1000:,}K" if size < 10**6 else f"{size / 10**6:g}M" for size in (small, large)}
    head = (f"| job | stage | wall s {label[small]} | wall s {label[large]} | growth | peak RSS MiB {label[small]} "
            f"| peak RSS MiB {label[large]} | growth |")
    lines = [head, "|---|---|---:|---:|---:|---:|---:|---:|"]
    totals = {small: 0.0, large: 0.0}
    for name in names:
        a, b = recs[small].get(name), recs[large].get(name)
        group = (b or a)["group"]
        sa, sb = (a or {}).get("s"), (b or {}).get("s")
        if group not in NOT_TIMED:
            totals[small] += sa or 0.0
            totals[large] += sb or 0.0
        lines.append(f"| {name} | {group} | {_fmt(sa)} | {_fmt(sb)} | {_ratio(sa, sb)} | {_fmt(_peak(a), 0)} "
                     f"| {_fmt(_peak(b), 0)} | {_ratio(_peak(a), _peak(b))} |")
    emb = embedding_bytes(OUT / str(large))
    limit_mib = (emb + HEADROOM) / MIB
    checked = {n: _peak(r) for n, r in recs[large].items() if r["group"] in CHECKED_MEMORY}
    worst = max(checked, key=lambda n: checked[n] or 0.0)
    memory_ok = all(v is not None and v <= limit_mib for v in checked.values())
    growth = totals[large] / totals[small] if totals[small] else float("inf")
    time_ok = growth <= MAX_GROWTH
    lines += [
        "",
        f"Corpus embeddings at {label[large]} documents: {emb:,} bytes ({emb / MIB:,.0f} MiB).",
        "",
        f"- memory: largest peak RSS of an encoding, indexing or mining job at {label[large]}: {worst} "
        f"{_fmt(checked[worst], 0)} MiB <= embedding bytes + 2 GB = {limit_mib:,.0f} MiB: "
        f"**{'PASS' if memory_ok else 'FAIL'}**",
        f"- time: all jobs but training, {_fmt(totals[small])} s at {label[small]} → {_fmt(totals[large])} s at "
        f"{label[large]}: {growth:.1f}× <= {MAX_GROWTH:g}×: **{'PASS' if time_ok else 'FAIL'}**",
    ]
    return "\n".join(lines) + "\n", memory_ok and time_ok


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, nargs="+", default=[100_000, 1_000_000], help="corpus sizes")
    parser.add_argument("--train-queries", type=int, default=5000)
    parser.add_argument("--test-queries", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--report", action="store_true", help="only read the records of earlier runs")
    args = parser.parse_args()
    if not args.report:
        for docs in args.docs:
            seconds = run_size(docs, args)
            print(f"{docs:,} documents: Snakemake ran {seconds:.0f} s", flush=True)
    text, ok = table(args.docs)
    out = REPO / "benchmarks" / "out" / "scale.md"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    print(text)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
