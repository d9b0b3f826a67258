"""TCT-ColBERT (Lin, Yang and Lin, RepL4NLP 2021): a single-vector student (mean pooling over ColBERT's input
format, ``params.model.markers``) distilled from a frozen ColBERT teacher over every in-batch document: for
each query, the KL divergence between the teacher's softmax (scores divided by ``tct.teacher_temperature``)
and the student's, mixed with the student's own contrastive loss by ``tct.kd_weight``. Negatives come from a
ranking (BM25: the paper's TCT) or from a list mined by a dense run (the hard-negative variants); without a
teacher the student trains on its own contrastive loss (TCT w/ HN). See :mod:`hardneg.methods.tct.step`."""

from __future__ import annotations

from dataclasses import dataclass

from hardneg.methods.contrastive import role_negatives
from hardneg.methods.registry import DENSE, MINING_ROLES, Method, Role, StepContext
from hardneg.mining.negatives import MINING_SCHEMA, MiningParams
from hardneg.schema.values import dataclass_from


@dataclass(frozen=True)
class TctSection:
    """``params.tct``: the distillation's temperature and weight."""

    teacher_temperature: float
    kd_weight: float


@dataclass(frozen=True)
class TctParams:
    tct: TctSection
    mining: MiningParams


SCHEMA = {
    "tct": {
        "type": "object",
        "additionalProperties": False,
        "default": {},
        "description": "in-batch knowledge distillation from the teacher",
        "properties": {
            "teacher_temperature": {
                "type": "number",
                "exclusiveMinimum": 0,
                "default": 0.25,
                "description": "the teacher's scores are divided by it before the softmax",
            },
            "kd_weight": {
                "type": "number",
                "minimum": 0,
                "maximum": 1,
                "default": 1.0,
                "description": "loss = kd_weight x KD + (1 - kd_weight) x the student's contrastive loss "
                "(without a teacher: the contrastive loss alone)",
            },
        },
    },
    "mining": MINING_SCHEMA,
}


def build_step(ctx: StepContext):
    from hardneg.methods.tct.step import TctMethod, load_teacher  # torch: imported only where a model or tensor is used

    negatives = role_negatives(ctx)
    # the training job's params hold the training sections only (training_sections): read the one it needs
    tct, train = dataclass_from(TctSection, ctx.params["tct"], "params.tct"), ctx.params["train"]
    teacher = load_teacher(ctx.input("teacher"), "cpu") if "teacher" in ctx.inputs else None
    return TctMethod(
        ctx.train,
        ctx.query_texts,
        ctx.doc_texts,
        negatives=negatives,
        per_query=ctx.params["negatives"]["per_query"],
        teacher=teacher,
        teacher_temperature=tct.teacher_temperature,
        kd_weight=tct.kd_weight,
        loss=train["loss"] or "ce",
        temperature=train["temperature"],
        grad_cache_chunk=train["grad_cache_chunk"],
    )


METHOD = Method(
    name="tct",
    kind=DENSE,
    summary="TCT-ColBERT: in-batch distillation from a ColBERT teacher",
    roles={
        "init": Role("model", description="the run whose model the student starts from (the teacher, or a tct run)"),
        "teacher": Role("teacher", required=False, description="the colbert run whose model is the teacher"),
        "negatives": Role(
            "ranking", required=False, description="the run whose training-split ranking gives the negatives (BM25)"
        ),
        "hard_negatives": Role("miner", required=False, description="a dense run whose model mines the hard negatives"),
        "bm25": Role(
            "reference_ranking",
            required=False,
            description="a BM25 run, for the overlap column of the hard-negative audit",
        ),
        **MINING_ROLES,
    },
    exclusive_roles=(("negatives", "hard_negatives"),),
    schema=SCHEMA,
    params=TctParams,
    training_sections=("model", "train", "negatives", "tct"),
    build_step=build_step,
    grad_cache=True,
)
