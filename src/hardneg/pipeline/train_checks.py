"""The checks a training job runs on held-out queries, beside the trainer's steps: the dev evaluation
(:class:`hardneg.dense.dev_eval.DevEvaluation`, every ``train.dev_every`` steps, over dev candidates or the whole
corpus), the model selection it feeds (:class:`hardneg.dense.model_selection.ModelSelection`) and, for a
bi-encoder, the memorisation check at the last step (:class:`hardneg.dense.memorisation.MemorisationCheck`),
which re-ranks candidates from the same sources as the dev evaluation's. :func:`held_out_checks` builds them as
the trainer's events; the document vectors of a step are encoded once for both."""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field

import numpy as np

from hardneg import methods
from hardneg.dense.backbone import BUILTIN, ModelSpec
from hardneg.dense.dev_candidates import DocumentVectors, build_candidates, corpus_vectors
from hardneg.dense.dev_eval import DevEvaluation, dev_inputs
from hardneg.dense.memorisation import MemorisationCheck
from hardneg.dense.model_selection import ModelSelection
from hardneg.dense.tokenized import TokenizedTexts
from hardneg.dense.train_config import TrainConfig, resolve_device

log = logging.getLogger(__name__)


@dataclass
class HeldOutChecks:
    """The trainer's events of :func:`held_out_checks` (``events``, in the order they run) and the two whose
    results the job reads after training: the ``selection`` (which step to keep) and the ``memorisation`` check
    (None for a model that is not a bi-encoder)."""

    selection: ModelSelection
    memorisation: MemorisationCheck | None
    events: list = field(default_factory=list)


def held_out_checks(
    resolved: dict,
    config: TrainConfig,
    spec: ModelSpec,
    model,
    doc_texts: TokenizedTexts,
    inputs: dict,
    *,
    cache_dir,
    qrels_path,
) -> HeldOutChecks:
    """The dev evaluation (when ``train.dev_every`` is set), the model selection and the memorisation check of run
    ``resolved`` training ``model`` (its starting model) over ``doc_texts``, with the job's ``inputs``."""
    events: list = []
    dev, source = None, {}
    vectors = DocumentVectors(doc_texts)  # the step's document vectors, shared by the dev and memorisation checks
    if config.dev_every:
        candidates = None
        # a run searching another run's fixed documents (a doc_index role: ADORE) is evaluated against them
        if config.dev_search != "corpus" and "doc_embeddings" not in inputs:
            source = model_source(spec, inputs, model, doc_texts, config)
            queries = TokenizedTexts(cache_dir, dev_inputs(cache_dir, qrels_path, config.dev_split)[0])
            candidates = dev_candidates(queries, np.arange(len(queries)), doc_texts, inputs, "dev", config, source)
        dev = DevEvaluation.from_split(
            cache_dir,
            qrels_path,
            config.dev_split,
            config.dev_every,
            doc_embeddings=inputs.get("doc_embeddings"),
            search=config.dev_search,
            candidates=candidates,
            vectors=vectors,
        )
        events.append(dev)
    selection = ModelSelection(config.select_by)
    events.append(selection)
    memorisation = None
    if methods.get(resolved["method"]).new_model is None:  # a bi-encoder (not a ColBERT teacher or a Condenser)
        memorisation = MemorisationCheck.from_splits(
            cache_dir,
            qrels_path,
            config.split,
            config.dev_split,
            seed=config.seed,
            doc_embeddings=inputs.get("doc_embeddings"),
            vectors=vectors,
        )
        if dev is not None and dev.candidates is not None:  # the same sources for the training sample
            sample = dev_candidates(
                memorisation.train.queries, memorisation.train.rows, doc_texts, inputs, "train", config, source
            )
            heldout = memorisation.heldout.rows if memorisation.heldout is not None else np.zeros(0, np.int64)
            memorisation.candidates = np.union1d(
                dev.candidates.restricted(heldout).documents(), sample.documents() if sample is not None else []
            )
        events.append(memorisation)
    return HeldOutChecks(selection=selection, memorisation=memorisation, events=events)


def model_source(spec: ModelSpec, inputs: dict, model, corpus: TokenizedTexts, config: TrainConfig) -> dict:
    """The starting model as a source of dev candidates when no ranking of it is an input: a pre-trained encoder
    named by ``params.model``, with the corpus encoded once with it (``model`` and ``model_vectors`` of
    :func:`hardneg.dense.dev_candidates.build_candidates`); nothing for a model continued from a run (a retriever's
    rankings are inputs; a pre-trained backbone such as a Condenser's ranks nothing yet) or initialised at random."""
    if "init" in inputs or spec.name == BUILTIN:
        return {}
    vectors = corpus_vectors(model, corpus, device=resolve_device(config.device), precision=config.precision)
    return {"model": model, "model_vectors": vectors}


def dev_candidates(
    queries: TokenizedTexts,
    rows,
    corpus: TokenizedTexts,
    inputs: dict,
    split_key: str,
    config: TrainConfig,
    source: dict,
):
    """The dev candidates (:mod:`hardneg.dense.dev_candidates`) of ``rows`` of ``queries`` from the rankings of
    ``split_key`` among ``inputs`` (``dev_lexical``, ``dev_init``, ``train_lexical``, ``train_init``) and the
    starting model's ``source`` (:func:`model_source`)."""
    rankings = {
        f"{os.fspath(inputs[key])}": inputs[key]
        for key in (f"{split_key}_lexical", f"{split_key}_init")
        if key in inputs
    }
    candidates = build_candidates(
        queries,
        rows,
        corpus,
        rankings=rankings,
        depth=config.dev_depth,
        device=resolve_device(config.device),
        precision=config.precision,
        **source,
    )
    if candidates is None:
        log.info(
            "no source of dev candidates (no BM25 run of the dataset, a model initialised at random): the "
            "%s queries are searched in the whole corpus",
            split_key,
        )
    else:
        log.info("dev candidates of the %s queries: %s", split_key, candidates.describe())
    return candidates
