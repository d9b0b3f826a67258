"""Empty documents: documents whose title and text are both blank (missing, or nothing but white space).

BM25 never indexes them (Anserini skips a document without content). Dense runs follow the dataset setting
``datasets.<name>.empty_documents``:

* ``exclude`` (the default): the tokenized corpus leaves them out, and with it everything built from it: the
  corpus embeddings (``embeddings/corpus.npy`` and ``corpus.ids.parquet``), the indexes, dense rankings,
  mined hard negatives, random negatives, ADORE's candidates and dev evaluation. A judgement naming one can
  never be retrieved, as with BM25.
* ``keep``: they are encoded like any other document. They all get one and the same vector (that of an empty
  input), which may rank high for many queries and then be mined as a hard negative.

:func:`empty_stats` is what ``stats.json`` records of them, :func:`report` what dataset preparation prints.
"""

from __future__ import annotations

import os

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

HANDLING = ("exclude", "keep")
EXAMPLES = 10  # document ids listed in stats.json and in messages
CHECK_ROWS = 262_144  # rows whose texts blank_mask checks at a time


def _blank(values) -> pa.Array:
    """Per value: missing, or nothing but white space."""
    values = pc.fill_null(values, "")
    return pc.equal(pc.utf8_length(pc.utf8_trim_whitespace(values)), 0)


def blank_mask(table: pa.Table | pa.RecordBatch, columns: list[str]) -> np.ndarray:
    """Boolean per row: every one of the string ``columns`` blank. Checked :data:`CHECK_ROWS` rows at a time,
    each column only on the rows whose earlier columns are blank: trimming copies the text, so a corpus of
    millions of passages is never copied whole, and one whose documents all have a title never has its texts
    copied at all."""
    mask = np.zeros(len(table), dtype=bool)
    for lo in range(0, len(table), CHECK_ROWS):
        part = table.slice(lo, CHECK_ROWS)
        rows = np.arange(len(part))
        for column in columns:
            values = part.column(column)
            if len(rows) < len(part):
                values = values.take(pa.array(rows))
            rows = rows[np.asarray(_blank(values).to_numpy(zero_copy_only=False), dtype=bool)]
            if not len(rows):
                break
        mask[lo + rows] = True
    return mask


def empty_mask(table: pa.Table | pa.RecordBatch) -> np.ndarray:
    """Boolean per row of a table with ``title`` and ``text`` columns: both blank."""
    return blank_mask(table, ["title", "text"])


def empty_docids(corpus_path: str | os.PathLike) -> list[str]:
    """The ids of the empty documents of a ``corpus.parquet``, in corpus order, read row group by row group.

    Titles are read first and texts only in a row group with a blank title: a corpus whose documents all have
    a title (the synthetic one) is checked without reading its texts, whatever its size."""
    corpus = pq.ParquetFile(corpus_path)
    found: list[str] = []
    for group in range(corpus.num_row_groups):
        blank_title = _blank(corpus.read_row_group(group, columns=["title"]).column("title"))
        if not pc.any(blank_title).as_py():
            continue
        rows = corpus.read_row_group(group, columns=["docid", "text"])
        mask = pc.and_(blank_title, _blank(rows.column("text")))
        found.extend(rows.column("docid").filter(mask).to_pylist())
    return found


def empty_stats(corpus: pa.Table, qrels: dict[str, pa.Table]) -> dict:
    """What ``stats.json`` records: ``count`` of empty documents, the first ``docids`` (at most
    :data:`EXAMPLES`), and per split the ``relevant_judgements`` (relevance >= 1) that name one."""
    mask = empty_mask(corpus)
    ids = corpus["docid"].filter(pa.array(mask))
    judged = {}
    for split, table in qrels.items():
        relevant = table.filter(pc.greater_equal(table["relevance"], 1))
        judged[split] = (
            int(pc.sum(pc.is_in(relevant["docid"], value_set=ids.combine_chunks())).as_py() or 0) if len(ids) else 0
        )
    return {"count": int(mask.sum()), "docids": ids.slice(0, EXAMPLES).to_pylist(), "relevant_judgements": judged}


def _examples(docids: list[str], count: int) -> str:
    return ", ".join(docids) + (", …" if count > len(docids) else "")


def report(dataset: str, stats: dict, handling: str) -> str | None:
    """The console message of dataset preparation about its empty documents (None when there are none).

    ``stats`` is the dataset's ``stats.json`` (``num_docs`` and ``empty_documents``), ``handling`` the
    dataset's ``empty_documents`` setting."""
    empty = stats.get("empty_documents") or {}
    count = empty.get("count", 0)
    if not count:
        return None
    if handling not in HANDLING:
        raise ValueError(f"empty_documents must be one of {', '.join(HANDLING)}, got {handling!r}")
    lines = [
        f"dataset {dataset}: {count:,} of {stats['num_docs']:,} documents are empty (no title, no text): "
        f"{_examples(empty['docids'], count)}."
    ]
    if handling == "exclude":
        lines.append(
            "empty_documents: exclude leaves them out of dense runs (encoding, indexes, rankings, hard "
            "negatives, evaluation candidates); BM25 never indexes them."
        )
    else:
        lines.append(
            f"empty_documents: keep encodes them in dense runs, where they all share one embedding and can "
            f"rank high for many queries and be mined as hard negatives (BM25 never indexes them); "
            f"datasets.{dataset}.empty_documents: exclude leaves them out."
        )
    judged = {split: n for split, n in (empty.get("relevant_judgements") or {}).items() if n}
    if judged:
        total = sum(judged.values())
        where = ", ".join(f"{n} in {split}" for split, n in judged.items())
        retrievers = "no ranking" if handling == "exclude" else "BM25"
        lines.append(
            f"{total} relevance judgement{'s' if total > 1 else ''} ({where}) name{'' if total > 1 else 's'} "
            f"an empty document as relevant: {retrievers} can ever retrieve "
            f"{'them' if total > 1 else 'it'}."
        )
    return "\n".join(lines)
