"""The README's results on the synthetic default: every run of config/config.yaml, the PQ matrix and the
gradient norms of ANCE's figure; with ``--abs`` instead, the Adaptive Batch Scheduling runs (with and without
Condenser pre-training) and the figure epoch_curves.

    python benchmarks/synthetic_results.py [--cores 2] [--tct] [--seeds 3]
    python benchmarks/synthetic_results.py --abs [--cores 2]

Builds (with Snakemake, in the repository's results/) the metrics of every run of the default config, the
ADORE PQ matrix and the figure gradient_norms, then prints the Markdown tables of README.md's "Results on the
synthetic default" (and the gradient-norm table of its ANCE section) and writes them to
benchmarks/out/synthetic_results.md. With ``--seeds N``, each run of the table and every run it is built from
(BM25 aside, which draws nothing at random) is repeated over N seeds (its own seed and the next N - 1: a config
file giving each its ``seeds``, benchmarks/out/seeds.yaml, read after config/config.yaml), and each row is the mean
± standard deviation over them; the seed-42 runs are the default config's, unchanged. The PQ matrix's cells are then means ± standard deviations
over the same seeds. The rows of the config's seed alone follow the table of means: they are the runs that
``make run`` rebuilds, which tests/workflow/test_documented_commands.py compares with docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import yaml

from hardneg.evaluation.tables import abs_table, runs_table, table_rows
from hardneg.pipeline.config import load_config_file, load_config_files
from hardneg.pipeline.replicates import replicates, with_replicates
from hardneg.pipeline.resolution import input_runs

REPO = Path(__file__).resolve().parents[1]


def gradient_table(results: Path) -> str:
    """Each run of the figure gradient_norms: its mean pre-clip gradient norm and the reference run's over it."""
    import pyarrow.parquet as pq

    from hardneg.figures.gradient_norms import mean_ratios

    table = pq.read_table(results / "figures" / "gradient_norms.parquet")
    data = table.to_pandas()
    reference = data["run"].iloc[0]
    ratios = mean_ratios(table, reference)
    lines = [f"| run | negatives | mean gradient norm | {reference} / run |", "|---|---|---|---|"]
    for run, rows in data.groupby("run", sort=False):
        lines.append(f"| {run} | {rows['label'].iloc[0]} | {rows['grad_norm'].mean():.4g} | {ratios[run]:.3g}× |")
    return "\n".join(lines) + "\n"


def seeds_overlay(config: dict, runs: list[str], count: int) -> dict:
    """A config file's content giving each of ``runs``, and every run they are built from, ``count`` seeds: its
    own seed and the next ``count - 1``; the same to the runs of the PQ matrix (``pq_matrix.seeds``). BM25 runs are
    left as they are (nothing in them is random)."""
    chosen, todo = {}, list(runs)
    while todo:
        run = todo.pop()
        if run in chosen or config["runs"][run]["method"] == "bm25":
            continue
        first = config["runs"][run].get("seed", config["seed"])
        chosen[run] = {"seeds": list(range(first, first + count))}
        todo += input_runs(config["runs"][run])
    overlay = {"runs": chosen}
    if config.get("pq_matrix"):  # its ADORE runs too, each over the replicate of its `docs` run of the same seed
        overlay["pq_matrix"] = {"seeds": list(range(config["seed"], config["seed"] + count))}
    return overlay


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tct", action="store_true", help="also the TCT-ColBERT runs (teacher, student, variants)")
    parser.add_argument("--abs", action="store_true",
                        help="only the Adaptive Batch Scheduling runs, the condenser and the figure epoch_curves")
    parser.add_argument("--cores", default="all")
    parser.add_argument("--seeds", type=int, default=1,
                        help="repeat each run of the results table over this many seeds (default 1: the config's)")
    parser.add_argument("--rerun-triggers", nargs="+", default=None,
                        help="passed to Snakemake, e.g. 'mtime' to build only what is missing or older than its inputs")
    args = parser.parse_args()
    config_files = [REPO / "config" / "config.yaml"]
    config = load_config_file(config_files[0])
    tables = config["tables"]  # the runs of README's tables
    rows = table_rows(tables["results"]) + (table_rows(tables["distillation"]) if args.tct else [])
    if args.seeds > 1 and not args.abs:
        overlay = REPO / "benchmarks" / "out" / "seeds.yaml"
        overlay.parent.mkdir(exist_ok=True)
        overlay.write_text(yaml.safe_dump(seeds_overlay(config, [run for run, _ in rows], args.seeds)))
        config_files.append(overlay)
        config = load_config_files(config_files)
    targets = [f"results/{run}/metrics.json" for run in with_replicates(config, [run for run, _ in rows])]
    targets += ["results/pq_matrix/matrix.md", "results/figures/gradient_norms.png"]
    if args.abs:
        targets = [f"results/{block['prefix']}{row['run']}/metrics.json" for block in tables["abs"]["pretraining"]
                   for row in tables["abs"]["rows"]]
        targets += ["results/condenser/metrics.json", "results/figures/epoch_curves.png"]
    extra = ["--rerun-triggers", *args.rerun_triggers] if args.rerun_triggers else []
    files = ["--configfile", *map(str, config_files)] if len(config_files) > 1 else []
    # --rerun-incomplete: a build killed part-way (hours of jobs) resumes where it stopped when run again
    subprocess.run([str(Path(sys.executable).with_name("snakemake")), "--cores", args.cores, "--rerun-incomplete",
                    *targets, *extra, *files], cwd=REPO, check=True)
    if args.abs:
        text = abs_table(REPO / "results", tables["abs"])
    else:
        text = runs_table(REPO / "results", rows, replicates(config))
        if args.seeds > 1:  # the default config's own runs alone: what `make run` rebuilds and a test checks
            text += f"\nSeed {config['seed']} alone:\n\n" + runs_table(REPO / "results", rows)
        text += "\n" + (REPO / "results" / "pq_matrix" / "matrix.md").read_text()
        text += "\n" + gradient_table(REPO / "results")
    out = REPO / "benchmarks" / "out" / ("abs_results.md" if args.abs else "synthetic_results.md")
    out.parent.mkdir(exist_ok=True)
    out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
