"""ColBERT (Khattab and Zaharia, SIGIR 2020) as TCT-ColBERT's teacher (Lin, Yang and Lin, RepL4NLP 2021): late
interaction over token vectors (each query token's best match among the document's tokens, summed), trained
on (query, positive, negative) triples, negatives from a ranking (BM25: the paper's teacher) or mined by a
dense run (the teacher fine-tuned on hard negatives, "HN+"). It ranks by re-ranking another run's top-k of
each split. See :mod:`hardneg.dense.maxsim`."""

from __future__ import annotations

from dataclasses import dataclass

from hardneg.errors import ConfigError
from hardneg.methods.contrastive import role_negatives
from hardneg.methods.registry import MINING_ROLES, RERANK, Method, Role, StepContext
from hardneg.methods.reranking import RERANK_SCHEMA, RerankSection
from hardneg.mining.negatives import MINING_SCHEMA, MiningParams


@dataclass(frozen=True)
class ColbertSection:
    dim: int
    in_batch: bool


@dataclass(frozen=True)
class ColbertParams:
    colbert: ColbertSection
    rerank: RerankSection
    mining: MiningParams


SCHEMA = {
    "colbert": {
        "type": "object",
        "additionalProperties": False,
        "default": {},
        "description": "the late-interaction model",
        "properties": {
            "dim": {
                "type": "integer",
                "minimum": 1,
                "default": 128,
                "description": "token vectors are projected to this dimension and L2-normalised",
            },
            "in_batch": {
                "type": "boolean",
                "default": False,
                "description": "score each query against every document of the batch (false: only its own "
                "positive and negatives, ColBERT's triples)",
            },
        },
    },
    "rerank": RERANK_SCHEMA,
    "mining": MINING_SCHEMA,
}


def new_model(spec, tokenizer, resolved: dict, init):
    # torch: imported only where a model or tensor is used
    from hardneg.dense.maxsim import ColBERT, is_colbert

    colbert = resolved["params"]["colbert"]
    if init is None:
        return ColBERT.create(spec, tokenizer=tokenizer, dim=colbert["dim"], seed=resolved["seed"])
    if not is_colbert(init):
        raise ConfigError(
            f"runs.{resolved['name']}.inputs.init",
            f"{init} is not a ColBERT model: a colbert run continues another colbert run",
        )
    model = ColBERT.load(init)
    if model.dim != colbert["dim"]:
        raise ConfigError(
            f"runs.{resolved['name']}.params.colbert.dim",
            f"the model continued ({init}) has dimension {model.dim}, not {colbert['dim']}",
        )
    return model


def rerank(model_dir, queries, corpus, candidates, *, depth: int, batch_size: int, device: str):
    """The trained ColBERT's MaxSim scores of each query's top-``depth`` candidates, best first."""
    from hardneg.dense.maxsim import ColBERT  # torch: imported when re-ranking
    from hardneg.dense.maxsim import rerank as maxsim_rerank

    return maxsim_rerank(
        ColBERT.load(model_dir), queries, corpus, candidates, depth=depth, batch_size=batch_size, device=device
    )


def bi_encoder_from(folder, spec, seed: int):
    """A bi-encoder (a TCT student) starting from the encoder of the ColBERT saved in ``folder``; None when the
    folder holds no ColBERT."""
    # torch (the ColBERT model and the bi-encoder): imported when a model is built
    from hardneg.dense.maxsim import is_colbert
    from hardneg.dense.model import BiEncoder

    return BiEncoder.from_encoder(folder, spec, seed=seed) if is_colbert(folder) else None


def build_step(ctx: StepContext):
    from hardneg.methods.colbert.step import ColbertMethod  # torch: imported when training

    negatives = role_negatives(ctx)
    train = ctx.params["train"]
    return ColbertMethod(
        ctx.train,
        ctx.query_texts,
        ctx.doc_texts,
        negatives=negatives,
        per_query=ctx.params["negatives"]["per_query"],
        loss=train["loss"] or "ce",
        temperature=train["temperature"],
        in_batch=ctx.params["colbert"]["in_batch"],
    )


METHOD = Method(
    name="colbert",
    kind=RERANK,
    summary="ColBERT late interaction, re-ranking another run (the TCT-ColBERT teacher)",
    roles={
        "candidates": Role("candidates", description="the run whose ranking of each split this model re-ranks"),
        "negatives": Role(
            "ranking", required=False, description="the run whose training-split ranking gives the negatives (BM25)"
        ),
        "hard_negatives": Role(
            "miner", required=False, description="a dense run whose model mines hard negatives for this run"
        ),
        "init": Role("model", required=False, description="a colbert run whose model this one continues"),
        "bm25": Role(
            "reference_ranking",
            required=False,
            description="a BM25 run, for the overlap column of the hard-negative audit",
        ),
        **MINING_ROLES,
    },
    exclusive_roles=(("negatives", "hard_negatives"),),
    schema=SCHEMA,
    params=ColbertParams,
    training_sections=("model", "train", "negatives", "colbert"),
    build_step=build_step,
    new_model=new_model,
    rerank=rerank,
    bi_encoder_from=bi_encoder_from,
)
