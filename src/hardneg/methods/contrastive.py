"""The step shared by the contrastive methods (warm-up, random and in-batch baselines, STAR): every query of the
batch against every document of the batch, with the method's negatives and default loss."""

from __future__ import annotations

from hardneg.dense.data import RankedNegatives
from hardneg.io import artifacts
from hardneg.methods.registry import StepContext


def contrastive_step(ctx: StepContext, negatives, default_loss: str, *, in_batch: bool = True):
    """A :class:`hardneg.dense.methods.ContrastiveMethod` drawing ``negatives`` (None: in-batch only); with
    ``in_batch`` false each query is scored against its own positive and negatives only."""
    from hardneg.dense.methods import ContrastiveMethod  # torch: imported only where a model or tensor is used

    train = ctx.params["train"]
    return ContrastiveMethod(ctx.train, ctx.query_texts, ctx.doc_texts, negatives=negatives,
                             per_query=ctx.params["negatives"]["per_query"], loss=train["loss"] or default_loss,
                             temperature=train["temperature"], in_batch=in_batch,
                             grad_cache_chunk=train["grad_cache_chunk"])


def ranked_negatives(ctx: StepContext, kind, path: str, depth: int | None):
    """Negatives sampled from a ranked list (a run's ranking or a mined list) read from ``path``."""
    return RankedNegatives(ctx.train, artifacts.read_table(kind, path), ctx.doc_texts.row_ids, depth)


def role_negatives(ctx: StepContext):
    """The negatives of a method whose run names either a miner (``hard_negatives`` mined for it) or a ranking
    (``negatives``, sampled from its top ``negatives.depth``), or neither (in-batch negatives only)."""
    if "hard_negatives" in ctx.inputs:
        return ranked_negatives(ctx, artifacts.HARDNEGS, ctx.input("hard_negatives"), None)
    if "negatives" in ctx.inputs:
        return ranked_negatives(ctx, artifacts.RUN, ctx.input("negatives"), ctx.params["negatives"]["depth"])
    return None


TRAINING_SECTIONS = ("model", "train", "negatives")
