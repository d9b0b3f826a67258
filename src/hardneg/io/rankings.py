"""Ranking files: the Parquet ranking artifact and its twin in TREC format for trec_eval and other tools; and
rankings and qrels a user brings, in either format (:func:`load_ranking`; qrels:
:func:`hardneg.datasets.qrels.load_qrels`)."""

from __future__ import annotations

import contextlib
import math
import os
import sys
import tempfile

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from hardneg.errors import DataError, HardnegError
from hardneg.io import artifacts
from hardneg.io.atomic import atomic_path
from hardneg.io.ids import ID_RULE, check_id, id_problem
from hardneg.io.readers import iter_tsv


def _check_trec_fields(table: pa.Table, columns: tuple[str, ...], path, tag: str | None = None) -> None:
    """Refuse ids (and the tag) that would split a whitespace-separated TREC line into extra fields.

    Adapters reject such ids when a dataset is prepared; this is the last check before a TREC file is written.
    """
    for column in columns:
        for value in table[column].unique().to_pylist():
            problem = id_problem("" if value is None else value)
            if problem is not None:
                raise HardnegError(f"{path}: cannot write {column} {value!r} to a TREC file: it {problem}; {ID_RULE}")
    if tag is not None and (problem := id_problem(tag)) is not None:
        raise HardnegError(f"{path}: cannot write tag {tag!r} to a TREC file: it {problem}")


def write_trec(ranking: pa.Table, path: str | os.PathLike, tag: str) -> None:
    """Write ``qid Q0 docid rank score tag`` lines, atomically. An id or tag holding whitespace or a control
    character is a :class:`~hardneg.errors.HardnegError` naming the file, and nothing is written."""
    _check_trec_fields(ranking, ("qid", "docid"), path, tag)
    ranking = ranking.sort_by([("qid", "ascending"), ("rank", "ascending")])
    columns = [ranking[c].to_pylist() for c in ("qid", "docid", "rank", "score")]
    with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8") as handle:
        for qid, docid, rank, score in zip(*columns):
            handle.write(f"{qid} Q0 {docid} {rank} {score:.6f} {tag}\n")


def write_ranking(
    ranking: pa.Table, parquet_path: str | os.PathLike, trec_path: str | os.PathLike | None, tag: str
) -> None:
    """Write a ranking as Parquet and, when ``trec_path`` is given, in TREC format (its ids are checked first, so
    a ranking that cannot be written as TREC leaves neither file)."""
    if trec_path is not None:
        _check_trec_fields(ranking, ("qid", "docid"), trec_path, tag)
    artifacts.write_table(ranking, artifacts.RANKING, parquet_path)
    if trec_path is not None:
        write_trec(ranking, trec_path, tag)


class RankingWriter:
    """Write a ranking block by block, as Parquet and, when ``trec_path`` is given, as TREC: what :func:`write_ranking`
    writes of the blocks' concatenation, byte for byte, without holding more than a block.

    Each query's rows must come in one block, best rank first (as a search gives them). Parquet rows follow the
    blocks (:class:`hardneg.io.artifacts.TableWriter`); TREC lines are in query-id order, so each block's lines go
    to a spill file and are copied, query by query in id order, into the TREC file at the end. Ids are checked
    block by block: a ranking that cannot be written as TREC leaves neither file. Use it as a context manager."""

    def __init__(self, parquet_path: str | os.PathLike, trec_path: str | os.PathLike | None, tag: str):
        self.parquet_path, self.trec_path, self.tag = parquet_path, trec_path, tag
        self.rows = 0
        self._queries: dict[str, tuple[int, int]] = {}  # qid -> (offset, length) of its lines in the spill

    def __enter__(self) -> RankingWriter:
        self._stack = contextlib.ExitStack()
        with self._stack:
            if self.trec_path is not None:
                _check_trec_fields(artifacts.RANKING.schema.empty_table(), (), self.trec_path, self.tag)
                self._trec = self._stack.enter_context(atomic_path(self.trec_path))
                self._spill = self._stack.enter_context(tempfile.TemporaryFile(dir=os.path.dirname(self._trec)))
            self._table = self._stack.enter_context(artifacts.TableWriter(artifacts.RANKING, self.parquet_path))
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
            text = "".join(
                f"{qid} Q0 {docid} {rank} {score:.6f} {self.tag}\n"
                for docid, rank, score in zip(*(c[start:stop] for c in columns[1:]))
            ).encode("utf-8")
            self._queries[qid] = (self._spill.tell(), len(text))
            self._spill.write(text)
            start = stop

    def _write_trec(self) -> None:
        with open(self._trec, "wb") as handle:
            for qid in sorted(self._queries):  # code-point order: the byte order of Arrow's sort in write_trec
                offset, length = self._queries[qid]
                self._spill.seek(offset)
                handle.write(self._spill.read(length))

    def __exit__(self, exc_type, exc, tb) -> bool | None:
        if exc_type is None and self.trec_path is not None:
            try:
                self._write_trec()
            except BaseException:
                if not self._stack.__exit__(*sys.exc_info()):  # removes the temporaries
                    raise
                return False
        return self._stack.__exit__(exc_type, exc, tb)


def read_ranking(path: str | os.PathLike, filters=None) -> pa.Table:
    """Read a RANKING Parquet file written by the pipeline, e.g. ``results/<run>/rankings/<split>.parquet``.

    :param path: the RANKING Parquet file.
    :param filters: pyarrow's row filters, e.g. ``[("qid", "in", ids)]``, as ``hardneg.io.artifacts.read_table``
        takes them; None: every row.
    :type filters: list[tuple] | None
    :returns: a RANKING table: ``qid``, ``docid`` (strings), ``rank`` (int32, 1-based), ``score`` (float32).
    :raises DataError: the file is missing or does not match the RANKING schema, or a score is missing or not finite
        (the error names the file and the row, 1-based).
    """
    ranking = artifacts.read_table(artifacts.RANKING, path, filters=filters)
    if filters is not None and not _all_finite(ranking["score"]):
        ranking = artifacts.read_table(artifacts.RANKING, path)  # the whole file: the error names the row in it
    check_scores(ranking, path)
    return ranking


# ------------------------------------------------------------------------------ checks of a table's rows
# A Parquet ranking or qrels file a user brings gets the checks a TREC file gets line by line; errors name the row
# (1-based, in file order).
_FLOAT32_MAX = float(np.finfo(np.float32).max)
_INT32 = (-(2**31), 2**31 - 1)


def _all_finite(scores) -> bool:
    return scores.null_count == 0 and pc.all(pc.is_finite(scores)).as_py() is not False


def score_problem(text: str, score: float) -> str | None:
    """Why ``score`` (written ``text`` in its file) cannot rank a document, or None: it must be a finite number
    that a 32-bit float holds (rankings store scores as float32)."""
    if not math.isfinite(score):
        return f"score {text} is not a finite number (NaN and infinity rank nothing)"
    if abs(score) > _FLOAT32_MAX:
        return (
            f"score {text} is beyond the range of a 32-bit float (ranking scores are stored as float32, at most "
            f"{_FLOAT32_MAX:.4g} in magnitude)"
        )
    return None


def _first(mask) -> int:
    """The 0-based position of the first true value of a boolean (chunked) array."""
    return pc.index(mask, True).as_py()


def check_scores(table: pa.Table, path) -> None:
    """A :class:`~hardneg.errors.DataError` naming ``path`` and the row of the first score of ``table`` that is
    missing, NaN, infinite or beyond float32 (read from the file as written, before its cast to float32)."""
    scores = table["score"]
    if scores.null_count:
        raise DataError(path, None, f"row {_first(pc.is_null(scores)) + 1}: score is missing (null)")
    if _all_finite(scores):
        return
    row = _first(pc.invert(pc.is_finite(scores)))
    value = scores[row].as_py()
    if os.path.isfile(path) and _is_parquet(path):
        value = pq.read_table(path, columns=["score"])["score"][row].as_py()
    raise DataError(path, None, f"row {row + 1}: {score_problem(repr(value), float(value))}")


def check_no_nulls(table: pa.Table, path) -> None:
    """A :class:`~hardneg.errors.DataError` naming the first row where a column of ``table`` is null."""
    for column in table.column_names:
        if table[column].null_count:
            row = _first(pc.is_null(table[column]))
            raise DataError(path, None, f"row {row + 1}: {column} is missing (null)")


def check_ids(table: pa.Table, path) -> None:
    """Check the ``qid`` and ``docid`` of every row as a TREC line's are checked
    (:func:`hardneg.io.ids.id_problem`); the error names the first row holding the first bad id found."""
    for column in ("qid", "docid"):
        for value in table[column].unique().to_pylist():
            if (problem := id_problem(value)) is not None:
                row = _first(pc.equal(table[column], value))
                raise DataError(path, None, f"row {row + 1}: {column} {value!r} {problem}; {ID_RULE}")


def check_unique_pairs(table: pa.Table, path, describe) -> None:
    """A :class:`~hardneg.errors.DataError` at the first row whose (qid, docid) pair an earlier row holds;
    ``describe(qid, docid, first_row)`` says what is wrong (rows 1-based)."""
    n = table.num_rows
    if n < 2:
        return
    keyed = pa.table({"qid": table["qid"], "docid": table["docid"], "row": pa.array(np.arange(n))})
    order = pc.sort_indices(keyed, sort_keys=[("qid", "ascending"), ("docid", "ascending"), ("row", "ascending")])
    qid, docid = table["qid"].take(order), table["docid"].take(order)
    repeated = pc.and_(pc.equal(qid.slice(1), qid.slice(0, n - 1)), pc.equal(docid.slice(1), docid.slice(0, n - 1)))
    positions = np.flatnonzero(repeated.to_numpy(zero_copy_only=False))
    if len(positions):
        rows = order.to_numpy()
        # the repeat that comes first in the file; its sorted predecessor is the pair's first row
        at = positions[np.argmin(rows[positions + 1])]
        later, earlier = int(rows[at + 1]), int(rows[at])
        raise DataError(
            path, None, f"row {later + 1}: " + describe(qid[at + 1].as_py(), docid[at + 1].as_py(), earlier + 1)
        )


def check_ranking_rows(ranking: pa.Table, path) -> pa.Table:
    """The checks of a TREC ranking file's lines (:func:`load_ranking`) on a ranking read from Parquet: rows, no
    null, ids fit for TREC, finite scores, each document ranked once per query. Returns ``ranking``."""
    if ranking.num_rows == 0:
        raise DataError(path, None, "the ranking file holds no ranked documents")
    check_no_nulls(ranking, path)
    check_ids(ranking, path)
    check_scores(ranking, path)
    check_unique_pairs(
        ranking,
        path,
        lambda qid, docid, first: f"document {docid!r} is ranked twice for query {qid!r} (first on row {first})",
    )
    return ranking


_PARQUET_MAGIC = b"PAR1"


def _is_parquet(path: str | os.PathLike) -> bool:
    """A Parquet file starts with ``PAR1`` (whatever its name); anything else is read as TREC text."""
    with open(path, "rb") as handle:
        return handle.read(4) == _PARQUET_MAGIC


def read_either(kind, path, read_trec, check_rows) -> pa.Table:
    """A table of ``kind`` from a Parquet file (checked by ``check_rows(table, path)``, whose errors name the
    row) or, for any other content, from TREC text (``read_trec(path)``, whose errors name the line)."""
    if not os.path.isfile(path):
        raise DataError(
            path,
            None,
            f"{kind.name} file does not exist"
            if not os.path.exists(path)
            else f"not a {kind.name} file: it is a folder",
        )
    if _is_parquet(path):
        try:
            table = artifacts.read_table(kind, path)
        except (pa.ArrowException, OSError) as exc:
            raise DataError(path, None, f"cannot read it as Parquet: {exc}") from exc
        return check_rows(table, path)
    return read_trec(path)  # text that is not UTF-8 is a DataError naming its line


def _read_trec_ranking(path: str | os.PathLike) -> pa.Table:
    """A ranking in TREC format: ``qid Q0 docid rank score tag`` lines, whitespace separated. Errors name the line."""
    qids, docids, ranks, scores = [], [], [], []
    seen: dict[tuple[str, str], int] = {}
    for number, fields in iter_tsv(path, 6, sep=None):
        qid, _, docid, rank, score, _ = fields
        check_id(qid, "qid", path, number)
        check_id(docid, "docid", path, number)
        try:
            ranks.append(int(rank))
        except ValueError:
            raise DataError(
                path, number, f"rank {rank!r} is not an integer (a TREC ranking line is 'qid Q0 docid rank score tag')"
            ) from None
        if not _INT32[0] <= ranks[-1] <= _INT32[1]:
            raise DataError(path, number, f"rank {rank!r} is beyond the range of a 32-bit integer")
        try:
            scores.append(float(score))
        except ValueError:
            raise DataError(
                path, number, f"score {score!r} is not a number (a TREC ranking line is 'qid Q0 docid rank score tag')"
            ) from None
        if (problem := score_problem(repr(score), scores[-1])) is not None:
            raise DataError(path, number, problem)
        if (qid, docid) in seen:
            raise DataError(
                path, number, f"document {docid!r} is ranked twice for query {qid!r} (first on line {seen[qid, docid]})"
            )
        seen[qid, docid] = number
        qids.append(qid)
        docids.append(docid)
    if not qids:
        raise DataError(path, None, "the ranking file holds no ranked documents")
    return pa.table({"qid": qids, "docid": docids, "rank": ranks, "score": scores}, schema=artifacts.RANKING.schema)


def load_ranking(path: str | os.PathLike) -> pa.Table:
    """Read a ranking a user brings: a RANKING Parquet file or a ranking in TREC format, told apart by content, not
    by name.

    Both forms get the same checks: the file holds rows; ids are fit for TREC (no whitespace or control
    character); every score is a finite number a float32 holds; no document is ranked twice for a query; no value
    is missing (Parquet).

    :param path: the ranking file: Parquet (starting with ``PAR1``) with the RANKING columns, or TREC text
        (``qid Q0 docid rank score tag`` lines, whitespace separated).
    :returns: a RANKING table: ``qid``, ``docid`` (strings), ``rank`` (int32, as written in the file), ``score``
        (float32), in file order.
    :raises DataError: a missing file, a folder, an unreadable Parquet file or a bad row or line; the error names
        the file and the line (TREC) or row (Parquet, 1-based).
    """
    return read_either(artifacts.RANKING, path, _read_trec_ranking, check_ranking_rows)


def write_trec_qrels(qrels: pa.Table, path: str | os.PathLike) -> None:
    """Write qrels in TREC format (``qid 0 docid relevance``) for trec_eval and other tools."""
    _check_trec_fields(qrels, ("qid", "docid"), path)
    columns = [qrels[c].to_pylist() for c in ("qid", "docid", "relevance")]
    with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8") as handle:
        for qid, docid, relevance in zip(*columns):
            handle.write(f"{qid} 0 {docid} {relevance}\n")
