"""Text from data made safe to show: on a terminal (:func:`visible`) and in Markdown (:func:`markdown_code`).

Document texts, titles and ids are whatever a dataset holds: an escape sequence in one (``ESC [ 31 m``, a title
change ``ESC ] 0 ; ... BEL``) would recolour or retitle the user's terminal, a carriage return would overwrite the
line, and a bidirectional override would reorder what follows it. :func:`visible` shows each such character as an
escape instead, so what is printed is what the data holds, character for character.

In a Markdown report an id such as ``![px](http://host/t.png)`` would become an image that a viewer fetches, and
``*`` or ``_`` would format what follows. :func:`markdown_code` puts such a value in a code span, whose content
Markdown shows as it is. :func:`markdown_table` writes the lines of a Markdown table, the one way every report
of the package does. :func:`text_snippet` puts a document's title and text on one line, cut to a length.
"""

from __future__ import annotations

import re

_NAMED = {0x09: "\\t", 0x0A: "\\n", 0x0D: "\\r"}
# C0 controls, DEL and C1 controls; the bidirectional embeddings, overrides (U+202A-U+202E) and isolates
# (U+2066-U+2069); lone surrogates, which stand for undecodable bytes of a file name and cannot be printed.
_ESCAPED = [
    *range(0x00, 0x20),
    *range(0x7F, 0xA0),
    *range(0x202A, 0x202F),
    *range(0x2066, 0x206A),
    *range(0xD800, 0xE000),
]
_TABLE = {code: _NAMED.get(code, f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}") for code in _ESCAPED}


def visible(text: str) -> str:
    """``text`` with every control character (C0, DEL, C1), bidirectional override or isolate and lone surrogate
    written as an escape: ``\\t``, ``\\n``, ``\\r``, ``\\xNN`` below U+0100, ``\\uNNNN`` above. Everything else,
    non-ASCII letters included, is unchanged.

    >>> visible("caf\\u00e9 \\x1b[31mred\\u202e")
    'café \\\\x1b[31mred\\\\u202e'
    """
    return text.translate(_TABLE)


def visible_lines(text: str) -> str:
    """:func:`visible` applied to each line of ``text``: its line breaks (``\\n``) stay line breaks."""
    return "\n".join(visible(line) for line in text.split("\n"))


_BACKTICKS = re.compile(r"`+")


def markdown_code(value) -> str:
    """``value`` (an id, a text, a name from the data) as a Markdown code span that any CommonMark renderer shows
    literally, safe in a table cell: line breaks and tabs become spaces, ``|`` is escaped (pipe tables split
    cells on it even inside code spans), other control characters become :func:`visible` escapes, and the span's
    fence is one backtick longer than the longest run of backticks inside (padded with a space where the value
    starts or ends with one).

    >>> markdown_code("![px](http://host/t.png)")
    '`![px](http://host/t.png)`'
    """
    text = visible(re.sub(r"[\t\n\r]+", " ", str(value))).replace("|", "\\|")
    fence = "`" * (max((len(run) for run in _BACKTICKS.findall(text)), default=0) + 1)
    pad = (
        " "
        if text.startswith("`") or text.endswith("`") or (text.startswith(" ") and text.endswith(" ") and text.strip())
        else ""
    )
    return f"{fence}{pad}{text}{pad}{fence}"


def markdown_table(header: list[str], rows, align: str | None = None) -> list[str]:
    """The lines of a Markdown table: the header row, the separator (``---`` for a column whose letter in
    ``align`` is ``l``, ``---:`` for ``r``, right-aligned; every column ``l`` by default) and one line per row of
    ``rows`` (lists of cells, each written as it is given).

    :raises ValueError: ``align`` or a row with another number of columns than ``header``.
    """
    align = "l" * len(header) if align is None else align
    if len(align) != len(header) or set(align) - {"l", "r"}:
        raise ValueError(f"align {align!r} must give l or r for each of the {len(header)} columns")
    lines = ["| " + " | ".join(header) + " |", "|" + "".join("---:|" if a == "r" else "---|" for a in align)]
    for row in rows:
        if len(row) != len(header):
            raise ValueError(f"a row of {len(row)} cells in a table of {len(header)} columns: {row!r}")
        lines.append("| " + " | ".join(row) + " |")
    return lines


EMPTY_MARK = "(empty document)"  # a document with no title and no text, in reports and snippets


def text_snippet(title: str | None, text: str | None, chars: int) -> str:
    """A document's title and text joined on one line (runs of white space collapsed), cut to ``chars``
    characters with an ellipsis; :data:`EMPTY_MARK` for a document with neither."""
    joined = " — ".join(part for part in (title, text) if part and part.strip())
    joined = " ".join(joined.split())  # one line: newlines and runs of spaces collapse
    if not joined:
        return EMPTY_MARK
    return joined if len(joined) <= chars else joined[: max(chars - 1, 0)].rstrip() + "…"
