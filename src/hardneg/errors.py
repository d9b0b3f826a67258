"""The errors hardneg raises for bad input: each names where the problem is and what it is."""

from __future__ import annotations

from os import PathLike


class HardnegError(Exception):
    """Base class of every user-facing hardneg error."""


class ConfigError(HardnegError):
    """A configuration value is missing, unknown or of the wrong type.

    Its text is ``config key '<key>': <message>``, control characters of the key shown as escapes.

    :param key: the dotted path of the offending key, e.g. ``runs.bm25.params.k1`` (kept as ``.key``).
    :param message: what is wrong and what to do (kept as ``.message``).
    """

    def __init__(self, key: str, message: str):
        self.key = key
        self.message = message
        # a name from the config may hold a line break or another control character: shown as its escape
        shown = "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in str(key))
        super().__init__(f"config key '{shown}': {message}")


class DataError(HardnegError):
    """An input data file is missing or malformed.

    Its text is ``<path>, line <line>: <message>``, or ``<path>: <message>`` without a line.

    :param path: the file at fault (kept as ``.path``, a string).
    :param line: the line (1-based) at fault; None when the problem is the whole file or a row of a Parquet file,
        which the message names.
    :param message: what is wrong (kept as ``.message``).
    """

    def __init__(self, path: str | PathLike, line: int | None, message: str):
        self.path = str(path)
        self.line = line
        self.message = message
        where = f"{self.path}, line {line}" if line is not None else self.path
        super().__init__(f"{where}: {message}")


class ConfigFileError(ConfigError, DataError):
    """A configuration file cannot be read as a YAML mapping. ``line`` is 1-based; ``None`` for the whole file.

    Its text names the file and line (``my.yaml, line 3: ...``) rather than a key, since no key could be read. It
    is both a configuration error and a malformed input file, so either ``except`` clause catches it.
    """

    def __init__(self, path: str | PathLike, line: int | None, message: str):
        self.path = str(path)
        self.line = line
        self.key = "<file>"
        self.message = message
        where = f"{self.path}, line {line}" if line is not None else self.path
        HardnegError.__init__(self, f"{where}: {message}")


class OutputPathError(HardnegError):
    """An output path would land outside the results folder (a run, dataset, split or index name that is not a
    plain file name). The configuration schema rejects such names first; this is the last check before writing."""


class ResultsLayoutError(HardnegError):
    """A results folder holds artifacts where an earlier version of hardneg put them (e.g. a run's rankings in
    ``<run>/rankings/``, now ``<run>/rankings/``): the message names them and how to move or rebuild them."""


class IncompleteOutputError(HardnegError):
    """What a stage wrote is not complete (a library that failed to write without raising, e.g. on a full disk):
    checked before the output takes its place, so the job fails and nothing incomplete is left.

    :param path: the output that was being written (kept as ``.path``, a string).
    :param message: what is incomplete and why (kept as ``.message``).
    """

    def __init__(self, path: str | PathLike, message: str):
        self.path = str(path)
        self.message = message
        super().__init__(f"{self.path}: {message}")


class SelectionError(HardnegError):
    """A hard-negative selection that would leave more of its queries without a negative than the run allows
    (``params.mining.max_queries_without``): they would train on random negatives. Nothing is written."""
