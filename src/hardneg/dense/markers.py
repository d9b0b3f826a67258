"""ColBERT's input format (Khattab and Zaharia, SIGIR 2020), shared by the ColBERT teacher and TCT students.

* A marker token right after ``[CLS]``: ``[Q]`` for queries, ``[D]`` for documents. A BERT vocabulary has
  unused tokens, and the marker is ``[unused0]`` / ``[unused1]`` as in ColBERT's code; a vocabulary without
  them (the built-in WordPiece) gets two new tokens, ``[Q]`` and ``[D]``, and the encoder two new embedding
  rows (:func:`add_markers`).
* Query augmentation: queries are padded with ``[MASK]`` to a fixed length (``query_length`` tokens, marker
  included), and the masks are attended to (as TCT-ColBERT's query encoder and ColBERTv2's
  ``attend_to_mask_tokens``): the model learns to fill them with useful query expansions. It can be turned
  off (``augment``): a small encoder trained from scratch fills the masks with little more than their
  position, and a mean over a query padded that way is mostly masks.
* Mean pooling over such inputs (the TCT student) skips ``[CLS]`` and the marker: :data:`SKIP` positions.

The cache holds plain tokenizations (``[CLS] text [SEP]``); markers are inserted when a batch is encoded
(:meth:`Markers.apply`), so every run of a dataset shares one cache whatever its model's input format.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, cast

import torch
from torch import nn

if TYPE_CHECKING:
    from transformers import PreTrainedModel

SKIP = 2  # [CLS] and the marker
UNUSED = ("[unused0]", "[unused1]")
NEW = ("[Q]", "[D]")


@dataclass(frozen=True)
class Markers:
    query: int  # token id of [Q]
    doc: int  # token id of [D]
    mask: int  # [MASK]: query augmentation
    pad: int
    sep: int
    query_length: int  # tokens of every query, [CLS] and marker included
    augment: bool = True  # pad queries with attended [MASK]s (False: queries keep their own length, cut only)

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict | None) -> Markers | None:
        return None if data is None else cls(**data)

    def apply(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor, side: str, max_positions: int | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """A padded token batch (``[CLS] text [SEP]`` rows) in the marked format of ``side`` (``query`` or
        ``doc``). Queries become exactly ``query_length`` tokens (cut, or padded with attended ``[MASK]``s;
        without ``augment`` only cut);
        documents longer than ``max_positions`` after the marker are cut and end with ``[SEP]``."""
        if side not in ("query", "doc"):
            raise ValueError(f"side must be 'query' or 'doc', got {side!r}")
        rows = input_ids.shape[0]
        marker = torch.full(
            (rows, 1), self.query if side == "query" else self.doc, dtype=input_ids.dtype, device=input_ids.device
        )
        ids = torch.cat([input_ids[:, :1], marker, input_ids[:, 1:]], dim=1)
        mask = torch.cat([attention_mask[:, :1], torch.ones_like(attention_mask[:, :1]), attention_mask[:, 1:]], dim=1)
        lengths = mask.sum(1)
        limit = self.query_length if side == "query" else max_positions
        if limit is not None and ids.shape[1] > limit:
            cut = lengths > limit
            ids, mask = ids[:, :limit].clone(), mask[:, :limit]
            ids[cut, limit - 1] = self.sep
        if side == "query" and self.augment:
            if ids.shape[1] < self.query_length:
                extra = self.query_length - ids.shape[1]
                ids = torch.cat([ids, ids.new_full((rows, extra), self.pad)], dim=1)
                mask = torch.cat([mask, mask.new_zeros((rows, extra))], dim=1)
            ids = ids.masked_fill(mask == 0, self.mask)
            mask = torch.ones_like(mask)
        return ids, mask


def add_markers(
    tokenizer, encoder: PreTrainedModel | None, query_length: int, seed: int = 0, augment: bool = True
) -> Markers:
    """The markers of ``tokenizer``: ``[unused0]``/``[unused1]`` when its vocabulary has them, else two new
    special tokens ``[Q]``/``[D]`` added to ``tokenizer`` (save it with the model) and two new rows of
    ``encoder``'s input embeddings (seeded, so the same seed gives the same weights)."""
    vocab = tokenizer.get_vocab()
    if all(token in vocab for token in UNUSED):
        query, doc = (vocab[token] for token in UNUSED)
    else:
        if not all(token in vocab for token in NEW):
            tokenizer.add_special_tokens({"additional_special_tokens": list(NEW)})
        query, doc = tokenizer.convert_tokens_to_ids(list(NEW))
        # transformers types the input embeddings a Module; a BERT-like encoder's are an Embedding
        if encoder is not None and cast(nn.Embedding, encoder.get_input_embeddings()).num_embeddings < len(tokenizer):
            torch.manual_seed(seed)
            encoder.resize_token_embeddings(len(tokenizer), mean_resizing=False)
    for name in ("mask_token_id", "pad_token_id", "sep_token_id"):
        if getattr(tokenizer, name) is None:
            raise ValueError(
                f"the tokenizer has no {name.removesuffix('_id').replace('_', ' ')}; ColBERT's input "
                f"format needs [MASK], [PAD] and [SEP]"
            )
    return Markers(
        query=int(query),
        doc=int(doc),
        mask=int(tokenizer.mask_token_id),
        pad=int(tokenizer.pad_token_id),
        sep=int(tokenizer.sep_token_id),
        query_length=int(query_length),
        augment=bool(augment),
    )
