"""Shared by the benchmark scripts: print a record as one JSON line and keep it in benchmarks/out/<name>.json;
the machine a benchmark ran on; timing helpers."""

from __future__ import annotations

import contextlib
import json
import platform
import statistics
from pathlib import Path


def save(name: str, record: dict) -> None:
    print(json.dumps(record))
    out = Path(__file__).parent / "out" / f"{name}.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(record, indent=2) + "\n")


def machine(device, threads: int) -> dict:
    """The device (GPU or CPU model name), threads and library versions, for the record."""
    import torch
    import transformers

    if device.type == "cuda":
        name = torch.cuda.get_device_name(device)
    else:
        name = platform.processor() or "unknown CPU"
        with contextlib.suppress(OSError):
            for line in Path("/proc/cpuinfo").read_text().splitlines():
                if line.startswith("model name"):
                    name = line.split(":", 1)[1].strip()
                    break
    return {"device": name, "threads": threads, "torch": torch.__version__, "transformers": transformers.__version__}


def process_memory(key: str) -> int:
    """A line of /proc/self/status in bytes: ``VmRSS`` (the resident set now) or ``VmHWM`` (its peak)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"/proc/self/status has no {key}")


def reset_peak_memory() -> int:
    """Start the peak resident set (VmHWM) again from the current one; returns the resident set now."""
    Path("/proc/self/clear_refs").write_text("5")
    return process_memory("VmRSS")


def measured_steps(model, method, queries_of, steps: int, *, lr: float) -> dict:
    """One untimed training step of ``method`` (its ``make_batch`` over ``queries_of(index)`` and its ``loss``,
    backward, AdamW, zero_grad) on the CPU, then ``steps`` timed ones: their seconds (:func:`summary`) and
    ``step_memory_bytes``, the rise of the peak resident set over the resident set before them."""
    import time

    import numpy as np
    import torch

    optimizer = torch.optim.AdamW(model.parameters(), lr=lr)

    def step(index: int) -> float:
        started = time.perf_counter()
        loss, _ = method.loss(model, method.make_batch(queries_of(index), np.random.default_rng(index)), "cpu")
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        return time.perf_counter() - started

    step(0)
    before = reset_peak_memory()
    seconds = [step(index) for index in range(1, steps + 1)]
    return {"step_memory_bytes": process_memory("VmHWM") - before, **summary(seconds)}


def model_arguments(parser, *, doc_length: int = 128) -> None:
    """The options of a seeded random BERT's size (``--layers``, ``--hidden``, ``--heads``, ``--intermediate``),
    the texts' lengths (``--query-length``, ``--doc-length``), ``--threads`` and ``--seed``."""
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--intermediate", type=int, default=1024)
    parser.add_argument("--query-length", type=int, default=32, help="longest query, in tokens")
    parser.add_argument("--doc-length", type=int, default=doc_length, help="longest document, in tokens")
    parser.add_argument("--threads", type=int, default=2, help="torch's CPU threads")
    parser.add_argument("--seed", type=int, default=0)


def machine_line(m: dict, precision: str | None = None) -> str:
    """The table's last line: the record's :func:`machine` (and the precision, when given)."""
    shown = f"{precision}, " if precision else ""
    return (f"Machine: {m['device']}, {m['threads']} thread(s), {shown}torch {m['torch']}, "
            f"transformers {m['transformers']}.")


def autocast(device, precision: str):
    """bf16 autocast on ``device`` for ``precision`` bf16; nothing for fp32."""
    import torch

    if precision == "fp32":
        return contextlib.nullcontext()
    return torch.autocast(device.type, dtype=torch.bfloat16)


def synchronize(device) -> None:
    import torch

    if device.type == "cuda":
        torch.cuda.synchronize(device)


def summary(seconds: list[float]) -> dict:
    return {"min_seconds": min(seconds), "median_seconds": statistics.median(seconds),
            "seconds": [round(t, 6) for t in seconds]}
