"""Static hard negatives only (Zhan et al., SIGIR 2021: the static hard negatives their Figure 4 sets beside
random and dynamic ones): STAR's mined hard negatives and RankNet loss, but each query is scored against its
own positive and its own hard negatives only. STAR adds the other rows' documents as random negatives; leaving
them out shows what static hard negatives do on their own."""

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
    return contrastive_step(ctx, mined_negatives(ctx), "ranknet", in_batch=False)


# STAR's roles (init, negatives: the miner, bm25), parameters and training sections; only the step differs.
METHOD = Method(
    name="static_hn",
    kind=DENSE,
    summary="static hard negatives only, without STAR's reuse of the batch's other documents (RankNet)",
    roles=MINED_ROLES,
    schema=MINED_SCHEMA,
    params=MinedParams,
    training_sections=MINED_SECTIONS,
    build_step=build_step,
    check=check_distillation,
    grad_cache=True,
)
