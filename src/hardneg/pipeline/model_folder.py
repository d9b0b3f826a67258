"""A run's model folder as the training stage saves it (:mod:`hardneg.pipeline.train`): the model, with the
document side of the index it searches when it trained against another run's fixed documents, and its model card
(:mod:`hardneg.dense.model_card`)."""

from __future__ import annotations

import os
from pathlib import Path

from hardneg import methods
from hardneg.dense.model import BiEncoder
from hardneg.dense.model_card import CardFacts, write_model_card
from hardneg.io.layout import RESULTS
from hardneg.pipeline.resolution import continued_run
from hardneg.schema.files import config_hash


def _name(value):
    """A run or dataset as a name: the training slice names it, a whole resolved config nests its config; an
    imported list (``{imported: <folder>}``, no run) is named by its folder."""
    if isinstance(value, dict) and "imported" in value:
        return f"{value['imported']} (imported list)"
    return value.get("name") if isinstance(value, dict) else value


def _input_names(resolved: dict) -> dict:
    return {
        role: [_name(v) for v in value] if isinstance(value, list) else _name(value)
        for role, value in resolved.get("inputs", {}).items()
    }


def _continued(resolved: dict) -> tuple[str, str, str] | None:
    """(role, run, what the role provides) of the run whose model run ``resolved`` starts from, or None."""
    name = resolved.get("name", "")
    continued = continued_run({name: {"method": resolved["method"], "inputs": _input_names(resolved)}}, name)
    if continued is None:
        return None
    role, run = continued
    return role, run, methods.get(resolved["method"]).roles[role].provides


def documents_as_indexed(model, resolved: dict, init_model: str | os.PathLike | None) -> None:
    """Give ``model`` the document side of ``init_model`` when run ``resolved`` trained against the fixed
    document embeddings of the run it started from (a ``doc_index`` input: ADORE, whose training moves the query
    side only): that run's document encoder and head encoded those embeddings, so the saved model (and its
    sentence-transformers ``encode_document``) encodes documents as the index the run searches holds them.

    :param model: the trained model (a :class:`BiEncoder`; any other model is left as it is).
    :param resolved: the run's training slice (``name``, ``method``, ``inputs``).
    :param init_model: the folder of the model the run started from (its ``init`` input).
    """
    continued = _continued(resolved)
    if not isinstance(model, BiEncoder) or init_model is None or continued is None or continued[2] != "doc_index":
        return
    fixed = BiEncoder.load(init_model)
    model.doc_encoder = fixed.query_encoder if fixed.shared else fixed.doc_encoder
    model.doc_head = fixed.query_head if fixed.doc_head is None else fixed.doc_head
    model.doc_layers = fixed.query_layers if fixed.doc_layers is None else fixed.doc_layers
    model.doc_max_length = fixed.doc_max_length  # the length those documents were cut at


def results_folder(model_dir: str | os.PathLike, run: str) -> str:
    """The results folder holding ``model_dir`` when it is run ``run``'s model folder (``<results>/<run>/model``);
    else the default, ``results`` (a model saved outside the workflow's layout)."""
    parts, tail = Path(model_dir).parts, (*Path(run).parts, "model")
    if len(parts) > len(tail) and parts[-len(tail) :] == tail:
        return Path(*parts[: -len(tail)]).as_posix()
    return RESULTS


def card_facts(resolved: dict, train=None, results: str = RESULTS, kept: dict | None = None) -> CardFacts:
    """What the model card of run ``resolved`` says.

    :param resolved: the run's training slice, as the training rule passes it (``name``, ``method``, ``seed``,
        ``dataset``, ``inputs``, ``params``): what its hash covers.
    :param train: the training rows (:class:`hardneg.dense.data.TrainQueries`); None for a model saved untrained.
    :param results: the results folder the run writes to.
    :param kept: the training's record of the model kept (:meth:`hardneg.dense.model_selection.ModelSelection.record`).
    :returns: the card's facts.
    """
    method, params = methods.get(resolved["method"]), resolved["params"]
    model, settings = params.get("model", {}), params.get("train", {})
    continued = _continued(resolved)
    builtin = None
    if model.get("name") == "builtin":
        builtin = {**model.get("builtin", {}), "vocab_size": model.get("vocab_size")}
    return CardFacts(
        run=resolved.get("name", ""),
        method=resolved["method"],
        summary=method.summary,
        base_model=str(model.get("name", "")),
        seed=resolved.get("seed"),
        dataset=_name(resolved.get("dataset")),
        split=settings.get("split"),
        training_hash=config_hash(resolved),
        builtin=builtin,
        training_queries=None if train is None else train.num_queries,
        training_rows=None if train is None else len(train),
        training=None
        if train is None
        else {key: settings.get(key) for key in ("epochs", "batch_size", "learning_rate")},
        starts_from=continued[1] if continued else None,
        documents_of=continued[1] if continued and continued[2] == "doc_index" else None,
        inputs=_input_names(resolved),
        results=results,
        kept=kept,
    )


def save_run_model(
    model,
    tokenizer,
    model_dir: str | os.PathLike,
    resolved: dict,
    *,
    init_model: str | os.PathLike | None = None,
    train=None,
    kept: dict | None = None,
) -> None:
    """Save a run's model to ``model_dir`` (atomically, as the model's ``save`` does) with its model card
    ``README.md``; a model trained against fixed documents gets their document side first
    (:func:`documents_as_indexed`).

    :param model: the model to save (its ``save(folder, tokenizer)``), on the CPU.
    :param tokenizer: the tokenizer saved with it.
    :param model_dir: the run's model folder.
    :param resolved: the run's training slice.
    :param init_model: the folder of the model the run started from, if any.
    :param train: the training rows; None for a model saved untrained.
    :param kept: which step's model it is (the training's record of ``train.keep``), for the card.
    """
    documents_as_indexed(model, resolved, init_model)
    model.save(model_dir, tokenizer)
    write_model_card(model_dir, card_facts(resolved, train, results_folder(model_dir, resolved.get("name", "")), kept))
