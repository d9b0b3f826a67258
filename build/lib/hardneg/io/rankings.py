"""Run files: the Parquet run artifact and its TREC-format twin for trec_eval and other tools; and runs and qrels
a user brings, in either format (:func:`load_run`; qrels: :func:`hardneg.datasets.qrels.load_qrels`)."""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile

import pyarrow as pa

from hardneg.errors import DataError, HardnegError
from hardneg.io import artifacts
from hardneg.io.atomic import atomic_path
from hardneg.io.ids import ID_RULE, id_problem
from hardneg.io.readers import iter_tsv


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


class RunWriter:
    """Write a run block by block, as Parquet and, when ``trec_path`` is given, as TREC: what :func:`write_run`
    writes of the blocks' concatenation, byte for byte, without holding more than a block.

    Each query's rows must come in one block, best rank first (as a search gives them). Parquet rows follow the
    blocks (:class:`hardneg.io.artifacts.TableWriter`); TREC lines are in query-id order, so each block's lines go
    to a spill file and are copied, query by query in id order, into the TREC file at the end. Ids are checked
    block by block: a run that cannot be written as TREC leaves neither file. Use it as a context manager."""

    def __init__(self, parquet_path: str | os.PathLike, trec_path: str | os.PathLike | None, tag: str):
        self.parquet_path, self.trec_path, self.tag = parquet_path, trec_path, tag
        self.rows = 0
        self._queries: dict[str, tuple[int, int]] = {}  # qid -> (offset, length) of its lines in the spill

    def __enter__(self) -> "RunWriter":
        self._stack = contextlib.ExitStack()
        with self._stack:
            if self.trec_path is not None:
                _check_trec_fields(artifacts.RUN.schema.empty_table(), (), self.trec_path, self.tag)
                self._trec = self._stack.enter_context(atomic_path(self.trec_path))
                self._spill = self._stack.enter_context(tempfile.TemporaryFile(dir=os.path.dirname(self._trec)))
            self._table = self._stack.enter_context(artifacts.TableWriter(artifacts.RUN, self.parquet_path))
            self._stack = self._stack.pop_all()
        return self

    def write(self, block: pa.Table) -> None:
        if self.trec_path is not None:
            _check_trec_fields(block, ("qid", "docid"), self.trec_path)
            self._spill_lines(block)
        self._table.write(block)
        self.rows += block.num_rows

    def _spill_lines(self, block: pa.Table) -> None:
        columns = [block[c].to_pylist() for c in ("qid", "docid", "rank", "score")]
        qids = columns[0]
        start = 0
        while start < len(qids):
            qid, stop = qids[start], start + 1
            while stop < len(qids) and qids[stop] == qid:
                stop += 1
            if qid in self._queries:
                raise ValueError(f"{self.trec_path}: the rows of query {qid!r} are not in one block")
            text = "".join(f"{qid} Q0 {docid} {rank} {score:.6f} {self.tag}\n"
                           for docid, rank, score in zip(*(c[start:stop] for c in columns[1:]))).encode("utf-8")
            self._queries[qid] = (self._spill.tell(), len(text))
            self._spill.write(text)
            start = stop

    def _write_trec(self) -> None:
        with open(self._trec, "wb") as handle:
            for qid in sorted(self._queries):  # code-point order: the byte order of Arrow's sort in write_trec
                offset, length = self._queries[qid]
                self._spill.seek(offset)
                handle.write(self._spill.read(length))

    def __exit__(self, exc_type, exc, tb) -> bool:
        if exc_type is None and self.trec_path is not None:
            try:
                self._write_trec()
            except BaseException:
                if not self._stack.__exit__(*sys.exc_info()):  # removes the temporaries
                    raise
                return False
        return self._stack.__exit__(exc_type, exc, tb)


def read_run(path: str | os.PathLike) -> pa.Table:
    return artifacts.read_table(artifacts.RUN, path)


_PARQUET_MAGIC = b"PAR1"


def _is_parquet(path: str | os.PathLike) -> bool:
    """A Parquet file starts with ``PAR1`` (whatever its name); anything else is read as TREC text."""
    with open(path, "rb") as handle:
        return handle.read(4) == _PARQUET_MAGIC


def read_either(kind, path, read_trec) -> pa.Table:
    if not os.path.isfile(path):
        raise DataError(path, None, f"{kind.name} file does not exist" if not os.path.exists(path)
                        else f"not a {kind.name} file: it is a folder")
    if _is_parquet(path):
        try:
            return artifacts.read_table(kind, path)
        except (pa.ArrowException, OSError) as exc:
            raise DataError(path, None, f"cannot read it as Parquet: {exc}") from exc
    return read_trec(path)  # text that is not UTF-8 is a DataError naming its line


def _read_trec_run(path: str | os.PathLike) -> pa.Table:
    """A TREC run file: ``qid Q0 docid rank score tag`` lines, whitespace separated. Errors name the line."""
    qids, docids, ranks, scores = [], [], [], []
    seen: dict[tuple[str, str], int] = {}
    for number, fields in iter_tsv(path, 6, sep=None):
        qid, _, docid, rank, score, _ = fields
        try:
            ranks.append(int(rank))
        except ValueError:
            raise DataError(path, number, f"rank {rank!r} is not an integer (a TREC run line is "
                                          f"'qid Q0 docid rank score tag')") from None
        try:
            scores.append(float(score))
        except ValueError:
            raise DataError(path, number, f"score {score!r} is not a number (a TREC run line is "
                                          f"'qid Q0 docid rank score tag')") from None
        if (qid, docid) in seen:
            raise DataError(path, number, f"document {docid!r} is ranked twice for query {qid!r} "
                                          f"(first on line {seen[qid, docid]})")
        seen[qid, docid] = number
        qids.append(qid)
        docids.append(docid)
    if not qids:
        raise DataError(path, None, "the run file holds no ranked documents")
    return pa.table({"qid": qids, "docid": docids, "rank": ranks, "score": scores}, schema=artifacts.RUN.schema)


def load_run(path: str | os.PathLike) -> pa.Table:
    """A run from a Parquet run artifact or a TREC run file (told apart by content, not by name). A missing
    file, an unreadable Parquet file or a malformed TREC line is a :class:`~hardneg.errors.DataError` naming the
    file (and line)."""
    return read_either(artifacts.RUN, path, _read_trec_run)


def write_trec_qrels(qrels: pa.Table, path: str | os.PathLike) -> None:
    """Write qrels in TREC format (``qid 0 docid relevance``) for trec_eval and other tools."""
    _check_trec_fields(qrels, ("qid", "docid"), path)
    columns = [qrels[c].to_pylist() for c in ("qid", "docid", "relevance")]
    with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8") as handle:
        for qid, docid, relevance in zip(*columns):
            handle.write(f"{qid} 0 {docid} {relevance}\n")
