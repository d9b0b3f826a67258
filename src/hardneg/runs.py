"""Run files: the Parquet run artifact and its TREC-format twin for trec_eval and other tools."""

from __future__ import annotations

import os

import pyarrow as pa

from hardneg import artifacts
from hardneg.atomic import atomic_path


def write_trec(run: pa.Table, path: str | os.PathLike, tag: str) -> None:
    """Write ``qid Q0 docid rank score tag`` lines, atomically."""
    run = run.sort_by([("qid", "ascending"), ("rank", "ascending")])
    columns = [run[c].to_pylist() for c in ("qid", "docid", "rank", "score")]
    with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8") as handle:
        for qid, docid, rank, score in zip(*columns):
            handle.write(f"{qid} Q0 {docid} {rank} {score:.6f} {tag}\n")


def write_run(run: pa.Table, parquet_path: str | os.PathLike, trec_path: str | os.PathLike | None, tag: str) -> None:
    """Write a run as Parquet and, when ``trec_path`` is given, as a TREC run file."""
    artifacts.write_table(run, artifacts.RUN, parquet_path)
    if trec_path is not None:
        write_trec(run, trec_path, tag)


def read_run(path: str | os.PathLike) -> pa.Table:
    return artifacts.read_table(artifacts.RUN, path)


def write_trec_qrels(qrels: pa.Table, path: str | os.PathLike) -> None:
    """Write qrels in TREC format (``qid 0 docid relevance``) for trec_eval and other tools."""
    columns = [qrels[c].to_pylist() for c in ("qid", "docid", "relevance")]
    with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8") as handle:
        for qid, docid, relevance in zip(*columns):
            handle.write(f"{qid} 0 {docid} {relevance}\n")
