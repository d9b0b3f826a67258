"""Qrels files: TREC qrels (``qid iteration docid relevance``) read with errors naming file and line, and qrels
in either form a user brings (a Parquet qrels artifact or a TREC file)."""

from __future__ import annotations

import os

import pyarrow as pa
import pyarrow.compute as pc

from hardneg.datasets.tables import qrels_table
from hardneg.errors import DataError
from hardneg.io import artifacts
from hardneg.io.rankings import check_ids, check_no_nulls, check_unique_pairs, read_either
from hardneg.io.readers import iter_tsv


def read_trec_qrels(path: str):
    """TREC qrels: ``qid iteration docid relevance``, whitespace separated → (qrels table, Source)."""
    return qrels_table(((line, f[0], f[2], f[3]) for line, f in iter_tsv(path, 4, sep=None)), path)


def check_qrels_rows(qrels: pa.Table, path) -> pa.Table:
    """The checks of a TREC qrels file's lines (:func:`hardneg.datasets.tables.qrels_table`) on qrels read from
    Parquet: rows, no null, ids fit for TREC, relevance non-negative, each (query, document) judged once. Errors
    name the row (1-based). Returns ``qrels``."""
    if qrels.num_rows == 0:
        raise DataError(path, None, "the qrels file holds no judgements")
    check_no_nulls(qrels, path)
    check_ids(qrels, path)
    negative = pc.less(qrels["relevance"], 0)
    if pc.any(negative).as_py():
        row = pc.index(negative, True).as_py()
        raise DataError(
            path,
            None,
            f"row {row + 1}: relevance {qrels['relevance'][row].as_py()} is negative; "
            f"relevance must be a non-negative integer (0: not relevant)",
        )
    check_unique_pairs(
        qrels,
        path,
        lambda qid, docid, first: (
            f"duplicate judgement for query {qid!r} and document {docid!r} (first on row {first})"
        ),
    )
    return qrels


def load_qrels(path: str | os.PathLike) -> pa.Table:
    """Read qrels a user brings: a QRELS Parquet file or a TREC qrels file, told apart by content, not by name.

    Both forms get the same checks: the file holds judgements; ids are fit for TREC (no whitespace or control
    character); every relevance is a non-negative integer; each (query, document) pair is judged once; no value
    is missing (Parquet).

    :param path: the qrels file: Parquet (starting with ``PAR1``) with the QRELS columns, or TREC text
        (``qid iteration docid relevance`` lines, whitespace separated).
    :returns: a QRELS table: ``qid``, ``docid`` (strings), ``relevance`` (int32; 1 or more: relevant), in file
        order.
    :raises DataError: a missing file, a folder, an unreadable Parquet file or a bad row or line; the error names
        the file and the line (TREC) or row (Parquet, 1-based).
    """
    return read_either(artifacts.QRELS, path, lambda p: read_trec_qrels(str(p))[0], check_qrels_rows)
