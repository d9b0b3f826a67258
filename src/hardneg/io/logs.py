"""Logging for stage scripts: everything (Python logging, warnings, and the JVM's own output) goes to
the rule's log file, so ``results/<run>/logs/`` explains every artifact.

A few findings must reach the person running the workflow, not only the log: data that will be cut or left
out, settings that cannot train well. :func:`console` writes such a message to the log *and* to the console:
the standard error the process had before :func:`log_to` redirected it, which Snakemake shows on the terminal
under the job. Messages logged to the ``hardneg.console`` logger go the same two ways. A long job's progress
(training steps, encoded texts) reaches the console the same way: a line every few seconds where the console is a
file or a pipe, a progress bar redrawn in place where it is a terminal (:func:`progress`, :func:`tick`).
"""

from __future__ import annotations

import atexit
import contextlib
import errno
import itertools
import logging
import os
import resource
import sys
import time
from pathlib import Path

from hardneg.io import stop
from hardneg.io.text import visible

CONSOLE_LOGGER = "hardneg.console"

_console_stream = None  # the process's standard error from before the first redirection to a log file
_console_handler: logging.Handler | None = None
_log_path: str | None = None
PROGRESS_SECONDS = 10.0  # at most one progress line a job shows on the console per this many seconds
_progress_shown: float | None = None  # time.monotonic() of the job's last progress line on the console
BAR_SECONDS = 0.25  # at most one redraw of a job's progress bar per this many seconds
_bar_started: float | None = None  # time.monotonic() of the job's first progress bar
_bar_drawn = 0.0  # time.monotonic() of its last redraw
_bar_open = False  # a bar is on the console's last line, without its newline


class _ConsoleHandler(logging.StreamHandler):
    """Console messages below an open progress bar start on a line of their own."""

    def emit(self, record: logging.LogRecord) -> None:
        _end_bar()
        super().emit(record)


class _ConsoleFormatter(logging.Formatter):
    """``hardneg warning: <message>``; further lines of the message indented; the log file named last."""

    def format(self, record: logging.LogRecord) -> str:
        lines = record.getMessage().splitlines() or [""]
        text = "\n".join([f"hardneg {record.levelname.lower()}: {lines[0]}"] + [f"  {line}" for line in lines[1:]])
        return text + (f"\n  (log: {_log_path})" if _log_path else "")


def log_to(path: str | os.PathLike | None, level: int = logging.INFO) -> None:
    """Send this process's logging, stdout and stderr (file descriptors 1 and 2, so child libraries and the
    JVM are captured too) to ``path``. With ``path=None`` logging goes to stderr.

    The standard error of before the redirection is kept for :func:`console`."""
    global _console_stream, _log_path
    if path is not None:
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        handle = open(path, "a", buffering=1, encoding="utf-8")  # noqa: SIM115 (the log, open until the process ends)
        sys.stdout.flush()
        sys.stderr.flush()
        if _console_stream is None:  # a second call must not mistake the log file for the console
            _console_stream = os.fdopen(os.dup(2), "w", buffering=1, encoding="utf-8", errors="replace")
        os.dup2(handle.fileno(), 1)
        os.dup2(handle.fileno(), 2)
        sys.stdout = sys.stderr = handle
        if _log_path != os.fspath(path):
            _keep_attempt(os.fspath(path))
        if _log_path is None:
            atexit.register(_log_peak_memory)
            atexit.register(_end_bar)  # a job that stops midway ends its bar's line
            sys.excepthook = _unwritable_on_console(sys.excepthook)
        _log_path = os.fspath(path)
    logging.basicConfig(
        level=level, stream=sys.stderr, force=True, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    logging.captureWarnings(True)
    _quiet_libraries()
    stop.handle_stop_signals()  # SIGTERM/SIGINT: no partial artifact (see hardneg.io.stop)
    _set_console(_console_stream if path is not None else None)


# The errors that leave a job's log empty: the disk or folder it would be written to is full or cannot be written.
UNWRITABLE = {
    errno.ENOSPC: "no space left on the device",
    errno.EDQUOT: "the disk quota is exceeded",
    errno.EROFS: "the file system is read-only",
    errno.EACCES: "permission denied",
}


def _unwritable_on_console(hook):
    """``sys.excepthook`` that first says on the console, in one line, why a job failed when the error is one that
    leaves its log empty (:data:`UNWRITABLE`): a full disk, a read-only or forbidden folder."""

    def report(kind, error, trace):
        if isinstance(error, OSError) and error.errno in UNWRITABLE and _console_stream is not None:
            where = f" ({error.filename})" if error.filename else ""
            with contextlib.suppress(OSError, ValueError):
                _end_bar()
                _console_stream.write(
                    f"hardneg error: {job_label(_log_path or '')}: {UNWRITABLE[error.errno]}"
                    f"{where}: {error.strerror or error} (its log may be empty for the same "
                    f"reason)\n"
                )
                _console_stream.flush()
        hook(kind, error, trace)

    return report


# Libraries whose INFO chatter says nothing about the artifacts (Faiss's loader reports which build it picked, each
# time it is imported): their warnings and errors still reach the log.
QUIET_LOGGERS = ("faiss", "transformers", "huggingface_hub", "sentence_transformers", "urllib3", "filelock")


def _quiet_libraries() -> None:
    """Library chatter at WARNING and no download or weight-loading progress bars: a job's log holds hardneg's
    own lines (one line per N steps or documents for the long stages) and whatever went wrong."""
    for name in QUIET_LOGGERS:
        logging.getLogger(name).setLevel(logging.WARNING)
    os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] = "1"  # read when huggingface_hub is imported
    if "huggingface_hub" in sys.modules:  # already imported: tell it (and transformers) directly
        from huggingface_hub.utils import disable_progress_bars  # huggingface_hub: imported only to look up a hub model

        disable_progress_bars()
    if "transformers" in sys.modules:
        # transformers: imported only where a model or tokenizer is used
        from transformers.utils import logging as transformers_logging

        transformers_logging.set_verbosity_warning()
        transformers_logging.disable_progress_bar()


def peak_memory_kib() -> int:
    """This process's peak resident memory in KiB: the kernel's high-water mark of its memory since it started
    its program (``VmHWM``; ``ru_maxrss`` where /proc is missing, which on Linux also counts the parent's memory
    at the fork, carried across the exec)."""
    try:
        with open("/proc/self/status", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    unit = 1 if sys.platform == "darwin" else 1024  # ru_maxrss is in bytes on macOS, in KiB elsewhere
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * unit // 1024


def _log_peak_memory() -> None:
    """Log the process's peak resident memory as it ends: Snakemake's benchmark record samples memory, every
    30 s after a job's first 15 s, and can miss a peak (benchmarks/scale.py reads both)."""
    peak = peak_memory_kib()
    logging.getLogger(__name__).info("peak resident memory: %d KiB (%.0f MiB)", peak, peak / 1024)


def _keep_attempt(path: str) -> None:
    """Keep this attempt's log past the next attempt: a hard link ``attempts/<name>.<n>.log`` beside it.

    Snakemake deletes a job's log when it starts the job again, so the log of a killed or failed attempt would go
    with the next attempt; the link keeps it. A process that ends normally (no uncaught exception, no stop signal)
    removes its link, so only attempts that did not finish keep one."""
    folder = os.path.join(os.path.dirname(os.path.abspath(path)), "attempts")
    stem = os.path.basename(path).removesuffix(".log")
    os.makedirs(folder, exist_ok=True)
    for number in itertools.count(1):
        link = os.path.join(folder, f"{stem}.{number}.log")
        try:
            os.link(path, link)
            break
        except FileExistsError:
            continue
        except OSError:  # no hard links on this file system: the log lasts until the next attempt only
            return
    atexit.register(_drop_attempt, link)


def _drop_attempt(link: str) -> None:
    stop = sys.modules.get("hardneg.io.stop")
    if getattr(sys, "last_value", None) is None and not (stop is not None and stop.requested()):
        with contextlib.suppress(OSError):
            os.unlink(link)
            os.rmdir(os.path.dirname(link))  # only when no other attempt is kept there


def _set_console(stream) -> None:
    """Print ``hardneg.console`` records on ``stream`` too (None: only where logging goes, which is then the
    console itself)."""
    global _console_handler
    logger = logging.getLogger(CONSOLE_LOGGER)
    if _console_handler is not None:
        logger.removeHandler(_console_handler)
        _console_handler = None
    if stream is not None:
        _console_handler = _ConsoleHandler(stream)
        _console_handler.setFormatter(_ConsoleFormatter())
        logger.addHandler(_console_handler)


def job_label(path: str | os.PathLike) -> str:
    """How a job's console lines name it, from its log's path: what lies between ``results/`` and ``logs/``,
    then the log's name (``results/warmup/logs/train.log``: ``warmup/train``; an ANCE episode's
    ``ance/episodes/2/train_episode``; a dataset's ``datasets/synthetic/prepare_dataset``)."""
    parts = Path(path).parts
    folder = list(parts[:-1])
    if folder and folder[-1] == "logs":
        folder.pop()
    if "results" in folder:
        folder = folder[len(folder) - folder[::-1].index("results") :]
    else:
        folder = folder[-1:]
    return "/".join([*folder, Path(path).stem])


def progress(
    logger: logging.Logger, message: str, *args, last: bool = False, done: int | None = None, total: int | None = None
) -> None:
    """Log a line of a long job's progress on ``logger`` (``%``-formatted with ``args``, at INFO) and show it on
    the console too, as ``hardneg: <run>/<job>: <message>``: the first line, then at most one every
    :data:`PROGRESS_SECONDS`, and the ``last``. On a terminal, with ``done`` of ``total`` units known, the line is
    a progress bar redrawn in place instead (:func:`tick` redraws it between two lines). The log keeps every line.
    Outside a stage script it is an ordinary log record."""
    global _progress_shown
    logger.info(message, *args)
    if _log_path is None or _console_stream is None:
        return
    text = message % args if args else message
    if _console_stream.isatty() and total:
        _draw_bar(text, done, total, final=last)
        return
    now = time.monotonic()
    if last or _progress_shown is None or now - _progress_shown >= PROGRESS_SECONDS:
        _progress_shown = now
        _end_bar()
        _console_stream.write(f"hardneg: {visible(job_label(_log_path))}: {text}\n")
        _console_stream.flush()


class Meter:
    """The progress of a loop over ``total`` units: each :meth:`update` logs ``message`` through :func:`progress`
    when ``seconds`` have passed since the last line (``message`` is formatted with ``done``, ``total``, the
    update's ``args`` and the rate per second so far), and otherwise redraws the terminal bar (:func:`tick`) with
    ``label``; :meth:`rate` is the units per second since the start."""

    def __init__(self, logger: logging.Logger, message: str, total: int, *, label: str = "", seconds: float = 10.0):
        self.logger, self.message, self.total, self.label, self.seconds = logger, message, total, label, seconds
        self.started = self.last = time.perf_counter()

    def update(self, done: int, *args) -> None:
        now = time.perf_counter()
        if now - self.last > self.seconds:
            self.last = now
            progress(
                self.logger,
                self.message,
                done,
                self.total,
                *args,
                done / (now - self.started),
                done=done,
                total=self.total,
            )
        else:
            tick(done, self.total, self.label)

    def rate(self, done: int) -> float:
        return done / max(time.perf_counter() - self.started, 1e-9)


def tick(done: int, total: int, message: str = "") -> None:
    """Redraw the job's progress bar at ``done`` of ``total`` units (at most every :data:`BAR_SECONDS`), where
    the console is a terminal; elsewhere, and outside a stage script, nothing: the log and the periodic lines come
    from :func:`progress`."""
    if _log_path is None or _console_stream is None or not total or not _console_stream.isatty():
        return
    _draw_bar(message, done, total, final=False)


def _draw_bar(text: str, done: int | None, total: int, final: bool) -> None:
    """``hardneg: <run>/<job>:  45%|████▌     | 450/1000 [01:02<01:16, 7.20it/s] <text>`` on the console's last
    line, no wider than the terminal (tqdm draws the meter); ``final`` ends the line."""
    global _bar_started, _bar_drawn, _bar_open
    from tqdm import tqdm  # the bar's drawing: imported only where a terminal shows it

    assert _console_stream is not None and _log_path is not None  # a bar is drawn for a job's log on a console
    now = time.monotonic()
    if _bar_started is None:
        _bar_started = now
    if not final and _bar_open and now - _bar_drawn < BAR_SECONDS:
        return
    try:
        width = os.get_terminal_size(_console_stream.fileno()).columns or 100  # 0: a terminal that sets none
    except (OSError, ValueError):
        width = 100
    done = total if done is None else min(done, total)
    prefix, text = f"hardneg: {visible(job_label(_log_path))}:", visible(text)
    meter = tqdm.format_meter(done, total, now - _bar_started, ncols=max(width - len(prefix) - len(text) - 3, 40))
    bar = f"{prefix} {meter} {text}".rstrip()[: max(width - 1, 1)]
    _console_stream.write("\r\x1b[K" + bar + ("\n" if final else ""))
    _console_stream.flush()
    _bar_drawn, _bar_open = now, not final


def _end_bar() -> None:
    """End an open progress bar's line, so that what follows starts on its own."""
    global _bar_open
    if _bar_open and _console_stream is not None:
        _console_stream.write("\n")
        _console_stream.flush()
        _bar_open = False


def console(message: str, *args, level: int = logging.WARNING) -> None:
    """Write ``message`` (``%``-formatted with ``args``, as logging does) to the log and to the console.

    Outside a stage script (no :func:`log_to` call, or ``log_to(None)``) it is an ordinary log record."""
    logging.getLogger(CONSOLE_LOGGER).log(level, message, *args)
