"""The encoder a model is built on (its backbone), and the spec it is built from: :class:`ModelSpec` (a run's
``params.model``), a fresh backbone built from it (:func:`build_backbone`: the built-in BERT or a pretrained
model, seeded), the spec's lengths checked against what a pretrained model reads
(:func:`warn_beyond_folder_length`), and a backbone saved as a Hugging Face model folder (:func:`save_encoder`).

The bi-encoder (:class:`hardneg.dense.model.BiEncoder`), ColBERT (:mod:`hardneg.dense.maxsim`), the
cross-encoder and Condenser's pre-training all build their backbones here, so each reads the same
``params.model`` keys and gets the same weights from the same spec and seed.
"""

from __future__ import annotations

import logging
import os
from dataclasses import asdict, dataclass, fields
from typing import TYPE_CHECKING

import torch
from torch import nn

from hardneg.dense import st_folder
from hardneg.dense.pretrained import model_source
from hardneg.schema.values import section_values

if TYPE_CHECKING:
    from transformers import PreTrainedModel

log = logging.getLogger(__name__)

BUILTIN = "builtin"


@dataclass(frozen=True)
class ModelSpec:
    """How to build a fresh bi-encoder: exactly the keys of a run's ``params.model`` section (see the schema,
    ``$defs/dense_params/properties/model``, for their meaning and defaults; there is no second copy here).

    ``name``: ``builtin`` (a small BERT built from the ``builtin`` config, for the built-in WordPiece tokenizer),
    a local folder, or a hub name. ``vocab_size`` sizes the built-in tokenizer the workflow trains; the model
    takes its vocabulary size from the tokenizer it is given. The max lengths are those of the tokenized cache.
    ``pooling``, ``normalize`` and the prompts are settled (:func:`hardneg.dense.st_folder.resolve_model`: no
    ``auto``, no null prompt).
    """

    name: str
    pooling: str
    projection_dim: int | None
    shared: bool
    normalize: bool
    markers: bool
    query_augmentation: bool
    vocab_size: int
    builtin: dict
    query_max_length: int
    doc_max_length: int
    query_prompt: str
    doc_prompt: str

    @classmethod
    def from_params(cls, section: dict, *, where: str = "params.model") -> ModelSpec:
        """From a validated ``params.model`` section, the keys it leaves to the model's folder settled
        (:func:`hardneg.dense.st_folder.resolve_model`, which reads the folder); ``ConfigError`` naming
        ``<where>.<key>`` for an unknown or a missing key (:func:`hardneg.pipeline.config.validate_params` fills a
        hand-written section's defaults)."""
        values = section_values(section, [f.name for f in fields(cls)], where)
        return cls(**st_folder.resolve_model(values, where=where))


def build_backbone(spec: ModelSpec, vocab_size: int, pad_token_id: int, max_length: int, seed: int) -> PreTrainedModel:
    """The encoder of a fresh bi-encoder. Every weight it initialises comes from ``seed``: all of them for the
    built-in BERT, and for a pretrained model those its checkpoint lacks (Hugging Face initialises them at
    random), so the same spec and seed give the same weights."""
    # transformers: imported only where a model or tokenizer is used
    from transformers import AutoModel, BertConfig, BertModel

    torch.manual_seed(seed)
    if spec.name == BUILTIN:
        config = BertConfig(
            vocab_size=vocab_size,
            pad_token_id=pad_token_id,
            max_position_embeddings=max(512, max_length),
            **spec.builtin,
        )
        return BertModel(config, add_pooling_layer=False)
    return AutoModel.from_pretrained(model_source(spec.name))


def save_encoder(encoder: PreTrainedModel, folder: str | os.PathLike) -> None:
    """``encoder.save_pretrained(folder)``, with the pooler its class builds by default saved as zeros when the
    encoder has none.

    The bi-encoder never reads a backbone's pooler and drops it (:class:`hardneg.dense.model.BiEncoder`), and the
    built-in BERT is built without one, but ``AutoModel.from_pretrained(folder)`` (and sentence-transformers, which
    loads through it) builds the class's default model, with a pooler: a folder without its weights would load
    with a randomly drawn pooler and a warning that they are missing. Zeros are the same in every save, so a saved
    model depends on its training only, and they say what the pooler is worth here: its output is the same for
    every text (BERT's: tanh(0) = 0); hardneg's vectors are the bi-encoder's own pooling, never the pooler's."""
    pooler = None
    if getattr(encoder, "pooler", False) is None:  # the class has a pooler slot, left empty
        with torch.device("meta"):  # the class's default model, as AutoModel builds it, without drawing a weight
            default = type(encoder)(encoder.config)
        default_pooler = getattr(default, "pooler", None)
        if isinstance(default_pooler, nn.Module):
            weight = next(encoder.parameters())
            pooler = default_pooler.to_empty(device=weight.device).to(weight.dtype)
            for tensor in pooler.parameters():
                nn.init.zeros_(tensor)
    if pooler is None:
        encoder.save_pretrained(folder)
        return
    encoder.pooler = pooler
    try:
        encoder.save_pretrained(folder)
    finally:
        encoder.pooler = None  # type: ignore[assignment]  # torch types __setattr__ without None, an empty slot


def warn_beyond_folder_length(spec: ModelSpec, folder: st_folder.SentenceTransformerFolder | None) -> None:
    """Say so when the cache's lengths exceed the most tokens the folder's model reads (its ``max_seq_length``):
    hardneg reads as many as the config says, the model's authors trained it on fewer."""
    limit = folder.max_seq_length if folder is not None else None
    for key in ("query_max_length", "doc_max_length"):
        if limit is not None and getattr(spec, key) > limit:
            log.warning(
                "params.model.%s (%d) is more than the %d tokens %s reads (its max_seq_length)",
                key,
                getattr(spec, key),
                limit,
                spec.name,
            )


__all__ = ["BUILTIN", "ModelSpec", "asdict", "build_backbone", "save_encoder", "warn_beyond_folder_length"]
