"""Adaptive batch scheduling: how fast one epoch is scheduled, and how hard its batches are against random ones.

    python benchmarks/abs_schedule.py --instances 100000 --batch-size 32 --dim 128 --search greedy beam

A synthetic instance set with hardness structure: ``--topics`` topic centres (default one per 100 instances),
each instance's passage a unit vector near its topic's centre and its question a unit vector near its passage
(see :func:`clustered`), so the instances of one topic are each other's hard negatives and those of others easy
ones. s(q_i, p_j) is the
dot product (:class:`hardneg.methods.abs.similarity.DenseSimilarity`, Faiss ``--index`` for the neighbour
search). One epoch is scheduled with random batching and with each ``--search``; the table gives instances
scheduled per second (wall clock, neighbour search included), the seconds of the neighbour search and the
number of swaps, the mean h(B) over the epoch's batches, and that mean over random batching's. Prints a
markdown table and one JSON line and writes benchmarks/out/abs_schedule.json.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from report import save

from hardneg.methods.abs.scheduling import adaptive_batches, num_batches, random_batches
from hardneg.methods.abs.similarity import DenseSimilarity, mean_hardness


def unit(x: np.ndarray) -> np.ndarray:
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def clustered(instances: int, dim: int, topics: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Questions and passages [instances, dim], unit vectors. A passage is its topic's centre plus a direction
    shared by all (one encoder's vectors are anisotropic: unrelated texts score above 0) plus noise; its
    question is the passage plus less noise. Expected dot products: about 0.8 between a question and its passage,
    0.4 with another passage of its topic, 0.1 with a passage of another topic."""
    rng = np.random.default_rng(seed)
    shared = unit(rng.normal(size=(1, dim)))
    centres = unit(rng.normal(size=(topics, dim)))
    topic = rng.integers(0, topics, size=instances)
    passages = unit(0.6 * shared + centres[topic] + 1.2 * unit(rng.normal(size=(instances, dim))))
    questions = unit(passages + 0.7 * unit(rng.normal(size=(instances, dim))))
    return questions, passages


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--instances", type=int, default=100_000)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--dim", type=int, default=128)
    parser.add_argument("--topics", type=int, default=None, help="topic centres (default: instances / 100)")
    parser.add_argument("--search", nargs="+", choices=("greedy", "beam"), default=["greedy", "beam"])
    parser.add_argument("--beam", type=int, default=3)
    parser.add_argument("--candidates", type=int, default=100)
    parser.add_argument("--max-swaps", type=int, default=None, help="per batch (default: 4 x batch size)")
    parser.add_argument("--index", default="Flat", help="Faiss factory string of the neighbour search")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    topics = args.topics or max(args.instances // 100, 2)
    questions, passages = clustered(args.instances, args.dim, topics, args.seed)
    similarity = DenseSimilarity(questions, passages)
    record = {"instances": args.instances, "batch_size": args.batch_size, "dim": args.dim, "topics": topics,
              "candidates": args.candidates, "beam": args.beam, "max_swaps": args.max_swaps, "index": args.index,
              "seed": args.seed, "batches": num_batches(args.instances, args.batch_size), "schedules": {}}
    started = time.perf_counter()
    batches = random_batches(args.instances, args.batch_size, np.random.default_rng(args.seed))
    seconds = time.perf_counter() - started
    random_h = mean_hardness(similarity, batches)
    record["schedules"]["random"] = {"seconds": seconds, "neighbour_seconds": 0.0, "swaps": 0,
                                     "mean_hardness": random_h}
    for search in args.search:
        report: dict = {}
        started = time.perf_counter()
        batches = adaptive_batches(similarity, args.batch_size, np.random.default_rng(args.seed), search=search,
                                   beam=args.beam, candidates=args.candidates, max_swaps=args.max_swaps,
                                   index=args.index, report=report)
        seconds = time.perf_counter() - started
        assert np.array_equal(np.sort(np.concatenate(batches)), np.arange(args.instances))  # a partition
        name = f"beam {args.beam}" if search == "beam" else search
        record["schedules"][name] = {"seconds": seconds, "neighbour_seconds": report["neighbour_seconds"],
                                     "swaps": report["swaps"], "mean_hardness": mean_hardness(similarity, batches)}
    lines = ["| schedule | instances/s | seconds (neighbour search) | swaps | mean h(B) | vs random |",
             "|---|---|---|---|---|---|"]
    for name, r in record["schedules"].items():
        r["instances_per_s"] = args.instances / max(r["seconds"], 1e-9)
        r["over_random"] = r["mean_hardness"] / random_h if random_h else None
        ratio = f"{r['over_random']:.2f}" if r["over_random"] is not None else "-"
        lines.append(f"| {name} | {r['instances_per_s']:,.0f} | {r['seconds']:.1f} ({r['neighbour_seconds']:.1f}) | "
                     f"{r['swaps']:,} | {r['mean_hardness']:.2f} | {ratio} |")
    lines.append("")
    lines.append(f"{args.instances:,} instances, {topics:,} topics, dimension {args.dim}, batch {args.batch_size}, "
                 f"{args.candidates} candidates per neighbour list, Faiss {args.index}; h(B) sums dot products of "
                 f"unit vectors over the {args.batch_size * (args.batch_size - 1)} ordered pairs of a batch.")
    print("\n".join(lines))
    save("abs_schedule", record)


if __name__ == "__main__":
    main()
