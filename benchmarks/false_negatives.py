"""The false-negative benchmark: do the selection policies keep known false negatives out of the hard negatives, how
much hardness do they keep, and how do runs trained on their negatives compare?

    python benchmarks/false_negatives.py [--case synthetic] [--case scifact] [--data ../shared/data/scifact]
                                         [--cores 2] [--no-train] [--no-cross-encoder] [--workdir DIR] [--keep]

Each case runs the experiment (the config's ``false_negatives`` section, target ``false_negatives``) with Snakemake
in a temporary working directory that links the repository's Snakefile, rules, scripts, workflow and profiles, and
prints one table per case (leakage, hardness kept and, with training, MRR@10 and nDCG@10 of the run trained on
each policy's negatives against plain top-k, with paired tests) and the command that made it; the tables are also
written to benchmarks/out/false_negatives_<case>.md.

* ``synthetic``: config/config.yaml as it is: its ``false_negatives`` section, the default synthetic data with half
  the judged positives of each training query that has several hidden (``synthetic_hidden``), a warm-up trained
  with the visible ones mining (``hidden_warmup``).
* ``scifact``: SciFact in BEIR layout (``--data``), all-MiniLM-L6-v2 (``model.name: minilm``) warmed up on BM25
  negatives mining, the same policies. Few SciFact training queries have several positives: the table says how
  many positives were hidden.

When the config has a run of the ``crossencoder`` method (and the workflow has a rule scoring a pool with it), a
copy of it on the experiment's dataset scores the pool and a policy ``ce50`` (``ce_threshold: 0.5``) joins.
"""

from __future__ import annotations

import argparse
import copy
import json
import math
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow.parquet as pq
import yaml

REPO = Path(__file__).resolve().parents[1]
LINKED = ("Snakefile", "rules", "scripts", "workflow", "profiles")
SCIFACT = REPO.parent / "shared" / "data" / "scifact"
MEASURES = ("RR@10", "nDCG@10")  # the effectiveness columns (MRR@10, nDCG@10)
FEW_HIDDEN = 500  # fewer hidden positives than this: the output says how loosely a leakage share is known
P_VALUE = 0.05  # "no worse": no significantly lower mean at this level (Holm-corrected paired t-test)
# The post-hoc sweep printed under each table: more settings of the same filters, on the same pool, no training.
SWEEP = {**{f"margin {m}": {"margin": m, "keep": 8} for m in (0.1, 0.15, 0.2, 0.25)},
         **{f"relative_margin {r}": {"relative_margin": r, "keep": 8} for r in (0.1, 0.2, 0.3)},
         **{f"rank_range {low}-200": {"rank_range": [low, 200], "keep": 8} for low in (2, 3, 4)}}

CE_POLICY = ("ce50", {"ce_threshold": 0.5, "keep": 8})  # RocketQA-style denoising, with a cross-encoder


def scores_pools() -> bool:
    """Whether the workflow has a rule scoring a candidate pool with a cross-encoder (rules/*.smk)."""
    return any("LAYOUT.pool_scores(" in path.read_text() for path in (REPO / "rules").glob("*.smk"))


def add_cross_encoder(config: dict) -> str | None:
    """When the config has a run of the crossencoder method and the workflow can score a pool with it: a copy of
    it on the experiment's dataset (each input run replaced by the experiment's counterpart: a BM25 run by its
    BM25 run, a run with a model, such as the warm-up whose encoder starts the cross-encoder, by its miner, a
    warm-up trained with the visible judgements only), the experiment's cross_encoder, and policy ce50 appended.
    Returns the copy's name, or None."""
    fn = config["false_negatives"]
    source = next((name for name, run in config["runs"].items() if run.get("method") == "crossencoder"), None)
    if source is None:
        return None
    if not scores_pools():
        print(f"note: policy {CE_POLICY[0]} left out: the config has a cross-encoder run ({source}) but no rule of "
              f"rules/ scores a candidate pool with it yet", flush=True)
        return None
    run = copy.deepcopy(config["runs"][source])
    run["dataset"] = fn["dataset"]
    run["inputs"] = {role: fn["bm25"] if config["runs"][name]["method"] == "bm25" else fn["miner"]
                     for role, name in run.get("inputs", {}).items()}
    name = f"hidden_{source}"
    config["runs"][name] = run
    fn["cross_encoder"] = name
    config["policies"][CE_POLICY[0]] = dict(CE_POLICY[1])
    fn["policies"] = [*fn["policies"], CE_POLICY[0]]
    return name


def synthetic_config() -> dict:
    from hardneg.schema.files import read_config_yaml

    return read_config_yaml(REPO / "config" / "config.yaml")


def scifact_config(data: Path) -> dict:
    """SciFact with hidden training positives: BM25, MiniLM warmed up on BM25 negatives (the miner), the
    default config's experiment policies and STAR runs continuing it (as benchmarks/scifact_chain.py trains them)."""
    minilm = {"name": "minilm", "pooling": "mean", "normalize": True, "doc_max_length": 256, "query_max_length": 64}
    train = {"epochs": 1, "batch_size": 32, "learning_rate": 2e-5, "temperature": 0.05, "checkpoint_every": 20}
    dense = {"encode": {"shards": 2, "batch_size": 64}, "search": {"top_k": 1000}}
    fn = synthetic_config()["false_negatives"]
    policies = {name: synthetic_config()["policies"][name] for name in fn["policies"]}  # the default config's
    return {
        "seed": 42, "dataset": "scifact_hidden",
        "evaluation": {"split": "test", "measures": ["RR@10", "nDCG@10", "R@100"]},
        "datasets": {"scifact_hidden": {"adapter": "beir", "path": str(data.resolve()), "splits": ["train", "test"],
                                        "hide_positives": {"share": 0.5}}},
        "policies": policies,
        "runs": {
            "hidden_bm25": {"method": "bm25", "params": {"fields": "flat"}},
            "hidden_warmup": {"method": "warmup", "inputs": {"negatives": "hidden_bm25"},
                              "params": {"model": minilm, **dense, "train": train,
                                         "negatives": {"per_query": 1, "depth": 100}}},
        },
        "false_negatives": {"dataset": "scifact_hidden", "miner": "hidden_warmup", "bm25": "hidden_bm25",
                            "policies": list(policies), "depth": 200, "train": True,
                            "params": {**dense, "train": {**train, "learning_rate": 1e-5},
                                       "negatives": {"per_query": 1}}},
    }


def _cell(value: float, digits: int, percent: bool = False) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    return f"{100 * value:.{digits}f}%" if percent else f"{value:.{digits}f}"


def _p(value) -> str:
    from hardneg.evaluation.significance import p_text

    return p_text(None if value is None else float(value))


def table(results: Path, trained: bool) -> tuple[str, list[str]]:
    """The case's table (Markdown) and one line per policy saying whether it meets the goal."""
    leakage = pq.read_table(results / "false_negatives" / "leakage.parquet").to_pylist()
    effect = {}
    if trained:
        for row in pq.read_table(results / "false_negatives" / "effectiveness.parquet").to_pylist():
            effect[(row["policy"], row["measure"])] = row
    header = ["policy", "settings", "leaked / hidden (in pool)", "leakage", "leakage in pool", "mean rank",
              "mean margin", "hardness kept", "leakage cut"]
    if trained:
        header += [part for m in MEASURES for part in (m.replace("RR", "MRR"), "Δ", "p (t, Holm)")]
    lines = ["| " + " | ".join(header) + " |", "|---|---|" + "---:|" * (len(header) - 2)]
    verdicts = []
    for row in leakage:
        cells = [row["policy"] + (" (reference)" if row["reference"] else ""), row["settings"],
                 f"{row['leaked']} / {row['hidden_positives']} ({row['hidden_in_pool']})",
                 _cell(row["leakage"], 1, True), _cell(row["pool_leakage"], 1, True), _cell(row["mean_rank"], 2),
                 _cell(row["mean_margin"], 3), _cell(row["hardness_kept"], 3), _cell(row["leakage_cut"], 3)]
        worse = []  # measures on which training on the policy's negatives is significantly worse
        for measure in MEASURES if trained else ():
            run = effect[(row["policy"], measure)]
            cells += [_cell(run["mean"], 3), "" if row["reference"] else f"{run['delta']:+.3f}",
                      "" if row["reference"] else _p(run["p_t_corrected"])]
            p = run["p_t_corrected"]
            if not row["reference"] and run["delta"] < 0 and p is not None and not math.isnan(p) and p < P_VALUE:
                worse.append(measure)
        lines.append("| " + " | ".join(cells) + " |")
        if not row["reference"]:
            cut, kept = row["leakage_cut"], row["hardness_kept"]
            meets = [f"leakage cut {_cell(cut, 2)} {'>=' if cut is not None and cut >= 0.5 else '<'} 0.5",
                     f"hardness kept {_cell(kept, 2)} {'>=' if kept is not None and kept >= 0.9 else '<'} 0.9"]
            if trained:
                meets.append(f"training significantly worse on {', '.join(worse)}" if worse else
                             f"training no worse than the reference: no drop significant at Holm p < {P_VALUE}")
            goal = cut is not None and cut >= 0.5 and kept is not None and kept >= 0.9 and not worse
            verdicts.append(f"{row['policy']}: {'meets' if goal else 'misses'} the goal ({'; '.join(meets)})")
    return "\n".join(lines) + "\n", verdicts


def sweep(workdir: Path, config: dict) -> str:
    """Leakage cut and hardness kept of more settings of the same filters (:data:`SWEEP`), selected here from the
    experiment's pool against its reference: a post-hoc look at the frontier, with no training."""
    from hardneg.io import artifacts
    from hardneg.mining.leakage import leakage_table
    from hardneg.mining.policies import Policy
    from hardneg.mining.selection import select
    from hardneg.experiments import false_negatives as experiment
    from hardneg.pipeline.config import validate_config
    from hardneg.pipeline.plan import Plan

    plan = Plan(validate_config(copy.deepcopy(config)), root=str(workdir / "results"))
    pool = artifacts.read_table(artifacts.CANDIDATES, experiment.pool_path(plan))
    hidden = artifacts.read_table(artifacts.QRELS, plan.layout.hidden_qrels(config["false_negatives"]["dataset"],
                                                                            experiment.split(plan)))
    reference = experiment.policies(plan)[0]
    chosen = {reference: Policy.from_params(plan.config["policies"][reference]),
              **{name: Policy.from_params(keys) for name, keys in SWEEP.items()}}
    rows = leakage_table(pool, {name: select(pool, policy, seed=config.get("seed", 42)).negatives
                                for name, policy in chosen.items()}, hidden, reference=reference).to_pylist()
    lines = ["| setting (keep 8) | leakage | leakage cut | hardness kept | mean margin | goal |",
             "|---|---:|---:|---:|---:|---|"]
    for row in rows[1:]:
        goal = (row["leakage_cut"] or 0) >= 0.5 and (row["hardness_kept"] or 0) >= 0.9
        lines.append(f"| {row['policy']} | {_cell(row['leakage'], 1, True)} | {_cell(row['leakage_cut'], 3)} | "
                     f"{_cell(row['hardness_kept'], 3)} | {_cell(row['mean_margin'], 3)} | {'yes' if goal else 'no'} |")
    return "\n".join(lines) + "\n"


def hidden_summary(results: Path, dataset: str) -> str:
    stats = json.loads((results / "datasets" / dataset / "stats.json").read_text())
    hidden = stats.get("hidden_positives", {})
    judged = stats["splits"][hidden.get("split", "train")]["queries_with_relevant"]
    line = (f"{hidden.get('judgements', 0)} positives hidden in {hidden.get('queries', 0)} of the {judged} judged "
            f"queries of split {hidden.get('split')!r}, those with two positives or more (share "
            f"{hidden.get('share')}, seed {hidden.get('seed')})")
    count = hidden.get("judgements", 0)
    if count < FEW_HIDDEN:  # a share of n hidden positives is known to about ±1.96·sqrt(0.25/n) at worst
        spread = 100 * 1.96 * math.sqrt(0.25 / count) if count else math.inf
        line += (f". Only {hidden.get('queries', 0)} queries have two positives or more: with {count} hidden "
                 f"positives a leakage share is known to about ±{spread:.0f} points (95%), so read the leakage "
                 f"columns as indicative")
    return line


def run_case(name: str, config: dict, args) -> str:
    workdir = Path(args.workdir) / name if args.workdir else Path(tempfile.mkdtemp(prefix=f"hardneg-fn-{name}-"))
    workdir.mkdir(parents=True, exist_ok=True)
    try:
        for entry in LINKED:
            link = workdir / entry
            if not link.exists():
                link.symlink_to(REPO / entry)
        (workdir / "config").mkdir(exist_ok=True)
        (workdir / "config" / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
        command = [str(Path(sys.executable).with_name("snakemake")), "--cores", str(args.cores), "false_negatives"]
        started = time.perf_counter()
        subprocess.run(command, cwd=workdir, check=True)
        seconds = time.perf_counter() - started
        fn = config["false_negatives"]
        text, verdicts = table(workdir / "results", fn["train"])
        shown = f"cd {shlex.quote(str(workdir))} && {shlex.join(command)}"
        out = (f"## {name}\n\n{hidden_summary(workdir / 'results', fn['dataset'])}. Miner {fn['miner']}, pool depth "
               f"{fn['depth']}; reference {fn['policies'][0]}; leakage = hidden positives selected as negatives / "
               f"hidden positives; hardness kept = reference mean rank / policy mean rank"
               + (f"; MRR@10 and nDCG@10 of the STAR run trained on each policy's negatives, on split "
                  f"{config.get('evaluation', {}).get('split', 'test')}, Δ and Holm-corrected paired t-test p "
                  f"against the reference's run" if fn["train"] else "") + ".\n\n"
               + text + "\n" + "\n".join(f"- {line}" for line in verdicts)
               + f"\n\nPost-hoc sweep on the same pool (more settings of the filters against "
                 f"{fn['policies'][0]}, selected by this script, no training):\n\n{sweep(workdir, config)}"
               + f"\nMade by `{shlex.join(['python', 'benchmarks/false_negatives.py', *sys.argv[1:]])}`: "
                 f"`{shown}` ({seconds:.0f} s).\n")
        return out
    finally:
        if not args.workdir and not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--case", action="append", choices=["synthetic", "scifact"],
                        help="the cases to run (repeatable; default: both, scifact only where its data is)")
    parser.add_argument("--data", type=Path, default=SCIFACT, help="the SciFact folder (BEIR layout)")
    parser.add_argument("--cores", default="2")
    parser.add_argument("--no-train", action="store_true", help="leakage and hardness only, no STAR run per policy")
    parser.add_argument("--no-cross-encoder", action="store_true", help="leave the cross-encoder policy out")
    parser.add_argument("--workdir", help="keep the working directories under this folder (and reuse them)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary working directories")
    args = parser.parse_args()
    cases = args.case or ["synthetic"] + (["scifact"] if (args.data / "corpus.jsonl").exists() else [])
    texts = []
    for name in cases:
        config = synthetic_config() if name == "synthetic" else scifact_config(args.data)
        if args.no_train:
            config["false_negatives"]["train"] = False
        if not args.no_cross_encoder:
            add_cross_encoder(config)
        text = run_case(name, config, args)
        out = REPO / "benchmarks" / "out" / f"false_negatives_{name}.md"
        out.parent.mkdir(exist_ok=True)
        out.write_text(text)
        texts.append(text)
        print(text, flush=True)


if __name__ == "__main__":
    main()
