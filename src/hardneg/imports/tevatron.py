"""Reading Tevatron's training files (JSON Lines, one query a line), in either of its two versions, told apart by
the first row as Tevatron's ``TrainDataset`` tells them:

* v1 (inline texts; what ``hardneg export hardnegs --format tevatron`` writes): ``query_id`` (optional),
  ``query``, ``positive_passages`` and ``negative_passages``, lists of ``{docid, title, text}`` with an optional
  teacher ``score`` (Tevatron's distillation reads it) and, for a positive, an optional ``relevance`` grade
  (hardneg's export writes it; Tevatron passes over it);
* v2 (ids only, the texts in a corpus of their own): ``query_id``, ``query_text`` (optional),
  ``positive_document_ids`` and ``negative_document_ids``.

Ids are kept where the dataset has them; otherwise a passage is matched by its title and text, a query by its text
(:mod:`hardneg.imports.matching`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from hardneg.errors import HardnegError
from hardneg.imports import values
from hardneg.imports.records import Document, Example, Item

SHAPES = ("v1", "v2")


def shape(where: str, row: dict) -> str:
    """``v1`` or ``v2``, from the first row's columns.

    :raises HardnegError: a row of neither (naming where it is and its columns).
    """
    if "positive_passages" in row:
        return "v1"
    if "positive_document_ids" in row:
        return "v2"
    raise HardnegError(
        f"{where}: columns {', '.join(row)} are not Tevatron's: a v1 line has query, "
        "positive_passages and negative_passages, a v2 line query_id, positive_document_ids and "
        "negative_document_ids"
    )


def _passages(where: str, row: dict, column: str) -> tuple[Document, ...]:
    documents, positive = [], column == "positive_passages"
    for at, passage in values.entries(where, row, column, "a passage {docid, title, text}"):
        docid = values.ident(where, passage, "docid", optional=True)
        body = values.text(where, passage, "text", optional=docid is not None)
        title = values.text(where, passage, "title", optional=True)
        documents.append(
            Document(
                Item(docid, body, title if title is not None else ""),
                score=values.entry_score(where, at, passage),
                grade=values.entry_grade(where, at, passage) if positive else None,
            )
        )
    return tuple(documents)


def _v1(where: str, row: dict) -> Example:
    query = Item(values.ident(where, row, "query_id", optional=True), values.text(where, row, "query"))
    return Example(
        where,
        query,
        positives=_passages(where, row, "positive_passages"),
        negatives=_passages(where, row, "negative_passages"),
    )


def _ids(where: str, row: dict, column: str) -> tuple[Document, ...]:
    docids = values.listed(where, row, column)
    return tuple(Document(Item(values.ident(where, {column: docid}, column), None)) for docid in docids)


def _v2(where: str, row: dict) -> Example:
    query = Item(values.ident(where, row, "query_id"), values.text(where, row, "query_text", optional=True))
    return Example(
        where,
        query,
        positives=_ids(where, row, "positive_document_ids"),
        negatives=_ids(where, row, "negative_document_ids"),
    )


def examples(rows: Iterable[tuple[str, dict]], shape_name: str) -> Iterator[Example]:
    """One :class:`~hardneg.imports.records.Example` per line of a Tevatron file of version ``shape_name``."""
    read = _v1 if shape_name == "v1" else _v2
    for where, row in rows:
        yield read(where, row)
