"""STAR (Zhan et al., SIGIR 2021, section 6.1): continue a model on static hard negatives mined with a dense
run's model (top-``mining.depth`` of each training query, positives removed), scored with the RankNet loss of
every query against every document of the batch (its own hard negatives and the other rows' documents). With
``params.distill`` it also learns from a teacher's scores of its pool (a teacher run, ``inputs.teacher``, or a
cross-encoder, ``inputs.cross_encoder``) or those of the imported list it trains on
(:data:`hardneg.methods.contrastive.DISTILL_SCHEMA`)."""

from __future__ import annotations

from dataclasses import dataclass

from hardneg.io import artifacts
from hardneg.methods.contrastive import (
    DISTILL_ROLES,
    DISTILL_SCHEMA,
    TRAINING_SECTIONS,
    DistillParams,
    check_distillation,
    contrastive_step,
    ranked_negatives,
)
from hardneg.methods.registry import DENSE, MINING_ROLES, Method, Role, StepContext
from hardneg.mining.negatives import MINING_SCHEMA, MiningParams


@dataclass(frozen=True)
class StarParams:
    mining: MiningParams
    distill: DistillParams


def mined_negatives(ctx: StepContext):
    """The run's static hard negatives: sampled from the list its miner mined for it (``hardnegs.parquet``)."""
    return ranked_negatives(ctx, artifacts.HARDNEGS, ctx.input("hard_negatives"), None)


def build_step(ctx: StepContext):
    return contrastive_step(ctx, mined_negatives(ctx), "ranknet")


METHOD = Method(
    name="star",
    kind=DENSE,
    summary="static hard negatives with RankNet over the whole batch (STAR)",
    roles={
        "init": Role("model", description="the dense run whose model training continues (the warm-up)"),
        "negatives": Role("miner", description="the dense run whose model mines the hard negatives"),
        "bm25": Role(
            "reference_ranking",
            required=False,
            description="a BM25 run, for the overlap column of the hard-negative audit",
        ),
        **MINING_ROLES,
        **DISTILL_ROLES,
    },
    schema={"mining": MINING_SCHEMA, "distill": DISTILL_SCHEMA},
    params=StarParams,
    training_sections=(*TRAINING_SECTIONS, "distill"),
    build_step=build_step,
    check=check_distillation,
    grad_cache=True,
)
