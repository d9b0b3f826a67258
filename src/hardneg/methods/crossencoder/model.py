"""The cross-encoder (monoBERT, Nogueira and Cho 2019): one BERT pass over a query and a document together, a
linear head on ``[CLS]`` → one logit, the probability of relevance ``sigmoid(logit)``.

* Input: ``[CLS] query [SEP] title [SEP] text [SEP]`` (token types 0 for the query part, 1 for the document
  part). The pair is joined from the tokenized cache's own rows (:func:`pair_inputs`): the query's row
  ``[CLS] q [SEP]`` and the document's row ``[CLS] title [SEP] text [SEP]`` without its ``[CLS]``. Each text was
  cut at its own maximum length when the cache was built, so a pair holds at most ``query_max_length +
  doc_max_length - 1`` tokens; should that exceed the encoder's positions, the document is cut first (its last
  kept token becomes its ``[SEP]``).
* The encoder is the built-in BERT of the run's ``params.model`` or a pretrained one (``minilm``): its
  weights start the encoder; its pooler is dropped and the head is new, drawn from the run's seed.

* With exact-match marks (``params.crossencoder.exact_match``, after MarkedBERT: Boualili, Moreno and Boughanem,
  SIGIR 2020), a learnt vector is added to the input embedding of every token whose id occurs in the other text
  of the pair (:func:`exact_matches`), so that the model sees which words the two texts share from its first
  step; through attention alone, a model trained from scratch learns that slowly, and first learns which
  documents were training positives.
* With soft-match marks (``params.crossencoder.soft_match``: a number of bins), every content token is also marked
  by how close its input embedding comes to the other text's words: the cosine to its nearest content token there,
  in equal bins over (0, 1] (:func:`soft_matches`), each bin a learnt vector, zero at first. These are the
  matching signals of DRMM's histograms (Guo et al., CIKM 2016) given to a BERT's input: an encoder whose token
  vectors already place related words together (a dense run's encoder, a pretrained one) then sees synonyms
  matched as exact marks see shared words. The cosines are read from the model's own input embeddings, without a
  gradient, so a saved model computes its marks again when it scores.

Saved layout (:meth:`CrossEncoder.save`): the encoder is a standard Hugging Face model folder at the root
(``AutoModel.from_pretrained(folder)`` loads it), with the tokenizer; ``crossencoder.json`` records the maximum
lengths the texts were cut at and which marks the model adds; ``head.safetensors`` holds the head (and the marks'
vectors: none, exact, then one per soft-match bin).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, cast

import numpy as np
import torch
from torch import nn

from hardneg.dense.backbone import build_backbone, save_encoder
from hardneg.dense.tokenized import Chunked, length_chunks
from hardneg.io.atomic import atomic_dir
from hardneg.methods.crossencoder.folder import META

if TYPE_CHECKING:
    from transformers import PreTrainedModel

HEAD = "head.safetensors"
MATCH = "match.weight"  # the marks' vectors, beside the head's weights in HEAD
NO_MARK, EXACT_MARK = 0, 1  # rows of the marks' vectors; soft-match bin b (1..bins) is row EXACT_MARK + b


def pair_lengths(query_texts, doc_texts, query_rows: np.ndarray, doc_rows: np.ndarray, max_length: int) -> np.ndarray:
    """Tokens [P] of each joined pair (:func:`pair_inputs`): the query's row plus the document's row less its
    ``[CLS]``, at most ``max_length``."""
    total = query_texts.lengths[query_rows].astype(np.int64) + doc_texts.lengths[doc_rows].astype(np.int64) - 1
    return np.minimum(total, max_length)


def pair_inputs(query_texts, doc_texts, query_rows: np.ndarray, doc_rows: np.ndarray, *, max_length: int) -> dict:
    """The encoder's inputs for the pairs (``query_rows[i]``, ``doc_rows[i]``) of two tokenized text sets
    (:class:`hardneg.dense.tokenized.TokenizedTexts`, or any object with ``ids``, ``lengths`` and
    ``pad_token_id``): ``input_ids``, ``attention_mask`` and ``token_type_ids``, int64 tensors [P, W], W the
    longest pair, padded with the pad id.

    A pair is ``[CLS] q [SEP]`` followed by the document's row without its ``[CLS]`` (``title [SEP] text
    [SEP]``), token type 1 from there; at most ``max_length`` tokens: a longer pair keeps its query whole and cuts
    the document, whose last kept token becomes its final ``[SEP]``."""
    query_rows, doc_rows = np.asarray(query_rows, dtype=np.int64), np.asarray(doc_rows, dtype=np.int64)
    q_len = query_texts.lengths[query_rows].astype(np.int64)
    d_len = doc_texts.lengths[doc_rows].astype(np.int64)
    if len(query_rows) == 0:
        empty = torch.zeros((0, 1), dtype=torch.int64)
        return {"input_ids": empty, "attention_mask": empty, "token_type_ids": empty}
    if int(q_len.max()) + 1 > max_length:
        raise ValueError(f"a query of {int(q_len.max())} tokens leaves no room for a document in {max_length}")
    q_width, d_width = int(q_len.max()), int(d_len.max())
    queries = np.asarray(query_texts.ids[query_rows, :q_width], dtype=np.int64)
    docs = np.asarray(doc_texts.ids[doc_rows, 1 : max(d_width, 2)], dtype=np.int64)  # each row less its [CLS]
    total = np.minimum(q_len + d_len - 1, max_length)
    width = int(total.max())
    position = np.arange(width)[None, :]
    in_query = position < q_len[:, None]
    in_pair = position < total[:, None]
    from_query = np.take_along_axis(queries, np.minimum(position, q_width - 1), axis=1)
    from_doc = np.take_along_axis(docs, np.clip(position - q_len[:, None], 0, docs.shape[1] - 1), axis=1)
    ids = np.where(in_query, from_query, np.where(in_pair, from_doc, doc_texts.pad_token_id))
    cut = np.flatnonzero(q_len + d_len - 1 > max_length)
    if len(cut):  # the document's own last token (its [SEP]) ends a cut pair
        ids[cut, total[cut] - 1] = np.asarray(doc_texts.ids[doc_rows[cut], d_len[cut] - 1], dtype=np.int64)
    return {
        "input_ids": torch.from_numpy(ids),
        "attention_mask": torch.from_numpy(in_pair.astype(np.int64)),
        "token_type_ids": torch.from_numpy((in_pair & ~in_query).astype(np.int64)),
    }


def pair_batch(
    query_texts, doc_texts, query_rows: np.ndarray, doc_rows: np.ndarray, *, max_length: int, overhead: int
) -> Chunked:
    """The pairs as length-homogeneous parts (:func:`hardneg.dense.tokenized.length_chunks` with ``overhead``
    padded tokens a part), each a block of :func:`pair_inputs` trimmed to its longest pair, as a
    :class:`hardneg.dense.tokenized.Chunked` batch: far less padding than one block when lengths vary."""
    lengths = pair_lengths(query_texts, doc_texts, query_rows, doc_rows, max_length)
    chunks = length_chunks(lengths, overhead=overhead)
    parts = [
        pair_inputs(query_texts, doc_texts, np.asarray(query_rows)[c], np.asarray(doc_rows)[c], max_length=max_length)
        for c in chunks
    ]
    order = np.concatenate(chunks) if chunks else np.zeros(0, np.int64)
    inverse = np.empty(len(order), dtype=np.int64)
    inverse[order] = np.arange(len(order))
    return Chunked(parts, torch.from_numpy(inverse))


def exact_matches(input_ids: torch.Tensor, attention_mask: torch.Tensor, token_type_ids: torch.Tensor) -> torch.Tensor:
    """Exact-match marks [n, W] (int64) of a block of joined pairs (:func:`pair_inputs`): 1 for a token of the
    query part whose id occurs in the document part, or of the document part whose id occurs in the query part;
    0 elsewhere and on padding. ``[SEP]`` ends both parts, so it is always marked: a constant that tells no pair
    from another."""
    real = attention_mask.bool()
    doc = token_type_ids.bool() & real
    query = ~token_type_ids.bool() & real
    same = input_ids[:, :, None] == input_ids[:, None, :]  # [n, W, W]
    other = torch.where(doc[:, :, None], query[:, None, :], doc[:, None, :])  # j in the other part than i's
    return ((same & other).any(dim=-1) & real).long()


def soft_matches(
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor,
    token_type_ids: torch.Tensor,
    embeddings: torch.Tensor,
    bins: int,
) -> torch.Tensor:
    """Soft-match bins [n, W] (int64) of a block of joined pairs (:func:`pair_inputs`): for each content token of
    one part, the cosine between its row of ``embeddings`` [V, H] and the nearest content token's of the other
    part, as a bin 1..``bins`` of (0, 1] (bin ``b`` holds cosines in ((b-1)/bins, b/bins], a shared token cosine 1
    in the last); 0 for a cosine of 0 or below, for ``[CLS]``, ``[SEP]`` (the query part's last token) and
    padding. No gradient reaches ``embeddings``."""
    with torch.no_grad():
        real = attention_mask.bool()
        doc = token_type_ids.bool() & real
        query = ~token_type_ids.bool() & real
        sep = input_ids.gather(1, query.sum(dim=1, keepdim=True) - 1)
        content = real & (input_ids != input_ids[:, :1]) & (input_ids != sep)
        other = torch.where(doc[:, :, None], query[:, None, :], doc[:, None, :]) & content[:, None, :]
        vectors = torch.nn.functional.normalize(embeddings[input_ids].float(), dim=-1)
        nearest = (vectors @ vectors.transpose(1, 2)).masked_fill(~other, -1.0).max(dim=-1).values
        binned = torch.ceil(nearest.clamp(max=1.0) * bins).long().clamp(1, bins)
        return torch.where(content & (nearest > 0), binned, 0)


class CrossEncoder(nn.Module):
    """A query-document pair → one relevance logit (see the module docstring). ``query_max_length`` and
    ``doc_max_length``: the lengths texts are cut at before they are joined (those of the tokenized cache the
    model trained on), which :func:`hardneg.methods.crossencoder.scoring.score_pairs_stage` tokenizes raw texts
    with."""

    def __init__(
        self,
        encoder: PreTrainedModel,
        *,
        query_max_length: int,
        doc_max_length: int,
        exact_match: bool = False,
        soft_match: int = 0,
    ):
        super().__init__()
        # The head reads [CLS]'s hidden state: a backbone's own pooler is never read, and a checkpoint without
        # one would get a randomly initialised copy saved with the model.
        if isinstance(getattr(encoder, "pooler", None), nn.Module):
            encoder.pooler = None  # type: ignore[assignment]  # torch types __setattr__ without None, an empty slot
        self.encoder = encoder
        self.query_max_length, self.doc_max_length = query_max_length, doc_max_length
        config = encoder.config
        self.dropout = nn.Dropout(getattr(config, "hidden_dropout_prob", 0.1))  # as BERT's classification head
        self.head = nn.Linear(config.hidden_size, 1)
        self.match: nn.Embedding | None = None
        self.exact_match, self.soft_match = False, 0
        if exact_match or soft_match:
            self.add_marks(exact_match=exact_match, soft_match=soft_match)

    def add_marks(self, *, exact_match: bool, soft_match: int = 0) -> None:
        """Add match marks: exact (a vector added to the input embedding of every token whose id also occurs in
        the other text of the pair, :func:`exact_matches`) and ``soft_match`` bins of the nearest cosine
        (:func:`soft_matches`), each a vector learnt from zero (the model's scores are unchanged until it learns
        them)."""
        if self.match is not None:
            raise ValueError("this cross-encoder already has its match marks")
        self.exact_match, self.soft_match = bool(exact_match), int(soft_match)
        self.match = nn.Embedding(EXACT_MARK + 1 + self.soft_match, self.encoder.config.hidden_size)
        nn.init.zeros_(self.match.weight)

    def marks(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor, token_type_ids: torch.Tensor
    ) -> torch.Tensor:
        """The row of the marks' vectors [n, W] of each token of a block of joined pairs: ``EXACT_MARK`` for a
        shared token (with exact marks), else ``EXACT_MARK + b`` for soft-match bin ``b`` (with soft marks), else
        ``NO_MARK``."""
        # transformers types the input embeddings a Module; a BERT-like encoder's are an Embedding
        embeddings = cast(nn.Embedding, self.encoder.get_input_embeddings())
        soft = (
            soft_matches(input_ids, attention_mask, token_type_ids, embeddings.weight, self.soft_match)
            if self.soft_match
            else torch.zeros_like(input_ids)
        )
        exact = exact_matches(input_ids, attention_mask, token_type_ids) if self.exact_match else None
        return self._mark_rows(soft, exact)

    @staticmethod
    def _mark_rows(soft: torch.Tensor, exact: torch.Tensor | None) -> torch.Tensor:
        """Rows of the marks' vectors from soft-match bins and exact-match marks (None: no exact marks)."""
        rows = torch.where(soft > 0, EXACT_MARK + soft, NO_MARK)
        return rows if exact is None else torch.where(exact.bool(), EXACT_MARK, rows)

    @property
    def max_length(self) -> int:
        """Tokens of a pair at most: the encoder's positions."""
        return int(self.encoder.config.max_position_embeddings)

    @staticmethod
    def probabilities(logits: torch.Tensor) -> torch.Tensor:
        """The probabilities of relevance of logits: their sigmoid."""
        return torch.sigmoid(logits)

    def logits(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor, token_type_ids: torch.Tensor | None = None
    ) -> torch.Tensor:
        """Relevance logits [n] of a block of joined pairs."""
        inputs = {"input_ids": input_ids}
        if self.match is not None:
            assert token_type_ids is not None, "match marks tell the query's tokens from the document's by segment"
            marks = self.marks(input_ids, attention_mask, token_type_ids)
            inputs = {"inputs_embeds": self.encoder.get_input_embeddings()(input_ids) + self.match(marks)}
        if getattr(self.encoder.config, "type_vocab_size", 2) < 2:  # a model without segment embeddings
            token_type_ids = None
        hidden = self.encoder(**inputs, attention_mask=attention_mask, token_type_ids=token_type_ids).last_hidden_state
        return self.head(self.dropout(hidden[:, 0])).squeeze(-1)

    def forward(self, pairs) -> torch.Tensor:
        """Logits [n] of a :func:`pair_batch` (in the order of its pairs) or of one :func:`pair_inputs` block.
        Training calls the model once per step, as ``DistributedDataParallel`` needs one forward per backward."""
        if isinstance(pairs, dict):
            return self.logits(pairs["input_ids"], pairs["attention_mask"], pairs.get("token_type_ids"))
        if not pairs.parts:
            return self.head.weight.new_zeros(0)
        out = torch.cat(
            [self.logits(p["input_ids"], p["attention_mask"], p.get("token_type_ids")) for p in pairs.parts]
        )
        return out[pairs.inverse]

    # ------------------------------------------------------------------------------------------ persistence
    def save(self, out_dir: str | os.PathLike, tokenizer=None) -> None:
        """Save atomically to ``out_dir`` (the layout of the module docstring), with ``tokenizer`` when given."""
        from safetensors.torch import save_file  # safetensors (torch): imported only where weights are read or written

        with atomic_dir(out_dir) as tmp:
            save_encoder(self.encoder, tmp)  # with the unused pooler as zeros: AutoModel finds every weight
            if tokenizer is not None:
                tokenizer.save_pretrained(tmp)
            weights = dict(self.head.state_dict())
            if self.match is not None:
                weights[MATCH] = self.match.weight
            save_file({k: v.detach().cpu().contiguous() for k, v in weights.items()}, str(tmp / HEAD))
            (tmp / META).write_text(
                json.dumps(
                    {
                        "model": "crossencoder",
                        "query_max_length": self.query_max_length,
                        "doc_max_length": self.doc_max_length,
                        "exact_match": self.exact_match,
                        "soft_match": self.soft_match,
                    },
                    indent=2,
                )
                + "\n"
            )

    @classmethod
    def load(cls, model_dir: str | os.PathLike) -> CrossEncoder:
        """The cross-encoder saved in ``model_dir`` (in training mode, as ``from_pretrained`` leaves it: call
        ``eval()`` to score)."""
        from safetensors.torch import load_file  # safetensors (torch): imported only where weights are read or written
        from transformers import AutoModel  # transformers: imported only where a model or tokenizer is used

        model_dir = Path(model_dir)
        meta = json.loads((model_dir / META).read_text())
        model = cls(
            AutoModel.from_pretrained(model_dir),
            query_max_length=meta["query_max_length"],
            doc_max_length=meta["doc_max_length"],
            exact_match=meta.get("exact_match", False),
            soft_match=meta.get("soft_match", 0),
        )
        weights = load_file(str(model_dir / HEAD))
        if model.match is not None:
            model.match.weight.data.copy_(weights.pop(MATCH))
        model.head.load_state_dict(weights)
        return model

    @classmethod
    def create(cls, spec, *, tokenizer, seed: int, exact_match: bool = False, soft_match: int = 0) -> CrossEncoder:
        """A fresh cross-encoder from a :class:`hardneg.dense.backbone.ModelSpec` (``builtin``, ``minilm``, a folder or
        a hub name; its pooling, head and normalisation keys describe bi-encoders and are not read). Seeded: the
        same spec, tokenizer and seed give the same weights."""
        # positions for a whole pair: the built-in BERT gets max(512, query + document lengths)
        encoder = build_backbone(
            spec,
            vocab_size=len(tokenizer),
            pad_token_id=tokenizer.pad_token_id,
            max_length=spec.query_max_length + spec.doc_max_length,
            seed=seed,
        )
        torch.manual_seed(seed + 2)
        return cls(
            encoder,
            query_max_length=spec.query_max_length,
            doc_max_length=spec.doc_max_length,
            exact_match=exact_match,
            soft_match=soft_match,
        )

    @classmethod
    def from_encoder(
        cls, model_dir: str | os.PathLike, spec, *, seed: int, exact_match: bool = False, soft_match: int = 0
    ) -> CrossEncoder:
        """A fresh cross-encoder whose encoder starts as the (query) encoder of the bi-encoder saved in
        ``model_dir`` (a dense run's model, :meth:`hardneg.dense.model.BiEncoder.save`, whose root is a Hugging
        Face model folder), the head drawn from ``seed``: the encoder's vocabulary and token vectors, trained to
        match queries with documents, start the pair model."""
        from transformers import AutoModel  # transformers: imported only where a model or tokenizer is used

        encoder = AutoModel.from_pretrained(model_dir)
        if encoder.config.max_position_embeddings < spec.query_max_length + spec.doc_max_length:
            raise ValueError(
                f"{model_dir}: {encoder.config.max_position_embeddings} positions are fewer than a "
                f"query and a document ({spec.query_max_length} + {spec.doc_max_length} tokens)"
            )
        torch.manual_seed(seed + 2)
        return cls(
            encoder,
            query_max_length=spec.query_max_length,
            doc_max_length=spec.doc_max_length,
            exact_match=exact_match,
            soft_match=soft_match,
        )


def is_crossencoder(folder: str | os.PathLike) -> bool:
    """Whether ``folder`` holds a saved :class:`CrossEncoder`."""
    return (Path(folder) / META).is_file()


__all__ = [
    "CrossEncoder",
    "exact_matches",
    "is_crossencoder",
    "pair_batch",
    "pair_inputs",
    "pair_lengths",
    "soft_matches",
]
