"""Adaptive Batch Scheduling (Choi et al., IEEE Access 2021; with beam search, Zhao, Yang and Cui): in-batch
training (each row's positive is every other row's negative, softmax cross-entropy) on batches grouped so that
they are hard, h(B) = Σ_{i≠j in B} s(q_i, p_j).

The batches of each epoch come from the method's sampler (:class:`hardneg.methods.abs.sampler.AdaptiveBatchSampler`):
``abs.order`` ``sequential`` (the data order: Non-ABS-Sequential), ``random`` (a fresh shuffle each epoch:
Non-ABS-Random) or ``adaptive`` (greedy or beam search over swaps, from the similarity ``abs.similarity``:
``bm25``, the scores of the ``inputs.bm25`` run's ranking of the training split every epoch (ABS-BM25), or
``encode``, BM25 for the first epoch and the dot products of the model being trained, re-encoded at the start of
every later epoch (ABS-Encode)). Instances sharing a relevant document never count as each other's negatives.
"""

from __future__ import annotations

from dataclasses import dataclass

from hardneg.errors import ConfigError
from hardneg.io import artifacts
from hardneg.methods.contrastive import TRAINING_SECTIONS, contrastive_step
from hardneg.methods.registry import DENSE, Method, Role, StepContext
from hardneg.schema.values import dataclass_from


@dataclass(frozen=True)
class AbsSection:
    """``params.abs``: how each epoch's batches are formed."""

    order: str
    similarity: str
    search: str
    beam: int
    candidates: int
    max_swaps: int | None
    index: str


@dataclass(frozen=True)
class AbsParams:
    abs: AbsSection


SCHEMA = {
    "abs": {
        "type": "object",
        "additionalProperties": False,
        "default": {},
        "description": "Adaptive Batch Scheduling: how each epoch's in-batch training batches are formed",
        "properties": {
            "order": {
                "enum": ["sequential", "random", "adaptive"],
                "default": "adaptive",
                "description": "sequential: the data order (Non-ABS-Sequential); random: a seeded shuffle each "
                "epoch (Non-ABS-Random); adaptive: batches searched for hardness (ABS)",
            },
            "similarity": {
                "enum": ["bm25", "encode"],
                "default": "encode",
                "description": "adaptive batches' s(q, p): bm25, the inputs.bm25 run's scores every epoch; "
                "encode, BM25 for the first epoch, then dot products of the model being "
                "trained, re-encoded at the start of each later epoch",
            },
            "search": {
                "enum": ["greedy", "beam"],
                "default": "greedy",
                "description": "greedy: swap the weakest member for the best addition while h(B) improves; "
                "beam: the best of beam x beam candidate swaps each time",
            },
            "beam": {
                "type": "integer",
                "minimum": 1,
                "default": 3,
                "description": "beam search: removal candidates, and additions tried for each",
            },
            "candidates": {
                "type": "integer",
                "minimum": 1,
                "default": 100,
                "description": "neighbours of each batch member searched as additions (top passages of "
                "its question, top questions of its passage)",
            },
            "max_swaps": {
                "type": ["integer", "null"],
                "minimum": 0,
                "default": None,
                "description": "swaps per batch at most (null: the scheduler's default)",
            },
            "index": {
                "type": "string",
                "default": "Flat",
                "description": "Faiss index factory of the neighbour search over encoded instances",
            },
        },
    },
}


def check(name: str, run: dict) -> None:
    section = run["params"]["abs"]
    if section["order"] == "adaptive" and "bm25" not in run.get("inputs", {}):
        raise ConfigError(
            f"runs.{name}.inputs.bm25",
            "adaptive batches (params.abs.order: adaptive) are scored "
            "with BM25 (for the first epoch at least): name a BM25 run",
        )


def build_step(ctx: StepContext):
    return contrastive_step(ctx, None, "ce")


def build_sampler(ctx: StepContext, config):
    from hardneg.methods.abs.sampler import AdaptiveBatchSampler  # scipy: slow to import, needed only here

    section = dataclass_from(AbsSection, ctx.params["abs"], "params.abs")
    ranking = artifacts.read_table(artifacts.RANKING, ctx.input("bm25")) if "bm25" in ctx.inputs else None
    return AdaptiveBatchSampler(
        ctx.train,
        ctx.query_texts,
        ctx.doc_texts,
        batch_size=config.batch_size,
        seed=config.seed,
        order=section.order,
        similarity=section.similarity,
        ranking=ranking,
        search=section.search,
        beam=section.beam,
        candidates=section.candidates,
        max_swaps=section.max_swaps,
        index=section.index,
        device=ctx.device,
    )


METHOD = Method(
    name="abs",
    kind=DENSE,
    summary="in-batch negatives on adaptively scheduled hard batches (ABS)",
    roles={
        "bm25": Role(
            "ranking",
            required=False,
            description="the BM25 run whose training-split scores group the (first epoch's) batches",
        ),
        "init": Role(
            "model", required=False, description="a dense run whose model this one continues (e.g. a condenser run)"
        ),
    },
    schema=SCHEMA,
    params=AbsParams,
    training_sections=(*TRAINING_SECTIONS, "abs"),
    build_step=build_step,
    build_sampler=build_sampler,
    check=check,
    grad_cache=True,
)
