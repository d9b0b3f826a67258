"""Document and query ids: each is written as one field of whitespace-separated TREC lines."""

from __future__ import annotations

import os
import re

from hardneg.errors import DataError

_UNSAFE_ID_CHARACTER = re.compile(r"[\s\x00-\x1f\x7f-\x9f]")
_CHARACTER_NAMES = {" ": "a space", "\t": "a tab", "\n": "a line break", "\r": "a carriage return"}
ID_RULE = "ids must not contain whitespace or control characters (TREC files separate fields by whitespace)"


def id_problem(value: str) -> str | None:
    """What makes ``value`` unusable as a document or query id, or None when it is fine.

    An id is written as one field of whitespace-separated TREC ranking and qrels lines, so it must be non-empty
    and hold no whitespace and no control character.
    """
    if value == "":
        return "is empty"
    found = _UNSAFE_ID_CHARACTER.search(value)
    if found is None:
        return None
    char = found.group()
    if char in _CHARACTER_NAMES:
        return f"contains {_CHARACTER_NAMES[char]}"
    kind = "whitespace" if char.isspace() else "a control character"
    return f"contains {kind} (U+{ord(char):04X})"


def check_id(value: str, what: str, path: str | os.PathLike, line: int | None) -> str:
    """Return ``value`` when it is a valid id; else raise :class:`DataError` naming the file and line."""
    problem = id_problem(value)
    if problem is not None:
        raise DataError(path, line, f"{what} {value!r} {problem}; {ID_RULE}")
    return value
