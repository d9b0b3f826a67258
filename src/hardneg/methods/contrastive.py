"""The step shared by the contrastive methods (warm-up, random and in-batch baselines, STAR): every query of the
batch against every document of the batch, with the method's negatives and default loss; and, for the methods
that mine static hard negatives, distillation from the teacher scores of their pool (:data:`DISTILL_SCHEMA`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from hardneg.dense.data import RankedNegatives, TeacherScores
from hardneg.errors import ConfigError
from hardneg.io import artifacts
from hardneg.methods.registry import MINING_ROLES, Role, StepContext
from hardneg.mining.negatives import MINING_SCHEMA, MiningParams
from hardneg.schema.values import dataclass_from

# The training inputs holding the teacher's scores of a run's pairs (Plan.train_inputs), two tables each: of the
# candidates or negatives (a RANKING table, or the HARDNEGS table of an imported list: the same columns) and of the
# training queries' judged positives (a POSITIVE_SCORES table). Either the teacher's own scores, read as they are (a
# teacher run's scores of the pool: inputs.teacher; the scores an imported list carries), or a cross-encoder's
# probabilities of the pool (inputs.cross_encoder), read as its logits. A run with both distils from the first.
TEACHER_SCORES = {"teacher_scores": artifacts.RANKING, "teacher_positive_scores": artifacts.POSITIVE_SCORES}
TEACHER_PROBABILITIES = {
    "teacher_probabilities": artifacts.RANKING,
    "teacher_positive_probabilities": artifacts.POSITIVE_SCORES,
}

# The role of a method that distils (beside its miner role and MINING_ROLES' cross_encoder): a teacher run scoring
# its pool.
DISTILL_ROLES = {
    "teacher": Role(
        "pool_teacher",
        required=False,
        description="a re-ranking run (the ColBERT teacher, a cross-encoder) whose scores of "
        "this run's pool and of the judged positives it distils from "
        "(params.distill)",
    )
}

DISTILL_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "default": {},
    "description": "distillation from a teacher's scores of each query's positive and its own hard negatives, from "
    "the first the run has of: the run of inputs.teacher (a re-ranking run, the ColBERT teacher say), "
    "whose scores of the run's pool and of the judged positives are read as they are; the "
    "cross-encoder of inputs.cross_encoder, whose probabilities p of them (the pool's ce_score "
    "column) are read as logits log(p / (1 - p)); the scores the imported list of inputs.negatives "
    "carries ({imported: <folder>}), read as they are. loss = (1 - weight) "
    "x the contrastive loss + weight x the distillation loss; the student's scores in it are the "
    "contrastive loss's (raw score / train.temperature). The batch's other documents (in-batch "
    "negatives) stay out of the distillation term: the teacher scored each query's own candidates "
    "only (docs: methods, distillation)",
    "properties": {
        "loss": {
            "enum": ["margin_mse", "kl", None],
            "default": None,
            "description": "null: no distillation; margin_mse: mean squared error between the student's and "
            "the teacher's margins, positive minus each negative (Hofstätter et al. 2020); kl: "
            "KL divergence from the teacher's softmax to the student's over the positive and "
            "its negatives (listwise)",
        },
        "weight": {
            "type": "number",
            "minimum": 0,
            "maximum": 1,
            "default": 0.5,
            "description": "the distillation term's share of the loss (1: distillation alone)",
        },
        "teacher_temperature": {
            "type": "number",
            "exclusiveMinimum": 0,
            "default": 1.0,
            "description": "kl: the teacher's logits are divided by it before the softmax",
        },
        "student_temperature": {
            "type": "number",
            "exclusiveMinimum": 0,
            "default": 1.0,
            "description": "kl: the student's scores are divided by it before the softmax",
        },
    },
}


@dataclass(frozen=True)
class DistillParams:
    """``params.distill``: its keys and defaults are :data:`DISTILL_SCHEMA`."""

    loss: str | None
    weight: float
    teacher_temperature: float
    student_temperature: float


def distills(params: dict) -> bool:
    """Whether a run with these ``params`` distils from a teacher's scores (``distill.loss`` set)."""
    return params.get("distill", {}).get("loss") is not None


def _imported_list(run: dict) -> str | None:
    """The folder of the imported list a run trains on (its miner role given as ``{imported: <folder>}``)."""
    return next((value["imported"] for value in run.get("inputs", {}).values() if isinstance(value, dict)), None)


def check_distillation(name: str, run: dict) -> None:
    """A run that distils has a scored source of its pairs: a teacher run (``inputs.teacher``) or a cross-encoder
    (``inputs.cross_encoder``) scoring its pool, or an imported list (whose scores the plan checks where its card
    is already there: :func:`hardneg.pipeline.mining_plan.check_imported_scores`); and it has negatives to
    compare its positive with (``negatives.per_query`` >= 1). A teacher run scores a pool for distillation only:
    it is refused on a run that does not distil, and on an imported list, which has no pool.

    :raises ConfigError: naming ``runs.<name>.params.distill.loss`` or ``runs.<name>.inputs.teacher``."""
    params, inputs = run.get("params", {}), run.get("inputs", {})
    imported = _imported_list(run)
    if "teacher" in inputs and (imported is not None or not distills(params)):
        why = (
            f"the imported list {imported} has no pool for a teacher to score: the scores it carries are the teacher's"
            if imported is not None
            else f"run {name} does not distil (set runs.{name}.params.distill.loss)"
        )
        raise ConfigError(
            f"runs.{name}.inputs.teacher",
            f"a teacher scores the run's pool for distillation only, and {why}; or leave inputs.teacher out",
        )
    if not distills(params):
        return
    key = f"runs.{name}.params.distill.loss"
    if imported is None and not {"teacher", "cross_encoder"} & set(inputs):
        raise ConfigError(
            key,
            f"distillation learns from a teacher's scores, and run {name} has no scored source: "
            f"name a re-ranking run that scores its pool in runs.{name}.inputs.teacher (the "
            f"ColBERT teacher) or a cross-encoder in runs.{name}.inputs.cross_encoder, train it "
            f"on an imported list that carries scores, or set distill.loss to null",
        )
    if params.get("negatives", {}).get("per_query", 1) < 1:
        raise ConfigError(
            key,
            f"distillation compares each positive with its own negatives: set "
            f"runs.{name}.params.negatives.per_query to 1 at least",
        )


def teacher_logits(probabilities):
    """A cross-encoder's probabilities of relevance as its logits, log(p / (1 − p)), float32: a sigmoid's
    inverse, which margins and softmaxes compare as the teacher does (probabilities squeeze the margins near 0
    and 1). p is clipped into float32's open unit interval first, so a probability rounded to 0 or 1 gives a
    finite logit (at most about ±16.6 at 1)."""
    p = np.clip(np.asarray(probabilities, dtype=np.float64), np.finfo(np.float32).tiny, 1.0 - 2.0**-24)
    return (np.log(p) - np.log1p(-p)).astype(np.float32)


def read_teacher_scores(ctx: StepContext):
    """The teacher's scores of the run's training pairs (:class:`hardneg.dense.data.TeacherScores`): the tables of
    :data:`TEACHER_SCORES` as they are where the run has them, else those of :data:`TEACHER_PROBABILITIES`, read as
    logits by :func:`teacher_logits`. A null score is no score (an imported list's pair the file left unscored).

    :raises ConfigError: naming ``runs.<run>.params.distill.loss``, when the tables score no negative or no
        positive (an imported list that carries no scores): the distillation term would be empty."""
    as_they_are = all(name in ctx.inputs for name in TEACHER_SCORES)
    tables = []
    for name, kind in (TEACHER_SCORES if as_they_are else TEACHER_PROBABILITIES).items():
        table = artifacts.read_table(kind, ctx.input(name)).select(["qid", "docid", "score"])
        if table.num_rows == table["score"].null_count:
            what = "positive" if kind is artifacts.POSITIVE_SCORES else "negative"
            raise ConfigError(
                f"runs.{ctx.resolved['name']}.params.distill.loss",
                f"the teacher's scores {ctx.input(name)} score no {what}: there is nothing to distil "
                f"from (an imported list that carries no scores?); train on a list with scores, name a "
                f"teacher, or set distill.loss to null",
            )
        if not as_they_are:
            table = table.set_column(2, "score", pa.array(teacher_logits(table["score"].to_numpy())))
        tables.append(table)
    return TeacherScores(ctx.train, tables, ctx.doc_texts.row_ids)


def distillation(ctx: StepContext):
    """The run's :class:`hardneg.dense.steps.Distillation` (``params.distill``), or None when its loss is null
    or the method has no such section."""
    from hardneg.dense.steps import Distillation  # torch: imported only where a model or tensor is used

    if "distill" not in ctx.params:
        return None
    section = dataclass_from(DistillParams, ctx.params["distill"], "params.distill")
    if section.loss is None:
        return None
    return Distillation(
        loss=section.loss,
        weight=section.weight,
        teacher=read_teacher_scores(ctx),
        teacher_temperature=section.teacher_temperature,
        student_temperature=section.student_temperature,
    )


def contrastive_step(ctx: StepContext, negatives, default_loss: str, *, in_batch: bool = True):
    """A :class:`hardneg.dense.steps.ContrastiveMethod` drawing ``negatives`` (None: in-batch only); with
    ``in_batch`` false each query is scored against its own positive and negatives only. A run with a
    ``distill`` section whose loss is set adds the distillation term (:func:`distillation`)."""
    from hardneg.dense.steps import ContrastiveMethod  # torch: imported only where a model or tensor is used

    train = ctx.params["train"]
    return ContrastiveMethod(
        ctx.train,
        ctx.query_texts,
        ctx.doc_texts,
        negatives=negatives,
        per_query=ctx.params["negatives"]["per_query"],
        loss=train["loss"] or default_loss,
        temperature=train["temperature"],
        in_batch=in_batch,
        grad_cache_chunk=train["grad_cache_chunk"],
        distillation=distillation(ctx),
    )


def ranked_negatives(ctx: StepContext, kind, path: str, depth: int | None):
    """Negatives sampled from a ranked list (a run's ranking or a mined list) read from ``path``."""
    return RankedNegatives(ctx.train, artifacts.read_table(kind, path), ctx.doc_texts.row_ids, depth)


def mined_negatives(ctx: StepContext):
    """The run's static hard negatives: sampled from the list its miner mined for it (``hardnegs.parquet``)."""
    return ranked_negatives(ctx, artifacts.HARDNEGS, ctx.input("hard_negatives"), None)


def role_negatives(ctx: StepContext):
    """The negatives of a method whose run names either a miner (``hard_negatives`` mined for it) or a ranking
    (``negatives``, sampled from its top ``negatives.depth``), or neither (in-batch negatives only)."""
    if "hard_negatives" in ctx.inputs:
        return ranked_negatives(ctx, artifacts.HARDNEGS, ctx.input("hard_negatives"), None)
    if "negatives" in ctx.inputs:
        return ranked_negatives(ctx, artifacts.RANKING, ctx.input("negatives"), ctx.params["negatives"]["depth"])
    return None


TRAINING_SECTIONS = ("model", "train", "negatives")


# The declaration of a method trained on static hard negatives mined for it (STAR, static hard negatives only):
# its roles, its parameter sections and their schema.
@dataclass(frozen=True)
class MinedParams:
    mining: MiningParams
    distill: DistillParams


MINED_ROLES = {
    "init": Role("model", description="the dense run whose model training continues (the warm-up)"),
    "negatives": Role("miner", description="the dense run whose model mines the hard negatives"),
    "bm25": Role(
        "reference_ranking",
        required=False,
        description="a BM25 run, for the overlap column of the hard-negative audit",
    ),
    **MINING_ROLES,
    **DISTILL_ROLES,
}
MINED_SCHEMA = {"mining": MINING_SCHEMA, "distill": DISTILL_SCHEMA}
MINED_SECTIONS = (*TRAINING_SECTIONS, "distill")
