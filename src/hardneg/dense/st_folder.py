"""A sentence-transformers model folder read as its authors saved it, and the ``params.model`` keys it settles.

A folder with ``modules.json`` is a sentence-transformers model. hardneg reads, in the order ``modules.json``
lists them:

* ``Transformer``, first and at the folder's root: the encoder and tokenizer hardneg loads as for any Hugging
  Face folder; its ``sentence_bert_config.json`` gives the most tokens the model reads (``max_seq_length``, else
  the tokenizer's ``model_max_length``, at most the encoder's positions) and ``do_lower_case``;
* ``Pooling``: one mode of :data:`POOLING_MODES` and ``include_prompt`` (``1_Pooling/config.json``; the old
  ``pooling_mode_*_token`` keys too);
* ``Dense`` (a linear layer, with or without bias, then its activation, a ``torch.nn`` class: ``Tanh`` when the
  folder names none, as sentence-transformers) and ``LayerNorm`` modules after the pooling, in order;
* ``Normalize``: L2 normalisation.

Another module (a ``Router``, static embeddings, a ``Transformer`` in a sub-folder...) is an error naming it when
a bi-encoder is built of the folder (:meth:`SentenceTransformerFolder.layers`).

``config_sentence_transformers.json`` gives the prompts and the similarity function. The prompt of each side is
the one sentence-transformers' ``encode_query`` / ``encode_document`` mean: ``query``, and the first of
``document``, ``passage``, ``corpus`` that is not empty (:data:`DOCUMENT_PROMPT_NAMES`, encode_document's
candidates); ``default_prompt_name`` is not read (those two calls do not use it). sentence-transformers 6 gives
every model an empty ``document`` prompt, which then comes first among those candidates: for a folder whose
document prompt is named ``passage`` or ``corpus``, hardneg's document vectors are
``encode_document(docs, prompt_name="passage")``'s (a folder hardneg saves names it ``document``).

:func:`resolve_model` settles the keys a run's ``params.model`` leaves to the folder:

* ``pooling: auto``: the folder's Pooling mode; ``mean`` for a folder without ``modules.json`` and the built-in
  model;
* ``normalize: auto``: true when the folder has a ``Normalize`` module or names ``cosine`` as its similarity
  function (hardneg ranks by the inner product, which is the cosine of normalised vectors); false for a folder
  without either (``dot``, or no similarity named: the vectors are compared as they are); true for a folder
  without ``modules.json`` and the built-in model;
* ``query_prompt`` / ``doc_prompt`` null: the folder's prompt of that side; none (``""``) for a folder without
  ``modules.json`` and the built-in model.

Documents: hardneg reads a document with a title as the pair (title, text), without token type ids
(:mod:`hardneg.dense.tokenized`). sentence-transformers gives a pair token type ids unless told otherwise, so for
a folder hardneg did not save, hardneg's document vectors are ``encode_document([(title, text)],
processing_kwargs={"text": {"return_token_type_ids": False}})``, or, with a WordPiece tokenizer and a document
that is not cut, ``encode_document(["title [SEP] text"])``; a document without a title is its text alone. A folder
hardneg saves reads pairs without token type ids (:mod:`hardneg.dense.st_layout`): plain ``(title, text)``.

This module reads JSON files only (no torch): the workflow's plan reads the prompts of a run's tokenized cache
with it. A hub name is read from the Hugging Face cache or downloaded, where a job loads the model, never while
the workflow plans (:func:`cache_prompts`).
"""

from __future__ import annotations

import functools
import json
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hardneg.dense.pretrained import model_source
from hardneg.errors import ConfigError

log = logging.getLogger(__name__)

BUILTIN = "builtin"
MODULES = "modules.json"
ST_CONFIG = "config_sentence_transformers.json"
TRANSFORMER_CONFIG = "sentence_bert_config.json"
POOLING_MODES = ("cls", "mean", "max", "lasttoken", "weightedmean", "mean_sqrt_len_tokens")
# the Pooling config's keys before sentence-transformers 5.x named one mode (pooling_mode)
_OLD_POOLING_KEYS = {
    "pooling_mode_cls_token": "cls",
    "pooling_mode_max_tokens": "max",
    "pooling_mode_mean_tokens": "mean",
    "pooling_mode_mean_sqrt_len_tokens": "mean_sqrt_len_tokens",
    "pooling_mode_weightedmean_tokens": "weightedmean",
    "pooling_mode_lasttoken": "lasttoken",
}
DOCUMENT_PROMPT_NAMES = ("document", "passage", "corpus")  # encode_document's candidates, in its order
TANH = "torch.nn.modules.activation.Tanh"  # a Dense module's activation when its config names none
EMBEDDING = "sentence_embedding"  # the feature the modules after the pooling read and write
DEFAULT_POOLING = "mean"  # pooling: auto of a folder without modules.json, and of the built-in model
DEFAULT_NORMALIZE = True  # normalize: auto likewise


@dataclass(frozen=True)
class Layer:
    """A module after the pooling: ``kind`` ``dense`` (``in_features`` → ``out_features``, ``bias``, then
    ``activation``, a ``torch.nn`` class path) or ``layer_norm`` (over ``out_features``); ``path`` its folder
    (relative to the model folder), holding ``model.safetensors`` or ``pytorch_model.bin``."""

    kind: str
    path: str
    in_features: int
    out_features: int
    bias: bool = True
    activation: str | None = None

    def to_json(self) -> dict:
        return {
            "kind": self.kind,
            "in_features": self.in_features,
            "out_features": self.out_features,
            "bias": self.bias,
            "activation": self.activation,
        }


@dataclass(frozen=True)
class SentenceTransformerFolder:
    """What a sentence-transformers folder says (see the module docstring). ``modules``: (path, class name)
    of every module of ``modules.json``; ``pooling`` None when there is no Pooling module, else its mode (a
    tuple when it names several)."""

    location: str
    modules: tuple
    transformer: dict = field(default_factory=dict)
    pooling: str | tuple | None = None
    include_prompt: bool = True
    normalize: bool = False
    prompts: dict = field(default_factory=dict)
    similarity: str | None = None
    max_seq_length: int | None = None
    hub: bool = False  # location is a hub name

    def prompt(self, side: str) -> str:
        """The prompt of ``side`` (``query`` or ``doc``): the one ``encode_query`` / ``encode_document`` mean
        (see the module docstring)."""
        names = ("query",) if side == "query" else DOCUMENT_PROMPT_NAMES
        return next((self.prompts[name] for name in names if self.prompts.get(name)), "")

    def layers(self, where: str = "params.model.name") -> list[Layer]:
        """The modules after the pooling (``Dense``, ``LayerNorm``), in order; a ConfigError naming ``where``
        for a module a bi-encoder cannot hold, or modules out of the order Transformer, Pooling, the layers,
        Normalize."""
        kinds = [kind for _, kind in self.modules]
        if not kinds or kinds[0] != "Transformer" or self.modules[0][0] not in ("", "."):
            raise ConfigError(
                where,
                f"{self.location}: the first module of {MODULES} is not a Transformer at the "
                "folder's root, the only encoder hardneg reads",
            )
        layers, stage = [], 0  # stage: 0 before the Pooling, 1 after it, 2 after Normalize
        for path, kind in self.modules[1:]:
            if kind == "Pooling" and stage == 0:
                stage = 1
            elif kind in ("Dense", "LayerNorm") and stage == 1:
                layers.append(self._layer(path, kind, where))
            elif kind == "Normalize" and stage == 1:
                stage = 2
            else:
                raise ConfigError(
                    where,
                    f"{self.location}: module {path or '.'!r} of {MODULES} ({kind}) is not one "
                    "a hardneg bi-encoder holds there: it reads a Transformer, a Pooling, "
                    "Dense and LayerNorm modules, then Normalize, in that order",
                )
        if stage == 0:
            raise ConfigError(where, f"{self.location}: {MODULES} has no Pooling module")
        return layers

    def _layer(self, path: str, kind: str, where: str) -> Layer:
        config = _read_json(self.location, f"{path}/config.json", where, hub=self.hub) or {}
        if kind == "LayerNorm":
            return Layer("layer_norm", path, config["dimension"], config["dimension"])
        names = {config.get("module_input_name", EMBEDDING), config.get("module_output_name") or EMBEDDING}
        if names != {EMBEDDING}:
            raise ConfigError(
                where,
                f"{self.location}: Dense module {path!r} reads or writes {sorted(names)}, not the sentence embedding",
            )
        activation = config.get("activation_function") or TANH
        if not activation.startswith("torch.nn."):
            raise ConfigError(
                where,
                f"{self.location}: Dense module {path!r} names the activation {activation!r}; "
                "hardneg builds torch.nn classes only",
            )
        return Layer(
            "dense", path, config["in_features"], config["out_features"], bool(config.get("bias", True)), activation
        )


def _local(name: str, where: str = "params.model.name") -> str | None:
    """The local folder of a model name (a folder, or a packaged model's), or None for a hub name; ConfigError
    naming ``where`` for a packaged model that is not installed."""
    location = model_source(name, where=where)
    return location if os.path.isdir(location) else None


def _hub_file(name: str, relative: str) -> str | None:
    """A file of hub model ``name`` from the Hugging Face cache, else downloaded; None when the model has no such
    file, or when it cannot be had (no network: the model is then read as a plain Hugging Face model, said in
    the log)."""
    # huggingface_hub: imported only where a hub model is read
    from huggingface_hub import hf_hub_download, try_to_load_from_cache
    from huggingface_hub.errors import EntryNotFoundError

    cached = try_to_load_from_cache(name, relative)
    if isinstance(cached, str):
        return cached
    if cached is not None:  # the cache knows the file does not exist
        return None
    try:
        return hf_hub_download(name, relative)
    except EntryNotFoundError:
        return None
    except Exception as exc:  # noqa: BLE001 - no network, an unknown repository: as AutoModel will say
        log.warning("cannot read %s of %s (%s): read as a plain Hugging Face model", relative, name, exc)
        return None


def _read_json(location: str, relative: str, where: str, *, hub: bool = False) -> Any:
    """A JSON file of the model at ``location`` (a folder, or a hub name with ``hub``), as ``json.loads`` reads it
    (an object; a list for ``modules.json``); None when absent."""
    path = _hub_file(location, relative) if hub else os.path.join(location, relative)
    if path is None or not os.path.isfile(path):
        return None
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except ValueError as exc:
        raise ConfigError(where, f"{location}: {relative} is not valid JSON ({exc})") from None


def _pooling(config: dict) -> str | tuple:
    mode = config.get("pooling_mode")
    if mode is None:
        modes = tuple(value for key, value in _OLD_POOLING_KEYS.items() if config.get(key))
        mode = modes or ("mean",)
    if isinstance(mode, (list, tuple)):
        mode = mode[0] if len(mode) == 1 else tuple(mode)
    return mode


def _class_name(kind: str) -> str:
    return str(kind).rsplit(".", 1)[-1]


def _max_seq_length(location: str, transformer: dict, where: str, hub: bool) -> int | None:
    """The most tokens the folder's model reads: ``max_seq_length``, else the tokenizer's ``model_max_length``;
    at most the encoder's ``max_position_embeddings``."""
    length = transformer.get("max_seq_length")
    if length is None:
        tokenizer = _read_json(location, "tokenizer_config.json", where, hub=hub) or {}
        limit = tokenizer.get("model_max_length")
        length = limit if isinstance(limit, int) and 0 < limit < 1_000_000 else None
    positions = (_read_json(location, "config.json", where, hub=hub) or {}).get("max_position_embeddings")
    if isinstance(positions, int) and positions > 0:
        length = positions if length is None else min(length, positions)
    return length


def read_folder(
    location: str, *, where: str = "params.model.name", hub: bool = False
) -> SentenceTransformerFolder | None:
    """The sentence-transformers folder at ``location`` (a hub name with ``hub``), or None when it has no
    ``modules.json`` (a plain Hugging Face folder). ConfigError naming ``where`` for a file that is not JSON."""
    modules = _read_json(location, MODULES, where, hub=hub)
    if modules is None:
        return None
    if not isinstance(modules, list) or not all(isinstance(m, dict) and "type" in m for m in modules):
        raise ConfigError(where, f"{location}: {MODULES} is not a list of modules with their type")
    listed = tuple(
        (str(m.get("path", "")), _class_name(m["type"])) for m in sorted(modules, key=lambda m: m.get("idx", 0))
    )
    transformer: dict = {}
    if listed[0][1] == "Transformer":
        transformer = _read_json(location, os.path.join(listed[0][0], TRANSFORMER_CONFIG), where, hub=hub) or {}
    pooling, include_prompt = None, True
    for path, kind in listed:
        if kind == "Pooling":
            config = _read_json(location, f"{path}/config.json", where, hub=hub) or {}
            pooling, include_prompt = _pooling(config), bool(config.get("include_prompt", True))
            break
    config = _read_json(location, ST_CONFIG, where, hub=hub) or {}
    prompts = config.get("prompts") or {}
    if not isinstance(prompts, dict) or not all(isinstance(v, (str, type(None))) for v in prompts.values()):
        raise ConfigError(where, f"{location}: the prompts of {ST_CONFIG} are not a mapping of names to texts")
    return SentenceTransformerFolder(
        location=location,
        modules=listed,
        transformer=transformer,
        pooling=pooling,
        include_prompt=include_prompt,
        normalize=any(kind == "Normalize" for _, kind in listed),
        prompts=dict(prompts),
        similarity=config.get("similarity_fn_name"),
        max_seq_length=_max_seq_length(location, transformer, where, hub),
        hub=hub,
    )


def folder_file(folder: SentenceTransformerFolder, relative: str) -> str | None:
    """The path of file ``relative`` of ``folder`` (downloaded for a hub model), None when it has none."""
    if folder.hub:
        return _hub_file(folder.location, relative)
    path = os.path.join(folder.location, relative)
    return path if os.path.isfile(path) else None


@functools.lru_cache(maxsize=32)
def _local_folder(location: str, where: str) -> SentenceTransformerFolder | None:
    return read_folder(location, where=where)


def model_folder(
    name: str, *, where: str = "params.model.name", download: bool = True
) -> SentenceTransformerFolder | None:
    """The sentence-transformers folder ``params.model.name`` names, or None: the built-in model, a folder
    without ``modules.json``, or (without ``download``) a hub name."""
    if name == BUILTIN:
        return None
    local = _local(name, where)
    if local is not None:
        return _local_folder(local, where)
    return read_folder(name, where=where, hub=True) if download else None


def resolve_model(section: dict, *, where: str = "params.model", download: bool = True) -> dict:
    """``section`` (a run's validated ``params.model``) with ``pooling: auto``, ``normalize: auto`` and null
    prompts settled (see the module docstring); the other keys as they are. ConfigError naming
    ``<where>.<key>`` for a folder's pooling hardneg has not, or ColBERT markers with a prompt."""
    folder = model_folder(section["name"], where=f"{where}.name", download=download)
    out = dict(section)
    if out.get("pooling") == "auto":
        mode = DEFAULT_POOLING if folder is None or folder.pooling is None else folder.pooling
        if mode not in POOLING_MODES:
            assert folder is not None  # the default pooling is one of them
            raise ConfigError(
                f"{where}.pooling",
                f"the pooling of {folder.location} ({mode}) is not one hardneg "
                f"has ({', '.join(POOLING_MODES)}): set one",
            )
        out["pooling"] = mode
    if out.get("normalize") == "auto":
        out["normalize"] = DEFAULT_NORMALIZE if folder is None else (folder.normalize or folder.similarity == "cosine")
    for key, side in (("query_prompt", "query"), ("doc_prompt", "doc")):
        if out.get(key) is None and key in out:
            out[key] = folder.prompt(side) if folder is not None else ""
    if out.get("markers") and (out.get("query_prompt") or out.get("doc_prompt")):
        raise ConfigError(
            f"{where}.markers",
            "ColBERT markers take the place of prompts: set query_prompt and "
            'doc_prompt to "" (the model\'s folder has prompts), or markers: false',
        )
    return out


def cache_prompts(section: dict, *, where: str = "params.model") -> tuple[str | None, str | None]:
    """The (query, document) prompts a run's tokenized cache holds, as far as the workflow's plan knows them
    without downloading: the config's, else the folder's (none for the built-in model); None for a hub model's
    own prompt, which the job tokenizing the cache reads (:func:`folder_prompts`)."""
    known = section["name"] == BUILTIN or _local(section["name"], f"{where}.name") is not None
    folder = model_folder(section["name"], where=f"{where}.name", download=False) if known else None
    prompts = []
    for key, side in (("query_prompt", "query"), ("doc_prompt", "doc")):
        value = section.get(key)
        if value is None and known:
            value = folder.prompt(side) if folder is not None else ""
        prompts.append(value)
    return prompts[0], prompts[1]


def folder_prompts(name: str) -> dict[str, str]:
    """The prompts ``{"query": ..., "doc": ...}`` of the model ``name`` names (none for a folder without
    ``modules.json``, the built-in model, or a tokenizer folder)."""
    folder = model_folder(str(name))
    return {side: folder.prompt(side) if folder is not None else "" for side in ("query", "doc")}
