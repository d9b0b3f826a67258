"""Condenser pre-training (Gao and Callan, EMNLP 2021), with coCondenser's span-pair loss (ACL 2022) as an option.

A ``condenser`` run pre-trains its encoder (``params.model``: the built-in BERT or a pretrained folder, or the
model of ``inputs.init``) on the corpus of its dataset: the backbone's layers are split into early and late ones,
and a small head (``condenser.head_layers`` transformer layers) sees the late [CLS] vector with the early token
states, so that masked-language modelling through the head forces the [CLS] vector to condense the text. The
backbone keeps its own MLM loss. With ``condenser.contrastive``, two random spans of each document are encoded and
the late [CLS] vectors of the batch's spans are trained with an in-batch contrastive loss (each span's partner is
its positive). Batches are of corpus documents, not training queries.

The head is dropped afterwards: ``results/<run>/model`` is the backbone as a bi-encoder folder (pooling and
normalisation of ``params.model``) that any run continues with ``inputs.init`` (or loads with ``params.model.name``
and ``AutoModel.from_pretrained``). Being a dense run, it is also encoded and evaluated as it is, zero-shot.
See :mod:`hardneg.methods.condenser.pretraining` (the model and its loss) and
:mod:`hardneg.methods.condenser.step` (the batches of documents or spans and their MLM masking).
"""

from __future__ import annotations

from dataclasses import dataclass

from hardneg.dense.data import ShuffledBatches
from hardneg.errors import ConfigError
from hardneg.methods.condenser.params import CondenserSection
from hardneg.methods.registry import DENSE, Method, Role, StepContext


@dataclass(frozen=True)
class CondenserParams:
    condenser: CondenserSection


SECTION_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "default": {},
    "description": "Condenser pre-training: early/late split, the head, MLM and coCondenser's span-pair loss",
    "properties": {
        "early_layers": {
            "type": ["integer", "null"],
            "minimum": 1,
            "default": None,
            "description": "backbone layers before the head's short circuit (null: half of them, "
            "rounded down, at least 1); the backbone needs at least 2 layers",
        },
        "head_layers": {
            "type": "integer",
            "minimum": 1,
            "default": 2,
            "description": "transformer layers of the Condenser head (dropped after pre-training)",
        },
        "mlm_probability": {
            "type": "number",
            "exclusiveMinimum": 0,
            "maximum": 1,
            "default": 0.15,
            "description": "share of tokens masked (BERT's 80/10/10 replacement)",
        },
        "contrastive": {
            "type": "boolean",
            "default": False,
            "description": "add coCondenser's in-batch contrastive loss over two random spans of "
            "each document (late [CLS] vectors)",
        },
        "contrastive_weight": {
            "type": "number",
            "minimum": 0,
            "default": 1.0,
            "description": "weight of the contrastive loss beside the two MLM losses",
        },
        "temperature": {
            "type": "number",
            "exclusiveMinimum": 0,
            "default": 1.0,
            "description": "span-pair scores (raw dot products) are divided by it",
        },
        "span_min": {
            "type": "number",
            "exclusiveMinimum": 0,
            "maximum": 1,
            "default": 0.1,
            "description": "shortest span, as a share of the document's tokens (at least one token)",
        },
        "span_max": {
            "type": "number",
            "exclusiveMinimum": 0,
            "maximum": 1,
            "default": 0.5,
            "description": "longest span, as a share of the document's tokens",
        },
    },
}
SCHEMA = {"condenser": SECTION_SCHEMA}


def _section(params: dict) -> CondenserSection:
    return CondenserSection(**params["condenser"])


def check(name: str, run: dict) -> None:
    section = run["params"]["condenser"]
    if section["span_min"] > section["span_max"]:
        raise ConfigError(
            f"runs.{name}.params.condenser.span_min", f"{section['span_min']} is above span_max ({section['span_max']})"
        )
    layers = run["params"]["model"]["builtin"]["num_hidden_layers"]
    if run["params"]["model"]["name"] == "builtin" and "init" not in run.get("inputs", {}):
        if layers < 2:
            raise ConfigError(
                f"runs.{name}.params.model.builtin.num_hidden_layers",
                "Condenser splits the backbone into early and late layers: it needs at least 2",
            )
        if section["early_layers"] is not None and section["early_layers"] >= layers:
            raise ConfigError(
                f"runs.{name}.params.condenser.early_layers",
                f"{section['early_layers']} leaves no late layer of the built-in model's {layers}",
            )


def new_model(spec, tokenizer, resolved: dict, init):
    from hardneg.methods.condenser.pretraining import new_condenser  # torch: imported when a model is built

    return new_condenser(spec, tokenizer, _section(resolved["params"]), resolved["seed"], init)


def build_step(ctx: StepContext):
    from hardneg.methods.condenser.step import build_condenser_step  # torch: imported when training

    return build_condenser_step(ctx.doc_texts, ctx.tokenizer, _section(ctx.params))


def build_sampler(ctx: StepContext, config):
    return ShuffledBatches(len(ctx.doc_texts), config.batch_size, config.seed)  # batches of corpus documents


METHOD = Method(
    name="condenser",
    kind=DENSE,
    summary="Condenser pre-training on the corpus (MLM through a head over late [CLS] + early tokens; coCondenser)",
    roles={"init": Role("model", required=False, description="a dense run whose model is pre-trained further")},
    schema=SCHEMA,
    params=CondenserParams,
    training_sections=("model", "train", "condenser"),
    build_step=build_step,
    new_model=new_model,
    build_sampler=build_sampler,
    check=check,
)
