"""The dense–sparse hybrid of TCT-ColBERT (Lin, Yang and Lin, RepL4NLP 2021, §4.3): per query, the top ``depth`` of
the rankings of a sparse and of a dense run pooled, a document missing from one list scored with that list's minimum
for the query, score = α·sparse + dense; α tuned on the dataset's held-out dev queries when it holds some out
(``dev_from_train``), else on the training queries, never on evaluated ones. See :mod:`hardneg.fusion`."""

from __future__ import annotations

from dataclasses import dataclass

from hardneg.fusion import WEIGHT_SCHEMA, TuneParams, hybrid
from hardneg.methods.registry import FUSION, Method, Role


@dataclass(frozen=True)
class HybridParams:
    alpha: float | None
    alpha_grid: list[float]
    tune: TuneParams
    normalization: bool
    weight_on_dense: bool


SCHEMA = {
    **WEIGHT_SCHEMA,
    "normalization": {
        "type": "boolean",
        "default": False,
        "description": "per query and list, scores s become (s - (min + max)/2) / (max - min) before "
        "they are mixed (Pyserini's HybridSearcher); the TCT-ColBERT paper mixes raw "
        "scores",
    },
    "weight_on_dense": {
        "type": "boolean",
        "default": False,
        "description": "score = sparse + α·dense instead of α·sparse + dense",
    },
}


def fuse(rankings, params: dict):
    sparse, dense = rankings
    return hybrid(
        sparse,
        dense,
        params["alpha"],
        depth=params["depth"],
        k=params["k"],
        normalization=params["normalization"],
        weight_on_dense=params["weight_on_dense"],
    )


METHOD = Method(
    name="hybrid",
    kind=FUSION,
    summary="dense-sparse hybrid: alpha * sparse + dense (TCT-ColBERT section 4.3)",
    roles={
        "runs": Role(
            "runs",
            many=True,
            min_count=2,
            max_count=2,
            description="two runs: the sparse one first (its scores weighted by alpha), then the dense one",
        )
    },
    schema=SCHEMA,
    params=HybridParams,
    fuse=fuse,
)
