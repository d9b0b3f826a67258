"""ADORE step profile and loss speed.

1. From a finished ADORE run's train_log.parquet: the share of step time spent encoding queries, searching the
   index, computing the loss and back-propagating (the paper reports search at about 20% of a step).
2. The vectorised LambdaLoss against a per-query loop over the same inputs (batch 32, top-200 + appended
   positives), forward and backward, on CPU.

    python benchmarks/adore_step.py --run results/adore_star

Prints one JSON line and writes benchmarks/out/adore_step.json.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import torch

from report import save

from hardneg.dense.adore import lambda_loss


def step_shares(run_dir: Path) -> dict:
    log = pq.read_table(run_dir / "train_log.parquet").to_pandas()
    parts = ["encode_seconds", "search_seconds", "loss_seconds", "backward_seconds"]
    totals = {p: float(log[p].sum()) for p in parts}
    whole = sum(totals.values())
    return {"steps": len(log), **{p.replace("_seconds", "_share"): round(v / whole, 3) for p, v in totals.items()},
            "mean_step_seconds": round(whole / len(log), 4)}


def per_query_loop(scores, relevant, ranks, valid, cut):
    """The reference: one query at a time, each with its own pair matrix."""
    losses = []
    for b in range(scores.shape[0]):
        keep = valid[b]
        s, rel, r = scores[b][keep], relevant[b][keep], ranks[b][keep].float()
        rr = torch.where(r <= cut, 1.0 / r, torch.zeros(()))
        pos, neg = rel.nonzero().squeeze(1), (~rel).nonzero().squeeze(1)
        weight = (rr[pos][:, None] - rr[neg][None, :]).abs()
        losses.append((torch.nn.functional.softplus(s[neg][None, :] - s[pos][:, None]) * weight).sum())
    return torch.stack(losses).mean()


def loss_speed(batch: int = 32, width: int = 203, repeats: int = 50) -> dict:
    rng = np.random.default_rng(0)
    relevant = torch.from_numpy(rng.random((batch, width)) < 0.01)
    relevant[:, -1] = True
    ranks = torch.arange(1, width + 1).repeat(batch, 1)
    valid = torch.ones(batch, width, dtype=torch.bool)
    timings = {}
    for name, fn in (("vectorised", lambda s: lambda_loss(s, relevant, ranks, valid, cut=200)),
                     ("per_query_loop", lambda s: per_query_loop(s, relevant, ranks, valid, 200))):
        scores = torch.randn(batch, width, requires_grad=True)
        fn(scores).backward()  # warm-up
        best = float("inf")
        for _ in range(repeats):  # best of several: robust to other load on the machine
            scores.grad = None
            started = time.perf_counter()
            fn(scores).backward()
            best = min(best, time.perf_counter() - started)
        timings[name] = best
    check = torch.randn(batch, width)
    agree = abs(float(lambda_loss(check, relevant, ranks, valid, cut=200))
                - float(per_query_loop(check, relevant, ranks, valid, 200)))
    return {"vectorised_ms": round(timings["vectorised"] * 1e3, 3),
            "per_query_loop_ms": round(timings["per_query_loop"] * 1e3, 3),
            "speedup": round(timings["per_query_loop"] / timings["vectorised"], 1), "abs_difference": agree}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--run", type=Path, default=Path("results/adore_star"))
    args = parser.parse_args()
    torch.set_num_threads(1)
    record = {"loss": loss_speed()}
    if (args.run / "train_log.parquet").exists():
        record["step"] = step_shares(args.run)
    save("adore_step", record)


if __name__ == "__main__":
    main()
