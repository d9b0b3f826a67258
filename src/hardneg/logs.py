"""Logging for stage scripts: everything (Python logging, warnings, and the JVM's own output) goes to
the rule's log file, so ``results/<run>/logs/`` explains every artifact."""

from __future__ import annotations

import logging
import os
import sys


def log_to(path: str | os.PathLike | None, level: int = logging.INFO) -> None:
    """Send this process's logging, stdout and stderr (file descriptors 1 and 2, so child libraries and the
    JVM are captured too) to ``path``. With ``path=None`` logging goes to stderr."""
    if path is not None:
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        handle = open(path, "a", buffering=1, encoding="utf-8")
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(handle.fileno(), 1)
        os.dup2(handle.fileno(), 2)
        sys.stdout = sys.stderr = handle
    logging.basicConfig(level=level, stream=sys.stderr, force=True,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.captureWarnings(True)
