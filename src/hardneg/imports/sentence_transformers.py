"""Reading a sentence-transformers training dataset (what ``mine_hard_negatives`` returns, and what
``hardneg export hardnegs --format sentence-transformers`` writes).

As sentence-transformers reads its datasets, columns count by position, not by name, but for the label columns
(``label`` or ``score``: one number a row; ``labels`` or ``scores``: one a document). The first other column is
the query (the anchor), the next ones documents. The shape (``mine_hard_negatives``' ``output_format``) follows
from the first row:

* ``triplet`` (query, positive, negative) and ``n-tuple`` (query, positive, negative_1 … negative_N): the
  second column is the positive, the rest negatives in rank order; ``scores`` (when there) are those of the
  positive, then of each negative;
* ``labeled-pair`` (query, document, ``label`` or ``score``): a label of 0 marks a negative, 1 or more a positive
  of that grade; with a ``score`` alone, the dataset's judgements tell a positive (judged relevant) from a
  negative;
* ``labeled-list`` (query, [documents], ``labels`` or ``scores``): the labels mark each document as above; with
  ``scores`` alone, the first document is the positive and the others negatives, as ``mine_hard_negatives``
  writes them.

A query and a document are strings: a document is matched by its text (:mod:`hardneg.imports.matching`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from hardneg.errors import HardnegError
from hardneg.imports import values
from hardneg.imports.records import Document, Example, Item

SHAPES = ("triplet", "n-tuple", "labeled-pair", "labeled-list")
ROW_LABELS = ("label", "score")  # one number a row
DOCUMENT_LABELS = ("labels", "scores")  # one number a document


def _text_columns(row: dict) -> list[str]:
    return [name for name in row if name not in ROW_LABELS + DOCUMENT_LABELS]


def shape(where: str, row: dict) -> str:
    """The shape of a dataset whose first row is ``row`` (see the module docstring).

    :raises HardnegError: a row no shape fits (naming where it is and its columns).
    """
    columns = _text_columns(row)
    has_row_label = any(name in row for name in ROW_LABELS)
    if len(columns) == 2 and isinstance(row[columns[1]], list):
        if not any(name in row for name in DOCUMENT_LABELS):
            raise HardnegError(
                f"{where}: a list of documents without labels or scores: a labeled list has a "
                "labels (or scores) column beside it"
            )
        return "labeled-list"
    if len(columns) == 2 and has_row_label:
        return "labeled-pair"
    if len(columns) >= 3 and not has_row_label:
        return "triplet" if len(columns) == 3 else "n-tuple"
    raise HardnegError(
        f"{where}: columns {', '.join(row)} fit no sentence-transformers dataset with negatives: "
        "(query, positive, negative...) with an optional scores list, (query, document, label or "
        "score), or (query, [documents], labels or scores)"
    )


def _document(where: str, row: dict, column: str, value, **extra) -> Document:
    if not isinstance(value, str):
        raise values.bad(where, column, f"expected a document's text, got {type(value).__name__} {value!r:.60}")
    return Document(Item(None, value), **extra)


def _tuple(where: str, row: dict, columns: list[str]) -> Example:
    query = values.text(where, row, columns[0])
    scores = values.scores(where, row, "scores", len(columns) - 1)
    documents = [
        _document(where, row, column, values.required(where, row, column), score=score)
        for column, score in zip(columns[1:], scores)
    ]
    return Example(where, Item(None, query), positives=(documents[0],), negatives=tuple(documents[1:]))


def _pair(where: str, row: dict, columns: list[str]) -> Example:
    query = values.text(where, row, columns[0])
    score = values.score(where, "score", row["score"]) if row.get("score") is not None else None
    if row.get("label") is None:
        document = _document(where, row, columns[1], values.required(where, row, columns[1]), score=score)
        return Example(where, Item(None, query), unsorted=(document,))
    label = values.grade(where, "label", row["label"])
    document = _document(
        where, row, columns[1], values.required(where, row, columns[1]), score=score, grade=label or None
    )
    return Example(where, Item(None, query), **({"positives": (document,)} if label else {"negatives": (document,)}))


def _list(where: str, row: dict, columns: list[str]) -> Example:
    query = values.text(where, row, columns[0])
    texts = values.listed(where, row, columns[1])
    scores = values.scores(where, row, "scores", len(texts))
    labels = values.listed(where, row, "labels", optional=True)
    if labels and len(labels) != len(texts):
        raise values.bad(where, "labels", f"{len(labels)} labels for {len(texts)} documents")
    grades = [values.grade(where, "labels", label) for label in labels]
    relevant = [grade >= 1 for grade in grades] if labels else [i == 0 for i in range(len(texts))]
    documents = [
        _document(where, row, columns[1], value, score=score, grade=grade or None)
        for value, score, grade in zip(texts, scores, grades or [0] * len(texts))  # grade 0: none
    ]
    # scores alone: the positive first, as mine_hard_negatives writes them
    return Example(
        where,
        Item(None, query),
        positives=tuple(d for d, r in zip(documents, relevant) if r),
        negatives=tuple(d for d, r in zip(documents, relevant) if not r),
    )


_READERS = {"triplet": _tuple, "n-tuple": _tuple, "labeled-pair": _pair, "labeled-list": _list}


def examples(rows: Iterable[tuple[str, dict]], shape_name: str) -> Iterator[Example]:
    """One :class:`~hardneg.imports.records.Example` per row of a dataset of shape ``shape_name``; every row must
    have the columns of the first (an error names the first that does not)."""
    columns = None
    for where, row in rows:
        if columns is None:
            columns = list(row)
        elif list(row) != columns:
            raise HardnegError(f"{where}: columns {', '.join(row)}, where the first row has {', '.join(columns)}")
        yield _READERS[shape_name](where, row, _text_columns(row))
