"""The ``hardneg`` command: helpers around the workflow (the workflow itself runs with ``snakemake``).

One module per group of subcommands, each with a ``register(sub)`` that adds its parsers."""

from __future__ import annotations

import argparse
import contextlib
import errno
import logging
import os
import signal
import sys

from hardneg import __version__
from hardneg.cli import compare, config, export, imports, results, verify
from hardneg.errors import HardnegError
from hardneg.io.text import visible_lines

_COMMANDS = (config, results, compare, export, imports, verify)


def build_parser() -> argparse.ArgumentParser:
    """The ``hardneg`` argument parser: one subcommand per helper, each with its own ``--help``."""
    parser = argparse.ArgumentParser(prog="hardneg", description=__doc__.split("\n", 1)[0])
    parser.add_argument("--version", action="version", version=f"hardneg {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    for commands in _COMMANDS:
        commands.register(sub)
    return parser


def _os_error(exc: OSError) -> str:
    """An operating-system error as one line: the file, then what is wrong with it."""
    reasons: dict[int | None, str] = {
        errno.EISDIR: "is a folder, not a file",
        errno.ENOTDIR: "a part of the path is not a folder",
        errno.ENOENT: "does not exist",
        errno.EACCES: "permission denied",
    }
    reason = reasons.get(exc.errno) or (exc.strerror or str(exc)).lower()
    return f"{exc.filename}: {reason}" if exc.filename is not None else reason


def _run(argv: list[str] | None) -> int:
    args = build_parser().parse_args(argv)
    # the library's warnings (a run that answers few of the judged queries) as one line each on stderr
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="hardneg: warning: %(message)s")
    try:
        return args.func(args)
    except HardnegError as exc:
        message = str(exc)
    except BrokenPipeError:
        raise
    except OSError as exc:  # a file the command reads or writes, e.g. a folder given for a file
        message = _os_error(exc)
    sys.stderr.write(f"hardneg: error: {visible_lines(message)}\n")
    return 2


def _discard_output() -> None:
    """Point stdout and stderr at the null device, so that the interpreter's last flush at exit cannot meet the
    closed pipe again."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    for stream in (sys.stdout, sys.stderr):
        # not a file of the process (an in-memory stream): nothing to point
        with contextlib.suppress(AttributeError, OSError, ValueError):
            os.dup2(devnull, stream.fileno())
    os.close(devnull)


def main(argv: list[str] | None = None) -> int:
    """Run the ``hardneg`` command with ``argv`` (default: the process's arguments); return its exit status: 0,
    2 for an error (one line on stderr, ``hardneg: error: ...``), or 141 (128 + SIGPIPE) when the reader of its
    output went away, as ``hardneg methods | head -1`` does, where it stops without a word like other Unix
    tools."""
    try:
        try:
            return _run(argv)
        finally:
            sys.stdout.flush()  # a closed pipe shows here, not in the interpreter's flush at exit
    except BrokenPipeError:
        _discard_output()
        return 128 + signal.SIGPIPE


if __name__ == "__main__":
    sys.exit(main())
