"""Scoring with a trained cross-encoder: re-ranking a run's top-k (:func:`rerank`), scoring given (query,
document) pairs (:func:`score_pairs`: probabilities of relevance, e.g. to denoise a hard-negative candidate pool
as RocketQA does, or as a teacher's scores), and the stage that scores a pairs file from raw texts
(:func:`score_pairs_stage`).

Pairs are scored longest first, ``batch_size`` at a time, each batch one block padded to its longest pair (pairs of
similar lengths share a batch, so little is padding), in inference mode with dropout off; the results come back
in the order the pairs were given.

A cross-encoder trained from scratch (:class:`~hardneg.methods.crossencoder.model.CrossEncoder`) joins its pairs
from the tokenized cache's rows; a pretrained one with its own head
(:class:`~hardneg.methods.crossencoder.pretrained.PretrainedCrossEncoder`) forms them from the raw texts, as
sentence-transformers does, which the text sets given then carry (their ``raw``:
:class:`hardneg.dense.raw_texts.TokenizedWithRaw`).
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import torch

from hardneg.dense.tokenized import encode_chunk
from hardneg.dense.tokenizer import load_tokenizer
from hardneg.errors import DataError
from hardneg.io import artifacts, logs
from hardneg.methods.crossencoder.model import CrossEncoder, pair_inputs, pair_lengths
from hardneg.methods.crossencoder.pretrained import PretrainedCrossEncoder, load_model

log = logging.getLogger(__name__)

# Pairs of a pairs file tokenized and scored at once by score_pairs_stage (bounds the token arrays held).
PAIR_BLOCK = 1 << 16
# Seconds between two progress lines of a long scoring.
PROGRESS_SECONDS = 10


@dataclass
class TokenRows:
    """Texts tokenized in memory, shaped as the tokenized cache's sets
    (:class:`hardneg.dense.tokenized.TokenizedTexts`): ``ids`` int32 [rows, width] padded with ``pad_token_id``,
    ``lengths`` [rows] real tokens, ``row_ids`` the id of each row."""

    ids: np.ndarray
    lengths: np.ndarray
    row_ids: list[str]
    pad_token_id: int

    @classmethod
    def encode(
        cls, tokenizer, ids: list[str], first: list[str], second: list[str] | None, max_length: int
    ) -> TokenRows:
        """Texts as the cache tokenizes them (:func:`hardneg.dense.tokenized.encode_chunk`): queries
        (``second`` None) as ``[CLS] text [SEP]``, documents as ``[CLS] title [SEP] text [SEP]`` (the text alone
        when the title is blank), cut at ``max_length`` tokens."""

        if not ids:
            return cls(np.zeros((0, 1), np.int32), np.zeros(0, np.int32), [], tokenizer.pad_token_id)
        token_ids, lengths, _ = encode_chunk(tokenizer, first, second, max_length)
        return cls(token_ids, lengths, list(ids), tokenizer.pad_token_id)


def _as_model(model) -> CrossEncoder | PretrainedCrossEncoder:
    return model if isinstance(model, (CrossEncoder, PretrainedCrossEncoder)) else load_model(model)


def _batched_logits(model, lengths: np.ndarray, block_of, *, batch_size: int, device) -> np.ndarray:
    """Logits (float32 [P]) of ``len(lengths)`` pairs, ``block_of(positions)`` giving the model's inputs of those
    pairs: longest first (``lengths``), ``batch_size`` at a time, in inference mode with dropout off; the model's
    mode comes back afterwards."""
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, got {batch_size}")
    out = np.zeros(len(lengths), dtype=np.float32)
    if not len(out):
        return out
    device = torch.device(device)
    order = np.argsort(-np.asarray(lengths), kind="stable")  # similar lengths batched together: little padding
    was_training = model.training
    model.to(device).eval()
    meter = logs.Meter(
        log, "scored %d / %d pairs (%.1f per second)", len(order), label="pairs", seconds=PROGRESS_SECONDS
    )
    try:
        with torch.inference_mode():
            for lo in range(0, len(order), batch_size):
                chosen = order[lo : lo + batch_size]
                logits = model({k: v.to(device) for k, v in block_of(chosen).items()})
                out[chosen] = logits.float().cpu().numpy()
                meter.update(lo + len(chosen))
    finally:
        model.train(was_training)
    logs.progress(log, "scored %d pairs at %.1f per second", len(order), meter.rate(len(order)))
    return out


def text_pair_logits(
    model: PretrainedCrossEncoder,
    queries: list[str],
    documents: list[tuple[str, str]],
    *,
    batch_size: int = 64,
    device: str | torch.device = "cpu",
) -> np.ndarray:
    """A pretrained cross-encoder's logits (float32 [P], in the order given) of the pairs (``queries[i]``,
    ``documents[i]``) of raw texts, each document its (title, text), formed as its folder says
    (:meth:`PretrainedCrossEncoder.encode_pairs`); longest first (in characters), ``batch_size`` at a time."""
    joined = model.document_texts([d[0] for d in documents], [d[1] for d in documents])
    lengths = np.fromiter((len(q) + len(d) for q, d in zip(queries, joined)), dtype=np.int64, count=len(joined))
    return _batched_logits(
        model,
        lengths,
        lambda chosen: model.encode_pairs([queries[i] for i in chosen], [joined[i] for i in chosen]),
        batch_size=batch_size,
        device=device,
    )


def _raw_texts(texts, rows: np.ndarray, what: str) -> list:
    """The raw texts of ``rows`` of a tokenized set that carries them (its ``raw``)."""
    raw = getattr(texts, "raw", None)
    if raw is None:
        raise ValueError(
            f"a pretrained cross-encoder forms its pairs from the raw texts, and these tokenized "
            f"{what} come without them (give a hardneg.dense.raw_texts.TokenizedWithRaw)"
        )
    ids = [texts.row_ids[row] for row in rows]
    found = raw.lookup(ids)
    return [found[value] for value in ids]


def pair_logits(
    model: CrossEncoder | PretrainedCrossEncoder,
    query_texts,
    doc_texts,
    query_rows: np.ndarray,
    doc_rows: np.ndarray,
    *,
    batch_size: int = 64,
    device: str | torch.device = "cpu",
) -> np.ndarray:
    """The model's relevance logits (float32 [P], in the order given) of the pairs (``query_rows[i]``,
    ``doc_rows[i]``) of two tokenized text sets. Pairs go through the model longest first, ``batch_size`` at a
    time, in inference mode with dropout off; the model's mode comes back afterwards. A pretrained cross-encoder
    reads the pairs' raw texts (:func:`text_pair_logits`), which the text sets then carry."""
    query_rows, doc_rows = np.asarray(query_rows, dtype=np.int64), np.asarray(doc_rows, dtype=np.int64)
    if isinstance(model, PretrainedCrossEncoder):
        return text_pair_logits(
            model,
            _raw_texts(query_texts, query_rows, "queries"),
            _raw_texts(doc_texts, doc_rows, "documents"),
            batch_size=batch_size,
            device=device,
        )
    lengths = pair_lengths(query_texts, doc_texts, query_rows, doc_rows, model.max_length)
    return _batched_logits(
        model,
        lengths,
        lambda chosen: pair_inputs(
            query_texts, doc_texts, query_rows[chosen], doc_rows[chosen], max_length=model.max_length
        ),
        batch_size=batch_size,
        device=device,
    )


def _rows_of(ids: list, texts, what: str, where) -> np.ndarray:
    """Rows of ``texts`` (its ``row_ids``) of each id of ``ids``; a :class:`DataError` naming the first id absent."""
    row = {value: i for i, value in enumerate(texts.row_ids)}
    missing = [value for value in dict.fromkeys(ids) if value not in row]
    if missing:
        raise DataError(
            where,
            None,
            f"{what} {missing[0]!r} is not among the tokenized {what}s"
            + (f" ({len(missing)} such {what}s)" if len(missing) > 1 else ""),
        )
    return np.fromiter((row[value] for value in ids), dtype=np.int64, count=len(ids))


def score_pairs(
    model_dir,
    queries,
    corpus,
    pairs: pa.Table,
    *,
    batch_size: int = 64,
    device: str | torch.device = "cpu",
    where: str | os.PathLike = "pairs",
) -> np.ndarray:
    """Probabilities of relevance of (query, document) pairs: ``sigmoid(logit)`` of the cross-encoder (for a
    pretrained one, ``CrossEncoder.predict``'s score when its activation is the sigmoid:
    :mod:`hardneg.methods.crossencoder.pretrained`).

    :param model_dir: a saved cross-encoder's folder (:meth:`CrossEncoder.save`,
        :meth:`PretrainedCrossEncoder.save`, or any folder :func:`~hardneg.methods.crossencoder.pretrained.load_model`
        reads), or a loaded model.
    :param queries: the tokenized queries (:class:`hardneg.dense.tokenized.TokenizedTexts` of a split, or
        :class:`TokenRows`).
    :param corpus: the tokenized documents, likewise.
    :param pairs: a table with the columns ``qid`` and ``docid`` (others are ignored), one row per pair; a pair
        may repeat.
    :param batch_size: pairs per forward pass.
    :param device: where the model runs (``cpu``, ``cuda``, ...).
    :param where: what an error names (the pairs' file).
    :returns: float32 [pairs.num_rows], in [0, 1], in the order of ``pairs``' rows.
    :raises DataError: a query or document of ``pairs`` is not among the tokenized ones (an empty document the
        cache left out, say): nothing is scored.
    """
    model = _as_model(model_dir)
    query_rows = _rows_of(pairs.column("qid").to_pylist(), queries, "query", where)
    doc_rows = _rows_of(pairs.column("docid").to_pylist(), corpus, "document", where)
    logits = pair_logits(model, queries, corpus, query_rows, doc_rows, batch_size=batch_size, device=device)
    return model.probabilities(torch.from_numpy(logits)).numpy().astype(np.float32)


def query_codes(qids: list[str]) -> np.ndarray:
    """Each row's query as an int64 code: the queries numbered in order of first appearance."""
    first: dict[str, int] = {}
    return np.fromiter((first.setdefault(q, len(first)) for q in qids), dtype=np.int64, count=len(qids))


def rank_within_queries(
    codes: np.ndarray, scores: np.ndarray, tie: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """The order of rows that lists each query's rows (queries by their code, :func:`query_codes`) by score,
    highest first, ties by ``tie`` (ascending; default: none), then in row order; and each row's rank (1-based)
    within its query, in the original row order."""
    codes = np.asarray(codes, dtype=np.int64)
    position = np.arange(len(codes))
    tie = position if tie is None else np.asarray(tie)
    order = np.lexsort((position, tie, -np.asarray(scores, dtype=np.float64), codes))
    ranked = codes[order]
    ranks = np.empty(len(codes), dtype=np.int32)
    ranks[order] = position - np.searchsorted(ranked, ranked, side="left") + 1
    return order, ranks


def rerank(
    model: CrossEncoder | PretrainedCrossEncoder,
    query_texts,
    doc_texts,
    ranking: pa.Table,
    *,
    depth: int,
    batch_size: int = 64,
    device: str | torch.device = "cpu",
    where: str | os.PathLike = "ranking",
) -> pa.Table:
    """Re-rank the top ``depth`` documents of each query of ``ranking`` (a RANKING table) by the cross-encoder: a
    RANKING table with, per query (in the order the queries first appear in ``ranking``), its candidates by score,
    highest first, ties in their original rank order, ranked from 1. ``score`` is the logit (monotone in the
    probability, and not saturated where float32 probabilities of 1 would tie).

    ``query_texts`` and ``doc_texts`` are the tokenized cache's sets. A query missing from ``query_texts`` is a
    :class:`DataError` naming it (``where`` names the ranking). A candidate missing from ``doc_texts`` (an empty
    document left out of the cache) cannot be scored and is dropped: the candidates are the top ``depth`` of the
    ranking, less those. ``batch_size`` pairs go through the model at once."""
    if depth < 1:
        raise ValueError(f"depth must be at least 1, got {depth}")
    qids = ranking.column("qid").to_pylist()
    docids = ranking.column("docid").to_pylist()
    ranks = ranking.column("rank").to_numpy(zero_copy_only=False)
    codes = query_codes(qids)
    # each query's rows by rank (ties in table order), its first `depth` kept
    _, by_rank = rank_within_queries(codes, -ranks.astype(np.float64))
    top = np.flatnonzero(by_rank <= depth)
    doc_row = {docid: i for i, docid in enumerate(doc_texts.row_ids)}
    kept = np.asarray([p for p in top if docids[p] in doc_row], dtype=np.int64)
    if len(kept) < len(top):
        log.info(
            "re-ranking: %d candidate documents are not in the tokenized corpus (empty documents) and are dropped",
            len(top) - len(kept),
        )
    query_rows = _rows_of([qids[p] for p in top], query_texts, "query", where)  # every query of the top, kept or not
    keep = np.isin(top, kept)
    logits = pair_logits(
        model,
        query_texts,
        doc_texts,
        query_rows[keep],
        np.fromiter((doc_row[docids[p]] for p in kept), dtype=np.int64, count=len(kept)),
        batch_size=batch_size,
        device=device,
    )
    kept_qids = [qids[p] for p in kept]
    order, new_ranks = rank_within_queries(codes[kept], logits, tie=ranks[kept])
    return pa.table(
        {
            "qid": pa.array([kept_qids[i] for i in order], pa.string()),
            "docid": pa.array([docids[kept[i]] for i in order], pa.string()),
            "rank": pa.array(new_ranks[order], pa.int32()),
            "score": pa.array(logits[order], pa.float32()),
        },
        schema=artifacts.RANKING.schema,
    )


def score_pairs_stage(
    model_dir,
    queries_path,
    corpus_path,
    pairs_path,
    out_path,
    *,
    batch_size: int = 64,
    device: str | torch.device = "cpu",
    pairs_kind: artifacts.ArtifactKind = artifacts.RANKING,
) -> pa.Table:
    """Score the (query, document) pairs of a Parquet file with the cross-encoder saved in ``model_dir`` and write
    them as a RANKING table: for each query (in order of first appearance) its pairs by probability, highest first (ties
    in file order), ``rank`` from 1 within the query, ``score`` the probability of relevance in [0, 1].

    Texts are read from the dataset's Parquet files and tokenized with the model's own tokenizer and maximum lengths
    (``crossencoder.json``), as the tokenized cache tokenizes them, ``PAIR_BLOCK`` pairs at a time (only the
    queries and documents the pairs name); a pretrained cross-encoder forms its pairs from the texts as its folder
    says (:func:`text_pair_logits`).

    :param model_dir: a saved cross-encoder's folder.
    :param queries_path: the split's QUERIES Parquet file (``qid``, ``text``).
    :param corpus_path: the CORPUS Parquet file (``docid``, ``title``, ``text``).
    :param pairs_path: the pairs: a Parquet file of ``pairs_kind`` (RANKING by default; HARDNEGS and CANDIDATES
        tables have ``qid`` and ``docid`` too), whose other columns are ignored.
    :param out_path: the RANKING Parquet file written (atomically).
    :param batch_size: pairs per forward pass.
    :param device: where the model runs.
    :param pairs_kind: the artifact kind of ``pairs_path``.
    :returns: the table written.
    :raises DataError: a file is missing or not of its kind, or a pair names a query or document the files lack.
    """

    model = load_model(model_dir)
    tokenizer = load_tokenizer(model_dir)
    pairs = artifacts.read_table(pairs_kind, pairs_path).select(["qid", "docid"])
    qids, docids = pairs.column("qid").to_pylist(), pairs.column("docid").to_pylist()
    needed_docs = list(dict.fromkeys(docids))
    corpus = artifacts.read_table(
        artifacts.CORPUS, corpus_path, filters=[("docid", "in", needed_docs)] if needed_docs else None
    )
    queries = artifacts.read_table(artifacts.QUERIES, queries_path)
    query_text = dict(zip(queries.column("qid").to_pylist(), queries.column("text").to_pylist()))
    doc_text = {
        d: (t or "", x or "")
        for d, t, x in zip(
            corpus.column("docid").to_pylist(), corpus.column("title").to_pylist(), corpus.column("text").to_pylist()
        )
    }
    for ids, known, what, path in (
        (qids, query_text, "query", queries_path),
        (docids, doc_text, "document", corpus_path),
    ):
        missing = [value for value in dict.fromkeys(ids) if value not in known]
        if missing:
            raise DataError(
                pairs_path,
                None,
                f"{what} {missing[0]!r} is not in {path}"
                + (f" ({len(missing)} such {what}s)" if len(missing) > 1 else ""),
            )
    probabilities = np.zeros(len(qids), dtype=np.float32)
    for lo in range(0, len(qids), PAIR_BLOCK):
        block = slice(lo, lo + PAIR_BLOCK)
        if isinstance(model, PretrainedCrossEncoder):
            logits = text_pair_logits(
                model,
                [query_text[q] for q in qids[block]],
                [doc_text[d] for d in docids[block]],
                batch_size=batch_size,
                device=device,
            )
            probabilities[block] = model.probabilities(torch.from_numpy(logits)).numpy()
            log.info("scored %d of %d pairs", min(lo + PAIR_BLOCK, len(qids)), len(qids))
            continue
        block_q, block_d = list(dict.fromkeys(qids[block])), list(dict.fromkeys(docids[block]))
        q_set = TokenRows.encode(tokenizer, block_q, [query_text[q] for q in block_q], None, model.query_max_length)
        d_set = TokenRows.encode(
            tokenizer,
            block_d,
            [doc_text[d][0] for d in block_d],
            [doc_text[d][1] for d in block_d],
            model.doc_max_length,
        )
        probabilities[block] = score_pairs(
            model, q_set, d_set, pairs.slice(lo, PAIR_BLOCK), batch_size=batch_size, device=device, where=pairs_path
        )
        log.info("scored %d of %d pairs", min(lo + PAIR_BLOCK, len(qids)), len(qids))
    order, ranks = rank_within_queries(query_codes(qids), probabilities)
    table = pa.table(
        {
            "qid": pa.array([qids[i] for i in order], pa.string()),
            "docid": pa.array([docids[i] for i in order], pa.string()),
            "rank": pa.array(ranks[order], pa.int32()),
            "score": pa.array(probabilities[order], pa.float32()),
        },
        schema=artifacts.RANKING.schema,
    )
    artifacts.write_table(table, artifacts.RANKING, out_path)
    return table


__all__ = [
    "PAIR_BLOCK",
    "TokenRows",
    "pair_logits",
    "query_codes",
    "rank_within_queries",
    "rerank",
    "score_pairs",
    "score_pairs_stage",
    "text_pair_logits",
]
