"""What every ``hardneg`` command shares: printing file contents safely, reading configs, common arguments."""

from __future__ import annotations

import argparse
import sys

from hardneg.errors import ConfigError, ConfigFileError, HardnegError
from hardneg.io.text import visible_lines
from hardneg.results.run_files import check_run_name

# Bytes written to stdout at a time: no more than its buffer holds, so each is buffered and goes out with a flush,
# which reports a reader that went away (a write larger than the buffer goes out at once, and a pipe closed midway
# shows as a short write, which is not reported).
_PIECE = 512


def say(text: str = "", end: str = "\n") -> None:
    """Print ``text`` on stdout with its control characters escaped (:func:`visible_lines`): names, labels and
    texts printed come from files."""
    shown = visible_lines(text) + end
    binary = getattr(sys.stdout, "buffer", None)
    if binary is None:  # a text-only stream
        sys.stdout.write(shown)
        return
    sys.stdout.flush()
    data = shown.encode(sys.stdout.encoding or "utf-8", errors="backslashreplace")
    for start in range(0, len(data), _PIECE):
        binary.write(data[start : start + _PIECE])


def load_configs(paths: list[str], schema: str | None = None) -> dict:
    """:func:`hardneg.pipeline.config.load_config_files`, whose errors about a key name the files too."""
    from hardneg.pipeline.config import load_config_files  # Faiss: imported only where an index is built or searched

    try:
        return load_config_files(paths, schema)
    except ConfigFileError:
        raise  # it names its file and line already
    except ConfigError as exc:
        raise HardnegError(f"{' + '.join(map(str, paths))}: {exc}") from None


def at_least(minimum: int):
    """An argparse type: an integer of at least ``minimum``."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}, got {value}")
        return value

    return parse


def add_force(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument(
        "--force",
        action="store_true",
        help=f"replace an existing --output ({what}), or write inside the results folder; without it, neither is done",
    )


def add_run(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run", help="run name: its results are in RESULTS/<run>/")


def check_runs(runs: list[str], results: str) -> None:
    """Each of ``runs`` may be a run's folder of ``results``: none names an entry of it that holds something else,
    an experiment's folder included (:func:`hardneg.results.run_files.check_run_name`). Commands that read runs
    call it first, as :meth:`hardneg.results.run_files.RunFiles.open` knows the layout's own entries only."""
    # the experiments' declarations (and the methods they name): loaded when a command reads runs, not at the start
    from hardneg.experiments import RESERVED_NAMES

    for run in runs:
        check_run_name(run, results, RESERVED_NAMES)


def add_results(parser: argparse.ArgumentParser, *, from_config: bool = False) -> None:
    """``--results``: the results folder; with ``from_config``, None when not given (the command takes the
    ``results`` of the config it reads)."""
    if from_config:
        parser.add_argument(
            "--results",
            default=None,
            help="the results folder (default: the `results` of --config, results for the default config)",
        )
    else:
        parser.add_argument(
            "--results",
            default="results",
            help="the results folder (default: results; a config of its own folder names it in "
            "its `results`, e.g. results/msmarco-passage)",
        )
