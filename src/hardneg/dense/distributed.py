"""Training in several processes with ``torch.distributed``: launching, the process group, and the gather.

One training step sees one *global* batch, drawn exactly as in one process (same seeded generator, same
integer arrays on every rank). Each rank encodes its contiguous share of the batch's query rows and document
rows (``np.array_split`` order), and :meth:`Replicas.gather` all-gathers the embeddings so that every rank
computes the loss L of the whole global batch (in-batch negatives and STAR's cross-row reuse included),
exactly as one process would. The gather is Tevatron's: ``all_gather`` of detached tensors, then the local
tensor, which carries the gradient, put back into its own slot. Rank r's backward therefore yields the part of
dL/dθ that flows through its own embeddings; the parts sum to dL/dθ, so each rank back-propagates
``L * world`` and ``DistributedDataParallel``'s gradient *average* is exactly dL/dθ. Gradient clipping and
the logged gradient norm come after DDP's all-reduce and are the same on every rank.

The single-process case is the same code with :data:`SINGLE` (world 1): ``local(n)`` is every row and
``gather`` returns its input, so one-process training does exactly what it did before any of this existed.

Launching is torch's own: :func:`launch` is what ``torchrun --standalone`` does (``elastic_launch`` with a
c10d rendezvous on a free local port); a process that torchrun started (``WORLD_SIZE`` > 1 in its
environment) is not launched again but joins as its rank (:func:`in_launched_worker`).
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import pickle
import signal
import sys
import tempfile
import uuid
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import torch
import torch.distributed as dist
from torch.distributed.elastic.multiprocessing.errors import record
from torch.distributed.launcher.api import LaunchConfig, elastic_launch
from torch.nn.parallel import DistributedDataParallel

from hardneg.io import stop

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Replicas:
    """This process's place among the training processes: ``rank`` of ``world``, its ``local_rank`` on this
    machine, and the ``device`` it trains on (``None``: the caller's choice, as in one process)."""

    rank: int = 0
    world: int = 1
    local_rank: int = 0
    device: torch.device | None = None

    @property
    def distributed(self) -> bool:
        return self.world > 1

    @property
    def is_main(self) -> bool:
        """Rank 0: the process that writes the model, the log and checkpoints."""
        return self.rank == 0

    def sizes(self, n: int) -> list[int]:
        """Rows of each rank's share of ``n`` rows (``np.array_split`` sizes: the first ``n % world`` get one
        more)."""
        base, extra = divmod(n, self.world)
        return [base + (r < extra) for r in range(self.world)]

    def local(self, n: int) -> slice:
        """This rank's contiguous share of ``n`` rows (all of them in one process)."""
        sizes = self.sizes(n)
        start = sum(sizes[: self.rank])
        return slice(start, start + sizes[self.rank])

    def gather(self, local: torch.Tensor, n: int) -> torch.Tensor:
        """The ``n`` rows of all ranks, in rank order, from this rank's share ``local`` (``sizes(n)[rank]``
        rows). Other ranks' rows are detached; this rank's rows keep their gradient. Identity in one process."""
        if not self.distributed:
            return local
        sizes = self.sizes(n)
        if local.shape[0] != sizes[self.rank]:
            raise ValueError(f"rank {self.rank} holds {local.shape[0]} rows; its share of {n} is {sizes[self.rank]}")
        width = max(sizes)
        padded = local.detach()
        if local.shape[0] < width:  # all_gather needs one shape on every rank (gloo insists)
            padded = torch.cat([padded, padded.new_zeros((width - local.shape[0], *local.shape[1:]))])
        parts = [torch.empty_like(padded) for _ in range(self.world)]
        dist.all_gather(parts, padded.contiguous())
        parts = [part[:size] for part, size in zip(parts, sizes)]
        parts[self.rank] = local
        return torch.cat(parts)

    def broadcast(self, value: Any) -> Any:
        """Rank 0's ``value`` (any picklable object) on every rank; ``value`` itself in one process."""
        if not self.distributed:
            return value
        holder = [value]
        dist.broadcast_object_list(holder, src=0)
        return holder[0]

    def max(self, value: int) -> int:
        """The largest of every rank's ``value`` (an integer); ``value`` itself in one process."""
        if not self.distributed:
            return value
        tensor = torch.tensor(
            [value],
            dtype=torch.int64,
            device=self.device if self.device is not None and self.device.type == "cuda" else "cpu",
        )
        dist.all_reduce(tensor, op=dist.ReduceOp.MAX)
        return int(tensor.item())

    def barrier(self) -> None:
        if self.distributed:
            dist.barrier()

    def wrap(self, model: torch.nn.Module, *, find_unused_parameters: bool = False) -> torch.nn.Module:
        """``model`` in ``DistributedDataParallel`` (broadcasting rank 0's weights), or ``model`` itself in
        one process. The wrapper must be called once per backward (``BiEncoder.forward``)."""
        if not self.distributed:
            return model
        device_ids = [self.device.index] if self.device is not None and self.device.type == "cuda" else None
        # buffers (BERT's position ids) are constants: no need to broadcast them before every forward
        return DistributedDataParallel(
            model, device_ids=device_ids, find_unused_parameters=find_unused_parameters, broadcast_buffers=False
        )


SINGLE = Replicas()


def resolve_processes(processes: int | None, gpus: int) -> int:
    """Training processes of ``train.processes`` / ``train.gpus``: the number given, else one per GPU when
    more than one is asked for, else 1."""
    if processes is not None:
        return processes
    return gpus if gpus > 1 else 1


def in_launched_worker() -> bool:
    """Whether this process was started by torch's launcher (torchrun or :func:`launch`) as one of several."""
    return int(os.environ.get("WORLD_SIZE", "1")) > 1


def _available_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def default_threads(processes: int) -> int:
    """CPU threads per training process: the CPUs this process may use, shared among ``processes``."""
    return max(1, _available_cpus() // processes)


@contextmanager
def process_group(device: str = "auto", threads: int | None = None):
    """Yield this process's :class:`Replicas`: :data:`SINGLE` outside a launched worker; inside one, join the
    process group (``gloo`` on CPU; ``nccl`` on CUDA, one GPU per local rank) and leave it afterwards.

    ``threads``: torch threads of a worker; ``None`` keeps ``OMP_NUM_THREADS`` when the launcher set it,
    else the CPUs shared among the machine's workers.
    """
    if not in_launched_worker():
        yield SINGLE
        return
    world, rank = int(os.environ["WORLD_SIZE"]), int(os.environ["RANK"])
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    local_world = int(os.environ.get("LOCAL_WORLD_SIZE", str(world)))
    if device == "cpu" or (device == "auto" and not torch.cuda.is_available()):
        where, backend = torch.device("cpu"), "gloo"
    elif device == "auto" or device.startswith("cuda"):
        torch.cuda.set_device(local_rank)  # one GPU per process, whatever cuda:<n> the device named
        where, backend = torch.device("cuda", local_rank), "nccl"
    else:
        raise ValueError(f"device {device!r} with several processes: use cpu, cuda or auto")
    if threads is not None:
        torch.set_num_threads(threads)
    elif "OMP_NUM_THREADS" not in os.environ:
        torch.set_num_threads(default_threads(local_world))
    created = not dist.is_initialized()
    if created:
        dist.init_process_group(backend)
    log.info("rank %d of %d on %s (%s, %d threads)", rank, world, where, backend, torch.get_num_threads())
    try:
        yield Replicas(rank=rank, world=world, local_rank=local_rank, device=where)
    finally:
        if created:
            dist.destroy_process_group()


def _logging_setup() -> dict:
    """How this process logs (root level and format), for workers to log the same way: they inherit the
    standard streams (a log file that :func:`hardneg.io.logs.log_to` put there included) but not the handlers."""
    root = logging.getLogger()
    formats = [h.formatter._fmt for h in root.handlers if h.formatter is not None and h.formatter._fmt]
    return {"level": root.getEffectiveLevel(), "format": formats[0] if formats else logging.BASIC_FORMAT}


def _die_with_parent() -> None:
    """Linux: end this worker when the launching agent dies (even by SIGKILL), as it can no longer be joined."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


@record  # a failing worker's traceback reaches the launcher's ChildFailedError
def worker_main(job_dir: str) -> None:
    """Body of a launched worker process: run the job :func:`launch` left in ``job_dir``; rank 0 leaves its
    result there."""
    _die_with_parent()
    stop.handle_stop_signals()  # SIGTERM: stop after the current step, with the other ranks
    with open(os.path.join(job_dir, "job.pkl"), "rb") as handle:
        job = pickle.load(handle)
    rank = int(os.environ.get("RANK", "0"))
    level = job["logging"]["level"] if rank == 0 else max(job["logging"]["level"], logging.WARNING)  # one voice
    logging.basicConfig(level=level, stream=sys.stderr, force=True, format=f"[rank {rank}] {job['logging']['format']}")
    logging.captureWarnings(True)
    result = job["entrypoint"](**job["kwargs"])
    if rank == 0:
        with open(os.path.join(job_dir, "result.pkl"), "wb") as handle:
            pickle.dump(result, handle)


_WORKER_COMMAND = "import sys; from hardneg.dense.distributed import worker_main; worker_main(sys.argv[1])"


def launch(entrypoint: Callable, kwargs: dict, processes: int, *, threads: int | None = None) -> Any:
    """Run ``entrypoint(**kwargs)`` in ``processes`` local worker processes, as ``torchrun --standalone``
    does (``elastic_launch``, c10d rendezvous on a free local port, no restarts), and return rank 0's result.
    A failing worker raises torch's ``ChildFailedError`` with the worker's traceback.

    Workers are fresh Python processes (like torchrun's), so nothing of the launching script is run again in
    them: ``entrypoint`` (a module-level function) and ``kwargs`` are pickled for them, and they get this
    process's ``sys.path`` (``PYTHONPATH``) to unpickle them with. They get ``OMP_NUM_THREADS`` = ``threads``
    (default: the CPUs available here shared among them), which torch and Faiss follow.
    """
    config = LaunchConfig(
        min_nodes=1,
        max_nodes=1,
        nproc_per_node=processes,
        run_id=uuid.uuid4().hex,
        rdzv_backend="c10d",
        rdzv_endpoint="localhost:0",
        max_restarts=0,
    )
    threads = threads or default_threads(processes)
    environment = {"OMP_NUM_THREADS": str(threads), "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    saved = {key: os.environ.get(key) for key in environment}
    log.info("launching %d training processes (%d threads each)", processes, threads)
    with tempfile.TemporaryDirectory(prefix="hardneg-launch-") as job_dir:
        with open(os.path.join(job_dir, "job.pkl"), "wb") as handle:
            pickle.dump({"entrypoint": entrypoint, "kwargs": kwargs, "logging": _logging_setup()}, handle)
        os.environ.update(environment)  # inherited by the workers, as torchrun passes OMP_NUM_THREADS
        try:
            elastic_launch(config, sys.executable)("-u", "-c", _WORKER_COMMAND, job_dir)
        finally:
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value
        with open(os.path.join(job_dir, "result.pkl"), "rb") as handle:
            return pickle.load(handle)
