"""Shared by the reliability tests: Snakemake on a tiny config in a working directory of its own, started and
stopped from the test (``PausedRun``), and checks of what a failed or killed run leaves under ``results/``."""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import time
from pathlib import Path

from tests.support.workflow import command, job_env

# Not compared between runs, not being artifacts of the runs or not reproducible by design:
# * logs/ and benchmarks/: each job's log and its time and memory, wall-clock figures by nature;
# * bm25/bm25_index/: Lucene writes a random segment id and the time of writing into its index files; the
#   rankings searched from it (bm25/rankings/*) are compared;
# * <run>/tensorboard/: the live training curves, whose event files hold wall-clock times (and the host and
#   process in their names), one file per training attempt; train_log.parquet, the same numbers, is compared;
# * Snakemake's own timestamp files.
UNCOMPARED_PARTS = {"logs", "benchmarks", "bm25_index", "tensorboard"}
UNCOMPARED_NAMES = {".snakemake_timestamp"}


def temporaries(root: Path) -> list[str]:
    """Every ``.*.tmp`` file or folder under ``root`` (what an atomic write leaves when it is killed)."""
    if not root.exists():
        return []
    return sorted(str(p.relative_to(root)) for p in root.rglob(".*.tmp"))


def artifacts(root: Path) -> list[str]:
    """Every file under ``root`` but logs, benchmarks, TensorBoard logs and Snakemake's timestamp files."""
    if not root.exists():
        return []
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()
                  and not {"logs", "benchmarks", "tensorboard"} & set(p.relative_to(root).parts)
                  and p.name not in UNCOMPARED_NAMES)


def digests(root: Path) -> dict[str, str]:
    """sha256 of every compared artifact under ``root`` (see ``UNCOMPARED_PARTS``)."""
    out = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if path.is_file() and not UNCOMPARED_PARTS & set(rel.parts) and path.name not in UNCOMPARED_NAMES:
            out[str(rel)] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def check_failed_cleanly(out: str, results: Path, *, before_jobs: bool) -> None:
    """What a run refused for bad input may leave: nothing under ``results`` when refused ``before_jobs`` (no job
    started); else one failed job and no artifact; never a temporary. ``out`` is Snakemake's output."""
    if before_jobs:
        assert "Error in rule" not in out, out[-3000:]  # refused before any job started
        assert not results.exists(), artifacts(results)
    else:
        assert out.count("Error in rule") == 1, out[-4000:]  # one failed job: the dataset's preparation
        assert artifacts(results) == [], artifacts(results)
    assert temporaries(results) == []


class PausedRun:
    """A Snakemake run whose first job renaming a temporary onto a path containing ``pause_at`` stops there
    (see ``faults/sitecustomize.py``), so the test can kill that job, or Snakemake, at a known point."""

    def __init__(self, workdir: Path, args: list[str], pause_at: str, *, after: bool = False, seconds: float = 600):
        self.mark = workdir / f".pause-{time.monotonic_ns()}"
        env = job_env(HARDNEG_PAUSE_AT=pause_at, HARDNEG_PAUSE_MARK=str(self.mark),
                      HARDNEG_PAUSE_AFTER="1" if after else "0", HARDNEG_PAUSE_SECONDS=str(seconds))
        self.pause_at = pause_at
        self.process = subprocess.Popen(command(workdir, *args), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                        text=True, env=env, start_new_session=True)
        self.job_pid: int | None = None

    def __enter__(self) -> "PausedRun":
        return self

    def __exit__(self, kind, value, traceback) -> None:
        if kind is not None:  # a failed check must not leave a paused job behind
            self.kill_all()

    def wait_for_pause(self, timeout: float = 240) -> int:
        """The process id of the paused job; an AssertionError (with Snakemake's output) when the run ends
        without reaching the pause."""
        deadline = time.monotonic() + timeout
        while not self.mark.exists():
            if self.process.poll() is not None:
                raise AssertionError(f"the run ended (exit {self.process.returncode}) before pausing at "
                                     f"{self.pause_at!r}:\n{self.process.stdout.read()[-4000:]}")
            if time.monotonic() > deadline:
                self.kill_all()
                raise AssertionError(f"no pause at {self.pause_at!r} within {timeout} s")
            time.sleep(0.05)
        self.job_pid = int(self.mark.read_text())
        self.mark.unlink()
        return self.job_pid

    def resume_job(self) -> None:
        """Let the paused job go on at once (SIGUSR1 ends its pause)."""
        os.kill(self.job_pid, signal.SIGUSR1)

    def kill_job(self) -> None:
        """SIGKILL the paused job's process (not Snakemake)."""
        os.kill(self.job_pid, signal.SIGKILL)

    def kill_snakemake(self) -> None:
        """SIGKILL Snakemake's own process; its jobs live on."""
        os.kill(self.process.pid, signal.SIGKILL)

    def kill_all(self) -> None:
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.process.wait()

    def finish(self, timeout: float = 300) -> tuple[int, str]:
        """Wait for Snakemake to exit; its exit status and output."""
        try:
            out, _ = self.process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill_all()
            raise
        return self.process.returncode, out
