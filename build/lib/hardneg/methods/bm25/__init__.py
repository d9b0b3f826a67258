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


SCHEMA = {
    "k1": {"type": "number", "exclusiveMinimum": 0, "default": 0.9},
    "b": {"type": "number", "minimum": 0, "maximum": 1, "default": 0.4},
    "top_k": {"type": "integer", "minimum": 1, "default": 1000},
    "fields": {"enum": ["flat", "multifield"], "default": "flat",
               "description": "flat: title and text as one field; multifield: separate fields (title_weight)"},
    "title_weight": {"type": "number", "minimum": 0, "default": 1.0},
    "stemmer": {"enum": ["porter", "krovetz", "none"], "default": "porter"},
}

METHOD = Method(name="bm25", kind=LEXICAL, summary="BM25 (Pyserini, Lucene)", schema=SCHEMA, params=BM25Params)
