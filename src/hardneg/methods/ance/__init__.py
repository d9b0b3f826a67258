"""ANCE (Xiong et al., ICLR 2021): a bi-encoder trained on negatives retrieved from the whole corpus by the model
being trained, from an index rebuilt every ``steps_per_episode`` optimiser steps while training goes on.

The run trains in ``episodes`` (:mod:`hardneg.pipeline.episodes`): episode e continues episode e − 1 (episode 0 the
warm-up, ``inputs.init``) on hard negatives mined from the index of checkpoint e − 1 − ``lag`` (before the first
episode: the warm-up's, or ``inputs.negatives``). Each training row pairs a query's positive with negatives drawn
uniformly from its mined list (top ``mining.depth``, positives removed by id); the loss is the negative
log-likelihood of the positive among them (softmax cross-entropy), without the batch's other documents.
"""

from __future__ import annotations

from dataclasses import dataclass

from hardneg.methods.contrastive import TRAINING_SECTIONS, contrastive_step, mined_negatives
from hardneg.methods.registry import DENSE, Episodes, Method, Role, StepContext
from hardneg.mining.negatives import MINING_SCHEMA, MiningParams


@dataclass(frozen=True)
class AnceSection:
    """``params.ance``: the episodes and the asynchronous gap."""

    episodes: int
    steps_per_episode: int
    lag: int


@dataclass(frozen=True)
class AnceParams:
    ance: AnceSection
    mining: MiningParams


SCHEMA = {
    "ance": {
        "type": "object",
        "additionalProperties": False,
        "default": {},
        "description": "training in episodes, each on negatives from an index of an earlier checkpoint",
        "properties": {
            "episodes": {
                "type": "integer",
                "minimum": 1,
                "default": 4,
                "description": "episodes (index refreshes + 1); each is a training job of its own",
            },
            "steps_per_episode": {
                "type": "integer",
                "minimum": 1,
                "default": 10000,
                "description": "optimiser steps between index refreshes (the paper: 10k batches)",
            },
            "lag": {
                "type": "integer",
                "minimum": 0,
                "default": 1,
                "description": "episode e trains on negatives of checkpoint e - 1 - lag: 1 is the paper's "
                "asynchronous Inferencer (training e and encoding e - 1 run at the same time), "
                "0 a synchronous refresh",
            },
        },
    },
    "mining": MINING_SCHEMA,
}


def episodes(params: dict) -> Episodes:
    section = params["ance"]
    return Episodes(count=section["episodes"], steps=section["steps_per_episode"], lag=section["lag"])


def build_step(ctx: StepContext):
    return contrastive_step(ctx, mined_negatives(ctx), "ce", in_batch=False)


METHOD = Method(
    name="ance",
    kind=DENSE,
    summary="negatives from an index of the model's own earlier checkpoint, refreshed between episodes (ANCE)",
    roles={
        "init": Role("model", description="the warm-up run (BM25 negatives) the first episode continues"),
        "negatives": Role(
            "miner",
            required=False,
            description="the dense run mining the first episodes' negatives (default: inputs.init); "
            "later episodes' negatives are mined by the run's own checkpoints",
        ),
        "bm25": Role(
            "reference_ranking",
            required=False,
            description="a BM25 run, for the overlap column of each episode's hard-negative audit",
        ),
    },
    schema=SCHEMA,
    params=AnceParams,
    training_sections=(*TRAINING_SECTIONS, "ance"),
    build_step=build_step,
    episodes=episodes,
    speed_reference="ANCE",
    grad_cache=True,
)
