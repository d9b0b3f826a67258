"""What a pretrained cross-encoder's folder says beside its weights, read as sentence-transformers reads it
(:func:`read_folder`), from its JSON files alone: no model is loaded, nor torch imported (checking a config
reads them).

* the model: ``config.json`` of a ``...ForSequenceClassification`` architecture with one label (its
  ``id2label``); a folder with more labels is refused;
* the activation of the one logit: ``activation_fn`` of ``config_sentence_transformers.json``, else of
  ``config.json``'s ``sentence_transformers`` entry, else its ``sbert_ce_default_activation_function`` (the
  key of sentence-transformers before 4.0), else the sigmoid. The sigmoid and the identity (ms-marco's
  cross-encoders saved that one: their ``predict`` gives logits) are taken; another activation is refused, as
  its output is no probability of relevance;
* the pair's length: ``max_seq_length`` of ``sentence_bert_config.json`` where it is given, else the
  tokenizer's ``model_max_length`` capped at the model's positions;
* the prompt: the one ``default_prompt_name`` names in ``config_sentence_transformers.json``, put before the
  query (none when unnamed).

The folder is a local one, or a hub name whose files are downloaded where the hub is reachable.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

META = "crossencoder.json"  # hardneg's own file in a saved cross-encoder's folder
HEAD = "pretrained"  # crossencoder.json's "head" of a model with its own head
SIGMOID = "torch.nn.modules.activation.Sigmoid"
IDENTITY = "torch.nn.modules.linear.Identity"
ACTIVATIONS = {"Sigmoid": SIGMOID, "Identity": IDENTITY}  # class name → the dotted path saved
ST_CONFIG = "config_sentence_transformers.json"
ST_MODULE = "sentence_bert_config.json"


def _json(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


def folder_json(source: str | os.PathLike, name: str) -> dict:
    """The JSON file ``name`` of a model folder, or of a hub model (downloaded where the hub is reachable); ``{}``
    when the model has no such file."""
    if Path(str(source)).is_dir():
        return _json(Path(str(source)) / name)
    # the hub: imported only where a hub name is read
    from huggingface_hub import hf_hub_download
    from huggingface_hub.errors import RemoteEntryNotFoundError

    try:
        return _json(Path(hf_hub_download(str(source), name)))
    except RemoteEntryNotFoundError:  # the model has no such file (an unreachable hub is an error)
        return {}


def local_config(source: str | os.PathLike) -> dict | None:
    """The ``config.json`` of a local model folder, None when ``source`` is no folder with one (a hub name)."""
    path = Path(str(source)) / "config.json"
    return _json(path) if path.is_file() else None


def has_head(config: dict) -> bool:
    """Whether a model's ``config.json`` is a sequence-classification model's: a cross-encoder with its head."""
    return any(str(name).endswith("ForSequenceClassification") for name in config.get("architectures") or [])


def label_count(config: dict) -> int:
    """The labels of a sequence-classification ``config.json``: its ``id2label`` entries (``num_labels`` or
    Hugging Face's default of 2 without them)."""
    return len(config["id2label"]) if config.get("id2label") else int(config.get("num_labels", 2))


def folder_activation(source: str | os.PathLike, config: dict) -> str:
    """The dotted path of the activation sentence-transformers applies to the logit of the model at ``source``
    (see the module docstring), one of :data:`ACTIVATIONS`'s; ValueError naming the model for another."""
    path = (
        folder_json(source, ST_CONFIG).get("activation_fn")
        or (config.get("sentence_transformers") or {}).get("activation_fn")
        or config.get("sbert_ce_default_activation_function")
        or SIGMOID
    )
    name = str(path).rsplit(".", 1)[-1]
    if not str(path).startswith("torch.") or name not in ACTIVATIONS:
        raise ValueError(
            f"{source}: the cross-encoder's activation is {path}; hardneg reads its logit as a "
            f"probability of relevance through a sigmoid, so it takes folders whose activation is "
            f"{' or '.join(ACTIVATIONS)}"
        )
    return ACTIVATIONS[name]


def read_folder(source: str | os.PathLike) -> dict:
    """What a cross-encoder folder says beside its weights: ``activation`` (a dotted path), ``prompts`` and
    ``default_prompt_name`` (sentence-transformers'), ``max_seq_length`` (None when not given).

    :raises ValueError: the folder's model is not a sequence-classification model with one label, or its
        activation is not taken (see the module docstring)."""
    config = folder_json(source, "config.json")
    if not has_head(config):
        raise ValueError(
            f"{source}: not a cross-encoder with its head (config.json's architectures "
            f"{config.get('architectures')} has no ...ForSequenceClassification)"
        )
    if label_count(config) != 1:
        raise ValueError(
            f"{source}: a cross-encoder scoring relevance has one label; this one has {label_count(config)}"
        )
    st_config = folder_json(source, ST_CONFIG)
    return {
        "activation": folder_activation(source, config),
        "prompts": dict(st_config.get("prompts") or {}),
        "default_prompt_name": st_config.get("default_prompt_name"),
        "max_seq_length": folder_json(source, ST_MODULE).get("max_seq_length"),
    }


def is_pretrained(folder: str | os.PathLike) -> bool:
    """Whether ``folder`` holds a cross-encoder with its own head that hardneg saved
    (:meth:`hardneg.methods.crossencoder.pretrained.PretrainedCrossEncoder.save`)."""
    return _json(Path(folder) / META).get("head") == HEAD


def source_has_head(source: str | os.PathLike) -> bool:
    """Whether the model ``params.model.name`` names (a local folder, or a hub name: its ``config.json`` is read
    from the hub) is a sequence-classification model: a cross-encoder with its head."""
    return has_head(folder_json(source, "config.json"))


__all__ = [
    "HEAD",
    "META",
    "folder_activation",
    "folder_json",
    "has_head",
    "is_pretrained",
    "label_count",
    "local_config",
    "read_folder",
    "source_has_head",
]
