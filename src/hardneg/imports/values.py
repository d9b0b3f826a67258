"""The values of a source row, checked as a reader takes them: each error names where the row is and the column
(:class:`~hardneg.errors.DataError`, with the file and line, or the row, in its text)."""

from __future__ import annotations

import math

from hardneg.errors import HardnegError


def bad(where: str, column: str, message: str) -> HardnegError:
    """The error of a value: ``<file>, line <n>: column <column>: <message>``."""
    return HardnegError(f"{where}: {column}: {message}")


def required(where: str, row: dict, column: str):
    """``row[column]``, which must be there and not null."""
    if row.get(column) is None:
        raise bad(where, column, "missing" if column not in row else "null")
    return row[column]


def text(where: str, row: dict, column: str, *, optional: bool = False) -> str | None:
    """``row[column]`` as a string (None when ``optional`` and missing or null)."""
    value = row.get(column)
    if value is None and optional:
        return None
    value = required(where, row, column)
    if not isinstance(value, str):
        raise bad(where, column, f"expected a string, got {type(value).__name__} {value!r:.60}")
    return value


def ident(where: str, row: dict, column: str, *, optional: bool = False) -> str | None:
    """An id: a string, or an integer read as its decimal string (Tevatron's ids may be numbers)."""
    value = row.get(column)
    if value is None and optional:
        return None
    value = required(where, row, column)
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise bad(where, column, f"expected an id (a string or an integer), got {type(value).__name__}")
    return str(value)


def listed(where: str, row: dict, column: str, *, optional: bool = False) -> list:
    """``row[column]`` as a list (empty when ``optional`` and missing or null)."""
    value = row.get(column)
    if value is None and optional:
        return []
    value = required(where, row, column)
    if not isinstance(value, (list, tuple)):
        raise bad(where, column, f"expected a list, got {type(value).__name__}")
    return list(value)


def score(where: str, column: str, value) -> float:
    """A teacher score: a finite number."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise bad(where, column, f"expected a finite number as a score, got {value!r:.60}")
    return float(value)


def grade(where: str, column: str, value) -> int:
    """A relevance label or grade: a whole number of at least 0 (``1.0`` reads as 1)."""
    if isinstance(value, bool):
        return int(value)
    if not isinstance(value, (int, float)) or value != int(value) or value < 0:
        raise bad(where, column, f"expected a label of 0 (negative) or a grade of at least 1, got {value!r:.60}")
    return int(value)


def scores(where: str, row: dict, column: str, count: int, *, optional: bool = True) -> list[float | None]:
    """``row[column]``, a list of ``count`` scores; ``count`` Nones when ``optional`` and the column is missing
    or null."""
    values = listed(where, row, column, optional=optional)
    if not values and (optional and row.get(column) is None):
        return [None] * count
    if len(values) != count:
        raise bad(where, column, f"{len(values)} scores for {count} documents")
    return [score(where, column, value) for value in values]


def rank(where: str, column: str, value) -> int:
    """A rank: a whole number of at least 1."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != int(value) or value < 1:
        raise bad(where, column, f"expected a rank of at least 1, got {value!r:.60}")
    return int(value)


def entries(where: str, row: dict, column: str, what: str):
    """The objects of the list ``row[column]`` (passages, documents), each after its name (``column[n]``, from 1)
    for its errors; ``what`` says what one must be."""
    for position, entry in enumerate(listed(where, row, column), start=1):
        at = f"{column}[{position}]"
        if not isinstance(entry, dict):
            raise bad(where, at, f"expected {what}, got {type(entry).__name__}")
        yield at, entry


def entry_score(where: str, at: str, entry: dict) -> float | None:
    """An entry's teacher ``score``; None where it has none."""
    return score(where, f"{at}.score", entry["score"]) if entry.get("score") is not None else None


def entry_grade(where: str, at: str, entry: dict) -> int | None:
    """A positive entry's ``relevance`` grade (what hardneg's exports write beside a positive): a whole number of
    at least 1; None where it has none."""
    if entry.get("relevance") is None:
        return None
    value = grade(where, f"{at}.relevance", entry["relevance"])
    if value < 1:
        raise bad(where, f"{at}.relevance", f"a positive's grade is at least 1, got {entry['relevance']!r:.60}")
    return value
