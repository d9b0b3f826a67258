"""Shared by the benchmark scripts: print a record as one JSON line and keep it in benchmarks/out/<name>.json;
the machine a benchmark ran on; timing helpers; a side of a comparison run in a process of its own, its failure
kept with its cause."""

from __future__ import annotations

import contextlib
import json
import os
import platform
import signal
import statistics
import subprocess
import tempfile
import time
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


def process_memory(key: str, pid: int | str = "self") -> int:
    """A line of /proc/<pid>/status in bytes: ``VmRSS`` (the resident set now) or ``VmHWM`` (its peak)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"/proc/{pid}/status has no {key}")


def available_memory() -> int:
    """The memory the kernel says is available for new work (``MemAvailable`` of /proc/meminfo), in bytes."""
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("/proc/meminfo has no MemAvailable")


def _gib(value: int) -> str:
    return f"{value / 2 ** 30:.1f} GiB"


def run_side(command: list[str], *, cwd: str | os.PathLike, memory_limit: int | None = None) -> dict:
    """One side of a comparison, run as ``command`` in a process of its own: what it printed last on its standard
    output (a JSON object), with ``peak_memory_bytes`` added; or, when it failed, ``{"failed": cause,
    "peak_memory_bytes": ...}``, the cause saying how it ended (its exit status, or the signal that killed it,
    SIGKILL being the kernel's out-of-memory killer's) and the last lines of its error output. The process is
    stopped once its resident memory passes ``memory_limit`` bytes (default: 90% of the memory available when it
    starts), before the kernel kills it or the benchmark itself: the cause then says so. A side that fails never
    takes the other sides' results with it."""
    limit = int(0.9 * available_memory()) if memory_limit is None else memory_limit
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        process = subprocess.Popen(command, cwd=cwd, stdout=out, stderr=err, text=True)
        peak, stopped = 0, False
        while process.poll() is None:
            with contextlib.suppress(OSError, RuntimeError):
                peak = max(peak, process_memory("VmHWM", process.pid))
            if peak > limit and not stopped:
                process.kill()
                stopped = True
            time.sleep(0.1)
        out.seek(0)
        err.seek(0)
        lines, errors = out.read().splitlines(), [line for line in err.read().splitlines() if line.strip()]
    code = process.returncode
    if code == 0 and lines:
        with contextlib.suppress(json.JSONDecodeError):
            return {"peak_memory_bytes": peak, **json.loads(lines[-1])}  # a side's own measure first
    if stopped:
        allowed = "the limit set" if memory_limit is not None else "90% of the memory available when it started"
        cause = f"stopped at {_gib(peak)} resident, beyond the {_gib(limit)} it was allowed ({allowed})"
    elif code < 0:
        name = signal.Signals(-code).name
        cause = f"killed by {name}" + (f" (the kernel's out-of-memory killer sends it; peak {_gib(peak)} "
                                       f"resident)" if name == "SIGKILL" else "")
    elif code != 0:
        cause = f"exit status {code}"
    else:
        cause = "it printed no result"
    said = " | ".join(errors[-3:]) if errors else "it printed no error"
    return {"failed": f"{cause}; {said}", "peak_memory_bytes": peak}


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
