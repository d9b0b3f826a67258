"""Builders that turn parsed lines into canonical tables while remembering each row's line number."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pyarrow.compute as pc

from hardneg.datasets.canonical import Source, table_from_rows
from hardneg.errors import DataError
from hardneg.io import artifacts
from hardneg.io.ids import check_id
from hardneg.io.readers import parse_relevance


def corpus_table(rows: Iterable[tuple[int, str, str, str]], path: str):
    """``rows`` of (line, docid, title, text) → (corpus table, Source). An empty docid, or one with whitespace or
    a control character, is a :class:`DataError` naming the file and line."""
    lines, docids, titles, texts = [], [], [], []
    for line, docid, title, text in rows:
        if not docid:
            raise DataError(path, line, "empty document id")
        check_id(docid, "docid", path, line)
        lines.append(line)
        docids.append(docid)
        titles.append(title)
        texts.append(text)
    table = table_from_rows(artifacts.CORPUS, {"docid": docids, "title": titles, "text": texts})
    return table, Source(path, np.asarray(lines, dtype=np.int64))


def queries_table(rows: Iterable[tuple[int, str, str]], path: str):
    """``rows`` of (line, qid, text) → (queries table, Source). Ids are checked as in :func:`corpus_table`."""
    lines, qids, texts = [], [], []
    for line, qid, text in rows:
        if not qid:
            raise DataError(path, line, "empty query id")
        check_id(qid, "qid", path, line)
        lines.append(line)
        qids.append(qid)
        texts.append(text)
    return (
        table_from_rows(artifacts.QUERIES, {"qid": qids, "text": texts}),
        Source(path, np.asarray(lines, dtype=np.int64)),
    )


def qrels_table(rows: Iterable[tuple[int, str, str, str]], path: str):
    """``rows`` of (line, qid, docid, relevance text) → (qrels table, Source).

    Errors naming the file and line: an id with whitespace or a control character, a relevance that is not a
    non-negative integer, a repeated judgement."""
    lines, qids, docids, rels = [], [], [], []
    seen: dict[tuple[str, str], int] = {}
    for line, qid, docid, relevance in rows:
        check_id(qid, "qid", path, line)
        check_id(docid, "docid", path, line)
        grade = parse_relevance(path, line, relevance)
        key = (qid, docid)
        if key in seen:
            raise DataError(
                path, line, f"duplicate judgement for query {qid!r} and document {docid!r} (first on line {seen[key]})"
            )
        seen[key] = line
        lines.append(line)
        qids.append(qid)
        docids.append(docid)
        rels.append(grade)
    if not lines:
        raise DataError(path, None, "the qrels file holds no judgements")
    return (
        table_from_rows(artifacts.QRELS, {"qid": qids, "docid": docids, "relevance": rels}),
        Source(path, np.asarray(lines, dtype=np.int64)),
    )


def text_field(path: str, line: int, obj: dict, key: str, *, required: bool) -> str:
    value = obj.get(key)
    if value is None:
        if required:
            raise DataError(path, line, f"missing field '{key}'")
        return ""
    if isinstance(value, (int, float)) and key.endswith("id"):
        return str(value)
    if not isinstance(value, str):
        raise DataError(path, line, f"field '{key}' must be a string, found {type(value).__name__}")
    return value


def restrict_to_judged(queries, source: Source, qrels):
    """Keep only the queries that have at least one judgement (with their line numbers)."""
    keep = pc.is_in(queries["qid"], value_set=qrels["qid"].unique())
    mask = keep.to_numpy(zero_copy_only=False)
    lines = source.lines[mask] if source.lines is not None else None
    return queries.filter(keep), Source(source.path, lines)
