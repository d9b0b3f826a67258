"""hardneg's BM25 search stage against Pyserini's own batch search (the limit) over the same index, queries, k and
threads.

* ``hardneg``: the stage function of the ``bm25_search`` rule, :func:`hardneg.bm25.search.retrieve_split`: read the
  split's queries, search (Anserini's ``batch_search`` with the index's analyzer), write the ranking (Parquet and
  TREC);
* ``pyserini``: ``pyserini.search.lucene.LuceneSearcher(index).batch_search(texts, qids, k, threads)`` and the
  docid and score of every hit read into Python lists in one pass: the least a caller does to use the results,
  with nothing written.

Both run in one process whose JVM is already started (Pyserini's import, six seconds of torch and
transformers, is paid once and outside the timings), in ``--rounds`` rounds that alternate which side goes
first. The data: the synthetic generator's collection of ``--docs`` documents with ``--queries`` training
queries (indexed flat, Porter stemming, as the default BM25 run), or ``--data``, a BEIR folder (SciFact:
``../shared/data/scifact``) with its train and test queries. The two rankings are compared too: the same
documents, in the same order, with the same scores.

    python benchmarks/bm25_raw.py                               # 100,000 synthetic documents, 1,000 queries
    python benchmarks/bm25_raw.py --data ../shared/data/scifact

Prints a markdown table and one JSON line, and writes benchmarks/out/bm25_raw.json.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
from report import save, summary

from hardneg.bm25.index import build_index, lucene_dir
from hardneg.bm25.search import retrieve_split
from hardneg.datasets.prepare import prepare_dataset
from hardneg.io import artifacts


def dataset(args, folder: Path) -> Path:
    """A prepared dataset under ``folder`` (corpus.parquet, queries/<split>.parquet)."""
    if args.data:
        cfg = {"adapter": "beir", "path": str(Path(args.data).resolve()), "splits": ["train", "test"]}
    else:
        cfg = {"adapter": "synthetic", "seed": 0, "num_docs": args.docs, "num_queries": {"train": args.queries}}
    prepare_dataset(cfg, folder)
    return folder


def all_queries(data: Path) -> pa.Table:
    tables = [artifacts.read_table(artifacts.QUERIES, path) for path in sorted((data / "queries").glob("*.parquet"))]
    return pa.concat_tables(tables)


def raw_search(searcher, queries: pa.Table, k: int, threads: int) -> pa.Table:
    qids, texts = queries["qid"].to_pylist(), queries["text"].to_pylist()
    found = searcher.batch_search(texts, qids, k, threads)
    out_q, out_d, out_s = [], [], []
    for qid in qids:
        hits = found.get(qid, [])
        out_q.extend([qid] * len(hits))
        for hit in hits:  # one pass: each element read from a Java array is a call through the bridge
            out_d.append(hit.docid)
            out_s.append(hit.score)
    return pa.table({"qid": out_q, "docid": out_d, "score": pa.array(out_s, pa.float32())})


def same_ranking(ours: pa.Table, theirs: pa.Table) -> bool:
    """The same queries and documents in the same order, with the same scores."""
    return bool(ours["qid"].equals(theirs["qid"]) and ours["docid"].equals(theirs["docid"])
                and np.array_equal(ours["score"].to_numpy(), theirs["score"].to_numpy()))


def alternate(sides: dict, rounds: int) -> tuple[dict, dict]:
    """Each side (a name and a call that returns a run) once untimed, in order (the warm-up: class loading,
    the page cache), then ``rounds`` timed rounds that alternate which side goes first. Returns the warm-up's
    run and the timed seconds of each side."""
    runs = {name: side() for name, side in sides.items()}
    seconds = {name: [] for name in sides}
    for round_ in range(rounds):
        for name in (list(sides) if round_ % 2 == 0 else list(reversed(sides))):
            started = time.perf_counter()
            sides[name]()
            seconds[name].append(time.perf_counter() - started)
    return runs, seconds


def run(args) -> dict:
    with tempfile.TemporaryDirectory(prefix="bm25-raw-") as tmp:
        tmp = Path(tmp)
        data = dataset(args, tmp / "data")
        queries = all_queries(data)
        queries_path = tmp / "queries.parquet"
        artifacts.write_table(queries, artifacts.QUERIES, queries_path)
        started = time.perf_counter()
        facts = build_index(data / "corpus.parquet", tmp / "index", threads=args.threads)
        index_seconds = time.perf_counter() - started
        sizes = {"index_bytes": folder_bytes(tmp / "index")}
        if args.store_raw:
            build_index(data / "corpus.parquet", tmp / "index_raw", threads=args.threads, store_raw=True)
            sizes["index_raw_bytes"] = folder_bytes(tmp / "index_raw")
        from pyserini.search.lucene import LuceneSearcher  # after build_index started the JVM

        searcher = LuceneSearcher(str(lucene_dir(tmp / "index")))
        searcher.set_bm25(0.9, 0.4)
        with_raw = None
        if args.store_raw:
            with_raw = LuceneSearcher(str(lucene_dir(tmp / "index_raw")))
            with_raw.set_bm25(0.9, 0.4)

        sides = {"hardneg": lambda: retrieve_split(tmp / "index", queries_path, tmp / "run.parquet", tmp / "run.trec",
                                                   top_k=args.k, threads=args.threads),
                 "pyserini": lambda: raw_search(searcher, queries, args.k, args.threads)}
        if with_raw is not None:
            sides["pyserini_raw"] = lambda: raw_search(with_raw, queries, args.k, args.threads)
        runs, seconds = alternate(sides, args.rounds)
        ours = runs["hardneg"]
        same = all(same_ranking(ours, theirs) for theirs in runs.values())
        if with_raw is not None:
            with_raw.close()
        searcher.close()
    timings = {name: summary(values) for name, values in seconds.items()}
    return {"documents": facts["num_docs"], "queries": len(queries), "hits": len(ours), "index_seconds": index_seconds,
            "same_ranking": bool(same), **sizes, **timings,
            "speed_ratio": statistics.median(seconds["pyserini"]) / statistics.median(seconds["hardneg"])}


def folder_bytes(folder: Path) -> int:
    """The bytes of every file under ``folder``."""
    return sum(path.stat().st_size for path in folder.rglob("*") if path.is_file())


def table(record: dict) -> str:
    s = record["setting"]
    lines = [f"BM25 search of {record['queries']:,} queries over {record['documents']:,} documents, k = {s['k']}, "
             f"{s['threads']} threads, {s['rounds']} rounds", "",
             "| search | min s | median s | queries/s (median) |", "|---|---|---|---|"]
    for name, label in (("hardneg", "hardneg `bm25_search` stage (read queries, search, write Parquet + TREC)"),
                        ("pyserini", "Pyserini `LuceneSearcher.batch_search` + hits read"),
                        ("pyserini_raw", "the same, over an index that also stores the raw documents")):
        if name not in record:
            continue
        r = record[name]
        lines.append(f"| {label} | {r['min_seconds']:.2f} | {r['median_seconds']:.2f} | "
                     f"{record['queries'] / r['median_seconds']:,.0f} |")
    lines += ["", f"Speed of hardneg's stage relative to the raw search: {record['speed_ratio']:.2f}x (target at "
                  f"least 0.9x); identical rankings and scores: {record['same_ranking']}."]
    if "pyserini_raw" in record:
        lines.append(f"Storing the raw documents: the raw search takes "
                     f"{record['pyserini_raw']['median_seconds'] / record['pyserini']['median_seconds']:.2f}x as "
                     f"long (medians) and the index is {record['index_raw_bytes'] / record['index_bytes']:.2f}x "
                     f"the size ({record['index_bytes'] / 1e6:.0f} MB without them).")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", help="a BEIR folder; default: the synthetic generator")
    parser.add_argument("--docs", type=int, default=100_000, help="synthetic documents")
    parser.add_argument("--queries", type=int, default=1_000, help="synthetic queries")
    parser.add_argument("--k", type=int, default=1000)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--store-raw", action="store_true",
                        help="also time the raw search over an index that stores the raw documents")
    args = parser.parse_args()
    setting = {"data": args.data or "synthetic", "docs": args.docs, "queries": args.queries, "k": args.k,
               "threads": args.threads, "rounds": args.rounds, "store_raw": args.store_raw}
    record = {"setting": setting, **run(args)}
    print(table(record))
    save("bm25_raw", record)


if __name__ == "__main__":
    main()
