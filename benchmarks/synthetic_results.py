"""The README's results on the synthetic default: every run of config/config.yaml and the PQ matrix.

    python benchmarks/synthetic_results.py [--cores 2]

Builds (with Snakemake, in the repository's results/) the metrics of every run of the default config and the
ADORE PQ matrix, then prints the two Markdown tables of README.md's "Results on the synthetic default" and
writes them to benchmarks/out/synthetic_results.md.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ROWS = [("bm25", "bm25"), ("randneg", "randneg"), ("inbatch", "inbatch"), ("warmup", "warmup (BM25 Neg)"),
        ("star", "star"), ("adore_randneg", "adore_randneg"), ("adore_inbatch", "adore_inbatch"),
        ("adore_warmup", "adore_warmup"), ("adore_star", "adore_star")]
MEASURES = [("RR@10", "MRR@10"), ("nDCG@10", "nDCG@10"), ("R@100", "R@100")]


def runs_table(results: Path) -> str:
    lines = ["| run | " + " | ".join(label for _, label in MEASURES)
             + " | top-200 pairwise errors | total pairwise errors |",
             "|---|" + "---|" * (len(MEASURES) + 2)]
    for run, label in ROWS:
        metrics = json.loads((results / run / "metrics.json").read_text())
        errors = metrics["pairwise_errors"]
        bound = " (≥)" if errors["total_is_lower_bound"] else ""
        lines.append(f"| {label} | " + " | ".join(f"{metrics['measures'][m]:.3f}" for m, _ in MEASURES)
                     + f" | {errors['top200_pairwise_errors']:.1f} | {errors['total_pairwise_errors']:.1f}{bound} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cores", default="all")
    args = parser.parse_args()
    targets = [f"results/{run}/metrics.json" for run, _ in ROWS] + ["results/pq_matrix/matrix.md"]
    subprocess.run([str(Path(sys.executable).with_name("snakemake")), "--cores", args.cores, *targets],
                   cwd=REPO, check=True)
    text = runs_table(REPO / "results") + "\n" + (REPO / "results" / "pq_matrix" / "matrix.md").read_text()
    out = REPO / "benchmarks" / "out" / "synthetic_results.md"
    out.parent.mkdir(exist_ok=True)
    out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
