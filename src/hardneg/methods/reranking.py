"""What the re-ranking methods (kind ``rerank``: the ColBERT teacher, the cross-encoder) share: the ``rerank``
section of their parameters, how deep they re-rank their ``candidates`` run and how many pairs go through the
model at once."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RerankSection:
    depth: int
    batch_size: int


RERANK_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "default": {},
    "description": "re-ranking of the candidates run's ranking of each split",
    "properties": {
        "depth": {
            "type": "integer",
            "minimum": 1,
            "default": 100,
            "description": "documents re-ranked per query (the candidates' top-depth)",
        },
        "batch_size": {
            "type": "integer",
            "minimum": 1,
            "default": 64,
            "description": "(query, document) pairs per forward",
        },
    },
}
