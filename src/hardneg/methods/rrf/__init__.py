"""Reciprocal rank fusion (Cormack, Clarke and Büttcher, SIGIR 2009) with Pyserini: a document's score is
Σ 1/(rrf_k + rank) over the rankings that rank it within ``depth``. See :mod:`hardneg.fusion`."""

from __future__ import annotations

from dataclasses import dataclass

from hardneg.fusion import reciprocal_rank_fusion
from hardneg.methods.registry import FUSION, Method, Role


@dataclass(frozen=True)
class RRFParams:
    rrf_k: int


SCHEMA = {
    "rrf_k": {
        "type": "integer",
        "minimum": 0,
        "default": 60,
        "description": "the constant added to every rank (60 in Cormack et al.)",
    },
}


def fuse(rankings, params: dict):
    return reciprocal_rank_fusion(rankings, rrf_k=params["rrf_k"], depth=params["depth"], k=params["k"])


METHOD = Method(
    name="rrf",
    kind=FUSION,
    summary="reciprocal rank fusion: sum of 1/(rrf_k + rank) (Pyserini)",
    roles={"runs": Role("runs", many=True, min_count=2, description="the runs whose rankings are fused (two or more)")},
    schema=SCHEMA,
    params=RRFParams,
    fuse=fuse,
)
