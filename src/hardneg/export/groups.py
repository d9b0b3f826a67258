"""The training groups of a run's hard-negative list: each training query with its relevant documents and its
mined negatives (in rank order), and the texts of them all.

A group is exported when its query has at least one relevant document (relevance >= 1 in the training split's
qrels) and at least one hard negative: a training example needs both. Queries come in the order of the split's
queries file, positives in the order of its qrels file, each with its grade there (the qrels' relevance, 1 or
more), negatives in increasing rank (the mining model's best first). ``negatives`` keeps the first N negatives of
each query in that order.

Memory: the hard-negative list (ids, ranks, scores) and the texts of the documents it names are held; the
exports write their output one block of queries at a time (:meth:`Groups.blocks`).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from hardneg.errors import DataError, HardnegError
from hardneg.io import artifacts
from hardneg.results.run_files import RunFiles

log = logging.getLogger(__name__)

BLOCK_ROWS = 16_384  # documents (positives and negatives) of one block of queries, at most (one query may exceed)
_CORPUS_BATCH = 65_536


@dataclass(frozen=True)
class Groups:
    """The exported training groups. Rows of the positive and negative arrays are sorted by query (a row of
    ``qids``); ``*_doc`` are rows of ``documents``; ``pos_offsets``/``neg_offsets`` (one more than the queries)
    give each query's slice of them."""

    qids: pa.Array
    queries: pa.Array  # the query texts
    documents: pa.Table  # docid, title, text ("" where missing) of every document of a group
    pos_query: np.ndarray
    pos_doc: np.ndarray
    pos_relevance: np.ndarray  # int32: the positive's grade in the split's qrels (1 or more)
    neg_query: np.ndarray
    neg_doc: np.ndarray
    neg_rank: np.ndarray  # int32: the rank under the mining model
    neg_score: np.ndarray  # float32: the score under the mining model

    def __len__(self) -> int:
        return len(self.qids)

    @cached_property
    def doc_columns(self) -> dict[str, pa.Array]:
        """The columns of ``documents`` (docid, title, text), each as one array."""
        return {name: self.documents[name].combine_chunks() for name in self.documents.column_names}

    @cached_property
    def pos_offsets(self) -> np.ndarray:
        return _offsets(self.pos_query, len(self))

    @cached_property
    def neg_offsets(self) -> np.ndarray:
        return _offsets(self.neg_query, len(self))

    def blocks(self, rows: int = BLOCK_ROWS) -> Iterator[tuple[int, int]]:
        """Consecutive query ranges ``[lo, hi)`` covering every group, each naming at most ``rows`` documents
        (positives and negatives) unless a single query names more."""
        ends = self.pos_offsets[1:] + self.neg_offsets[1:]  # documents named by the first q + 1 queries
        lo = 0
        while lo < len(self):
            before = ends[lo - 1] if lo else 0
            hi = max(int(np.searchsorted(ends, before + rows, side="right")), lo + 1)
            yield lo, hi
            lo = hi


def _offsets(query_rows: np.ndarray, num_queries: int) -> np.ndarray:
    return np.concatenate([[0], np.cumsum(np.bincount(query_rows, minlength=num_queries))]).astype(np.int64)


def _codes(values, value_set: pa.Array) -> np.ndarray:
    """The position of each of ``values`` in ``value_set`` (int64), -1 where absent."""
    if len(values) == 0:
        return np.zeros(0, dtype=np.int64)
    return pc.fill_null(pc.index_in(values, value_set=value_set), -1).to_numpy().astype(np.int64, copy=False)


def _read_documents(path: Path, docids: pa.Array) -> pa.Table:
    """The rows of corpus ``path`` whose docid is in ``docids`` (docid, title, text; missing title or text as
    ""), read batch by batch so that only those are held."""
    names = pq.read_schema(path).names
    missing = [name for name in artifacts.CORPUS.schema.names if name not in names]
    if missing:
        raise DataError(path, None, f"not a corpus table: missing column(s) {', '.join(missing)}")
    parts = []
    for batch in pq.ParquetFile(path).iter_batches(batch_size=_CORPUS_BATCH, columns=artifacts.CORPUS.schema.names):
        batch = pa.Table.from_batches([batch]).cast(artifacts.CORPUS.schema)
        parts.append(batch.filter(pc.is_in(batch["docid"], value_set=docids)))
    table = pa.concat_tables(parts) if parts else artifacts.CORPUS.schema.empty_table()
    return pa.table(
        {
            "docid": table["docid"].combine_chunks(),
            "title": pc.fill_null(table["title"], "").combine_chunks(),
            "text": pc.fill_null(table["text"], "").combine_chunks(),
        }
    )


def load_groups(files: RunFiles, negatives: int | None = None) -> Groups:
    """The training groups of run ``files.run`` (see the module docstring); ``negatives``: keep each query's
    first N negatives. Raises HardnegError naming the file at fault: a hard negative of a query outside the
    training split, a document missing from the corpus, nothing to export."""
    if negatives is not None and negatives < 1:
        raise HardnegError(f"--negatives must be at least 1, got {negatives}")
    hardnegs_path = files.hard_negatives()
    split = files.train_split
    queries_path, qrels_path = files.queries(split), files.qrels(split)
    queries = artifacts.read_table(artifacts.QUERIES, queries_path)
    qids = queries["qid"].combine_chunks()
    hardnegs = artifacts.read_table(artifacts.HARDNEGS, hardnegs_path)
    neg_query = _codes(hardnegs["qid"], qids)
    if (neg_query < 0).any():
        stray = hardnegs["qid"].filter(pa.array(neg_query < 0))
        raise DataError(
            hardnegs_path,
            None,
            f"{len(stray)} hard negatives name queries that are not among the "
            f"{split!r} queries of dataset {files.dataset!r} ({queries_path}), e.g. {stray[0].as_py()!r}: "
            "the list does not belong to the run's training split",
        )
    order = np.lexsort((hardnegs["rank"].to_numpy(), neg_query))
    hardnegs, neg_query = hardnegs.take(pa.array(order)), neg_query[order]
    if negatives is not None:
        position = np.arange(len(neg_query)) - np.searchsorted(neg_query, neg_query, side="left")
        keep = position < negatives
        hardnegs, neg_query = hardnegs.filter(pa.array(keep)), neg_query[keep]

    qrels = artifacts.read_table(artifacts.QRELS, qrels_path)
    relevant = qrels.filter(pc.greater_equal(qrels["relevance"], 1))
    pos_query = _codes(relevant["qid"], qids)
    order = np.argsort(pos_query, kind="stable")  # by query, in qrels order within one
    relevant, pos_query = relevant.take(pa.array(order)), pos_query[order]

    has_negatives = np.bincount(neg_query, minlength=len(qids)) > 0
    has_positives = np.bincount(pos_query[pos_query >= 0], minlength=len(qids)) > 0
    exported = has_negatives & has_positives
    if (has_negatives & ~has_positives).any():
        log.warning(
            "%d queries with hard negatives have no relevant document in %s: left out",
            int((has_negatives & ~has_positives).sum()),
            qrels_path,
        )
    if (has_positives & ~has_negatives).any():
        log.info(
            "%d training queries with a relevant document have no hard negatives: left out",
            int((has_positives & ~has_negatives).sum()),
        )
    if not exported.any():
        raise HardnegError(
            f"run {files.run}: no query of split {split!r} has both a relevant document ({qrels_path}) "
            f"and a hard negative ({hardnegs_path}): nothing to export"
        )
    new_row = np.cumsum(exported) - 1  # an exported query's row among the exported ones
    keep_neg = exported[neg_query]
    keep_pos = (pos_query >= 0) & exported[np.maximum(pos_query, 0)]
    hardnegs, neg_query = hardnegs.filter(pa.array(keep_neg)), new_row[neg_query[keep_neg]]
    relevant, pos_query = relevant.filter(pa.array(keep_pos)), new_row[pos_query[keep_pos]]

    corpus_path = files.corpus()
    named = pc.unique(pa.concat_arrays([relevant["docid"].combine_chunks(), hardnegs["docid"].combine_chunks()]))
    documents = _read_documents(corpus_path, named)
    pos_doc, neg_doc = _codes(relevant["docid"], documents["docid"]), _codes(hardnegs["docid"], documents["docid"])
    for rows, table, what in ((pos_doc, relevant, qrels_path), (neg_doc, hardnegs, hardnegs_path)):
        if (rows < 0).any():
            absent = table["docid"].filter(pa.array(rows < 0))
            raise DataError(
                corpus_path,
                None,
                f"{len(absent)} documents named by {what} are not in the corpus, e.g. {absent[0].as_py()!r}",
            )
    selected = pa.array(np.flatnonzero(exported))
    groups = Groups(
        qids=qids.take(selected),
        queries=pc.fill_null(queries["text"], "").combine_chunks().take(selected),
        documents=documents,
        pos_query=pos_query,
        pos_doc=pos_doc,
        pos_relevance=relevant["relevance"].to_numpy().astype(np.int32, copy=False),
        neg_query=neg_query,
        neg_doc=neg_doc,
        neg_rank=hardnegs["rank"].to_numpy(),
        neg_score=hardnegs["score"].to_numpy(),
    )
    log.info(
        "%d training groups: %d positives, %d hard negatives, %d documents",
        len(groups),
        len(pos_doc),
        len(neg_doc),
        documents.num_rows,
    )
    return groups
