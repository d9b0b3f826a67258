"""CPU time per training step of jobs that share the cores, with OpenMP threads that spin or sleep while they wait.

    python benchmarks/omp_wait.py [--jobs 2] [--threads 2] [--steps 8]

Starts ``--jobs`` processes side by side, each training the built-in model's encoder at the default size (one BERT
layer, hidden size 256, vocabulary 32,000; batches of 96 sequences of 128 tokens) with ``--threads`` threads, as
jobs of the workflow do on a machine with fewer cores than their threads add up to. Once with ``OMP_WAIT_POLICY``
unset (libgomp's default: waiting threads spin a while before they sleep) and once with ``PASSIVE`` (they sleep at
once: what rules/common.smk sets for the workflow's jobs). Prints one JSON line (also written to
benchmarks/out/omp_wait.json): the mean wall and CPU seconds per step of the processes under each policy.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

from report import machine, save

STEPS = """
import json, sys, time, torch
from transformers import BertConfig, BertModel
torch.manual_seed(0)
torch.set_num_threads({threads})
model = BertModel(BertConfig(vocab_size=32000, hidden_size=256, num_hidden_layers=1, num_attention_heads=4,
                             intermediate_size=512))
optimizer = torch.optim.AdamW(model.parameters(), 1e-3)
ids = torch.randint(0, 32000, (96, 128))
def step():
    model(input_ids=ids).last_hidden_state.mean(1).sum().backward()
    optimizer.step()
    optimizer.zero_grad()
step()
cpu, wall = time.process_time(), time.perf_counter()
for _ in range({steps}):
    step()
print(json.dumps({{"wall": (time.perf_counter() - wall) / {steps}, "cpu": (time.process_time() - cpu) / {steps}}}))
"""


def side_by_side(policy: str | None, jobs: int, threads: int, steps: int) -> dict:
    env = {key: value for key, value in os.environ.items() if key != "OMP_WAIT_POLICY"}
    if policy:
        env["OMP_WAIT_POLICY"] = policy
    code = STEPS.format(threads=threads, steps=steps)
    processes = [subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, text=True)
                 for _ in range(jobs)]
    results = []
    for process in processes:
        out, _ = process.communicate()
        if process.returncode != 0:
            sys.exit(f"a training process failed under OMP_WAIT_POLICY={policy}")
        results.append(json.loads(out))
    return {key: round(sum(r[key] for r in results) / jobs, 3) for key in ("wall", "cpu")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--steps", type=int, default=8)
    args = parser.parse_args()
    import torch

    record = {**machine(torch.device("cpu"), args.threads), "cores": os.cpu_count(), "jobs": args.jobs,
              "steps": args.steps}
    record["default"] = side_by_side(None, args.jobs, args.threads, args.steps)
    record["passive"] = side_by_side("PASSIVE", args.jobs, args.threads, args.steps)
    record["cpu_ratio"] = round(record["default"]["cpu"] / record["passive"]["cpu"], 2)
    save("omp_wait", record)


if __name__ == "__main__":
    main()
