"""The errors hardneg raises for bad input: each names where the problem is and what it is."""

from __future__ import annotations

from os import PathLike


class HardnegError(Exception):
    """Base class of every user-facing hardneg error."""


class ConfigError(HardnegError):
    """A configuration value is missing, unknown or of the wrong type.

    ``key`` is the dotted path of the offending key, e.g. ``runs.bm25.params.k1``.
    """

    def __init__(self, key: str, message: str):
        self.key = key
        self.message = message
        super().__init__(f"config key '{key}': {message}")


class DataError(HardnegError):
    """An input data file is malformed. ``line`` is 1-based; ``None`` when the problem is the whole file."""

    def __init__(self, path: str | PathLike, line: int | None, message: str):
        self.path = str(path)
        self.line = line
        self.message = message
        where = f"{self.path}, line {line}" if line is not None else self.path
        super().__init__(f"{where}: {message}")
