"""Gradient caching (``params.train.grad_cache_chunk``): the memory and time of a large STAR step with cached
gradients, against uncached steps.

Three STAR steps (hardneg.dense.steps.ContrastiveMethod with the RankNet loss, every query against every
document of the batch, one negative per query: each batch of B queries encodes B queries and 2B documents):

* ``small``: B = ``--small`` (32) without caching: the memory a user has;
* ``cached``: B = ``--large`` (512) with ``grad_cache_chunk`` = ``--chunk`` (32);
* ``large``: B = ``--large`` without caching: the time of the same batch.

Targets: the cached step's peak memory at most 1.5x the small step's; its time at most 1.4x the large
uncached step's.

Each step runs in a process of its own (a BiEncoder over a seeded random BERT of ``--layers`` layers of
``--hidden``; synthetic token ids, queries of 6 to ``--query-length`` tokens, documents of ``--doc-length`` / 2 to
``--doc-length``), with one untimed step first (AdamW's state is then allocated), then ``--steps`` timed steps
(make_batch, loss, backward, AdamW update). A step's memory is the rise of the process's peak resident set
(VmHWM, reset through /proc/self/clear_refs before the timed steps) over its resident set before them.

    python benchmarks/grad_cache.py                   # CPU, 2 threads, 2 layers of 256, documents <= 128 tokens

Prints a markdown table and one JSON line, and writes benchmarks/out/grad_cache.json.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import torch
from report import machine, machine_line, measured_steps, model_arguments, save
from tct_step import backbone, synthetic_data

from hardneg.dense.data import RandomNegatives
from hardneg.dense.steps import ContrastiveMethod
from hardneg.dense.model import BiEncoder


def one_side(args) -> dict:
    """The steps of one side in this process: their seconds and the rise of the peak resident set."""
    torch.set_num_threads(args.threads)
    rng = np.random.default_rng(args.seed)
    with tempfile.TemporaryDirectory(prefix="grad-cache-") as tmp:
        args.batch_size = args.batch
        train, query_texts, doc_texts = synthetic_data(Path(tmp), args, rng)
        model = BiEncoder(backbone(args, args.seed), None, pooling="cls").train()
        method = ContrastiveMethod(train, query_texts, doc_texts, negatives=RandomNegatives(train), per_query=1,
                                   loss="ranknet", temperature=1.0, grad_cache_chunk=args.cache_chunk)
        return measured_steps(model, method, lambda index: np.random.default_rng([args.seed, index]).choice(
            len(train), args.batch, replace=False), args.steps, lr=1e-5)


def side(args, batch: int, chunk: int) -> dict:
    command = [sys.executable, __file__, "--side", "--batch", str(batch), "--cache-chunk", str(chunk)]
    for key in ("layers", "hidden", "heads", "intermediate", "query_length", "doc_length", "steps", "threads", "seed"):
        command += [f"--{key.replace('_', '-')}", str(getattr(args, key))]
    done = subprocess.run(command, capture_output=True, text=True, cwd=Path(__file__).parent)
    if done.returncode != 0:
        sys.exit(f"the step of batch {batch}, chunk {chunk} failed:\n{done.stderr}")
    return {"batch": batch, "grad_cache_chunk": chunk, **json.loads(done.stdout.splitlines()[-1])}


def table(record: dict) -> str:
    s, sides = record["setting"], record["sides"]
    lines = [f"STAR step (RankNet, B queries x 2B documents), {s['layers']} layers of {s['hidden']}, documents "
             f"{s['doc_length'] // 2}-{s['doc_length']} tokens, {s['steps']} timed steps a side", "",
             "| step | queries | grad_cache_chunk | step memory GiB | median s |", "|---|---|---|---|---|"]
    for name in ("small", "cached", "large"):
        r = sides[name]
        lines.append(f"| {name} | {r['batch']} | {r['grad_cache_chunk'] or 'off'} | "
                     f"{r['step_memory_bytes'] / 2 ** 30:.2f} | {r['median_seconds']:.2f} |")
    m = record["machine"]
    lines += ["", f"Memory of the cached step / the small step: {record['memory_ratio']:.2f}x (target at most 1.5x). "
              f"Time of the cached step / the large uncached step: {record['time_ratio']:.2f}x (target at most 1.4x).",
              machine_line(m)]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    model_arguments(parser)
    parser.add_argument("--small", type=int, default=32, help="queries of the small uncached step")
    parser.add_argument("--large", type=int, default=512, help="queries of the cached and the large uncached step")
    parser.add_argument("--chunk", type=int, default=32, help="grad_cache_chunk of the cached step")
    parser.add_argument("--steps", type=int, default=4, help="timed steps a side")
    parser.add_argument("--side", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--batch", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--cache-chunk", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.side:
        print(json.dumps(one_side(args)))
        return
    sides = {"small": side(args, args.small, 0), "cached": side(args, args.large, args.chunk),
             "large": side(args, args.large, 0)}
    setting = {key: getattr(args, key) for key in ("layers", "hidden", "heads", "intermediate", "query_length",
                                                   "doc_length", "small", "large", "chunk", "steps", "seed")}
    record = {"setting": setting, "machine": machine(torch.device("cpu"), args.threads), "sides": sides,
              "memory_ratio": sides["cached"]["step_memory_bytes"] / sides["small"]["step_memory_bytes"],
              "time_ratio": sides["cached"]["median_seconds"] / sides["large"]["median_seconds"]}
    print(table(record))
    save("grad_cache", record)


if __name__ == "__main__":
    main()
