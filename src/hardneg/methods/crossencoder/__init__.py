"""A cross-encoder re-ranker: monoBERT (Nogueira and Cho, "Passage Re-ranking with BERT", 2019), the model RocketQA
(Qu et al., NAACL 2021) trains to denoise hard negatives.

The query and a document are read together, ``[CLS] query [SEP] title [SEP] text [SEP]``, by one BERT (the built-in
model of ``params.model``, or a pretrained one such as ``minilm``, whose encoder weights it starts from), and a
linear head on ``[CLS]`` gives one logit; ``sigmoid(logit)`` is the probability that the document is relevant.
Each training query brings its positive and ``negatives.per_query`` negatives, sampled from a ranking's top
``negatives.depth`` (``inputs.negatives``: BM25, as monoBERT's training triples) or from the list a dense run mines
(``inputs.hard_negatives``); with neither, from random corpus documents. It is also scored against the positives of
``crossencoder.in_batch`` other rows of its batch: every positive is then a negative too, so that being a training
positive (a property of the document alone) is not a label by itself (a document that is nobody's positive still
appears only as a negative: see :class:`~hardneg.methods.crossencoder.step.CrossEncoderStep`). The
loss (``crossencoder.loss``) is

* ``bce``: binary cross-entropy on each pair, positive 1, negatives 0 (monoBERT's pointwise loss): the sigmoid is
  a probability, which RocketQA's denoising thresholds (a mined "negative" the cross-encoder scores as relevant is
  likely an unlabelled positive, and is dropped);
* ``listwise``: softmax cross-entropy of the positive among its negatives (as Tevatron's re-ranker trains):
  logits that rank, without a probability scale.

The run ranks by re-ranking another run's top ``rerank.depth`` of each split (``inputs.candidates``), the logit as
the score. Besides the workflow, :func:`hardneg.methods.crossencoder.scoring.score_pairs` scores any (query,
document) pairs with probabilities (the method's ``score_pairs``, which a mining run's ``cross_encoder`` role
calls on its candidate pool; a teacher's scores for exports) and
:func:`hardneg.methods.crossencoder.scoring.score_pairs_stage` does it for a pairs file from raw texts.

A cross-encoder is usually fine-tuned from a pretrained model. Trained from scratch (the built-in model) it learns
through attention alone which words the query and the document share, and learns first which documents were
training positives; ``crossencoder.exact_match`` marks the shared tokens in its input (MarkedBERT), so that it
matches words from its first steps, and ``crossencoder.soft_match`` marks each token by how near its input
embedding comes to the other text's words (DRMM's matching signals), so that an encoder whose token vectors know
related words (a dense run's, via ``inputs.init``) matches synonyms too (see the method's page).

Pairs are joined from the tokenized cache's rows (each text cut at its own maximum length) rather than tokenized
again as pairs: see :mod:`hardneg.methods.crossencoder.model`.

A pretrained cross-encoder with its own head (``params.model.name`` a sentence-transformers ``CrossEncoder`` folder
or a Hugging Face sequence-classification folder with one label, which the folder's ``config.json`` says) keeps
its head and activation: no head is drawn, no marks are added, and its pairs are formed from the raw texts as
sentence-transformers forms them (:mod:`hardneg.methods.crossencoder.pretrained`). With ``train.epochs: 0`` it
re-ranks and scores pools as it is.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from hardneg.dense.data import RandomNegatives
from hardneg.dense.pretrained import PACKAGED, model_source
from hardneg.dense.tokenizer import BUILTIN
from hardneg.errors import ConfigError
from hardneg.methods.contrastive import role_negatives
from hardneg.methods.registry import MINING_ROLES, RERANK, Method, Role, StepContext
from hardneg.methods.reranking import RERANK_SCHEMA, RerankSection
from hardneg.mining.negatives import MINING_SCHEMA, MiningParams


@dataclass(frozen=True)
class CrossEncoderSection:
    loss: str
    in_batch: int
    exact_match: bool
    soft_match: int


@dataclass(frozen=True)
class CrossEncoderParams:
    crossencoder: CrossEncoderSection
    rerank: RerankSection
    mining: MiningParams


SCHEMA = {
    "crossencoder": {
        "type": "object",
        "additionalProperties": False,
        "default": {},
        "description": "the cross-encoder's training (params.train.loss and temperature are not read)",
        "properties": {
            "loss": {
                "enum": ["bce", "listwise"],
                "default": "bce",
                "description": "bce: binary cross-entropy of each (query, document) pair, the positive 1 and its "
                "negatives 0, so that sigmoid(logit) is a probability of relevance; listwise: "
                "softmax cross-entropy of the positive among its negatives",
            },
            "in_batch": {
                "type": "integer",
                "minimum": 0,
                "default": 1,
                "description": "each query is also scored against the positives of this many other rows of "
                "its batch, as negatives: every positive is then a negative too, so that a "
                "document's being a training positive is not a label by itself (0: only "
                "negatives.per_query)",
            },
            "exact_match": {
                "type": "boolean",
                "default": False,
                "description": "mark the tokens that occur in both texts of the pair: a learnt vector "
                "(zero at first) is added to the input embedding of every query token "
                "found in the document and every document token found in the query, "
                "as MarkedBERT's exact-match marks (Boualili et al., SIGIR 2020). A model "
                "trained from scratch then matches words from its first steps, instead "
                "of learning to through attention alone (not with a pretrained "
                "cross-encoder's own head, which reads its input as it was trained to)",
            },
            "soft_match": {
                "type": "integer",
                "minimum": 0,
                "default": 0,
                "description": "bins of soft-match marks (0: none): every content token is also marked "
                "by the cosine between its input embedding and the nearest content "
                "token's of the other text, in this many equal bins over (0, 1], each a "
                "learnt vector (zero at first), as DRMM's matching histograms (Guo et "
                "al., CIKM 2016). Useful when the encoder's token vectors already place "
                "related words together: a dense run's encoder (inputs.init) or a "
                "pretrained encoder; a built-in model from scratch has random ones (not "
                "with a pretrained cross-encoder's own head)",
            },
        },
    },
    "rerank": RERANK_SCHEMA,
    "mining": MINING_SCHEMA,
}


def _model_folder(model_name: str) -> tuple[dict | None, bool]:
    """``params.model.name``'s ``config.json`` when it is a local folder with one (None otherwise: the built-in
    model, a packaged one, a hub name), and whether it may be a hub name (not checked here: checking is offline)."""
    # the model folder's reader: kept out of the DAG's build (the registry imports every method)
    from hardneg.methods.crossencoder.folder import local_config

    if model_name == BUILTIN or model_name in PACKAGED:  # encoders without a head
        return None, False
    return local_config(model_name), not os.path.exists(model_name)


def _check_pretrained(name: str, params: dict, model_name: str, config: dict) -> None:
    """A pretrained cross-encoder folder: one label, an activation read as a probability, no match marks."""
    # the model folder's reader: kept out of the DAG's build (the registry imports every method)
    from hardneg.methods.crossencoder.folder import folder_activation, label_count

    if label_count(config) != 1:
        raise ConfigError(
            f"runs.{name}.params.model.name",
            f"{model_name} is a sequence-classification model with {label_count(config)} labels; a "
            f"cross-encoder scoring relevance has one (its logit)",
        )
    try:
        folder_activation(model_name, config)
    except ValueError as error:
        raise ConfigError(f"runs.{name}.params.model.name", str(error)) from None
    section = params.get("crossencoder", {})
    _no_marks(name, model_name, {key: section.get(key) for key in ("exact_match", "soft_match")})


def _no_marks(name: str, model_name: str, marks: dict) -> None:
    """A ConfigError naming the first match mark set (``marks``: exact_match, soft_match) of run ``name``, whose
    model is a pretrained cross-encoder with its own head."""
    for key, value in marks.items():
        if value:
            raise ConfigError(
                f"runs.{name}.params.crossencoder.{key}",
                f"{model_name} is a pretrained cross-encoder with its own head, which reads its input "
                f"as it was trained to; match marks are for a cross-encoder trained here: leave "
                f"{key} out",
            )


def check(name: str, run: dict) -> None:
    """What the schema cannot say: a cross-encoder learns from negatives, and its loss is its own section's; a
    pretrained cross-encoder folder has one label and takes no match marks; a run that does not train
    (``train.epochs: 0``) starts from a model with a head (a pretrained cross-encoder, or ``inputs.init``)."""
    # the model folder's reader: kept out of the DAG's build (the registry imports every method)
    from hardneg.methods.crossencoder.folder import has_head

    params = run.get("params", {})
    model_name = str(params.get("model", {}).get("name", "builtin"))
    config, hub_name = _model_folder(model_name)
    with_head = config is not None and has_head(config)
    if config is not None and with_head:
        _check_pretrained(name, params, model_name, config)
    if params.get("train", {}).get("epochs") == 0 and not (with_head or hub_name or run.get("inputs", {}).get("init")):
        raise ConfigError(
            f"runs.{name}.params.train.epochs",
            f"epochs 0 uses the model as it is, and {model_name} is no cross-encoder with its head: "
            f"this run's head would be drawn at random. Name a pretrained cross-encoder folder (a "
            f"sequence-classification model with one label) as params.model.name, or train it",
        )
    if params.get("negatives", {}).get("per_query", 1) + params.get("crossencoder", {}).get("in_batch", 1) < 1:
        raise ConfigError(
            f"runs.{name}.params.negatives.per_query",
            "a cross-encoder learns to tell each positive from its negatives: set negatives.per_query "
            "or crossencoder.in_batch to 1 at least",
        )
    if params.get("train", {}).get("loss") is not None:
        raise ConfigError(
            f"runs.{name}.params.train.loss",
            "a crossencoder run's loss is params.crossencoder.loss (bce or listwise); leave this null",
        )


def new_model(spec, tokenizer, resolved: dict, init):
    # torch: imported only where a model or tensor is used
    from hardneg.methods.crossencoder.folder import is_pretrained
    from hardneg.methods.crossencoder.model import CrossEncoder, is_crossencoder

    section = resolved["params"]["crossencoder"]
    marks = {"exact_match": section["exact_match"], "soft_match": section["soft_match"]}
    if init is None:
        pretrained = _pretrained_source(spec)
        if pretrained is not None:
            return _pretrained(pretrained, spec, resolved, marks)
        return CrossEncoder.create(spec, tokenizer=tokenizer, seed=resolved["seed"], **marks)
    if is_pretrained(init):
        return _pretrained(init, spec, resolved, marks)
    if not is_crossencoder(init):  # a dense run's model: its (query) encoder starts this one, with a new head
        return CrossEncoder.from_encoder(init, spec, seed=resolved["seed"], **marks)
    model = CrossEncoder.load(init)
    if model.match is None:
        if marks["exact_match"] or marks["soft_match"]:
            model.add_marks(**marks)
    elif {"exact_match": model.exact_match, "soft_match": model.soft_match} != marks:
        raise ValueError(
            f"{init}: this cross-encoder was trained with exact_match: "
            f"{str(model.exact_match).lower()} and soft_match: {model.soft_match}; a run continuing it "
            f"sets the same params.crossencoder keys (this run: exact_match: "
            f"{str(marks['exact_match']).lower()}, soft_match: {marks['soft_match']})"
        )
    # the lengths of this run's tokenized cache, which a continued run may set
    model.query_max_length, model.doc_max_length = spec.query_max_length, spec.doc_max_length
    return model


def _pretrained_source(spec) -> str | None:
    """The folder or hub name of ``params.model`` when it is a cross-encoder with its own head (what its
    ``config.json`` says), else None (the built-in model, or an encoder that gets a new head)."""
    # the model folder's reader: kept out of the DAG's build (the registry imports every method)
    from hardneg.methods.crossencoder.folder import source_has_head

    if spec.name == BUILTIN:
        return None
    source = model_source(spec.name)
    return source if source_has_head(source) else None


def _pretrained(source, spec, resolved: dict, marks: dict):
    """The pretrained cross-encoder of ``source`` with its head, for run ``resolved``: no match marks, and
    trained further only where joining the tokenized cache's rows gives its tokenizer's pairs."""
    # torch: imported only where a model is loaded
    from hardneg.methods.crossencoder.pretrained import PretrainedCrossEncoder, cache_pairs_match

    name = resolved.get("name", "<run>")
    _no_marks(name, source, marks)
    try:
        model = PretrainedCrossEncoder.load(
            source, query_max_length=spec.query_max_length, doc_max_length=spec.doc_max_length
        )
    except ValueError as error:
        raise ConfigError(f"runs.{name}.params.model.name", str(error)) from None
    if resolved["params"]["train"]["epochs"] and not cache_pairs_match(model.tokenizer):
        raise ConfigError(
            f"runs.{name}.params.train.epochs",
            f"{source}'s tokenizer puts more than one token between a pair's two texts, and training "
            f"joins the tokenized cache's rows with one: set epochs to 0 to use it as it is",
        )
    return model


def rerank(model_dir, queries, corpus, candidates, *, depth: int, batch_size: int, device: str):
    """The trained cross-encoder's re-ranking of each query's top-``depth`` candidates, best first; ``score`` is
    the logit."""
    from hardneg.methods.crossencoder.pretrained import load_model  # torch: imported when re-ranking
    from hardneg.methods.crossencoder.scoring import rerank as cross_rerank

    return cross_rerank(
        load_model(model_dir), queries, corpus, candidates, depth=depth, batch_size=batch_size, device=device
    )


def score_pairs(model_dir, queries, corpus, pairs, *, batch_size: int = 64, device: str = "cpu"):
    """Probabilities of relevance (float32, in [0, 1], one per row of ``pairs``, in their order) of the (qid,
    docid) pairs of a table, by the cross-encoder saved in ``model_dir``, over tokenized queries and corpus: see
    :func:`hardneg.methods.crossencoder.scoring.score_pairs`."""
    from hardneg.methods.crossencoder.scoring import score_pairs as probabilities  # torch: imported when scoring

    return probabilities(model_dir, queries, corpus, pairs, batch_size=batch_size, device=device)


def build_step(ctx: StepContext):
    from hardneg.methods.crossencoder.step import CrossEncoderStep  # torch: imported when training

    negatives = role_negatives(ctx) or RandomNegatives(ctx.train)
    section = ctx.params["crossencoder"]
    return CrossEncoderStep(
        ctx.train,
        ctx.query_texts,
        ctx.doc_texts,
        negatives=negatives,
        per_query=ctx.params["negatives"]["per_query"],
        loss=section["loss"],
        in_batch=section["in_batch"],
    )


METHOD = Method(
    name="crossencoder",
    kind=RERANK,
    summary="a cross-encoder (monoBERT) re-ranking another run; its probabilities denoise hard negatives (RocketQA)",
    roles={
        "candidates": Role("candidates", description="the run whose ranking of each split this model re-ranks"),
        "negatives": Role(
            "ranking", required=False, description="the run whose training-split ranking gives the negatives (BM25)"
        ),
        "hard_negatives": Role(
            "miner", required=False, description="a dense run whose model mines hard negatives for this run"
        ),
        "init": Role(
            "model",
            required=False,
            description="a crossencoder run whose model this one continues, or a dense run whose "
            "encoder starts this one's (a new head)",
        ),
        "bm25": Role(
            "reference_ranking",
            required=False,
            description="a BM25 run, for the overlap column of the hard-negative audit",
        ),
        **MINING_ROLES,
    },
    exclusive_roles=(("negatives", "hard_negatives"),),
    schema=SCHEMA,
    params=CrossEncoderParams,
    training_sections=("model", "train", "negatives", "crossencoder"),
    build_step=build_step,
    new_model=new_model,
    rerank=rerank,
    check=check,
    score_pairs=score_pairs,
)
