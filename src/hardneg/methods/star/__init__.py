"""STAR (Zhan et al., SIGIR 2021, section 6.1): continue a model on static hard negatives mined with a dense
run's model (top-``mining.depth`` of each training query, positives removed), scored with the RankNet loss of
every query against every document of the batch (its own hard negatives and the other rows' documents). With
``params.distill`` it also learns from a teacher's scores of its pool (a teacher run, ``inputs.teacher``, or a
cross-encoder, ``inputs.cross_encoder``) or those of the imported list it trains on
(:data:`hardneg.methods.contrastive.DISTILL_SCHEMA`)."""

from __future__ import annotations

from hardneg.methods.contrastive import (
    MINED_ROLES,
    MINED_SCHEMA,
    MINED_SECTIONS,
    MinedParams,
    check_distillation,
    contrastive_step,
    mined_negatives,
)
from hardneg.methods.registry import DENSE, Method, StepContext


def build_step(ctx: StepContext):
    return contrastive_step(ctx, mined_negatives(ctx), "ranknet")


METHOD = Method(
    name="star",
    kind=DENSE,
    summary="static hard negatives with RankNet over the whole batch (STAR)",
    roles=MINED_ROLES,
    schema=MINED_SCHEMA,
    params=MinedParams,
    training_sections=MINED_SECTIONS,
    build_step=build_step,
    check=check_distillation,
    grad_cache=True,
)
