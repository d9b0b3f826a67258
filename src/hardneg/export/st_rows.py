"""The rows of a sentence-transformers export (``hardneg export hardnegs --format sentence-transformers``):
the training groups of :mod:`hardneg.export.groups` laid out as ``sentence_transformers.util.mine_hard_negatives``
returns them, in one of its four ``output_format``s (:mod:`hardneg.export.hardnegs` describes them), with the
teacher scores where asked for; :func:`st_size` foretells their rows and bytes before any is written."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hardneg.errors import HardnegError
from hardneg.export import ST_FORMATS
from hardneg.export.groups import Groups


def st_schema(st_format: str, size: int | None = None, scores: bool = False) -> pa.Schema:
    """The columns of a sentence-transformers export (``size``: the negatives of an ``n-tuple`` row; ``scores``:
    with the teacher scores, as ``mine_hard_negatives(..., output_scores=True)`` adds them)."""
    text, score, scores_list = pa.string(), pa.float64(), pa.list_(pa.float64())
    if st_format == "triplet":
        return pa.schema(
            [("query", text), ("positive", text), ("negative", text), *([("scores", scores_list)] if scores else [])]
        )
    if st_format == "n-tuple":
        assert size is not None, "an n-tuple row has a size"
        return pa.schema(
            [
                ("query", text),
                ("positive", text),
                *((f"negative_{i}", text) for i in range(1, size + 1)),
                *([("scores", scores_list)] if scores else []),
            ]
        )
    if st_format == "labeled-pair":
        return pa.schema([("query", text), ("positive", text), ("score", score) if scores else ("label", pa.int64())])
    if st_format == "labeled-list":
        return pa.schema(
            [
                ("query", text),
                ("positive", pa.list_(text)),
                ("scores", scores_list) if scores else ("labels", pa.list_(pa.int64())),
            ]
        )
    raise HardnegError(f"--st-format must be one of {', '.join(ST_FORMATS)}, got {st_format!r}")


def _within(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For groups of ``counts`` rows laid end to end: each row's group and its position within the group."""
    group = np.repeat(np.arange(len(counts)), counts)
    return group, np.arange(len(group)) - np.repeat(np.cumsum(counts) - counts, counts)


def st_table(
    groups: Groups,
    lo: int,
    hi: int,
    texts: pa.Array,
    st_format: str,
    size: int | None = None,
    scores: tuple[np.ndarray, np.ndarray] | None = None,
) -> pa.Table:
    """Queries ``lo`` to ``hi`` in sentence-transformers' ``st_format`` (see the module docstring); ``texts``
    holds each document's one string (a row per row of ``groups.documents``). ``scores``: the teacher scores of
    every positive and negative of ``groups`` (:func:`hardneg.export.scores.group_scores`), written as
    ``mine_hard_negatives(..., output_scores=True)`` writes them: ``scores`` [positive, negative] of a triplet,
    [positive, negative_1 … negative_N] of an n-tuple, ``score`` instead of a pair's label, ``scores`` instead
    of a list's labels. A labeled list's labels are the positive's grade (``groups.pos_relevance``), then 0s; a
    labeled pair's label is 1 or 0."""
    pos_score, neg_score = scores if scores is not None else (None, None)

    def values(rows: np.ndarray, of: np.ndarray | None) -> np.ndarray:
        assert of is not None  # asked for with scores only
        return of[rows].astype(np.float64)

    def score_lists(parts: list[np.ndarray]) -> pa.ListArray:  # row i: [parts[0][i], parts[1][i], ...]
        width = len(parts)
        flat = np.stack(parts, axis=1).reshape(-1) if parts and len(parts[0]) else np.zeros(0)
        offsets = pa.array(np.arange(0, len(flat) + 1, width, dtype=np.int32) if width else [0], pa.int32())
        return pa.ListArray.from_arrays(offsets, pa.array(flat, pa.float64()))

    pos_start, neg_start = groups.pos_offsets[lo : hi + 1], groups.neg_offsets[lo : hi + 1]
    positives, negatives = np.diff(pos_start), np.diff(neg_start)
    pos_start, neg_start = pos_start[:-1], neg_start[:-1]

    def query(rows: np.ndarray) -> pa.Array:
        return groups.queries.take(pa.array(lo + rows, pa.int64()))

    def text(doc_rows: np.ndarray) -> pa.Array:
        return texts.take(pa.array(doc_rows, pa.int64()))

    if st_format == "triplet":  # every (positive, negative) pair of each query
        q, k = _within(positives * negatives)
        pos_row, neg_row = pos_start[q] + k // negatives[q], neg_start[q] + k % negatives[q]
        columns = [query(q), text(groups.pos_doc[pos_row]), text(groups.neg_doc[neg_row])]
        if scores is not None:
            columns.append(score_lists([values(pos_row, pos_score), values(neg_row, neg_score)]))
    elif st_format == "n-tuple":  # one row per positive of the queries with ``size`` negatives or more
        assert size is not None, "an n-tuple row has a size"
        full = np.flatnonzero(negatives >= size)
        group, k = _within(positives[full])
        q = full[group]
        columns = [query(q), text(groups.pos_doc[pos_start[q] + k])]
        columns += [text(groups.neg_doc[neg_start[q] + i]) for i in range(size)]
        if scores is not None:
            columns.append(
                score_lists(
                    [values(pos_start[q] + k, pos_score)] + [values(neg_start[q] + i, neg_score) for i in range(size)]
                )
            )
    elif st_format == "labeled-pair":  # each query's positives (label 1), then its negatives (label 0)
        q, k = _within(positives + negatives)
        relevant = k < positives[q]
        docs = np.empty(len(q), dtype=np.int64)
        docs[relevant] = groups.pos_doc[(pos_start[q] + k)[relevant]]
        docs[~relevant] = groups.neg_doc[(neg_start[q] + k - positives[q])[~relevant]]
        columns = [query(q), text(docs), pa.array(relevant.astype(np.int64))]
        if scores is not None:
            score = np.empty(len(q), dtype=np.float64)
            score[relevant] = values((pos_start[q] + k)[relevant], pos_score)
            score[~relevant] = values((neg_start[q] + k - positives[q])[~relevant], neg_score)
            columns[2] = pa.array(score, pa.float64())
    elif st_format == "labeled-list":  # per positive: [positive, negatives...] with labels [its grade, 0...]
        q, k = _within(positives)
        lengths = 1 + negatives[q]
        offsets = pa.array(np.concatenate([[0], np.cumsum(lengths)]), pa.int32())
        row, j = _within(lengths)
        first = j == 0
        docs = np.empty(len(row), dtype=np.int64)
        docs[first] = groups.pos_doc[pos_start[q] + k]
        docs[~first] = groups.neg_doc[(neg_start[q[row]] + j - 1)[~first]]
        labels = np.zeros(len(row), dtype=np.int64)
        labels[first] = groups.pos_relevance[pos_start[q] + k]
        labels = pa.array(labels)
        if scores is not None:
            score = np.empty(len(row), dtype=np.float64)
            score[first] = values(pos_start[q] + k, pos_score)
            score[~first] = values((neg_start[q[row]] + j - 1)[~first], neg_score)
            labels = pa.array(score, pa.float64())
        columns = [query(q), pa.ListArray.from_arrays(offsets, text(docs)), pa.ListArray.from_arrays(offsets, labels)]
    else:
        raise HardnegError(f"--st-format must be one of {', '.join(ST_FORMATS)}, got {st_format!r}")
    return pa.Table.from_arrays(columns, schema=st_schema(st_format, size, scores is not None))


def st_size(groups: Groups, texts: pa.Array, st_format: str, size: int | None = None) -> tuple[int, int]:
    """The rows of a sentence-transformers export of ``groups`` in ``st_format`` (as :func:`st_table` writes
    them), and the bytes of their text in UTF-8 plus 8 bytes per label: about the size of the saved dataset.

    :param groups: the training groups.
    :param texts: each document's one string (a row per row of ``groups.documents``).
    :param st_format: ``triplet``, ``n-tuple``, ``labeled-pair`` or ``labeled-list``.
    :param size: the negatives of an ``n-tuple`` row.
    :returns: (rows, bytes).
    """
    doc_bytes = pc.binary_length(texts).to_numpy(zero_copy_only=False).astype(np.int64)
    query = pc.binary_length(groups.queries).to_numpy(zero_copy_only=False).astype(np.int64)
    pos_count, neg_count = np.diff(groups.pos_offsets), np.diff(groups.neg_offsets)

    def per_query(docs: np.ndarray, offsets: np.ndarray) -> np.ndarray:
        return np.diff(np.concatenate([[0], np.cumsum(doc_bytes[docs])])[offsets])

    pos, neg = per_query(groups.pos_doc, groups.pos_offsets), per_query(groups.neg_doc, groups.neg_offsets)
    if st_format == "triplet":
        rows = pos_count * neg_count
        size_of = rows * query + neg_count * pos + pos_count * neg
    elif st_format == "n-tuple":  # queries with fewer than ``size`` negatives have no row; the others exactly size
        full = neg_count >= size
        rows = np.where(full, pos_count, 0)
        size_of = np.where(full, rows * query + pos + pos_count * neg, 0)
    elif st_format == "labeled-pair":
        rows = pos_count + neg_count
        size_of = rows * (query + 8) + pos + neg
    elif st_format == "labeled-list":
        rows = pos_count
        size_of = rows * query + pos + pos_count * neg + 8 * pos_count * (1 + neg_count)
    else:
        raise HardnegError(f"--st-format must be one of {', '.join(ST_FORMATS)}, got {st_format!r}")
    return int(rows.sum()), int(size_of.sum())
