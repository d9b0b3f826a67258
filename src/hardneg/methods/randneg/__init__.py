"""Random negatives: uniformly drawn corpus documents (re-drawn when relevant); softmax cross-entropy."""

from hardneg.dense.data import RandomNegatives
from hardneg.methods.contrastive import TRAINING_SECTIONS, contrastive_step
from hardneg.methods.registry import DENSE, Method, Role, StepContext


def build_step(ctx: StepContext):
    return contrastive_step(ctx, RandomNegatives(ctx.train), "ce")


METHOD = Method(
    name="randneg",
    kind=DENSE,
    summary="uniformly random corpus negatives",
    roles={"init": Role("model", required=False, description="a dense run whose model this one continues")},
    training_sections=TRAINING_SECTIONS,
    build_step=build_step,
    grad_cache=True,
)
