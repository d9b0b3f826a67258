"""ADORE (Zhan et al., SIGIR 2021, section 6.2): only the query encoder trains, against the fixed document
embeddings and index of another dense run; each step retrieves the top-``adore.top_k`` with the current query
encoder and weights the RankNet pairs by |ΔMRR@cut| (LambdaLoss). See :mod:`hardneg.methods.adore.step`."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hardneg.methods.registry import DENSE, Method, Role, StepContext


@dataclass(frozen=True)
class AdoreSection:
    """``params.adore``: dynamic hard negatives retrieved with the current query encoder."""

    top_k: int
    cut: int
    weighted: bool
    normalize: str
    append_missing: str
    index: str | None


@dataclass(frozen=True)
class AdoreParams:
    adore: AdoreSection


SCHEMA = {
    "adore": {
        "type": "object",
        "additionalProperties": False,
        "default": {},
        "description": "dynamic hard negatives retrieved with the current query encoder",
        "properties": {
            "top_k": {
                "type": "integer",
                "minimum": 1,
                "default": 200,
                "description": "documents retrieved per query and step",
            },
            "cut": {
                "type": "integer",
                "minimum": 1,
                "default": 200,
                "description": "target metric MRR@cut (200 for passages, 10 for documents)",
            },
            "weighted": {
                "type": "boolean",
                "default": True,
                "description": "weight pairs by |ΔMRR| (false: plain RankNet, ADORE\\L)",
            },
            "normalize": {
                "enum": ["pairs", "sum"],
                "default": "pairs",
                "description": "a query's loss: the mean over its pairs (the authors' code) or their sum "
                "(queries with many pairs weigh more)",
            },
            "append_missing": {
                "enum": ["when_none", "all"],
                "default": "when_none",
                "description": "append unretrieved relevant documents after rank top_k for queries "
                "with none retrieved (the authors' code), or for every query",
            },
            "index": {
                "type": ["string", "null"],
                "default": None,
                "description": "index factory searched during training (null: the run's index.factory)",
            },
        },
    },
}


def training_index(params: dict) -> str:
    """The factory of the index over the fixed documents that training searches."""
    return params["adore"]["index"] or params["index"]["factory"]


def build_step(ctx: StepContext):
    from hardneg.index import load_index, set_search_params  # Faiss: imported only where an index is built or searched
    from hardneg.methods.adore.step import AdoreMethod  # torch: imported only where a model or tensor is used

    adore = METHOD.read_params(ctx.params).adore
    index = load_index(ctx.input("train_index"))
    set_search_params(index, ctx.params["index"]["search_params"])
    return AdoreMethod(
        ctx.train,
        ctx.query_texts,
        np.load(ctx.input("doc_embeddings"), mmap_mode="r"),
        index,
        top_k=adore.top_k,
        cut=adore.cut,
        weighted=adore.weighted,
        normalize=adore.normalize,
        append_missing=adore.append_missing,
        temperature=ctx.params["train"]["temperature"],
    )


METHOD = Method(
    name="adore",
    kind=DENSE,
    summary="query encoder trained on dynamic hard negatives from a fixed index (ADORE)",
    roles={"docs": Role("doc_index", description="the dense run whose document embeddings and indexes stay fixed")},
    schema=SCHEMA,
    params=AdoreParams,
    # ADORE also depends on its training index (and so on the index settings).
    training_sections=("model", "train", "negatives", "adore", "index"),
    training_index=training_index,
    build_step=build_step,
)
