"""The model card of a run's model folder: ``README.md`` beside the weights (the Hugging Face convention), written
when training saves the model (:mod:`hardneg.pipeline.train`).

It names the base model, the method, the training data (dataset, split, number of queries), the training hash
(of what training read), the metrics or the file that will hold them, and how to load the folder with
sentence-transformers and with transformers, documents given as the (title, text) pair the model was trained on:
which sentence-transformers call gives which side's vectors (``encode_query`` the queries', ``encode_document``
the documents'; plain ``encode`` neither when the sides differ), and the prompts the model reads. That usage, the
line on the calls and the "How to load" section with its recipes, is written by :mod:`hardneg.dense.card_usage`;
this module holds the facts and writes the rest of the card.

The facts it is written from (:class:`CardFacts`) are kept in its YAML front matter under ``hardneg:``, so that
:func:`refresh_model_card` writes it again with the run's metrics, which the workflow measures after the model is
saved (``hardneg export index`` does, in the copy it exports). A card holds no time and no absolute path: the
same training configuration gives the same card.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

import yaml

from hardneg.dense.card_usage import how_to_load, which_call
from hardneg.dense.st_layout import DOC_ENCODER, pair_separator
from hardneg.io.atomic import write_text
from hardneg.io.layout import RESULTS, Layout
from hardneg.io.text import markdown_table

CARD = "README.md"
BUILTIN = "builtin"
LOCAL = "…/"  # the start of an absolute folder's last two parts (CardFacts.base_model)
# short names of packaged models (hardneg.dense.pretrained) → their Hugging Face hub id
HUB_IDS = {"minilm": "sentence-transformers/all-MiniLM-L6-v2"}
_FRONT = re.compile(r"\A---\n(.*?)\n---\n", re.S)


@dataclass(frozen=True)
class CardFacts:
    """What a model card says of a run's model, from the configuration training read.

    :param run: the run's name.
    :param method: the run's method; ``summary`` its one-line description (the method registry's).
    :param base_model: ``params.model.name``: ``builtin``, a packaged model's short name, a folder or a hub name;
        an absolute folder is kept as its last two parts (``…/parent/name``), not where it lies on this machine.
    :param builtin: for the built-in model, its ``params.model.builtin`` settings and ``vocab_size``.
    :param seed: the run's seed.
    :param dataset: the dataset's name; ``split`` the training split.
    :param training_queries: training queries with a relevant document; None for a model saved untrained.
    :param training_rows: training rows per epoch (one per query, or per judgement).
    :param training: ``epochs``, ``batch_size`` and ``learning_rate`` of ``params.train``.
    :param starts_from: the run whose model this one continues (its ``init`` or ``doc_index`` input), if any.
    :param documents_of: for a run searching another run's fixed document embeddings (a ``doc_index`` input:
        ADORE), that run: its document encoder is this folder's.
    :param inputs: the run's inputs, role → run name(s).
    :param training_hash: SHA-256 of the part of the run's configuration training read (its training slice,
        :func:`hardneg.schema.files.config_hash` of it), which decides whether the model is trained again; the
        run's ``config_hash`` (``metrics.json``, ``hardneg check-config``) hashes the whole resolved run.
    :param results: the results folder the run writes to (its config's ``results``): where the card finds the
        run's model and metrics.
    :param kept: which step's model this is (``train.keep``): ``keep``, ``step``, ``steps``, and after a dev
        evaluation ``measure``, ``value`` (the kept step's), ``last_value`` and ``best_step``.
    """

    run: str
    method: str
    summary: str
    base_model: str
    seed: int | None
    dataset: str | None
    split: str | None
    training_hash: str
    builtin: dict | None = None
    training_queries: int | None = None
    training_rows: int | None = None
    training: dict | None = None
    starts_from: str | None = None
    documents_of: str | None = None
    inputs: dict = field(default_factory=dict)
    results: str = RESULTS
    kept: dict | None = None

    def __post_init__(self):
        if os.path.isabs(self.base_model):
            object.__setattr__(self, "base_model", f"{LOCAL}{'/'.join(Path(self.base_model).parts[-2:])}")

    @classmethod
    def from_json(cls, data: dict) -> CardFacts:
        names = {f.name for f in fields(cls)}
        if "config_hash" in data and "training_hash" not in data:  # a card written before the hash was so named
            data = {**data, "training_hash": data["config_hash"]}
        return cls(**{key: value for key, value in data.items() if key in names})


# ---------------------------------------------------------------------------------------------------- facts
def _base_model(facts: CardFacts) -> str:
    name = facts.base_model
    if name == BUILTIN:
        b = facts.builtin or {}
        layers = b.get("num_hidden_layers")
        return (
            f"hardneg's built-in BERT ({layers} layer{'s' if layers != 1 else ''}, hidden size "
            f"{b.get('hidden_size')}, {b.get('num_attention_heads')} attention heads), initialised at random "
            f"(no pretraining), with a WordPiece vocabulary of {b.get('vocab_size')} tokens built from the corpus"
        )
    if name in HUB_IDS:
        return f"`{HUB_IDS[name]}` (hardneg's packaged copy, `{name}`)"
    if name.startswith(LOCAL):
        return f"the local folder `{name}`"
    return f"`{name}`"


def _hub_id(name: str) -> str | None:
    """The hub id of a base model, for the card's metadata: None for the built-in model and local folders."""
    if name in HUB_IDS:
        return HUB_IDS[name]
    if name == BUILTIN or os.path.isdir(name) or not re.fullmatch(r"[\w.-]+/[\w.-]+", name):
        return None
    return name


def _cell(text: str) -> str:
    """``text`` as one cell of a Markdown table: its bars escaped."""
    return text.replace("|", "\\|")


def _runs(value) -> str:
    return ", ".join(f"`{v}`" for v in ([value] if isinstance(value, str) else value))


def _facts_table(facts: CardFacts) -> list[str]:
    rows = [
        ("run", f"`{facts.run}`"),
        ("method", f"`{facts.method}`: {facts.summary}"),
        ("base model", _base_model(facts)),
    ]
    if facts.starts_from:
        rows.append(("starts from", f"the model of run `{facts.starts_from}`"))
    if facts.inputs:
        rows.append(("inputs", "; ".join(f"{role}: {_runs(runs)}" for role, runs in facts.inputs.items())))
    dataset = f"dataset `{facts.dataset}`" if facts.dataset else "the dataset"
    if facts.training_queries is None:
        rows.append(("training data", f"none: this run evaluates the model as it is on {dataset}"))
    else:
        rows.append(
            (
                "training data",
                f"{dataset}, split `{facts.split}`: {facts.training_queries} queries with a "
                f"relevant document ({facts.training_rows} training rows per epoch)",
            )
        )
    if facts.training:
        t = facts.training
        rows.append(
            (
                "training",
                f"{t.get('epochs')} epoch(s), batches of {t.get('batch_size')}, learning rate "
                f"{t.get('learning_rate')}, seed {facts.seed}",
            )
        )
    if facts.kept:
        rows.append(("checkpoint kept", _kept(facts.kept)))
    rows.append(
        (
            "training hash",
            f"`{facts.training_hash}` (SHA-256 of the configuration training read: method, "
            "seed, dataset, inputs and training parameters; the run's config hash, in "
            "metrics.json, covers the whole run)",
        )
    )
    # Written by hand, not with markdown_table: its header of two empty cells would be "|  |  |", and the cards of
    # saved models keep their bytes ("| | |").
    return ["| | |", "|---|---|", *(f"| {key} | {_cell(value)} |" for key, value in rows)]


def _kept(kept: dict) -> str:
    """Which step's model a card describes, in words."""
    step, steps = kept["step"], kept["steps"]
    if "measure" not in kept:
        return f"the last step's ({steps})"
    measure, value, last = kept["measure"], kept["value"], kept["last_value"]
    if kept["keep"] == "best":
        return f"step {step} of {steps}, the best dev {measure} ({value:.4f}; the last evaluated step's {last:.4f})"
    return f"the last step's ({steps}; dev {measure} {last:.4f}; the best evaluated step was {kept['best_step']})"


# ------------------------------------------------------------------------------------------- the model
def _read_json(path: Path) -> dict | None:
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def _describe_bi_encoder(meta: dict, facts: CardFacts, separator: str) -> list[str]:
    """The bullet points of the card's "The model" section."""
    pooling: dict[str | None, str] = {
        "cls": "the first token's ([CLS]) hidden state",
        "mean": "the mean of the tokens' hidden states",
    }
    if meta.get("shared", True):
        lines = ["- **Encoders**: one, this folder's, reads queries and documents."]
    else:
        lines = [
            f"- **Encoders**: queries are read by this folder's encoder, documents by the one in `{DOC_ENCODER}/`."
        ]
    if facts.documents_of:
        lines[-1] += (
            f" Only the query encoder was trained: the document encoder is run `{facts.documents_of}`'s, "
            "which encoded the documents of the index this run searches, so `encode_document` gives the "
            "vectors of that index."
        )
    head = (
        f", projected to {meta['projection_dim']} dimensions (linear, then LayerNorm)"
        if meta.get("projection_dim")
        else ""
    )
    norm = ", L2-normalised" if meta.get("normalize") else ""
    pooled = pooling.get(meta.get("pooling"), f"`{meta.get('pooling')}` pooling (as sentence-transformers' Pooling)")
    if meta.get("prompts") and meta.get("include_prompt") is False:
        pooled += " over the text's tokens after the prompt's"
    lines.append(
        f"- **Vectors**: {meta.get('dim')} dimensions, {pooled}{_layers(meta.get('layers'))}"
        f"{head}{norm}; relevance is the inner product of a query's and a document's vectors."
    )
    lengths = [
        f"{side} at {meta[key]} tokens"
        for side, key in (("queries", "query_max_length"), ("documents", "doc_max_length"))
        if meta.get(key)
    ]
    if lengths:
        lines.append(f"- **Lengths**: texts are cut as in training, {' and '.join(lengths)}.")
    if meta.get("markers"):
        lines.append(
            "- **Markers**: ColBERT markers follow [CLS] (and queries are padded with [MASK]s); "
            "sentence-transformers' `encode_query` / `encode_document` add them (the folder's prompts)."
        )
    prompts = meta.get("prompts") or {}
    if any(prompts.values()):
        shown = {side: json.dumps(prompts.get(key, "")) for side, key in (("queries", "query"), ("documents", "doc"))}
        lines.append(
            f"- **Prompts**: queries are read after the prompt {shown['queries']}, documents after "
            f"{shown['documents']} (before the title), as the model was trained; they are the folder's "
            "`query` and `document` prompts."
        )
    joined = f'"title {separator} text"' if separator else '"title text"'
    lines.append(
        f"- **Documents**: a document is the pair (title, text), which the tokenizer joins ({joined}, no "
        f"token type ids): give `encode_document` `(title, text)` tuples, or the one string {joined}, "
        'which tokenizes the same; a document without a title is its text alone (not `("", text)`).'
    )
    lines.append(which_call(meta))
    return lines


def _layers(layers: list | None) -> str:
    """The layers a sentence-transformers folder had after its pooling, in words (empty without)."""
    if not layers:
        return ""
    words = [
        f"a linear layer to {layer['out_features']} dimensions"
        + ("" if layer.get("bias", True) else " without bias")
        + (
            ""
            if str(layer.get("activation")).endswith(".Identity")
            else f" then {str(layer.get('activation')).rsplit('.', 1)[-1]}"
        )
        if layer["kind"] == "dense"
        else "LayerNorm"
        for layer in layers
    ]
    return f", through {', '.join(words)} (the base model's sentence-transformers modules after its pooling)"


# ------------------------------------------------------------------------------------------------ metrics
def _metrics_section(facts: CardFacts, metrics: dict | None) -> list[str]:
    source = Layout(facts.results).metrics(facts.run)
    if not metrics:
        return [
            "## Metrics",
            "",
            f"Not known when this model was saved: the run's evaluation writes them to `{source}`.",
        ]
    lines = [
        "## Metrics",
        "",
        f"On split `{metrics.get('split')}` of dataset `{metrics.get('dataset')}` "
        f"({metrics.get('num_queries')} judged queries), from `{source}`:",
        "",
    ]
    lines += markdown_table(
        ["measure", "value"],
        [
            [str(name), f"{value:.4f}" if isinstance(value, (int, float)) else str(value)]
            for name, value in (metrics.get("measures") or {}).items()
        ],
    )
    return lines


# ------------------------------------------------------------------------------------------------- the card
def render_model_card(
    folder: str | os.PathLike, facts: CardFacts, *, path: str | None = None, metrics: dict | None = None
) -> str:
    """The text of the model card of the model saved in ``folder``.

    :param folder: the saved model folder (its ``hardneg.json`` and tokenizer are read).
    :param facts: what the card says of the run (:class:`CardFacts`).
    :param path: how the card's code names the folder; None: ``<results>/<run>/model``.
    :param metrics: the run's ``metrics.json`` record (``split``, ``dataset``, ``num_queries``, ``measures``);
        None: the card names the file that will hold them.
    :returns: the card: YAML front matter (metadata and the facts), then Markdown.
    """
    folder = Path(folder)
    path = path or Layout(facts.results).model(facts.run)
    meta = _read_json(folder / "hardneg.json")
    separator = ""
    if meta is not None and (folder / "tokenizer.json").is_file():
        from hardneg.dense.tokenizer import load_tokenizer  # transformers: imported only where a tokenizer is used

        separator = pair_separator(load_tokenizer(folder))
    front: dict = {
        "library_name": "sentence-transformers" if meta is not None else "transformers",
        "pipeline_tag": "sentence-similarity" if meta is not None else "feature-extraction",
        "tags": ["hardneg", "dense-retrieval", facts.method],
    }
    hub = _hub_id(facts.base_model)
    if hub:
        front["base_model"] = hub
    front["hardneg"] = asdict(facts)
    kind = "dense retriever (bi-encoder)" if meta is not None else "model"
    lines = [
        "---",
        yaml.safe_dump(front, sort_keys=False, allow_unicode=True).rstrip("\n"),
        "---",
        "",
        f"# {facts.run}: a {kind} trained by hardneg",
        "",
        *_facts_table(facts),
        "",
    ]
    if meta is not None:
        lines += ["## The model", "", *_describe_bi_encoder(meta, facts, separator), ""]
    lines += [*how_to_load(folder, path, meta, separator), "", *_metrics_section(facts, metrics)]
    return "\n".join(lines) + "\n"


def write_model_card(
    folder: str | os.PathLike, facts: CardFacts, *, path: str | None = None, metrics: dict | None = None
) -> Path:
    """Write ``folder/README.md`` (:func:`render_model_card`), atomically.

    :param folder: the saved model folder.
    :param facts: what the card says of the run.
    :param path: how the card's code names the folder; None: ``<results>/<run>/model``.
    :param metrics: the run's ``metrics.json`` record, when known.
    :returns: the card's path.
    """
    target = Path(folder) / CARD
    write_text(target, render_model_card(folder, facts, path=path, metrics=metrics))
    return target


def card_facts(folder: str | os.PathLike) -> CardFacts | None:
    """The facts a model card in ``folder`` was written from (its front matter's ``hardneg:``), or None when the
    folder has no card written by hardneg."""
    card = Path(folder) / CARD
    if not card.is_file():
        return None
    match = _FRONT.match(card.read_text(encoding="utf-8"))
    data = yaml.safe_load(match.group(1)) if match else None
    if not isinstance(data, dict) or not isinstance(data.get("hardneg"), dict):
        return None
    return CardFacts.from_json(data["hardneg"])


def refresh_model_card(folder: str | os.PathLike, *, path: str | None = None, metrics: dict | None = None) -> bool:
    """Write the model card of ``folder`` again from the facts it holds, with ``metrics`` and the folder named
    ``path`` in its code (a copy of a run's model elsewhere).

    :param folder: a model folder with a card written by hardneg.
    :param path: how the card's code names the folder; None: ``<results>/<run>/model``.
    :param metrics: the run's ``metrics.json`` record; None: the card names the file.
    :returns: whether there was a card to write again.
    """
    facts = card_facts(folder)
    if facts is None:
        return False
    write_model_card(folder, facts, path=path, metrics=metrics)
    return True
