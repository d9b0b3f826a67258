"""BM25 with Pyserini (Lucene): an index per run, then top-k retrieval. See :mod:`hardneg.bm25`."""

from __future__ import annotations

from dataclasses import dataclass

from hardneg.methods.registry import LEXICAL, Method


@dataclass(frozen=True)
class BM25Params:
    k1: float
    b: float
    top_k: int
    fields: str
    title_weight: float
    stemmer: str


SCHEMA: dict[str, dict] = {
    "k1": {"type": "number", "exclusiveMinimum": 0, "default": 0.9, "description": "BM25's term-frequency saturation"},
    "b": {
        "type": "number",
        "minimum": 0,
        "maximum": 1,
        "default": 0.4,
        "description": "BM25's document-length normalisation, from 0 (none) to 1 (full)",
    },
    "top_k": {
        "type": "integer",
        "minimum": 1,
        "default": 1000,
        "description": "documents retrieved per query (the depth of the run's rankings)",
    },
    "fields": {
        "enum": ["flat", "multifield"],
        "default": "flat",
        "description": "flat: title and text as one field; multifield: separate fields (title_weight)",
    },
    "title_weight": {
        "type": "number",
        "minimum": 0,
        "default": 1.0,
        "description": "multifield: the weight of the title field's score (the text's weighs 1); flat ignores it",
    },
    "stemmer": {
        "enum": ["porter", "krovetz", "none"],
        "default": "porter",
        "description": "the stemmer of Anserini's English analyzer, for the documents when the index "
        "is built and for the queries when it is searched (none: no stemming)",
    },
}

METHOD = Method(name="bm25", kind=LEXICAL, summary="BM25 (Pyserini, Lucene)", schema=SCHEMA, params=BM25Params)
