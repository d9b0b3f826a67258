"""What a reader makes of one row of an imported file: an :class:`Example`, the query with its positives and its
negatives as the source names them (by id, by text, or both), with the scores and grades the format carries."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Item:
    """A query or a document as the source names it: its ``id`` (None when the format has none), its ``text``
    (one string: for a document, possibly its title and text joined) and, for a document whose format keeps
    them apart (Tevatron's passages, hardneg's own exports), its ``title`` (None otherwise)."""

    id: str | None
    text: str | None
    title: str | None = None

    def shown(self, chars: int = 60) -> str:
        """The item as an error message shows it: its id, else the start of its text."""
        if self.id is not None:
            return repr(self.id)
        text = " ".join((self.text or "").split())
        return repr(text if len(text) <= chars else text[: chars - 1] + "…")


@dataclass(frozen=True)
class Document:
    """A document of an example: the ``item``, its ``score`` (the source's teacher score, None when it carries
    none), its ``grade`` (a relevance grade the source gives, None when it gives none) and its ``rank`` (its rank
    among the query's negatives in the source, 1-based; None when the source records none)."""

    item: Item
    score: float | None = None
    grade: int | None = None
    rank: int | None = None


@dataclass(frozen=True)
class Example:
    """One row of the source: ``where`` (file and line or row), the ``query``, its ``positives`` and its
    ``negatives`` in the source's order, and the ``unsorted`` documents the row does not say are positive or
    negative (a labeled pair with a score in place of its label): those the dataset judges relevant to the query
    are positives, the others negatives."""

    where: str
    query: Item
    positives: tuple[Document, ...] = ()
    negatives: tuple[Document, ...] = ()
    unsorted: tuple[Document, ...] = ()
