"""Model selection on dev, measured: each dense run of the chain (warm-up, STAR, ADORE+STAR) trained twice, once
keeping the last step with the old dev evaluation (``keep: last``, ``dev_search: corpus``: the corpus encoded at
each evaluation) and once keeping the best dev step with the new one (``keep: best``, ``dev_search: candidates``),
each chain continuing its own models; the step kept, its dev RR@10, the test measures and the training job's
seconds. Then how closely re-ranking the candidates orders the checkpoints as the full search does: Spearman's ρ
and Kendall's τ (scipy) between the two dev RR@10 series of the same checkpoints, and whether both pick the same
step.

    python benchmarks/model_selection.py                                  # the synthetic default
    python benchmarks/model_selection.py --data ../shared/data/scifact    # a BEIR folder, as `hardneg init` sets it up

The synthetic chain is config/config.yaml's (bm25, warmup, star, adore_star), with a dev evaluation five times
over each training. A BEIR folder gets the config `hardneg init --beir <folder> --model minilm` writes (its dev
split held out of the training queries, five dev evaluations a training). The same checkpoints under both
evaluations: the warm-up's trajectory does not depend on how it is evaluated (evaluation draws no random number;
the two logs' losses are checked equal), so ``last_warmup``'s corpus values and ``best_warmup``'s candidate values
are of the same steps; for STAR, ``both_star`` continues ``best_warmup`` as ``best_star`` does with
``dev_search: both`` (both values in one log; its losses are checked equal to ``best_star``'s). ADORE evaluates
over its fixed documents (no candidates) and has no such row. ``--without-both-star`` leaves ``both_star`` out,
and with it the STAR row of the second table: it trains STAR a third time, evaluating both ways (on SciFact on 2
cores, about 45 minutes of a chain of three hours).

It writes a config and runs Snakemake in benchmarks/out/model_selection/<name>/ (a workflow directory of its own)
and writes table.md there. Training job times come from Snakemake's benchmark files: run nothing else meanwhile.
"""

from __future__ import annotations

import argparse
import copy
import csv
import json
import math
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import yaml

REPO = Path(__file__).resolve().parents[1]
CHAIN = ["warmup", "star", "adore_star"]  # the synthetic names; a BEIR config's are prefixed by its model
VARIANTS = {"last": {"keep": "last", "dev_search": "corpus"}, "best": {"keep": "best", "dev_search": "candidates"}}
EVALUATIONS = 5  # dev evaluations over a training
MEASURES = ["RR@10", "nDCG@10", "R@100"]


def synthetic_config() -> tuple[dict, dict[str, str]]:
    """config/config.yaml with its chain only (and the BM25 run), each run evaluating dev five times."""
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    keep = {"bm25", *CHAIN}
    config["runs"] = {name: run for name, run in config["runs"].items() if name in keep}
    for key in ("false_negatives", "pq_matrix", "compare", "summary", "report", "figures", "tables", "targets"):
        config.pop(key, None)
    steps = {"warmup": 4 * 62, "star": 2 * 62, "adore_star": 2 * 62}  # 2,000 queries in batches of 32
    for name in CHAIN:
        config["runs"][name]["params"]["train"]["dev_every"] = math.ceil(steps[name] / EVALUATIONS)
    return config, {name: name for name in CHAIN}


def beir_config(data: Path, workdir: Path) -> tuple[dict, dict[str, str]]:
    """The config ``hardneg init --beir data --model minilm`` writes (results under the workflow directory)."""
    path = workdir / "init.yaml"
    subprocess.run([str(Path(sys.executable).with_name("hardneg")), "init", "--beir", str(data.resolve()),
                    "--model", "minilm", "--name", "data", "--output", str(path), "--force"], check=True,
                   cwd=workdir)
    config = yaml.safe_load(path.read_text())
    config["results"] = "results"
    method = {"warmup": "warmup", "star": "star", "adore_star": "adore"}
    names = {short: next(name for name, run in config["runs"].items() if run["method"] == method[short])
             for short in CHAIN}
    config["runs"] = {name: run for name, run in config["runs"].items()
                      if name in names.values() or run["method"] == "bm25"}
    for key in ("compare", "summary", "report", "figures", "tables", "targets"):
        config.pop(key, None)
    return config, names


def variants(config: dict, names: dict[str, str], both_star: bool = True) -> dict:
    """The chain twice (``last_<run>``, ``best_<run>``), each continuing its own variant's runs, and
    ``both_star`` (unless ``both_star`` is false)."""
    runs = {name: run for name, run in config["runs"].items() if run["method"] == "bm25"}
    renamed = {}
    for prefix, settings in VARIANTS.items():
        for short in CHAIN:
            renamed[names[short]] = f"{prefix}_{short}"
        for short in CHAIN:
            run = copy.deepcopy(config["runs"][names[short]])
            run["inputs"] = {role: renamed.get(other, other) if isinstance(other, str) else other
                             for role, other in run.get("inputs", {}).items()}
            run.setdefault("params", {}).setdefault("train", {}).update(settings)
            runs[f"{prefix}_{short}"] = run
    if both_star:
        both = copy.deepcopy(runs["best_star"])
        both["params"]["train"]["dev_search"] = "both"
        runs["both_star"] = both
    return {**config, "runs": runs, "targets": [f"{prefix}_{short}" for prefix in VARIANTS for short in CHAIN]}


def seconds(workdir: Path, run: str) -> float:
    with open(workdir / "results" / run / "benchmarks" / "train.tsv") as handle:
        return float(next(csv.DictReader(handle, delimiter="\t"))["s"])


def evaluated(log) -> list[dict]:
    return [row for row in log if not math.isnan(row["dev_rr10"])]


def closeness(candidate: list[float], corpus: list[float]) -> str:
    from scipy.stats import kendalltau, spearmanr

    rho, tau = spearmanr(candidate, corpus).statistic, kendalltau(candidate, corpus).statistic
    same = max(range(len(candidate)), key=candidate.__getitem__) == max(range(len(corpus)), key=corpus.__getitem__)
    return f"{len(candidate)} | {rho:.3f} | {tau:.3f} | {'yes' if same else 'no'}"


def tables(workdir: Path) -> str:
    results = workdir / "results"
    both_star = (results / "both_star" / "train_log.parquet").exists()
    logs = {run: pq.read_table(results / run / "train_log.parquet").to_pylist()
            for run in [f"{p}_{s}" for p in VARIANTS for s in CHAIN] + (["both_star"] if both_star else [])}
    lines = ["| run | keep, dev evaluation | step kept / steps | dev RR@10 of the step kept | "
             + " | ".join(f"test {m}" for m in MEASURES) + " | training job (s) |",
             "|---|---|---|---|" + "---|" * len(MEASURES) + "---|"]
    for short in CHAIN:
        for prefix, settings in VARIANTS.items():
            run = f"{prefix}_{short}"
            kept = pq.read_schema(results / run / "train_log.parquet").metadata[b"hardneg.kept"]
            kept = json.loads(kept)
            metrics = json.loads((results / run / "metrics.json").read_text())["measures"]
            search = settings["dev_search"] if short != "adore_star" else "corpus (fixed documents)"
            lines.append(f"| {run} | {settings['keep']}, {search} | {kept['step']} / {kept['steps']} | "
                         f"{kept['value']:.3f} | " + " | ".join(f"{metrics[m]:.3f}" for m in MEASURES)
                         + f" | {seconds(workdir, run):.0f} |")
    same = [r["loss"] for r in logs["last_warmup"]] == [r["loss"] for r in logs["best_warmup"]]
    warmup = (evaluated(logs["best_warmup"]), evaluated(logs["last_warmup"]))
    lines += ["", "| checkpoints of | same training (losses equal) | evaluated steps | Spearman ρ | Kendall τ | "
                  "same best step |", "|---|---|---|---|---|---|",
              f"| warm-up (best_warmup's candidates, last_warmup's corpus) | {'yes' if same else 'no'} | "
              + closeness([r["dev_rr10"] for r in warmup[0]], [r["dev_rr10"] for r in warmup[1]]) + " |"]
    if both_star:
        same = [r["loss"] for r in logs["both_star"]] == [r["loss"] for r in logs["best_star"]]
        star = evaluated(logs["both_star"])
        lines.append(f"| STAR (both_star: candidates and corpus) | {'yes' if same else 'no'} | "
                     + closeness([r["dev_rr10"] for r in star], [r["dev_corpus_rr10"] for r in star]) + " |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=None, help="a BEIR folder (default: the synthetic default)")
    parser.add_argument("--cores", default="all")
    parser.add_argument("--tables-only", action="store_true", help="only write the tables of a finished build")
    parser.add_argument("--dry-run", action="store_true", help="write the config and show the jobs, build nothing")
    parser.add_argument("--without-both-star", action="store_true",
                        help="leave out both_star, the STAR row of the second table (STAR trained a third time)")
    args = parser.parse_args()
    workdir = REPO / "benchmarks" / "out" / "model_selection" / (args.data.resolve().name if args.data else
                                                                  "synthetic")
    (workdir / "config").mkdir(parents=True, exist_ok=True)
    if not args.tables_only:
        config, names = beir_config(args.data, workdir) if args.data else synthetic_config()
        config = variants(config, names, both_star=not args.without_both_star)
        (workdir / "config" / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
        targets = [f"results/{prefix}_{short}/metrics.json" for prefix in VARIANTS for short in CHAIN]
        targets += [] if args.without_both_star else ["results/both_star/train_log.parquet"]
        subprocess.run([str(Path(sys.executable).with_name("snakemake")), "--snakefile", str(REPO / "Snakefile"),
                        "--directory", str(workdir), "--cores", args.cores, "--rerun-incomplete", *targets,
                        *(["--dry-run"] if args.dry_run else [])], check=True)
        if args.dry_run:
            return
    text = tables(workdir)
    (workdir / "table.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
