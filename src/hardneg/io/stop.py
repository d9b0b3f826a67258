"""Clean stops: SIGINT or SIGTERM ends the running jobs promptly, without partial artifacts.

Two halves:

* In the workflow process, :func:`forward_to_jobs` (the Snakefile's ``onstart``) passes a SIGTERM or SIGINT
  sent to Snakemake on to the local jobs it runs, as SIGTERM, before Snakemake's own handling (which, for
  SIGTERM, would otherwise wait for running jobs to finish: a training job can take hours).
* In a job, :func:`handle_stop_signals` (called by :func:`hardneg.io.logs.log_to`, which every stage script calls
  first) turns SIGTERM into an exception, so atomic writes remove their temporaries and no partial artifact is
  left. A stage that can stop at a better place (training: after the current optimiser step, with a checkpoint
  saved) calls :func:`deferred` and polls :func:`requested`; a re-run resumes from the checkpoint.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import threading

log = logging.getLogger(__name__)

SIGNALS = (signal.SIGTERM, signal.SIGINT)
_state = {"requested": None, "deferred": 0}


class StopRequested(SystemExit):
    """Raised in a job stopped by SIGTERM or SIGINT (a ``SystemExit``, so the job exits with ``128 + signal``
    and only ``finally`` blocks and context managers run)."""

    def __init__(self, signum: int):
        super().__init__(128 + signum)
        self.signum = signum

    def __str__(self) -> str:
        return f"stopped by {signal.Signals(self.signum).name}"


def _on_signal(signum, frame) -> None:
    first = _state["requested"] is None
    _state["requested"] = signum
    if _state["deferred"]:
        if first:
            log.warning("%s received: stopping after the current step", signal.Signals(signum).name)
        return
    raise StopRequested(signum)


def handle_stop_signals() -> None:
    """In a job process: SIGTERM and SIGINT raise :class:`StopRequested` (inside :func:`deferred` they are
    only recorded for :func:`requested`; SIGKILL remains the way to stop at once). Only the main thread can
    install signal handlers; elsewhere this does nothing."""
    if threading.current_thread() is not threading.main_thread():
        return
    for signum in SIGNALS:
        signal.signal(signum, _on_signal)


def requested() -> int | None:
    """The stop signal received so far (None: keep going)."""
    return _state["requested"]


@contextlib.contextmanager
def deferred():
    """Within this block a stop signal only sets :func:`requested`; the code polls it and stops cleanly."""
    _state["deferred"] += 1
    try:
        yield
    finally:
        _state["deferred"] -= 1


SCRIPT_MARK = f"{os.sep}.snakemake{os.sep}scripts{os.sep}"  # where Snakemake puts the `script:` it runs


def _job_processes() -> list:
    """The stage scripts this process runs (Snakemake starts each as ``python .snakemake/scripts/...``), with
    their own children (training workers); not the shells and job wrappers between, which then report each
    job's end as for any failed job."""
    import psutil  # Snakemake's dependency, not hardneg's: only where a stop is relayed to jobs

    found = []
    for process in psutil.Process(os.getpid()).children(recursive=True):
        with contextlib.suppress(psutil.Error):
            if any(SCRIPT_MARK in part for part in process.cmdline()):
                found += [process, *process.children(recursive=True)]
    return found


def forward_to_jobs() -> None:
    """In the Snakemake process running jobs locally: on SIGTERM or SIGINT, send SIGTERM to the stage scripts
    of the running jobs, then let Snakemake's own handler run (it waits for the jobs, which now end promptly,
    reports them failed and exits)."""
    for signum in SIGNALS:
        previous = signal.getsignal(signum)

        def forward(received, frame, previous=previous):
            for process in _job_processes():
                with contextlib.suppress(Exception):
                    process.send_signal(signal.SIGTERM)
            if callable(previous):
                previous(received, frame)
            elif previous == signal.SIG_DFL and received == signal.SIGINT:
                raise KeyboardInterrupt

        signal.signal(signum, forward)
