"""ADORE step profile: where the time of a training step goes.

ADORE training steps of a run, timed here (training logs hold no wall-clock times): the run's training job as
the workflow defines it (its config, inputs, starting model and threads), run for a few steps, and the share
of step time spent encoding queries, searching the index, computing the loss and back-propagating (the paper
reports search at about 20% of a step). It needs the run's training inputs (build them with snakemake
first); without them it says so and leaves benchmarks/out/adore_step.json as it is.

    python benchmarks/adore_step.py --run results/adore_star

The loss itself is compared with the authors' per-query loop, run from their own code, in
benchmarks/vs_drhard.py. Prints one JSON line and writes benchmarks/out/adore_step.json.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np
import torch
from report import save

REPO = Path(__file__).resolve().parents[1]
STEPS = 30  # timed steps, after one untimed warm-up step
PARTS = ("encode", "search", "loss", "backward")


def step_shares(run_dir: Path, steps: int = STEPS) -> dict | None:
    """Time ``steps`` training steps of ADORE run ``run_dir`` (under the working directory's ``results/``), as
    its ``train_dense`` job would run them: AdoreMethod's own timings of encoding, search and loss, and the
    backward pass timed here; an AdamW update follows each step (untimed), so the query encoder moves as in
    training. None (and a note) when the run's training inputs are not built."""
    from hardneg.dense.data import ShuffledBatches, TrainQueries
    from hardneg.dense.model import BiEncoder
    from hardneg.dense.tokenized import TokenizedTexts
    from hardneg.dense.train_config import make_optimizer
    from hardneg.io import artifacts
    from hardneg.pipeline.train import build_method, train_config
    from hardneg.stage import load_job

    _, _, job = load_job("train_dense", {"run": run_dir.name}, snakefile=REPO / "Snakefile")
    inputs = {name: path for name, path in job.input.items()}
    absent = [path for path in inputs.values() if isinstance(path, str) and not os.path.exists(path)]
    if absent or "init" not in inputs:
        print(f"step profile skipped: {run_dir.name} lacks training inputs {absent or ['init']}", file=sys.stderr)
        return None
    resolved = job.params.resolved
    config = train_config(resolved)
    torch.set_num_threads(job.threads)
    query_texts = TokenizedTexts(inputs["cache"], f"queries_{config.split}")
    doc_texts = TokenizedTexts(inputs["cache"], "corpus")
    qrels = artifacts.read_table(artifacts.QRELS, os.path.join(inputs["qrels"], f"{config.split}.parquet"))
    train = TrainQueries(qrels, query_texts.row_ids, doc_texts.row_ids)
    extra = {name: path for name, path in inputs.items() if name not in ("cache", "qrels")}
    method = build_method(resolved, train, query_texts, doc_texts, extra)
    model = BiEncoder.load(inputs["init"]).train()
    optimizer = make_optimizer(model.named_parameters(), config)
    torch.manual_seed(config.seed)
    batches = ShuffledBatches(len(train), config.batch_size, config.seed).batches(0)[:steps + 1]
    totals = dict.fromkeys(PARTS, 0.0)
    for index, queries in enumerate(batches):
        loss, _ = method.loss(model, method.make_batch(queries, np.random.default_rng([config.seed, 0, index])),
                              torch.device("cpu"))
        started = time.perf_counter()
        loss.backward()
        backward = time.perf_counter() - started
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        if index:  # the first step warms up
            for part, seconds in {**method.step_timings, "backward": backward}.items():
                totals[part] += seconds
    timed = len(batches) - 1
    whole = sum(totals.values())
    return {"steps": timed, **{f"{part}_share": round(seconds / whole, 3) for part, seconds in totals.items()},
            "mean_step_seconds": round(whole / timed, 4)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--run", type=Path, default=Path("results/adore_star"))
    args = parser.parse_args()
    step = step_shares(args.run)
    if step is None:  # a record of an earlier profile stays as it is
        print(json.dumps({"run": args.run.name, "skipped": "the run's training inputs are not built"}))
        return
    save("adore_step", {"run": args.run.name, "step": step})


if __name__ == "__main__":
    main()
