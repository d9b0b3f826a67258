"""Qrels files: TREC qrels (``qid iteration docid relevance``) read with errors naming file and line, and qrels
in either form a user brings (a Parquet qrels artifact or a TREC file)."""

from __future__ import annotations

import os

import pyarrow as pa

from hardneg.datasets.tables import qrels_table
from hardneg.io import artifacts
from hardneg.io.rankings import read_either
from hardneg.io.readers import iter_tsv


def read_trec_qrels(path: str):
    """TREC qrels: ``qid iteration docid relevance``, whitespace separated → (qrels table, Source)."""
    return qrels_table(((line, f[0], f[2], f[3]) for line, f in iter_tsv(path, 4, sep=None)), path)


def load_qrels(path: str | os.PathLike) -> pa.Table:
    """Qrels from a Parquet qrels artifact or a TREC qrels file (``qid iteration docid relevance``), with the
    errors of :func:`hardneg.io.rankings.load_run`."""
    return read_either(artifacts.QRELS, path, lambda p: read_trec_qrels(str(p))[0])
