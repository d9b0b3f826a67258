"""BM25 Neg warm-up (STAR paper, section 6.1): each row's negative is sampled from the BM25 top-``depth`` of its
training query; softmax cross-entropy over the batch."""

from hardneg.io import artifacts
from hardneg.methods.contrastive import TRAINING_SECTIONS, contrastive_step, ranked_negatives
from hardneg.methods.registry import DENSE, Method, Role, StepContext


def build_step(ctx: StepContext):
    negatives = ranked_negatives(ctx, artifacts.RANKING, ctx.input("negatives"), ctx.params["negatives"]["depth"])
    return contrastive_step(ctx, negatives, "ce")


METHOD = Method(
    name="warmup",
    kind=DENSE,
    summary="negatives sampled from a BM25 ranking (BM25 Neg)",
    roles={
        "negatives": Role("ranking", description="the run whose training-split ranking gives the negatives"),
        "init": Role("model", required=False, description="a dense run whose model this one continues"),
    },
    training_sections=TRAINING_SECTIONS,
    build_step=build_step,
    grad_cache=True,
)
