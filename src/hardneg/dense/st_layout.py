"""The sentence-transformers layout of a saved bi-encoder: ``SentenceTransformer(folder)`` loads any model folder
:meth:`hardneg.dense.model.BiEncoder.save` writes, and ``encode_query`` / ``encode_document`` give hardneg's own
query and document vectors.

:func:`write_layout` adds the files sentence-transformers reads to the folder being saved, beside the Hugging
Face folder (the query encoder at the root, a separate document encoder in ``doc_encoder/``) and hardneg's own
files, which stay as they are (``BiEncoder.load`` does not read the new ones). Standard modules express every
setting:

* the encoder: ``Transformer`` (``sentence_bert_config.json``), reading as many tokens of a query and of a
  document as hardneg does (``query_length`` / ``document_length``, :func:`lengths`), without token type ids
  (hardneg passes none: the tokens of a (title, text) pair are all of the first segment);
* ``pooling``: ``Pooling``, its mode and ``include_prompt``;
* the layers of a sentence-transformers folder the model was made of (:mod:`hardneg.dense.st_folder`): ``Dense``
  (with its activation) and ``LayerNorm``, with their weights as trained;
* the projection head: ``Dense`` (identity activation), then ``LayerNorm``;
* ``normalize``: ``Normalize``;
* separate query and document encoders: a ``Router`` with a ``query`` and a ``document`` route (``document``
  when no task is given), each with its encoder (the query encoder is the root folder itself) and its head;
* prompts: the prompts ``query`` / ``document``, the texts the tokenized cache put before each query and
  document, which ``encode_query`` / ``encode_document`` put before them; ``include_prompt: false`` (a folder's
  Pooling that leaves its prompts out) leaves the same tokens out of the pooling as hardneg;
* ColBERT markers: the prompts ``query`` / ``document``, the marker token and a space, which ``encode_query`` /
  ``encode_document`` put before the text, so that the marker follows [CLS]; mean pooling leaves the prompt's
  tokens, [CLS] and the marker, out (``include_prompt: false``), as hardneg's does. The tokenizer saved reads a
  marker in a text as one token (:func:`prompt_tokenizer`);
* query augmentation: ``query_expansion``, queries padded with attended [MASK]s to the markers' fixed length;
* relevance, the inner product: ``similarity_fn_name: dot``.

A document with a title is the pair ``(title, text)``, as hardneg tokenizes it (``encode_document([(title,
text)])``), or the one string ``"title [SEP] text"`` (:func:`pair_separator`: the tokens between the pair's two
segments), which WordPiece tokenizes the same; a document without a title is its text alone (``("", text)`` is
another input). sentence-transformers' standard modules take no ``{"title": ..., "text": ...}`` dict, so the
model card (:mod:`hardneg.dense.model_card`) states this form. ``encode`` without a task reads a text without a
prompt (as a document, in a Router): it gives neither side's vectors when the prompts are not empty. Use
``encode_query`` / ``encode_document``.

Limitations: with query augmentation, sentence-transformers cuts queries at the markers' fixed length (it cannot
cut a query shorter than it pads it), hardneg at the cache's ``query_max_length`` plus the marker, which is
shorter when a run continues a model with a smaller ``query_max_length`` than the model was created with: queries
longer than that keep more tokens. When a (title, text) pair with a marker is cut, the marker counts among the
title's tokens, which changes which of the two loses tokens when both are about as long.

Loading needs sentence-transformers >= 6.0.1 (per-task lengths, query expansion, a Router passing the task to
its encoders), which the layout declares (``requirements``). hardneg itself does not import sentence-transformers:
the layout is JSON files and the head's weights in safetensors.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:
    from torch import nn

    from hardneg.dense.markers import Markers
    from hardneg.dense.model import BiEncoder, Head
    from hardneg.dense.st_modules import DenseLayer, NormLayer

REQUIREMENT = ">=6.0.1"
TRANSFORMER = "sentence_transformers.base.modules.transformer.Transformer"
POOLING = "sentence_transformers.sentence_transformer.modules.pooling.Pooling"
DENSE = "sentence_transformers.base.modules.dense.Dense"
LAYER_NORM = "sentence_transformers.sentence_transformer.modules.layer_norm.LayerNorm"
NORMALIZE = "sentence_transformers.base.modules.normalize.Normalize"
ROUTER = "sentence_transformers.base.modules.router.Router"
IDENTITY = "torch.nn.modules.linear.Identity"
DOC_ENCODER = "doc_encoder"  # the folder of a separate document encoder (BiEncoder.save)


def pair_separator(tokenizer) -> str:
    """The special tokens between the two segments of ``tokenizer``'s pair template, joined by spaces
    (``"[SEP]"`` for BERT's; ``""`` for a tokenizer that puts none there): what joins a document's title and text
    in one string that tokenizes as the pair (title, text) does. ``tokenizer`` is a fast Hugging Face
    tokenizer."""
    encoding = tokenizer.backend_tokenizer.encode("a", "b")
    sequence = encoding.sequence_ids
    first_end = max(i for i, s in enumerate(sequence) if s == 0)
    second_start = min(i for i, s in enumerate(sequence) if s == 1)
    return " ".join(encoding.tokens[first_end + 1 : second_start])


def prompt_tokenizer(tokenizer, markers: Markers | None):
    """The tokenizer to save with a model of ``markers``: one that reads a marker written in a text (the prompts)
    as the marker token. Without markers, or when the markers are special tokens already (the built-in
    vocabulary's ``[Q]`` / ``[D]``), ``tokenizer`` itself; else (a BERT vocabulary's ``[unused0]`` /
    ``[unused1]``, which WordPiece would split into pieces) a copy in which they are special tokens, with the
    same ids. Only a text holding such a token verbatim is tokenized otherwise."""
    if markers is None:
        return tokenizer
    from tokenizers import AddedToken  # tokenizers: imported only where a tokenizer is used

    ids = [markers.query, markers.doc]
    tokens = tokenizer.convert_ids_to_tokens(ids)
    added = tokenizer.added_tokens_decoder
    missing = [token for i, token in zip(ids, tokens) if i not in added or not added[i].special]
    if not missing:
        return tokenizer
    tokenizer = copy.deepcopy(tokenizer)
    tokenizer.add_tokens([AddedToken(token, special=True, normalized=False) for token in missing], special_tokens=True)
    if tokenizer.convert_tokens_to_ids(tokens) != ids:
        raise ValueError(f"the marker tokens {tokens} changed ids when made special tokens")
    return tokenizer


def lengths(model: BiEncoder, encoder: nn.Module) -> dict[str, int | None]:
    """The most tokens of a query and of a document (sentence-transformers' tasks) that ``encoder`` reads in
    hardneg, None where unknown (a model that does not record its cache's lengths: sentence-transformers then
    reads up to the tokenizer's limit).

    Without markers, the cache's ``query_max_length`` / ``doc_max_length``. With markers
    (:meth:`hardneg.dense.markers.Markers.apply`), one token more, the marker; queries at most the markers' fixed
    length (exactly that with augmentation), documents at most the encoder's positions."""
    markers, query, doc = model.markers, model.query_max_length, model.doc_max_length
    if markers is None:
        return {"query": query, "document": doc}
    if markers.augment or query is None:
        query = markers.query_length
    else:
        query = min(query + 1, markers.query_length)
    positions = getattr(encoder.config, "max_position_embeddings", None)
    if doc is not None:
        doc = doc + 1 if positions is None else min(doc + 1, positions)
    else:
        doc = positions
    return {"query": query, "document": doc}


def transformer_config(model: BiEncoder, encoder: nn.Module, tasks: list[str], tokenizer) -> dict:
    """``sentence_bert_config.json`` of ``encoder``, which reads the texts of ``tasks`` (sentence-transformers'
    ``query`` / ``document``; the first is what ``encode`` without a task reads): their lengths
    (:func:`lengths`), the markers' query augmentation when it reads queries, and ``do_lower_case`` when the
    tokenizer lowercases by a step of its own (a folder read with ``do_lower_case``). No token type ids: hardneg
    passes none, so the tokens of a (title, text) pair are all of the first segment."""
    from hardneg.dense.tokenizer import lowercasing_step  # pyarrow: the tokenizer module reads corpora

    length = lengths(model, encoder)
    config: dict = {
        "max_seq_length": length[tasks[0]],
        "do_lower_case": lowercasing_step(tokenizer),
        **{f"{task}_length": length[task] for task in tasks},
        "processing_kwargs": {"text": {"return_token_type_ids": False}},
    }
    markers = model.markers
    if markers is not None and markers.augment and "query" in tasks:
        config["query_expansion"] = {
            "strategy": "fixed",
            "attend": True,
            "length": markers.query_length,
            "token": tokenizer.convert_ids_to_tokens(markers.mask),
        }
    return {key: value for key, value in config.items() if value is not None}


def prompts(model: BiEncoder, tokenizer) -> dict[str, str]:
    """The prompt of each task: the model's (:attr:`BiEncoder.prompts`), or with markers its marker token and a
    space. sentence-transformers measures a marker's prompt as its tokens less the closing [SEP], here [CLS] and
    the marker: the positions hardneg's mean pooling skips (:data:`hardneg.dense.markers.SKIP`), which
    ``include_prompt: false`` leaves out."""
    markers = model.markers
    if markers is None:
        return {"query": model.prompts["query"], "document": model.prompts["doc"]}
    query, doc = tokenizer.convert_ids_to_tokens([markers.query, markers.doc])
    return {"query": f"{query} ", "document": f"{doc} "}


def _write_json(path: Path, data) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2) + "\n")


def _write_pooling(folder: Path, model: BiEncoder) -> None:
    if model.markers is not None:
        # hardneg's mean skips [CLS] and the marker, the prompt's tokens; its CLS pooling reads [CLS] all the same
        include_prompt = model.pooling != "mean"
    else:
        include_prompt = model.include_prompt
    _write_json(
        folder / "config.json",
        {
            "embedding_dimension": model.query_encoder.config.hidden_size,
            "pooling_mode": model.pooling,
            "include_prompt": include_prompt,
        },
    )


def _write_dense(folder: Path, path: str, linear: nn.Linear, activation: str) -> tuple[str, str]:
    """A ``Dense`` module of ``linear`` and ``activation`` (a torch class path) in ``folder/path``."""
    from safetensors.torch import save_file  # safetensors (torch): imported only where weights are read or written

    _write_json(
        folder / path / "config.json",
        {
            "in_features": linear.in_features,
            "out_features": linear.out_features,
            "bias": linear.bias is not None,
            "activation_function": activation,
        },
    )
    save_file(
        {f"linear.{key}": value.detach().cpu().contiguous() for key, value in linear.state_dict().items()},
        str(folder / path / "model.safetensors"),
        metadata={"format": "pt"},
    )
    return path, DENSE


def _write_layer_norm(folder: Path, path: str, norm: nn.LayerNorm) -> tuple[str, str]:
    """A ``LayerNorm`` module of ``norm`` in ``folder/path``."""
    from safetensors.torch import save_file  # safetensors (torch): imported only where weights are read or written

    _write_json(folder / path / "config.json", {"dimension": norm.normalized_shape[0]})
    save_file(
        {f"norm.{key}": value.detach().cpu().contiguous() for key, value in norm.state_dict().items()},
        str(folder / path / "model.safetensors"),
        metadata={"format": "pt"},
    )
    return path, LAYER_NORM


def _write_after_pooling(
    folder: Path, prefix: str, model: BiEncoder, layers: nn.Sequential | None, head: Head | None
) -> list[tuple[str, str]]:
    """The modules after the pooling (module 1): the model's ``layers`` (a folder's ``Dense`` and ``LayerNorm``,
    :attr:`BiEncoder.layers`), then ``head`` as a ``Dense`` (identity activation) and a ``LayerNorm``, in the
    folders ``<prefix><index>_Dense`` / ``<prefix><index>_LayerNorm`` from index 2; their (folder, type)."""
    modules: list[tuple[str, str]] = []
    for config, layer in zip(model.layers, layers if layers is not None else []):
        path = f"{prefix}{2 + len(modules)}_{'Dense' if config['kind'] == 'dense' else 'LayerNorm'}"
        # each layer is the one build_layers made of its config
        modules.append(
            _write_dense(folder, path, cast("DenseLayer", layer).linear, config["activation"])
            if config["kind"] == "dense"
            else _write_layer_norm(folder, path, cast("NormLayer", layer).norm)
        )
    if head is not None:
        modules.append(_write_dense(folder, f"{prefix}{2 + len(modules)}_Dense", head.linear, IDENTITY))
        modules.append(_write_layer_norm(folder, f"{prefix}{2 + len(modules)}_LayerNorm", head.norm))
    return modules


def _write_router(folder: Path, model: BiEncoder, tokenizer) -> None:
    """``router_config.json``: a ``query`` and a ``document`` route, each its encoder (the root folder itself for
    the query encoder), the pooling (one module, shared) and its head; ``document`` when no task is given."""
    pooling = "query_1_Pooling"
    _write_pooling(folder / pooling, model)
    types: dict[str, str] = {}
    routes: dict[str, list[str]] = {}
    doc_head = model.query_head if model.doc_head is None else model.doc_head  # as BiEncoder.encode
    doc_layers = model.query_layers if model.doc_layers is None else model.doc_layers
    assert model.doc_encoder is not None  # a model with one encoder has no router
    for task, encoder, path, layers, head in (
        ("query", model.query_encoder, ".", model.query_layers, model.query_head),
        ("document", model.doc_encoder, DOC_ENCODER, doc_layers, doc_head),
    ):
        _write_json(folder / path / "sentence_bert_config.json", transformer_config(model, encoder, [task], tokenizer))
        modules = [(path, TRANSFORMER), (pooling, POOLING)]
        modules += _write_after_pooling(folder, f"{task}_", model, layers, head)
        types.update(modules)
        routes[task] = [path for path, _ in modules]
    _write_json(
        folder / "router_config.json",
        {
            "types": types,
            "structure": routes,
            "parameters": {"default_route": "document", "allow_empty_key": True, "route_mappings": {}},
        },
    )


def write_layout(folder: str | Path, model: BiEncoder, tokenizer) -> None:
    """Write the sentence-transformers files of ``model`` into ``folder``, the folder ``BiEncoder.save`` is
    writing, which holds the encoders and ``tokenizer`` (:func:`prompt_tokenizer`'s) already: ``modules.json``,
    ``config_sentence_transformers.json``, each encoder's ``sentence_bert_config.json``, the pooling, head and
    normalisation modules, and ``router_config.json`` when the encoders are separate (see the module docstring)."""
    folder = Path(folder)
    _write_json(
        folder / "config_sentence_transformers.json",
        {
            "model_type": "SentenceTransformer",
            "prompts": prompts(model, tokenizer),
            "default_prompt_name": None,
            "similarity_fn_name": "dot",  # hardneg's relevance is the inner product
            "requirements": {
                "sentence_transformers": {
                    "specifier": REQUIREMENT,
                    "reason": "the layout sets per-task lengths and query expansion, also in a Router's encoders",
                }
            },
        },
    )
    if model.shared:
        _write_json(
            folder / "sentence_bert_config.json",
            transformer_config(model, model.query_encoder, ["document", "query"], tokenizer),
        )
        _write_pooling(folder / "1_Pooling", model)
        modules = [("", TRANSFORMER), ("1_Pooling", POOLING)]
        modules += _write_after_pooling(folder, "", model, model.query_layers, model.query_head)
    else:
        _write_router(folder, model, tokenizer)
        modules = [("", ROUTER)]
    if model.normalize:
        path = f"{len(modules)}_Normalize"
        _write_json(
            folder / path / "config.json",
            {"module_input_name": "sentence_embedding", "module_output_name": "sentence_embedding"},
        )
        modules.append((path, NORMALIZE))
    _write_json(
        folder / "modules.json",
        [{"idx": i, "name": str(i), "path": path, "type": kind} for i, (path, kind) in enumerate(modules)],
    )
