"""The canonical dataset form every adapter produces, its validation, statistics and writing.

On disk a prepared dataset is a folder::

    corpus.parquet            docid, title, text
    queries/<split>.parquet   qid, text
    qrels/<split>.parquet     qid, docid, relevance
    hidden/<split>.parquet    qid, docid, relevance: positives hidden from the qrels (only with hide_positives)
    stats.json                sizes, judgements per query, adapter-specific facts (e.g. clusters)
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hardneg.datasets.empty_documents import blank_mask, empty_stats
from hardneg.errors import DataError
from hardneg.io import artifacts
from hardneg.io.atomic import atomic_dir, atomic_path
from hardneg.io.ids import ID_RULE, check_id, id_problem  # noqa: F401  (the id rule of every table here)
from hardneg.io.layout import check_inside, check_name
from hardneg.io.rankings import write_trec_qrels

log = logging.getLogger(__name__)


@dataclass
class Source:
    """Where a table came from, so later checks can name the file and line of a bad row."""

    path: str
    lines: np.ndarray | None = None  # line number of each row, when the rows came from a text file

    def line_of(self, row: int) -> int | None:
        return int(self.lines[row]) if self.lines is not None else None


@dataclass
class Dataset:
    """A dataset in canonical form: one corpus, and queries and qrels per split.

    Build one from Arrow tables of the canonical schemas (``hardneg.io.artifacts.CORPUS``, ``QUERIES``,
    ``QRELS``) and write it with ``write_dataset``; the folder written is a prepared dataset like any other.

    :param corpus: one row per document: ``docid`` (string, unique), ``title`` (string, may be empty), ``text``
        (string).
    :param queries: split name → that split's queries: ``qid`` (string, unique within the split), ``text``
        (string). The dataset's splits are the keys of this mapping, in order.
    :param qrels: split name → that split's judgements, one entry for every split of ``queries``: ``qid``,
        ``docid`` (strings), ``relevance`` (int32; 1 or more: relevant, 0: judged not relevant).
    :param corpus_source: where the corpus came from (a ``Source``: file path and, for a text file, the line
        number of each row), named by validation errors.
    :param queries_source: split name → where its queries came from; a split without an entry is named
        ``<queries SPLIT>`` in errors.
    :param qrels_source: split name → where its qrels came from; a split without an entry is named
        ``<qrels SPLIT>`` in errors.
    :param extra_stats: facts added to the top level of ``stats.json`` (an adapter's own, e.g. the clusters of
        the synthetic corpus).
    :param hidden: split name → judged positives taken out of that split's qrels (QRELS tables; the dataset option
        ``hide_positives``, :mod:`hardneg.datasets.hidden`), written to ``hidden/<split>.parquet``; empty: none.
    """

    corpus: pa.Table
    queries: dict[str, pa.Table]
    qrels: dict[str, pa.Table]
    corpus_source: Source = field(default_factory=lambda: Source("<corpus>"))
    queries_source: dict[str, Source] = field(default_factory=dict)
    qrels_source: dict[str, Source] = field(default_factory=dict)
    extra_stats: dict = field(default_factory=dict)
    hidden: dict[str, pa.Table] = field(default_factory=dict)

    @property
    def splits(self) -> list[str]:
        return list(self.queries)


def table_from_rows(kind: artifacts.ArtifactKind, columns: dict[str, list]) -> pa.Table:
    return pa.table({name: pa.array(columns[name], type=kind.schema.field(name).type) for name in kind.schema.names})


def _first_duplicate(ids: pa.Array) -> tuple[int, int] | None:
    """Row indices (first, second) of the first repeated id, or None."""
    if pc.count_distinct(ids, mode="all").as_py() == len(ids):  # Arrow's hash count: no Python string made
        return None
    values = ids.to_numpy(zero_copy_only=False)
    _, first_index, counts = np.unique(values, return_index=True, return_counts=True)
    if counts.max(initial=1) <= 1:
        return None
    seen: dict = {}
    for row, value in enumerate(values):
        if value in seen:
            return seen[value], row
        seen[value] = row
    return None  # pragma: no cover


def _check_unique(ids: pa.Array, what: str, source: Source) -> None:
    dup = _first_duplicate(ids)
    if dup is not None:
        first, second = dup
        first_line = source.line_of(first)
        hint = f" (first seen on line {first_line})" if first_line is not None else ""
        raise DataError(source.path, source.line_of(second), f"duplicate {what} {ids[second].as_py()!r}{hint}")


def _check_known(ids: pa.Array, known: pa.Array, what: str, source: Source) -> None:
    present = pc.is_in(ids, value_set=known)
    if not pc.all(present).as_py():
        row = pc.index(present, False).as_py()
        raise DataError(source.path, source.line_of(row), f"unknown {what} {ids[row].as_py()!r}")


def _warn_empty(table: pa.Table, id_column: str, text_columns: list[str], what: str, path: str) -> None:
    mask = blank_mask(table, text_columns)
    if mask.any():
        examples = table[id_column].filter(pa.array(mask)).slice(0, 5).to_pylist()
        log.warning("%s: %d %s with empty text (e.g. %s)", path, int(mask.sum()), what, ", ".join(map(str, examples)))


def validate(dataset: Dataset) -> None:
    """Check the cross-file invariants; raise :class:`DataError` on the first violation, warn on soft issues.

    Errors: empty corpus, duplicate docids/qids, qrels naming unknown documents or queries.
    Warnings: empty texts, queries with no relevant document.
    """
    corpus_path = dataset.corpus_source.path
    if dataset.corpus.num_rows == 0:
        raise DataError(corpus_path, None, "the corpus holds no documents")
    _check_unique(dataset.corpus["docid"], "docid", dataset.corpus_source)
    _warn_empty(dataset.corpus, "docid", ["title", "text"], "documents", corpus_path)
    docids = dataset.corpus["docid"]
    for split in dataset.splits:
        queries, qrels = dataset.queries[split], dataset.qrels[split]
        q_source = dataset.queries_source.get(split, Source(f"<queries {split}>"))
        r_source = dataset.qrels_source.get(split, Source(f"<qrels {split}>"))
        if queries.num_rows == 0:
            raise DataError(q_source.path, None, f"split '{split}' has no queries")
        _check_unique(queries["qid"], "qid", q_source)
        _warn_empty(queries, "qid", ["text"], "queries", q_source.path)
        _check_known(qrels["docid"], docids, "docid", r_source)
        _check_known(qrels["qid"], queries["qid"], "qid", r_source)
        relevant = qrels.filter(pc.greater_equal(qrels["relevance"], 1))["qid"].unique()
        lacking = queries.filter(pc.invert(pc.is_in(queries["qid"], value_set=relevant)))["qid"]
        if len(lacking):
            log.warning(
                "%s: %d of %d '%s' queries have no relevant document (e.g. %s); they are left out of "
                "training and of every evaluation measure",
                r_source.path,
                len(lacking),
                queries.num_rows,
                split,
                ", ".join(lacking.slice(0, 5).to_pylist()),
            )


def statistics(dataset: Dataset) -> dict:
    """Sizes and judgement statistics of a dataset (JSON-serialisable)."""
    lengths = pc.utf8_length(dataset.corpus["text"]).to_numpy(zero_copy_only=False)
    stats: dict = {
        "num_docs": dataset.corpus.num_rows,
        "doc_text_chars": {"mean": float(np.mean(lengths)), "max": int(np.max(lengths))},
        "splits": {},
    }
    for split in dataset.splits:
        qrels = dataset.qrels[split]
        rel = qrels.filter(pc.greater_equal(qrels["relevance"], 1))
        per_query = pc.value_counts(rel["qid"]).field("counts").to_numpy() if rel.num_rows else np.zeros(0)
        grades = pc.value_counts(qrels["relevance"]).to_pylist()
        stats["splits"][split] = {
            "num_queries": dataset.queries[split].num_rows,
            "num_qrels": qrels.num_rows,
            "queries_with_relevant": int(len(per_query)),
            "relevant_per_query": {
                "mean": float(per_query.mean()) if len(per_query) else 0.0,
                "max": int(per_query.max()) if len(per_query) else 0,
                "histogram": {str(k): int(v) for k, v in zip(*np.unique(per_query, return_counts=True))},
            },
            "relevance_grades": {str(g["values"]): int(g["counts"]) for g in sorted(grades, key=lambda g: g["values"])},
        }
    stats["empty_documents"] = empty_stats(dataset.corpus, dataset.qrels)  # documents with no title and no text
    stats.update(dataset.extra_stats)
    return stats


def dataset_paths(root: str | os.PathLike, splits: list[str]) -> dict[str, Path]:
    """The files of a prepared dataset folder, by role. Nothing is read: the files need not exist.

    :param root: the dataset folder, e.g. ``results/datasets/<dataset>``.
    :param splits: the split names whose queries and qrels files to name.
    :returns: role → path: ``corpus`` (``corpus.parquet``), ``stats`` (``stats.json``), and for each split
        ``queries/<split>`` (``queries/<split>.parquet``) and ``qrels/<split>`` (``qrels/<split>.parquet``).
    :raises OutputPathError: a split name that is not one plain file name, or a path that would leave ``root``
        (the configuration schema rejects such names first).
    """
    root = Path(root)
    paths = {"corpus": root / "corpus.parquet", "stats": root / "stats.json"}
    for split in splits:
        check_name("split", split, str(root))
        paths[f"queries/{split}"] = root / "queries" / f"{split}.parquet"
        paths[f"qrels/{split}"] = root / "qrels" / f"{split}.parquet"
    for path in paths.values():
        check_inside(path, root)
    return paths


def write_dataset(dataset: Dataset, root: str | os.PathLike) -> dict:
    """Validate ``dataset`` and write it under ``root`` in canonical form.

    Validation comes first, before anything is written: an empty corpus, a split without queries, a repeated
    docid or qid, or qrels naming an unknown document or query are errors; empty texts and queries without a
    relevant document are logged warnings. The folder written:

        corpus.parquet            docid, title, text
        queries/<split>.parquet   qid, text
        qrels/<split>.parquet     qid, docid, relevance
        qrels/<split>.trec        the same judgements as TREC qrels (qid 0 docid relevance)
        hidden/<split>.parquet    the positives hidden from a split's qrels (``dataset.hidden``), if any
        stats.json                the statistics returned

    Every file and folder is written to a temporary beside its place, and all are renamed into place only once
    all are written: a write that fails part way leaves the folder as it was.

    :param dataset: the dataset, with every table in its canonical schema (columns are cast to it).
    :param root: the dataset folder; created when missing.
    :returns: the statistics written to ``stats.json``: ``num_docs``; ``doc_text_chars`` (``mean`` and ``max``
        length of the ``text`` column, in characters); per split under ``splits``: ``num_queries``,
        ``num_qrels``, ``queries_with_relevant``, ``relevant_per_query`` (``mean``, ``max``, ``histogram``) and
        ``relevance_grades`` (judgements per grade); ``empty_documents`` (``count``, the first ``docids``,
        ``relevant_judgements`` per split naming one); then ``dataset.extra_stats``.
    :raises DataError: a validation error (naming the file and line of the bad row when the dataset's sources
        give them), or a table that lacks a column of its schema or cannot be cast to it.
    :raises OutputPathError: a split name that is not one plain file name.
    :raises HardnegError: a qid or docid holding whitespace or a control character, which a TREC qrels line
        cannot hold.
    """
    validate(dataset)
    root = Path(root)
    paths = dataset_paths(root, dataset.splits)
    for split in dataset.hidden:
        check_name("split", split, str(root))
    stats = statistics(dataset)
    # Every file is written to a temporary beside its place first; only when all are written are they renamed
    # into place, so a write that fails part way leaves the previous dataset as it was.
    with (
        atomic_dir(root / "queries") as queries_dir,
        atomic_dir(root / "qrels") as qrels_dir,
        atomic_path(paths["corpus"]) as corpus_path,
        atomic_path(paths["stats"]) as stats_path,
        contextlib.ExitStack() as hidden,
    ):
        for split in dataset.splits:
            artifacts.write_table(dataset.queries[split], artifacts.QUERIES, queries_dir / f"{split}.parquet")
            artifacts.write_table(dataset.qrels[split], artifacts.QRELS, qrels_dir / f"{split}.parquet")
            write_trec_qrels(dataset.qrels[split], qrels_dir / f"{split}.trec")  # for trec_eval and other tools
        artifacts.write_table(dataset.corpus, artifacts.CORPUS, corpus_path)
        stats_path.write_text(json.dumps(stats, indent=2) + "\n", encoding="utf-8")
        if dataset.hidden:  # renamed into place with the others, not before they are all written
            hidden_dir = hidden.enter_context(atomic_dir(root / "hidden"))
            for split, table in dataset.hidden.items():
                artifacts.write_table(table, artifacts.QRELS, hidden_dir / f"{split}.parquet")
    return stats


def read_split(root: str | os.PathLike, split: str) -> tuple[pa.Table, pa.Table]:
    """Queries and qrels of one split of a prepared dataset.

    :param root: the dataset folder, e.g. ``results/datasets/<dataset>``.
    :param split: the split name, e.g. ``train``.
    :returns: (queries, qrels): the QUERIES table (``qid``, ``text``) of ``queries/<split>.parquet`` and the
        QRELS table (``qid``, ``docid``, ``relevance`` int32) of ``qrels/<split>.parquet``.
    :raises DataError: a missing file, or one that lacks a column of its schema.
    :raises OutputPathError: a split name that is not one plain file name.
    """
    paths = dataset_paths(root, [split])
    return (
        artifacts.read_table(artifacts.QUERIES, paths[f"queries/{split}"]),
        artifacts.read_table(artifacts.QRELS, paths[f"qrels/{split}"]),
    )
