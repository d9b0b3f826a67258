"""Line-oriented readers for raw input files that report problems by file and line.

Every reader decodes strictly as UTF-8, so a bad byte is reported with its line number instead of being
silently replaced, and yields ``(line_number, value)`` so later checks (duplicates, unknown ids) can
point at the offending line too.
"""

from __future__ import annotations

import gzip
import json
import math
import os
import re
from collections.abc import Iterator
from pathlib import Path

from hardneg.errors import DataError


def _open_binary(path: Path):
    if not path.exists():
        raise DataError(path, None, "file does not exist")
    if path.is_dir():
        raise DataError(path, None, "expected a file, found a folder")
    return gzip.open(path, "rb") if path.suffix == ".gz" else open(path, "rb")


def iter_lines(path: str | os.PathLike) -> Iterator[tuple[int, str]]:
    """Yield ``(line_number, text)`` for each non-blank line, without its line ending. Line endings are those of
    Python's text files, whatever made the file: ``\n``, ``\r\n`` and a lone ``\r`` (old Mac files), mixed or
    not; lines are numbered as an editor counts them."""
    path = Path(path)
    number = 0
    with _open_binary(path) as handle:
        for raw in handle:
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise DataError(path, number + 1, f"invalid UTF-8 ({exc.reason} at byte {exc.start})") from None
            text = text[:-1] if text.endswith("\n") else text
            text = text[:-1] if text.endswith("\r") else text
            for line in text.split("\r"):  # a lone carriage return ends a line too
                number += 1
                if number == 1:
                    line = line.lstrip("\ufeff")
                if line.strip():
                    yield number, line


class _NotFinite(ValueError):
    """A JSON number that is not finite: ``NaN``, ``Infinity`` (which Python's json accepts) or a literal beyond
    a float's range (``1e999``)."""


def _no_constant(name: str):
    raise _NotFinite(f"{name} is not a JSON number")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _NotFinite(f"number {text} is beyond the range of a 64-bit float")
    return value


_SURROGATE = re.compile("[\ud800-\udfff]")


def _lone_surrogate(value, where: str = "") -> str | None:
    """The field (dotted, from the object's top) of the first string of ``value`` holding a lone surrogate, or
    None. JSON may escape one (``"\\ud800"``), but it is half of a UTF-16 pair, not a character: no UTF-8 text
    (a Parquet column, a TREC file) can hold it."""
    if isinstance(value, str):
        return where if _SURROGATE.search(value) else None
    children = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, child in children:
        name = f"{where}.{key}" if where else str(key)
        if isinstance(key, str) and _SURROGATE.search(key):
            return name
        found = _lone_surrogate(child, name)
        if found is not None:
            return found
    return None


def iter_jsonl(path: str | os.PathLike) -> Iterator[tuple[int, dict]]:
    """Yield ``(line_number, object)`` for each line of a JSON-lines file; each line must hold an object.

    Errors naming the file and line: malformed JSON, a line that is not an object, a number that is not finite
    (``NaN``, ``Infinity``, ``1e999``), a string holding a lone surrogate (``"\\ud800"``)."""
    for number, line in iter_lines(path):
        try:
            obj = json.loads(line, parse_constant=_no_constant, parse_float=_finite_float)
        except json.JSONDecodeError as exc:
            raise DataError(path, number, f"malformed JSON ({exc.msg}, column {exc.colno})") from None
        except _NotFinite as exc:
            raise DataError(path, number, f"{exc}: numbers must be finite") from None
        if not isinstance(obj, dict):
            raise DataError(path, number, f"expected a JSON object, found {type(obj).__name__}")
        if "\\u" in line and (field := _lone_surrogate(obj)) is not None:  # only an escape makes a surrogate
            raise DataError(
                path,
                number,
                f"field '{field}' holds a lone surrogate (an escape such as \\ud800 "
                f"that is half of a UTF-16 pair, not a character); text must be valid "
                f"Unicode",
            )
        yield number, obj


# First fields that make a first line a header, not data: a file of a format without one given one anyway
HEADER_IDS = ("id", "_id", "docid", "doc_id", "pid", "qid", "query_id", "query-id")


def iter_tsv(
    path: str | os.PathLike,
    columns: int | tuple[int, ...],
    *,
    header: str | None = None,
    sep: str | None = "\t",
    headerless: bool = False,
) -> Iterator[tuple[int, list[str]]]:
    """Yield ``(line_number, fields)`` of a delimited file.

    ``columns`` is the allowed number (or numbers) of fields; ``sep=None`` splits on any whitespace
    (TREC qrels). When ``header`` is given, a first line starting with it is skipped. ``headerless``: the format
    has no header, and a first line whose first field is a column name (:data:`HEADER_IDS`) is refused, not read
    as a document or query of that id.
    """
    allowed = (columns,) if isinstance(columns, int) else columns
    first = True
    for number, line in iter_lines(path):
        if header is not None and number == 1 and line.startswith(header):
            continue
        fields = line.split(sep) if sep is not None else line.split()
        if headerless and first and fields[0].strip().casefold() in HEADER_IDS:
            raise DataError(
                path,
                number,
                f"a header line ({', '.join(fields)}): this format has none, and it "
                f"would be read as an entry of id {fields[0]!r}; remove the line",
            )
        first = False
        if len(fields) not in allowed:
            expected = " or ".join(str(c) for c in allowed)
            raise DataError(
                path,
                number,
                f"expected {expected} fields separated by "
                f"{'tabs' if sep == chr(9) else 'whitespace'}, found {len(fields)}",
            )
        yield number, fields


_MAX_RELEVANCE = 2**31 - 1  # qrels store relevance as int32


def parse_relevance(path: str | os.PathLike, number: int, value: str) -> int:
    """Parse a relevance label: a non-negative integer (``2`` or ``2.0``; 0 means judged not relevant)."""
    try:
        grade = int(value)
    except ValueError:
        try:
            as_float = float(value)
        except ValueError:
            raise DataError(path, number, f"relevance {value!r} is not an integer") from None
        if not as_float.is_integer():
            raise DataError(path, number, f"relevance {value!r} is not an integer") from None
        grade = int(as_float)
    if grade < 0:
        raise DataError(
            path, number, f"relevance {value!r} is negative; relevance must be a non-negative integer (0: not relevant)"
        )
    if grade > _MAX_RELEVANCE:
        raise DataError(path, number, f"relevance {value!r} is too large (at most {_MAX_RELEVANCE})")
    return grade
