"""Run files: the Parquet run artifact and its TREC-format twin for trec_eval and other tools."""

from __future__ import annotations

import os

import pyarrow as pa

from hardneg import artifacts
from hardneg.atomic import atomic_path
from hardneg.datasets.canonical import ID_RULE, id_problem
from hardneg.errors import HardnegError


def _check_trec_fields(table: pa.Table, columns: tuple[str, ...], path, tag: str | None = None) -> None:
    """Refuse ids (and the run tag) that would split a whitespace-separated TREC line into extra fields.

    Adapters reject such ids when a dataset is prepared; this is the last check before a TREC file is written.
    """
    for column in columns:
        for value in table[column].unique().to_pylist():
            problem = id_problem("" if value is None else value)
            if problem is not None:
                raise HardnegError(f"{path}: cannot write {column} {value!r} to a TREC file: it {problem}; {ID_RULE}")
    if tag is not None and (problem := id_problem(tag)) is not None:
        raise HardnegError(f"{path}: cannot write run tag {tag!r} to a TREC file: it {problem}")


def write_trec(run: pa.Table, path: str | os.PathLike, tag: str) -> None:
    """Write ``qid Q0 docid rank score tag`` lines, atomically. An id or tag holding whitespace or a control
    character is a :class:`~hardneg.errors.HardnegError` naming the file, and nothing is written."""
    _check_trec_fields(run, ("qid", "docid"), path, tag)
    run = run.sort_by([("qid", "ascending"), ("rank", "ascending")])
    columns = [run[c].to_pylist() for c in ("qid", "docid", "rank", "score")]
    with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8") as handle:
        for qid, docid, rank, score in zip(*columns):
            handle.write(f"{qid} Q0 {docid} {rank} {score:.6f} {tag}\n")


def write_run(run: pa.Table, parquet_path: str | os.PathLike, trec_path: str | os.PathLike | None, tag: str) -> None:
    """Write a run as Parquet and, when ``trec_path`` is given, as a TREC run file (its ids are checked first, so
    a run that cannot be written as TREC leaves neither file)."""
    if trec_path is not None:
        _check_trec_fields(run, ("qid", "docid"), trec_path, tag)
    artifacts.write_table(run, artifacts.RUN, parquet_path)
    if trec_path is not None:
        write_trec(run, trec_path, tag)


def read_run(path: str | os.PathLike) -> pa.Table:
    return artifacts.read_table(artifacts.RUN, path)


def write_trec_qrels(qrels: pa.Table, path: str | os.PathLike) -> None:
    """Write qrels in TREC format (``qid 0 docid relevance``) for trec_eval and other tools."""
    _check_trec_fields(qrels, ("qid", "docid"), path)
    columns = [qrels[c].to_pylist() for c in ("qid", "docid", "relevance")]
    with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8") as handle:
        for qid, docid, relevance in zip(*columns):
            handle.write(f"{qid} 0 {docid} {relevance}\n")
