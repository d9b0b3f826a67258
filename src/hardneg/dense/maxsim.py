"""ColBERT (Khattab and Zaharia, SIGIR 2020): late interaction over token vectors, the teacher of TCT-ColBERT
(Lin, Yang and Lin, 2021).

* Every token of a query and of a document becomes a vector: the encoder's hidden state projected to ``dim``
  (a linear layer without bias) and L2-normalised, so inner products are cosines.
* Inputs are in ColBERT's format (:mod:`hardneg.dense.markers`): ``[Q]``/``[D]`` after ``[CLS]``, queries padded
  with attended ``[MASK]``s to a fixed length, so every query position is a vector that counts.
* Relevance is MaxSim: for each query token, its best match among the document's real tokens, summed over the
  query tokens (:func:`maxsim`).
* Query and document encoders are shared, as in ColBERT.

Saved layout (``save``): the encoder is a standard Hugging Face model folder at the root (the teacher is saved
as a Hugging Face folder, so ``AutoModel.from_pretrained(folder)`` loads the backbone, and a TCT student starts
from it), together with the tokenizer; ``colbert.json`` records ``dim`` and the markers; ``linear.safetensors``
holds the projection.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import torch
from torch import nn

from hardneg.dense.backbone import build_backbone, save_encoder
from hardneg.dense.markers import Markers, add_markers
from hardneg.dense.tokenized import chunk_overhead
from hardneg.errors import DataError
from hardneg.io import artifacts
from hardneg.io.atomic import atomic_dir

if TYPE_CHECKING:
    from transformers import PreTrainedModel

log = logging.getLogger(__name__)

META = "colbert.json"
LINEAR = "linear.safetensors"
# Query-token x document-token similarities computed at once: 64M elements, 256 MB in float32.
BLOCK_ELEMENTS = 1 << 26


def _score_dtype(dtype: torch.dtype) -> torch.dtype:
    """Sums over query tokens are taken in float32 at least: in bf16 a score near 20 would be rounded to 1/8."""
    return torch.promote_types(dtype, torch.float32)


def maxsim(
    q: torch.Tensor, d: torch.Tensor, d_mask: torch.Tensor, *, block_elements: int = BLOCK_ELEMENTS
) -> torch.Tensor:
    """ColBERT scores [B, N] of queries ``q`` [B, Lq, dim] against documents ``d`` [N, Ld, dim]: for each query
    token, the largest inner product with a real token of the document (``d_mask`` [N, Ld], True = real), summed
    over the query tokens.

    Padding is filled with -inf before the max, not 0: token similarities may be negative, and a padded position
    must never be the best match. The [B, N, Lq, Ld] similarities are computed in blocks of queries and
    documents of at most ``block_elements`` elements (one document at least), so memory stays bounded for any
    batch; each block is one matrix product. Differentiable in ``q`` and ``d`` (the max keeps only its indices
    for the backward pass). Scores are float32 at least."""
    num_q, len_q, dim = q.shape
    num_d, len_d, _ = d.shape
    out_dtype = _score_dtype(torch.promote_types(q.dtype, d.dtype))
    if num_q == 0 or num_d == 0:
        return q.new_zeros((num_q, num_d), dtype=out_dtype)
    per_pair = max(len_q * len_d, 1)
    docs_per_block = max(1, min(num_d, block_elements // per_pair))
    queries_per_block = max(1, min(num_q, block_elements // (per_pair * docs_per_block)))
    padding = ~d_mask.bool()
    rows = []
    for q_lo in range(0, num_q, queries_per_block):
        q_part = q[q_lo : q_lo + queries_per_block]
        flat_q = q_part.reshape(-1, dim)
        cols = []
        for d_lo in range(0, num_d, docs_per_block):
            d_part = d[d_lo : d_lo + docs_per_block]
            sim = (flat_q @ d_part.reshape(-1, dim).T).view(len(q_part), len_q, len(d_part), len_d)
            sim = sim.masked_fill(padding[d_lo : d_lo + docs_per_block][None, None], float("-inf"))
            cols.append(sim.max(-1).values.to(out_dtype).sum(1))  # [queries, docs]
        rows.append(torch.cat(cols, 1))
    return torch.cat(rows, 0)


def maxsim_pairs(
    q: torch.Tensor, d: torch.Tensor, d_mask: torch.Tensor, *, block_elements: int = BLOCK_ELEMENTS
) -> torch.Tensor:
    """MaxSim [B] of query ``i`` against document ``i`` only (re-ranking candidates): the diagonal of
    :func:`maxsim` without the other B*(B-1) pairs. Blocked the same way."""
    if q.shape[0] != d.shape[0] or d.shape[0] != d_mask.shape[0]:
        raise ValueError(f"maxsim_pairs needs as many queries as documents, got {q.shape[0]} and {d.shape[0]}")
    num, len_q, _ = q.shape
    len_d = d.shape[1]
    out_dtype = _score_dtype(torch.promote_types(q.dtype, d.dtype))
    if num == 0:
        return q.new_zeros((0,), dtype=out_dtype)
    step = max(1, block_elements // max(len_q * len_d, 1))
    padding = ~d_mask.bool()
    out = []
    for lo in range(0, num, step):
        sim = torch.bmm(q[lo : lo + step], d[lo : lo + step].transpose(1, 2))  # [pairs, Lq, Ld]
        sim = sim.masked_fill(padding[lo : lo + step, None, :], float("-inf"))
        out.append(sim.max(-1).values.to(out_dtype).sum(1))
    return torch.cat(out)


class ColBERT(nn.Module):
    def __init__(self, encoder: PreTrainedModel, markers: Markers, dim: int = 128):
        super().__init__()
        # Token vectors come from the hidden states: a backbone's own pooler (BERT's) is never read, and a
        # checkpoint without one would get a randomly initialised copy saved with the model.
        if isinstance(getattr(encoder, "pooler", None), nn.Module):
            encoder.pooler = None  # type: ignore[assignment]  # torch types __setattr__ without None, an empty slot
        self.encoder = encoder
        self.markers = markers
        self.linear = nn.Linear(encoder.config.hidden_size, dim, bias=False)

    @property
    def dim(self) -> int:
        return self.linear.out_features

    def encode(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor, side: str
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Token vectors [n, L, dim] (unit length) and their mask [n, L] (True = a vector that counts) of plain
        ``[CLS] text [SEP]`` rows, marked for ``side`` (``query`` or ``doc``) first. Every position of a query
        counts (its ``[MASK]`` padding included: L is the query length); a document's padding does not, and its
        vectors there are zero."""
        input_ids, attention_mask = self.markers.apply(
            input_ids, attention_mask, side, max_positions=self.encoder.config.max_position_embeddings
        )
        hidden = self.encoder(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        vectors = nn.functional.normalize(self.linear(hidden), dim=-1)
        mask = attention_mask.bool()
        if side == "doc":
            vectors = vectors * mask.unsqueeze(-1).to(vectors.dtype)
        return vectors, mask

    def encode_batch(self, batch, side: str) -> tuple[torch.Tensor, torch.Tensor]:
        """``(vectors, mask)`` of a token batch: a dict (``input_ids`` + ``attention_mask``, one padded block) or a
        :class:`hardneg.dense.tokenized.Chunked` batch, each chunk encoded on its own, padded to the widest chunk
        (zero vectors, mask False) and returned in the order of the batch's rows."""
        if isinstance(batch, dict):
            return self.encode(batch["input_ids"], batch["attention_mask"], side)
        encoded = [self.encode(part["input_ids"], part["attention_mask"], side) for part in batch.parts]
        width = max(v.shape[1] for v, _ in encoded)
        vectors = torch.cat([nn.functional.pad(v, (0, 0, 0, width - v.shape[1])) for v, _ in encoded])
        mask = torch.cat([nn.functional.pad(m, (0, width - m.shape[1]), value=False) for _, m in encoded])
        return vectors[batch.inverse], mask[batch.inverse]

    def encode_queries(self, batch) -> tuple[torch.Tensor, torch.Tensor]:
        return self.encode_batch(batch, "query")

    def encode_docs(self, batch) -> tuple[torch.Tensor, torch.Tensor]:
        return self.encode_batch(batch, "doc")

    def forward(self, queries=None, docs=None):
        """Encode a query batch and a document batch in one call: ``(query (vectors, mask), doc (vectors,
        mask))``, ``None`` for a batch not given. Training calls the model this way, once per step, because
        ``DistributedDataParallel`` needs exactly one ``forward`` per backward (as :class:`BiEncoder`)."""
        q = self.encode_queries(queries) if queries is not None else None
        d = self.encode_docs(docs) if docs is not None else None
        return q, d

    def score_all(self, queries, docs) -> torch.Tensor:
        """MaxSim [B, N] of every query of a batch against every document of another (dicts or Chunked)."""
        (q, _), (d, d_mask) = self(queries, docs)
        return maxsim(q, d, d_mask)

    # ------------------------------------------------------------------------------------------ persistence
    def save(self, out_dir: str | os.PathLike, tokenizer=None) -> None:
        """Save atomically (see the module docstring for the layout). Give the ``tokenizer``: it may hold the
        marker tokens that :meth:`create` added."""
        from safetensors.torch import save_file  # safetensors (torch): imported only where weights are read or written

        with atomic_dir(out_dir) as tmp:
            save_encoder(self.encoder, tmp)  # with the unused pooler as zeros: AutoModel finds every weight
            if tokenizer is not None:
                tokenizer.save_pretrained(tmp)
            save_file({"weight": self.linear.weight.detach().cpu().contiguous()}, str(tmp / LINEAR))
            (tmp / META).write_text(
                json.dumps({"model": "colbert", "dim": self.dim, "markers": self.markers.to_json()}, indent=2) + "\n"
            )

    @classmethod
    def load(cls, model_dir: str | os.PathLike) -> ColBERT:
        from safetensors.torch import load_file  # safetensors (torch): imported only where weights are read or written
        from transformers import AutoModel  # transformers: imported only where a model or tokenizer is used

        model_dir = Path(model_dir)
        meta = json.loads((model_dir / META).read_text())
        markers = Markers.from_json(meta["markers"])
        assert markers is not None  # every ColBERT folder records its markers
        model = cls(AutoModel.from_pretrained(model_dir), markers, dim=meta["dim"])
        model.linear.load_state_dict(load_file(str(model_dir / LINEAR)))
        return model

    @classmethod
    def create(cls, spec, *, tokenizer, dim: int, seed: int) -> ColBERT:
        """A fresh ColBERT from a :class:`hardneg.dense.backbone.ModelSpec` (seeded: the same spec, seed and
        tokenizer give the same weights). ``tokenizer`` may gain the marker tokens (:func:`add_markers`): save it
        with the model. A tokenizer that already has them gives other weights than one that has not (the
        embeddings are drawn at their final size rather than resized)."""
        # +1: the marker makes every input one token longer than the cache's rows
        encoder = build_backbone(
            spec,
            vocab_size=len(tokenizer),
            pad_token_id=tokenizer.pad_token_id,
            max_length=spec.doc_max_length + 1,
            seed=seed,
        )
        markers = add_markers(
            tokenizer, encoder, query_length=spec.query_max_length + 1, seed=seed, augment=spec.query_augmentation
        )
        torch.manual_seed(seed + 2)
        return cls(encoder, markers, dim=dim)


def describe(model: ColBERT) -> dict:
    return {
        "model": "colbert",
        "parameters": sum(p.numel() for p in model.parameters()),
        "dim": model.dim,
        "query_length": model.markers.query_length,
    }


def is_colbert(folder: str | os.PathLike) -> bool:
    """Whether ``folder`` holds a saved ColBERT (rather than a bi-encoder)."""
    return (Path(folder) / META).is_file()


# Queries re-ranked together: a candidate shared by queries of one group is encoded once, so the larger the group
# the fewer documents are encoded again; only the group's query vectors (and their pairs' indices) are held.
QUERY_GROUP = 2048


def _candidates(ranking: pa.Table, depth: int, doc_row: dict[str, int]):
    """Per query of ``ranking``, in order of first appearance: ``(qid, positions)``, the positions (rows of
    ``ranking``) of its top-``depth`` documents by rank (ties in table order), those not in ``doc_row`` left out;
    and how many were left out."""
    qids = ranking.column("qid").to_pylist()
    docids = ranking.column("docid").to_pylist()
    ranks = ranking.column("rank").to_numpy(zero_copy_only=False)
    by_query: dict[str, list[int]] = {}
    for position, qid in enumerate(qids):
        by_query.setdefault(qid, []).append(position)
    out, dropped = [], 0
    for qid, listed in by_query.items():
        positions = np.asarray(listed, dtype=np.int64)
        top = positions[np.argsort(ranks[positions], kind="stable")][:depth]
        kept = np.asarray([p for p in top if docids[p] in doc_row], dtype=np.int64)
        dropped += len(top) - len(kept)
        out.append((qid, kept))
    return out, docids, ranks, dropped


def _query_vectors(model: ColBERT, query_texts, rows: np.ndarray, batch_size: int, device) -> torch.Tensor:
    """Token vectors [len(rows), L, dim] of the queries of ``rows``, encoded ``batch_size`` at a time (each batch
    as one padded block) and padded to the widest batch with zero vectors, which add nothing to a MaxSim."""
    parts = [
        model.encode_batch(
            {k: v.to(device) for k, v in query_texts.batch(rows[lo : lo + batch_size]).items()}, "query"
        )[0]
        for lo in range(0, len(rows), batch_size)
    ]
    width = max(part.shape[1] for part in parts)
    return torch.cat([nn.functional.pad(part, (0, 0, 0, width - part.shape[1])) for part in parts])


def rerank(
    model: ColBERT,
    query_texts,
    doc_texts,
    ranking: pa.Table,
    *,
    depth: int,
    batch_size: int = 64,
    device: str | torch.device = "cpu",
    where: str | os.PathLike = "ranking",
    query_group: int = QUERY_GROUP,
) -> pa.Table:
    """Re-rank the top ``depth`` documents of each query of ``ranking`` (a RANKING table) by ColBERT's MaxSim: a
    RANKING table with, per query (in the order the queries first appear in ``ranking``), its candidates by score,
    highest first, ties in their original rank order, ranked from 1.

    ``query_texts`` and ``doc_texts`` are the tokenized cache's sets (:class:`TokenizedTexts`). A query of the
    ranking missing from ``query_texts`` is a :class:`DataError` naming it (``where`` names the ranking). A
    candidate missing from ``doc_texts`` (an empty document left out of the cache) cannot be scored and is
    dropped: the candidates are the top ``depth`` of the ranking, less those.

    ``batch_size`` texts go through the encoder at once. Queries are taken ``query_group`` at a time and encoded
    once; their candidates (each document once per group) are encoded longest first, ``batch_size`` at a time,
    each such slice cut into length-homogeneous chunks (``doc_texts.chunked``), and scored against their
    queries with :func:`maxsim_pairs`. Runs in inference mode with dropout off; the model's mode comes back
    afterwards."""
    if depth < 1 or batch_size < 1 or query_group < 1:
        raise ValueError(
            f"depth, batch_size and query_group must be at least 1, got {depth}, {batch_size} and {query_group}"
        )
    query_row = {qid: row for row, qid in enumerate(query_texts.row_ids)}
    doc_row = {docid: row for row, docid in enumerate(doc_texts.row_ids)}
    per_query, docids, ranks, dropped = _candidates(ranking, depth, doc_row)
    missing = [qid for qid, _ in per_query if qid not in query_row]
    if missing:
        raise DataError(
            where,
            None,
            f"query {missing[0]!r} is not among the tokenized queries"
            + (f" ({len(missing)} such queries)" if len(missing) > 1 else ""),
        )
    if dropped:
        log.info(
            "re-ranking: %d candidate documents are not in the tokenized corpus (empty documents) and are dropped",
            dropped,
        )
    device = torch.device(device)
    overhead = chunk_overhead(device)
    scores = np.zeros(ranking.num_rows, dtype=np.float32)
    was_training = model.training
    model.to(device).eval()
    group_size = max(1, query_group // batch_size) * batch_size  # whole encoder batches of queries
    try:
        with torch.inference_mode():
            for lo in range(0, len(per_query), group_size):
                group = [(qid, positions) for qid, positions in per_query[lo : lo + group_size] if len(positions)]
                if not group:
                    continue
                q_rows = np.asarray([query_row[qid] for qid, _ in group])
                q_vectors = _query_vectors(model, query_texts, q_rows, batch_size, device)
                group_positions = np.concatenate([p for _, p in group])
                pair_query = np.repeat(np.arange(len(group)), [len(p) for _, p in group])
                pair_doc = np.asarray([doc_row[docids[p]] for p in group_positions], dtype=np.int64)
                unique, pair_unique = np.unique(pair_doc, return_inverse=True)
                order = np.argsort(-doc_texts.lengths[unique], kind="stable")  # longest first
                slot = np.empty(len(unique), dtype=np.int64)
                slot[order] = np.arange(len(order))
                pair_slot = slot[pair_unique]
                for s_lo in range(0, len(order), batch_size):
                    rows = unique[order[s_lo : s_lo + batch_size]]
                    d_vectors, d_mask = model.encode_batch(doc_texts.chunked(rows, overhead=overhead).to(device), "doc")
                    pairs = np.flatnonzero((pair_slot >= s_lo) & (pair_slot < s_lo + len(rows)))
                    local = torch.from_numpy(pair_slot[pairs] - s_lo).to(device)
                    pair_scores = maxsim_pairs(
                        q_vectors[torch.from_numpy(pair_query[pairs]).to(device)], d_vectors[local], d_mask[local]
                    )
                    scores[group_positions[pairs]] = pair_scores.float().cpu().numpy()
    finally:
        model.train(was_training)
    out_q: list[str] = []
    out_d: list[str] = []
    out_rank: list[np.ndarray] = []
    out_score: list[np.ndarray] = []
    for qid, positions in per_query:
        if not len(positions):
            continue
        # by score descending, then original rank, then table order: deterministic
        order = np.lexsort((positions, ranks[positions], -scores[positions].astype(np.float64)))
        chosen = positions[order]
        out_q.extend([qid] * len(chosen))
        out_d.extend(docids[p] for p in chosen)
        out_rank.append(np.arange(1, len(chosen) + 1, dtype=np.int32))
        out_score.append(scores[chosen])
    return pa.table(
        {
            "qid": pa.array(out_q, pa.string()),
            "docid": pa.array(out_d, pa.string()),
            "rank": pa.array(np.concatenate(out_rank) if out_rank else np.zeros(0, np.int32), pa.int32()),
            "score": pa.array(np.concatenate(out_score) if out_score else np.zeros(0, np.float32), pa.float32()),
        },
        schema=artifacts.RANKING.schema,
    )


__all__ = ["ColBERT", "describe", "is_colbert", "maxsim", "maxsim_pairs", "rerank"]
