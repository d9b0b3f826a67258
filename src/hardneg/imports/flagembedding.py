"""Reading FlagEmbedding's fine-tuning files (JSON Lines): ``{"query": str, "pos": [str], "neg": [str]}``, with
the teacher's ``pos_scores`` and ``neg_scores`` (one a document, for its distillation) where they were computed;
``prompt`` (the query instruction) and ``type`` (the task) may be there and are not part of the texts matched.
Queries and documents are texts (:mod:`hardneg.imports.matching`)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from hardneg.errors import HardnegError
from hardneg.imports import values
from hardneg.imports.records import Document, Example, Item

SHAPES = ("query-pos-neg",)


def shape(where: str, row: dict) -> str:
    """``query-pos-neg``, once the first row has FlagEmbedding's columns.

    :raises HardnegError: it lacks one (naming where it is).
    """
    missing = [name for name in ("query", "pos", "neg") if name not in row]
    if missing:
        raise HardnegError(
            f"{where}: columns {', '.join(row)} are not FlagEmbedding's: it needs query, pos and neg "
            f"(missing {', '.join(missing)})"
        )
    return SHAPES[0]


def _documents(where: str, row: dict, column: str) -> tuple[Document, ...]:
    texts = values.listed(where, row, column)
    scores = values.scores(where, row, f"{column}_scores", len(texts))
    documents = []
    for position, (text, score) in enumerate(zip(texts, scores), start=1):
        if not isinstance(text, str):
            raise values.bad(where, f"{column}[{position}]", f"expected a text, got {type(text).__name__}")
        documents.append(Document(Item(None, text), score=score))
    return tuple(documents)


def examples(rows: Iterable[tuple[str, dict]], shape_name: str) -> Iterator[Example]:
    """One :class:`~hardneg.imports.records.Example` per line of a FlagEmbedding file."""
    for where, row in rows:
        yield Example(
            where,
            Item(None, values.text(where, row, "query")),
            positives=_documents(where, row, "pos"),
            negatives=_documents(where, row, "neg"),
        )
