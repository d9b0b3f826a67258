"""A pretrained cross-encoder used as its authors saved it: a sentence-transformers ``CrossEncoder`` folder, or a
Hugging Face ``AutoModelForSequenceClassification`` folder with one label (``cross-encoder/ms-marco-MiniLM-L6-v2``,
``BAAI/bge-reranker-base``). Its head and activation are its own: no head is drawn.

What the folder says (its head's labels, its activation, the pair's length, a prompt) is read as
sentence-transformers reads it: :mod:`hardneg.methods.crossencoder.folder`.

A pair is formed as ``CrossEncoder.predict`` forms it: the tokenizer's pair of the query and the document, cut
to that length longest-first (``tokenizer(query, document, truncation="longest_first", max_length=...)``). A
document is one string, its title and text joined by the special tokens of the tokenizer's pair template
(``"title [SEP] text"`` for BERT's, :func:`hardneg.dense.st_layout.pair_separator`), or its text alone when
the title is blank: the document string ``hardneg export hardnegs`` writes for sentence-transformers, so that
``CrossEncoder.predict([(query, document)])`` on an exported dataset gives the scores hardneg used.

Scores: the logit ranks (re-ranking); the probability of relevance is ``sigmoid(logit)``, which is
``CrossEncoder.predict``'s score for a folder whose activation is the sigmoid, and the sigmoid of it for one
whose activation is the identity (``predict(pairs, activation_fn=torch.nn.Sigmoid())``).

Trained further (``train.epochs`` above 0), the pairs are joined from the tokenized cache's rows, as the
cross-encoder trained from scratch joins them (:func:`hardneg.methods.crossencoder.model.pair_inputs`): the
query's row, then the document's row less its first token. That is the tokenizer's own pair only when its pair
template puts one separator between the texts (BERT's); :func:`cache_pairs_match` says whether it does.

Saved layout (:meth:`PretrainedCrossEncoder.save`): a sentence-transformers ``CrossEncoder`` folder (the Hugging
Face model and tokenizer, ``modules.json``, ``sentence_bert_config.json`` and ``config_sentence_transformers.json``
with the activation and prompts), and hardneg's ``crossencoder.json`` (``head: pretrained`` and the tokenized
cache's lengths).
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING

import torch
from torch import nn

from hardneg.dense.st_layout import pair_separator
from hardneg.dense.tokenizer import load_tokenizer
from hardneg.io.atomic import atomic_dir
from hardneg.methods.crossencoder.folder import (
    HEAD,
    META,
    ST_CONFIG,
    ST_MODULE,
    folder_json,
    is_pretrained,
    read_folder,
    source_has_head,
)
from hardneg.methods.crossencoder.model import CrossEncoder, is_crossencoder

if TYPE_CHECKING:
    from transformers import PreTrainedModel

TRANSFORMER = "sentence_transformers.base.modules.transformer.Transformer"  # the module of a CrossEncoder folder


class PretrainedCrossEncoder(nn.Module):
    """A sequence-classification model with one label and its tokenizer: a (query, document) pair → one logit.

    :param model: the ``AutoModelForSequenceClassification`` model.
    :param tokenizer: its fast tokenizer.
    :param facts: :func:`hardneg.methods.crossencoder.folder.read_folder`'s.
    :param query_max_length: the tokenized cache's length of a query (training joins the cache's rows).
    :param doc_max_length: the tokenized cache's length of a document.
    """

    exact_match, soft_match, match = False, 0, None  # no match marks: the input is the model's own

    def __init__(self, model: PreTrainedModel, tokenizer, facts: dict, *, query_max_length: int, doc_max_length: int):
        super().__init__()
        self.model, self.tokenizer = model, tokenizer
        self.activation = facts["activation"]
        self.prompts, self.default_prompt_name = facts["prompts"], facts["default_prompt_name"]
        self.max_seq_length = facts["max_seq_length"]
        self.query_max_length, self.doc_max_length = query_max_length, doc_max_length

    # ------------------------------------------------------------------------------------------------ pairs
    @property
    def max_length(self) -> int:
        """Tokens of a pair at most, as sentence-transformers cuts them (see the module docstring)."""
        if self.max_seq_length is not None:
            return int(self.max_seq_length)
        positions = getattr(self.model.config, "max_position_embeddings", -1)
        limit = int(self.tokenizer.model_max_length)
        return min(limit, int(positions)) if positions and positions > 0 else limit

    @property
    def prompt(self) -> str:
        """The text put before every query: the default prompt's, or none."""
        return self.prompts.get(self.default_prompt_name, "") if self.default_prompt_name else ""

    def document_texts(self, titles: list[str], texts: list[str]) -> list[str]:
        """Each document as the one string the model reads (see the module docstring)."""
        separator = pair_separator(self.tokenizer).strip()
        middle = f" {separator} " if separator else " "
        return [f"{title}{middle}{text}" if title and title.strip() else text for title, text in zip(titles, texts)]

    def encode_pairs(self, queries: list[str], documents: list[str]) -> dict:
        """The model's inputs (int64 tensors, padded to the longest pair) of the pairs (``queries[i]``,
        ``documents[i]``), documents already joined (:meth:`document_texts`)."""
        prompt = self.prompt
        encoded = self.tokenizer(
            [prompt + q for q in queries],
            list(documents),
            padding=True,
            truncation="longest_first",
            max_length=self.max_length,
            return_tensors="pt",
        )
        return {key: encoded[key] for key in ("input_ids", "attention_mask", "token_type_ids") if key in encoded}

    # ---------------------------------------------------------------------------------------------- scores
    def logits(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor, token_type_ids: torch.Tensor | None = None
    ) -> torch.Tensor:
        """The logits [n] of a block of pairs."""
        if getattr(self.model.config, "type_vocab_size", 2) < 2:  # a model without segment embeddings
            token_type_ids = None
        inputs = {"input_ids": input_ids, "attention_mask": attention_mask}
        if token_type_ids is not None:
            inputs["token_type_ids"] = token_type_ids
        return self.model(**inputs).logits[:, 0]

    def forward(self, pairs) -> torch.Tensor:
        """Logits [n] of a block of pairs (a dict of tensors) or of a
        :class:`hardneg.dense.tokenized.Chunked` batch of them (in the order of its pairs)."""
        if isinstance(pairs, dict):
            return self.logits(pairs["input_ids"], pairs["attention_mask"], pairs.get("token_type_ids"))
        if not pairs.parts:
            return next(self.parameters()).new_zeros(0)
        out = torch.cat(
            [self.logits(p["input_ids"], p["attention_mask"], p.get("token_type_ids")) for p in pairs.parts]
        )
        return out[pairs.inverse]

    @staticmethod
    def probabilities(logits: torch.Tensor) -> torch.Tensor:
        """The probabilities of relevance of logits: their sigmoid (see the module docstring)."""
        return torch.sigmoid(logits)

    # ------------------------------------------------------------------------------------------ persistence
    def save(self, out_dir: str | os.PathLike, tokenizer=None) -> None:
        """Save atomically to ``out_dir`` as a sentence-transformers ``CrossEncoder`` folder and hardneg's
        ``crossencoder.json`` (see the module docstring). The tokenizer saved is the model's own (``tokenizer``,
        the run's, is loaded from the same folder and is not read)."""
        with atomic_dir(out_dir) as tmp:
            self.model.save_pretrained(tmp)
            self.tokenizer.save_pretrained(tmp)
            module: dict = {
                "transformer_task": "sequence-classification",
                "modality_config": {"text": {"method": "forward", "method_output_name": "logits"}},
                "module_output_name": "scores",
            }
            if self.max_seq_length is not None:
                module["max_seq_length"] = int(self.max_seq_length)
            files = {
                "modules.json": [{"idx": 0, "name": "0", "path": "", "type": TRANSFORMER}],
                ST_MODULE: module,
                ST_CONFIG: {
                    "model_type": "CrossEncoder",
                    "activation_fn": self.activation,
                    "prompts": self.prompts,
                    "default_prompt_name": self.default_prompt_name,
                },
                META: {
                    "model": "crossencoder",
                    "head": HEAD,
                    "query_max_length": self.query_max_length,
                    "doc_max_length": self.doc_max_length,
                },
            }
            for name, content in files.items():
                (tmp / name).write_text(json.dumps(content, indent=2) + "\n", encoding="utf-8")

    @classmethod
    def load(
        cls, source: str | os.PathLike, *, query_max_length: int | None = None, doc_max_length: int | None = None
    ) -> PretrainedCrossEncoder:
        """The cross-encoder of a folder (or a hub name, where the hub is reachable), in training mode as
        ``from_pretrained`` leaves it. The cache's lengths are those given, else the folder's
        ``crossencoder.json``'s (a model hardneg saved), else the model's pair length.

        :raises ValueError: see :func:`read_folder`."""
        # transformers: imported only where a model or tokenizer is used
        from transformers import AutoModelForSequenceClassification

        facts = read_folder(source)
        model = AutoModelForSequenceClassification.from_pretrained(str(source))
        meta = folder_json(source, META)
        built = cls(model, load_tokenizer(source), facts, query_max_length=0, doc_max_length=0)
        built.query_max_length = query_max_length or meta.get("query_max_length") or built.max_length
        built.doc_max_length = doc_max_length or meta.get("doc_max_length") or built.max_length
        return built


def load_model(folder: str | os.PathLike):
    """The cross-encoder in ``folder``: a :class:`PretrainedCrossEncoder` when hardneg saved it so
    (``head: pretrained``) or when it is a cross-encoder with its head that hardneg did not save (a
    sentence-transformers ``CrossEncoder`` folder, a sequence-classification folder); else the
    :class:`hardneg.methods.crossencoder.model.CrossEncoder` hardneg trained from scratch."""
    if is_pretrained(folder) or (not is_crossencoder(folder) and source_has_head(folder)):
        return PretrainedCrossEncoder.load(folder)
    return CrossEncoder.load(folder)


def cache_pairs_match(tokenizer) -> bool:
    """Whether joining the tokenized cache's rows (the query's row, then the document's less its first token)
    gives the tokenizer's own pair: true for a pair template with one separator between the texts (BERT's
    ``[CLS] A [SEP] B [SEP]``), false for RoBERTa's ``<s> A </s></s> B </s>``."""
    backend = tokenizer.backend_tokenizer
    joined = backend.encode("a").ids + backend.encode("b").ids[1:]
    return backend.encode("a", "b").ids == joined


__all__ = ["PretrainedCrossEncoder", "cache_pairs_match", "load_model"]
