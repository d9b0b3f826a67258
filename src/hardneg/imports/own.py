"""Reading hardneg's own exports of hard negatives (``hardneg export hardnegs --format hf-dataset`` or ``jsonl``):
one row per query, ``qid``, ``query``, ``positives`` (``{docid, title, text, relevance}``) and ``negatives``
(``{docid, title, text, rank, score}``, in rank order), so that the ids, grades, ranks and scores come back as they
were written (an export written before positives carried their ``relevance`` reads without grades)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from hardneg.errors import HardnegError
from hardneg.imports import values
from hardneg.imports.records import Document, Example, Item

SHAPES = ("groups",)


def shape(where: str, row: dict) -> str:
    """``groups``, once the first row has the export's columns.

    :raises HardnegError: it lacks one (naming where it is).
    """
    missing = [name for name in ("qid", "query", "positives", "negatives") if name not in row]
    if missing:
        raise HardnegError(
            f"{where}: columns {', '.join(row)} are not those of hardneg's hf-dataset and jsonl "
            f"exports (missing {', '.join(missing)})"
        )
    return SHAPES[0]


def _documents(where: str, row: dict, column: str) -> tuple[Document, ...]:
    documents = []
    for at, entry in values.entries(where, row, column, "{docid, title, text}"):
        item = Item(
            values.ident(where, entry, "docid"),
            values.text(where, entry, "text", optional=True),
            values.text(where, entry, "title", optional=True) or "",
        )
        rank = values.rank(where, f"{at}.rank", entry["rank"]) if entry.get("rank") is not None else None
        grade = values.entry_grade(where, at, entry) if column == "positives" else None
        documents.append(Document(item, score=values.entry_score(where, at, entry), grade=grade, rank=rank))
    return tuple(documents)


def examples(rows: Iterable[tuple[str, dict]], shape_name: str) -> Iterator[Example]:
    """One :class:`~hardneg.imports.records.Example` per query of a hardneg export."""
    for where, row in rows:
        query = Item(values.ident(where, row, "qid"), values.text(where, row, "query", optional=True))
        yield Example(
            where, query, positives=_documents(where, row, "positives"), negatives=_documents(where, row, "negatives")
        )
