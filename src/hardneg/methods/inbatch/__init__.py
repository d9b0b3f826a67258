"""In-batch negatives only: each query against the other rows' positives; softmax cross-entropy."""

from hardneg.methods.contrastive import TRAINING_SECTIONS, contrastive_step
from hardneg.methods.registry import DENSE, Method, Role, StepContext


def build_step(ctx: StepContext):
    return contrastive_step(ctx, None, "ce")


METHOD = Method(
    name="inbatch",
    kind=DENSE,
    summary="in-batch negatives only",
    roles={"init": Role("model", required=False, description="a dense run whose model this one continues")},
    training_sections=TRAINING_SECTIONS,
    build_step=build_step,
    grad_cache=True,
)
