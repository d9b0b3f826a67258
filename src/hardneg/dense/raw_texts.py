"""The raw texts behind a tokenized text set, for a model that tokenizes its inputs itself: a pretrained
cross-encoder forms each (query, document) pair from the two texts, as sentence-transformers does, rather than
from the tokenized cache's rows (:mod:`hardneg.methods.crossencoder.pretrained`).

:class:`RawTexts` reads the texts of given ids from the dataset's Parquet file (a split's QUERIES file or the
CORPUS file), only the rows asked for; :class:`TokenizedWithRaw` is a tokenized set of the cache
(:class:`hardneg.dense.tokenized.TokenizedTexts`) that also knows that file (its ``raw``), so that a stage can hand
one object to a method that may read either.
"""

from __future__ import annotations

import os

from hardneg.dense.tokenized import TokenizedTexts
from hardneg.errors import DataError
from hardneg.io import artifacts


class RawTexts:
    """The texts of a QUERIES or CORPUS Parquet file by id.

    :param path: the file.
    :param kind: ``artifacts.QUERIES`` (a query is its ``text``) or ``artifacts.CORPUS`` (a document is its
        ``(title, text)``, a missing title or text an empty string).
    """

    def __init__(self, path: str | os.PathLike, kind: artifacts.ArtifactKind):
        if kind not in (artifacts.QUERIES, artifacts.CORPUS):
            raise ValueError(f"raw texts are queries or a corpus, not {kind.name}")
        self.path, self.kind = path, kind

    def lookup(self, ids: list[str]) -> dict:
        """id → text (a query) or (title, text) (a document) of each distinct id of ``ids``.

        :raises DataError: an id is not in the file (naming the first and how many)."""
        wanted = list(dict.fromkeys(ids))
        key = self.kind.schema.names[0]
        table = artifacts.read_matching_rows(self.kind, self.path, key, wanted)
        columns = [table.column(name).to_pylist() for name in self.kind.schema.names]
        if self.kind is artifacts.QUERIES:
            found = {qid: text or "" for qid, text in zip(*columns)}
        else:
            found = {docid: (title or "", text or "") for docid, title, text in zip(*columns)}
        missing = [value for value in wanted if value not in found]
        if missing:
            noun = "query" if self.kind is artifacts.QUERIES else "document"
            raise DataError(
                self.path,
                None,
                f"{noun} {missing[0]!r} is not in this file"
                + (f" ({len(missing)} such {noun}s)" if len(missing) > 1 else ""),
            )
        return found


class TokenizedWithRaw(TokenizedTexts):
    """A tokenized text set of the cache (``name`` in ``cache_dir``) and, as ``raw``, the :class:`RawTexts` of the
    dataset file it was tokenized from (``kind``: QUERIES for a ``queries_<split>`` set, CORPUS for ``corpus``)."""

    def __init__(
        self, cache_dir: str | os.PathLike, name: str, source: str | os.PathLike, kind: artifacts.ArtifactKind
    ):
        super().__init__(cache_dir, name)
        self.raw = RawTexts(source, kind)


__all__ = ["RawTexts", "TokenizedWithRaw"]
