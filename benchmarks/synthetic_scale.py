"""Scale check of the synthetic generator: time and peak memory to generate and write N documents.

    python benchmarks/synthetic_scale.py --num-docs 1000000 --out /tmp/synthetic-1m

Writes a JSON line with the numbers to stdout (and to benchmarks/out/synthetic_scale.json).
"""

from __future__ import annotations

import argparse
import resource
import shutil
import tempfile
import time
from pathlib import Path

from report import save

from hardneg.datasets.prepare import prepare_dataset


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--num-docs", type=int, default=1_000_000)
    parser.add_argument("--queries", type=int, default=10_000, help="train queries (dev and test get a tenth each)")
    parser.add_argument("--out", type=Path, default=None, help="dataset folder (default: a temporary one, removed)")
    args = parser.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="synthetic-scale-"))
    cfg = {"adapter": "synthetic", "seed": 13, "num_docs": args.num_docs,
           "num_queries": {"train": args.queries, "dev": args.queries // 10, "test": args.queries // 10}}
    started = time.perf_counter()
    stats = prepare_dataset(cfg, out)
    seconds = time.perf_counter() - started
    size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    record = {"num_docs": stats["num_docs"], "num_clusters": stats["num_clusters"], "seconds": round(seconds, 1),
              "docs_per_second": round(stats["num_docs"] / seconds), "peak_rss_gib":
              round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 2), "bytes_on_disk": size}
    save("synthetic_scale", record)
    if args.out is None:
        shutil.rmtree(out)


if __name__ == "__main__":
    main()
