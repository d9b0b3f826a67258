"""Static hard negatives only (Zhan et al., SIGIR 2021: the static hard negatives their Figure 4 sets beside
random and dynamic ones): STAR's mined hard negatives and RankNet loss, but each query is scored against its
own positive and its own hard negatives only. STAR adds the other rows' documents as random negatives; leaving
them out shows what static hard negatives do on their own."""

from __future__ import annotations

import dataclasses

from hardneg.methods import star
from hardneg.methods.contrastive import contrastive_step
from hardneg.methods.registry import StepContext


def build_step(ctx: StepContext):
    return contrastive_step(ctx, star.mined_negatives(ctx), "ranknet", in_batch=False)


# STAR's roles (init, negatives: the miner, bm25), parameters and training sections; only the step differs.
METHOD = dataclasses.replace(
    star.METHOD,
    name="static_hn",
    summary="static hard negatives only, without STAR's reuse of the batch's other documents (RankNet)",
    build_step=build_step,
)
