"""The Condenser / coCondenser training step (:class:`CondenserStep`): batches of corpus documents, BERT's MLM
masking of their tokens and, for coCondenser, two random spans of each document, fed to the model of
:mod:`hardneg.methods.condenser.pretraining` for the loss of the step.

Everything random (spans, MLM positions, replacements) is drawn with NumPy from the trainer's seeded generator, so
a batch is a pure function of its document rows and the seed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from hardneg.dense.distributed import SINGLE, Replicas
from hardneg.methods.condenser.params import CondenserSection
from hardneg.methods.condenser.pretraining import IGNORE

_EPS = 1e-9  # span length bounds: 0.1 x 30 is 3.0000000000000004 in floating point, still 3 tokens


@dataclass
class CondenserBatch:
    """One step's inputs. Rows are the documents, or with spans the documents' first spans, then their second
    spans (row ``i`` and ``i + B`` of document ``i``)."""

    doc_rows: np.ndarray  # [B] rows of the tokenized corpus
    input_ids: np.ndarray  # [R, T] int64, MLM replacements applied, padded with the pad id
    attention_mask: np.ndarray  # [R, T] int64, 1 = real token
    labels: np.ndarray  # [R, T] int64: the original token where MLM predicts one, IGNORE elsewhere
    spans: np.ndarray | None  # [R, 2] (start, tokens) of each span among its document's tokens after [CLS]


class CondenserStep:
    """The Condenser / coCondenser training step over batches of corpus rows (``doc_texts``, a
    :class:`hardneg.dense.tokenized.TokenizedTexts`: each row ``[CLS] ... [SEP]``).

    MLM masking is BERT's: each real token that is not a special one is picked with probability
    ``mlm_probability`` (one at least per batch, so that the loss is defined), and a picked token becomes
    [MASK] (80%), a random non-special token (10%) or stays (10%). With ``contrastive``, each document gives two
    spans drawn independently: a length of uniform whole tokens within [span_min, span_max] x its n tokens
    between [CLS] and the final [SEP] (at least 1; raised to the lower end when the document is too short for a
    length in between), then a uniform start; each span is ``[CLS] span [SEP]`` and masked as above."""

    def __init__(
        self,
        doc_texts,
        *,
        params: CondenserSection,
        mask_token_id: int,
        cls_token_id: int,
        sep_token_id: int,
        pad_token_id: int,
        special_token_ids,
        vocab_size: int,
    ):
        self.doc_texts, self.params = doc_texts, params
        self.mask_id, self.cls_id, self.sep_id, self.pad_id = mask_token_id, cls_token_id, sep_token_id, pad_token_id
        special = {int(i) for i in special_token_ids} | {mask_token_id, cls_token_id, sep_token_id, pad_token_id}
        self.special = np.array(sorted(special), dtype=np.int64)
        self.ordinary = np.setdiff1d(np.arange(vocab_size, dtype=np.int64), self.special)  # random replacements

    def make_batch(self, doc_rows: np.ndarray, rng: np.random.Generator) -> CondenserBatch:
        doc_rows = np.asarray(doc_rows, dtype=np.int64)
        lengths = np.asarray(self.doc_texts.lengths[doc_rows], dtype=np.int64)
        width = max(int(lengths.max()) if len(lengths) else 1, 1)
        tokens = np.asarray(self.doc_texts.ids[doc_rows, :width], dtype=np.int64)
        spans = None
        if self.params.contrastive:
            tokens, lengths, spans = self._spans(tokens, lengths, rng)
        input_ids, labels = self._mask(tokens, lengths, rng)
        attention = (np.arange(tokens.shape[1])[None, :] < lengths[:, None]).astype(np.int64)
        return CondenserBatch(
            doc_rows=doc_rows, input_ids=input_ids, attention_mask=attention, labels=labels, spans=spans
        )

    def _spans(self, docs: np.ndarray, lengths: np.ndarray, rng: np.random.Generator):
        """Two spans per document (see the class docstring): their rows, lengths and (start, tokens)."""
        content = np.maximum(lengths - 2, 0)  # the tokens between [CLS] and the final [SEP]
        low = np.maximum(1, np.ceil(self.params.span_min * content - _EPS)).astype(np.int64)
        high = np.maximum(low, np.floor(self.params.span_max * content + _EPS).astype(np.int64))
        low, high = np.minimum(low, content), np.minimum(high, content)  # an empty document: an empty span
        sizes = rng.integers(low, high + 1, size=(2, len(docs))).reshape(-1)
        starts = rng.integers(0, np.tile(content, 2) - sizes + 1).reshape(-1)
        source = np.tile(np.arange(len(docs)), 2)  # first spans of every document, then their second spans
        width = int(sizes.max()) + 2 if len(sizes) else 2
        offsets = np.arange(width - 2)[None, :]
        inside = offsets < sizes[:, None]
        columns = np.minimum(1 + starts[:, None] + offsets, docs.shape[1] - 1)
        rows = np.full((len(sizes), width), self.pad_id, dtype=np.int64)
        rows[:, 0] = self.cls_id
        rows[:, 1 : width - 1] = np.where(inside, docs[source[:, None], columns], self.pad_id)
        rows[np.arange(len(sizes)), sizes + 1] = self.sep_id
        return rows, sizes + 2, np.stack([starts, sizes], axis=1)

    def _mask(self, tokens: np.ndarray, lengths: np.ndarray, rng: np.random.Generator):
        """BERT's MLM corruption of ``tokens``: ``(input ids, labels)``."""
        real = np.arange(tokens.shape[1])[None, :] < lengths[:, None]
        eligible = real & ~np.isin(tokens, self.special)
        picked = eligible & (rng.random(tokens.shape) < self.params.mlm_probability)
        if not picked.any() and eligible.any():  # a loss over no token at all would be undefined
            candidates = np.flatnonzero(eligible)
            picked.flat[candidates[rng.integers(len(candidates))]] = True
        labels = np.where(picked, tokens, IGNORE)
        action = rng.random(tokens.shape)
        input_ids = tokens.copy()
        input_ids[picked & (action < 0.8)] = self.mask_id
        randomised = picked & (action >= 0.8) & (action < 0.9)
        input_ids[randomised] = self.ordinary[rng.integers(len(self.ordinary), size=int(randomised.sum()))]
        return input_ids, labels

    def loss(self, model, batch: CondenserBatch, device, replicas: Replicas = SINGLE) -> tuple[torch.Tensor, dict]:
        """The loss of the batch and its parts as floats; ``model`` (the :class:`Condenser` or its DDP wrapper)
        is called once. With several processes each takes its share of the documents (both spans of each) and
        the losses are those of the whole batch, the same on every rank (:meth:`Condenser.forward`)."""
        documents = len(batch.doc_rows)
        rows = np.arange(documents)[replicas.local(documents)]
        if batch.spans is not None:
            rows = np.concatenate([rows, rows + documents])
        width = max(int(batch.attention_mask[rows].sum(1).max()) if len(rows) else 1, 1)

        def tensor(array):
            return torch.from_numpy(np.ascontiguousarray(array[rows, :width])).to(device, non_blocking=True)

        loss, stats = model(
            tensor(batch.input_ids),
            tensor(batch.attention_mask),
            tensor(batch.labels),
            documents=documents,
            replicas=replicas,
        )
        return loss, {name: float(value) for name, value in stats.items()}


def build_condenser_step(doc_texts, tokenizer, params: CondenserSection) -> CondenserStep:
    """The step over the corpus rows ``doc_texts``, with the special tokens of ``tokenizer`` (a fast tokenizer)."""
    return CondenserStep(
        doc_texts,
        params=params,
        mask_token_id=tokenizer.mask_token_id,
        cls_token_id=tokenizer.cls_token_id,
        sep_token_id=tokenizer.sep_token_id,
        pad_token_id=tokenizer.pad_token_id,
        special_token_ids=tokenizer.all_special_ids,
        vocab_size=len(tokenizer),
    )


__all__ = ["CondenserBatch", "CondenserStep", "build_condenser_step"]
