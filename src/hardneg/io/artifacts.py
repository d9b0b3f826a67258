"""One declared Arrow schema per artifact kind, and the only functions that read and write them.

Every stage reads and writes Parquet through :func:`write_table` / :func:`read_table`, so a file that
does not match its kind's schema is rejected at the boundary instead of deep inside a later stage.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from hardneg.errors import DataError
from hardneg.io.atomic import atomic_path


@dataclass(frozen=True)
class ArtifactKind:
    name: str
    schema: pa.Schema
    description: str


CORPUS = ArtifactKind(
    "corpus",
    pa.schema([("docid", pa.string()), ("title", pa.string()), ("text", pa.string())]),
    "one row per document",
)
QUERIES = ArtifactKind(
    "queries",
    pa.schema([("qid", pa.string()), ("text", pa.string())]),
    "one row per query of one split",
)
QRELS = ArtifactKind(
    "qrels",
    pa.schema([("qid", pa.string()), ("docid", pa.string()), ("relevance", pa.int32())]),
    "graded relevance judgements of one split; relevance >= 1 means relevant",
)
RANKING = ArtifactKind(
    "ranking",
    pa.schema([("qid", pa.string()), ("docid", pa.string()), ("rank", pa.int32()), ("score", pa.float32())]),
    "a ranking: for each query its retrieved documents, rank 1 first",
)
PER_QUERY_METRICS = ArtifactKind(
    "per_query_metrics",
    pa.schema([("qid", pa.string()), ("measure", pa.string()), ("value", pa.float64())]),
    "one evaluation value per (query, measure)",
)

ROW_IDS = ArtifactKind(
    "row_ids",
    pa.schema([("id", pa.string())]),
    "the document or query id of each row of an embedding matrix (.npy), in row order",
)
HARDNEGS = ArtifactKind(
    "hardnegs",
    pa.schema([("qid", pa.string()), ("docid", pa.string()), ("rank", pa.int32()), ("score", pa.float32())]),
    "mined hard negatives: for each training query, non-relevant documents with their rank and score "
    "under the mining model",
)
POSITIVE_SCORES = ArtifactKind(
    "positive_scores",
    pa.schema([("qid", pa.string()), ("docid", pa.string()), ("relevance", pa.int32()), ("score", pa.float32())]),
    "the mining model's score of every relevant (query, document) pair",
)
CANDIDATES = ArtifactKind(
    "candidates",
    pa.schema(
        [
            ("qid", pa.string()),
            ("docid", pa.string()),
            ("rank", pa.int32()),  # the miner's rank, 1-based (documents judged relevant are not candidates)
            ("score", pa.float32()),  # the miner's score
            (
                "best_positive_score",
                pa.float32(),
            ),  # the query's best judged positive under the miner; null: none scored
            ("bm25_rank", pa.int32()),  # null: no BM25 run given, or not in its ranking
            ("bm25_score", pa.float32()),
            ("ce_score", pa.float32()),  # the cross-encoder's probability of relevance; null: no cross-encoder given
            ("best_positive_ce_score", pa.float32()),  # its best score of the query's judged positives
            ("duplicate_of", pa.string()),  # a judged positive of the query this document duplicates; null: none
            ("duplicate_kind", pa.string()),  # "exact" (same normalised text) or "near" (MinHash); null: none
        ]
    ),
    "a candidate pool: for each training query the miner's top-ranked documents not judged relevant, with what the "
    "selection policies read (the miner's and BM25's ranks and scores, a cross-encoder's scores, duplicates of a "
    "positive)",
)
DUPLICATES = ArtifactKind(
    "duplicates",
    pa.schema(
        [("docid", pa.string()), ("duplicate", pa.string()), ("kind", pa.string()), ("similarity", pa.float32())]
    ),
    "pairs of documents of a corpus with the same normalised text (kind exact, similarity 1) or a shingle Jaccard "
    "similarity at or above the threshold (kind near); each pair once, docid < duplicate",
)
AUDIT = ArtifactKind(
    "hardneg_audit",
    pa.schema(
        [
            ("qid", pa.string()),
            ("best_positive_rank", pa.int32()),  # null when no positive is within the mining depth
            ("best_positive_score", pa.float32()),
            ("num_negatives", pa.int32()),
            ("bm25_overlap", pa.float32()),  # share of the mined negatives also in BM25's top-K
            ("min_margin", pa.float32()),  # min over negatives of (negative score - best positive score)
            ("max_margin", pa.float32()),
            ("suspected_false_negatives", pa.int32()),  # negatives scored at or above the best positive
            ("empty_negatives", pa.int32()),  # negatives that are empty documents (null when the corpus was not read)
        ]
    ),
    "per-query audit of a hard-negative list",
)

FUSION_TUNING = ArtifactKind(
    "fusion_tuning",
    pa.schema([("alpha", pa.float64()), ("value", pa.float64()), ("chosen", pa.bool_())]),
    "the tuning of a fusion run's weight α: the tuning measure's mean on the sampled queries for each α of the "
    "grid; chosen marks the α the run uses",
)

# The data drawn by each figure (results/figures/<name>.parquet, beside <name>.png; see hardneg.figures).
FIGURE_DISTRIBUTION = ArtifactKind(
    "figure_distribution",
    pa.schema(
        [
            ("run", pa.string()),
            ("measure", pa.string()),
            ("qid", pa.string()),
            ("value", pa.float64()),
            ("share", pa.float64()),
        ]
    ),
    "per run, measure and query: the query's value and the share of the run's queries valued at most as much "
    "(the empirical CDF), rows in increasing value",
)
FIGURE_CURVES = ArtifactKind(
    "figure_curves",
    pa.schema([("run", pa.string()), ("label", pa.string()), ("step", pa.int64()), ("dev_rr10", pa.float64())]),
    "per run, the optimiser steps at which dev MRR@10 was evaluated during training, and its value",
)
FIGURE_GRAD_NORMS = ArtifactKind(
    "figure_grad_norms",
    pa.schema([("run", pa.string()), ("label", pa.string()), ("step", pa.int64()), ("grad_norm", pa.float64())]),
    "per run, the pre-clip gradient norm of every optimiser step",
)
FIGURE_EPOCHS = ArtifactKind(
    "figure_epochs",
    pa.schema(
        [
            ("run", pa.string()),
            ("label", pa.string()),
            ("epoch", pa.int64()),
            ("loss", pa.float64()),
            ("dev_rr100", pa.float64()),
        ]
    ),
    "per run and training epoch (from 1): the mean training loss of the epoch's optimiser steps and dev MRR@100 "
    "at its last step",
)
FIGURE_TSNE = ArtifactKind(
    "figure_tsne",
    pa.schema(
        [
            ("qid", pa.string()),
            ("point", pa.string()),
            ("kind", pa.string()),
            ("x", pa.float64()),
            ("y", pa.float64()),
            ("rank_before", pa.int32()),
            ("rank_after", pa.int32()),
        ]
    ),
    "t-SNE coordinates of one query before and after (kind query_before, query_after; point: the qid) and of "
    "documents (point: the docid; kind relevant, negative_before, negative_after or negative_both) with their "
    "ranks in the rankings before and after (null: not ranked)",
)
FIGURE_MATRIX = ArtifactKind(
    "figure_matrix",
    pa.schema(
        [("train_index", pa.string()), ("eval_index", pa.string()), ("measure", pa.string()), ("value", pa.float64())]
    ),
    "one cell per (training index, evaluation index) of the ADORE PQ matrix",
)
FIGURE_ALPHA = ArtifactKind(
    "figure_alpha",
    pa.schema(
        [
            ("alpha", pa.float64()),
            ("value", pa.float64()),
            ("chosen", pa.bool_()),
            ("measure", pa.string()),
            ("split", pa.string()),
        ]
    ),
    "the tuned fusion metric at each weight alpha, in increasing alpha; chosen marks the alpha kept",
)

KINDS = {
    k.name: k
    for k in (
        CORPUS,
        QUERIES,
        QRELS,
        RANKING,
        PER_QUERY_METRICS,
        ROW_IDS,
        HARDNEGS,
        POSITIVE_SCORES,
        CANDIDATES,
        DUPLICATES,
        AUDIT,
        FUSION_TUNING,
        FIGURE_DISTRIBUTION,
        FIGURE_CURVES,
        FIGURE_GRAD_NORMS,
        FIGURE_TSNE,
        FIGURE_MATRIX,
        FIGURE_ALPHA,
        FIGURE_EPOCHS,
    )
}


def _conform(table: pa.Table, kind: ArtifactKind, where: str) -> pa.Table:
    missing = [f.name for f in kind.schema if f.name not in table.column_names]
    if missing:
        raise DataError(where, None, f"not a {kind.name} table: missing column(s) {', '.join(missing)}")
    table = table.select(kind.schema.names)
    try:
        return table.cast(kind.schema)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise DataError(where, None, f"not a {kind.name} table: {exc}") from exc


def write_table(table: pa.Table, kind: ArtifactKind, path: str | os.PathLike) -> None:
    """Write ``table`` as a Parquet file of ``kind`` (zstd-compressed), atomically.

    :param table: the table; its columns are selected and cast to the kind's schema (extra columns are dropped).
    :param kind: the artifact kind, e.g. ``RANKING`` or ``HARDNEGS``.
    :param path: the file to write; its folder is created when missing.
    :raises DataError: ``table`` lacks a column of the schema, or a column cannot be cast to its declared type;
        nothing is written then.
    """
    table = _conform(table, kind, str(path))
    with atomic_path(path) as tmp:
        pq.write_table(table, tmp, compression="zstd")


def string_array(values) -> pa.Array:
    """Ids (or other strings) as one Arrow string array: from a list, a NumPy array, or an Arrow array or chunked
    array, which stay Arrow (a million ids as Python objects take several times the memory)."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if isinstance(values, pa.Array):
        return values.cast(pa.string())
    return pa.array(values if isinstance(values, list) else np.asarray(values, dtype=object), pa.string())


ROW_GROUP_ROWS = 1024 * 1024  # pyarrow's default row-group length, which write_table keeps


class TableWriter:
    """Write a Parquet file of ``kind`` block by block (``write``), for a stage that never holds all of it.

    Blocks are gathered into row groups of :data:`ROW_GROUP_ROWS` rows, each written as soon as it is full, so
    the file is byte for byte what :func:`write_table` writes of the blocks' concatenation. Use it as a context
    manager: the file appears atomically when the block ends without an exception, and not at all otherwise."""

    def __init__(self, kind: ArtifactKind, path: str | os.PathLike, *, row_group_rows: int = ROW_GROUP_ROWS):
        self.kind, self.path, self.row_group_rows = kind, path, row_group_rows
        self.rows = 0
        self._pending: list[pa.Table] = []
        self._pending_rows = 0

    def __enter__(self) -> TableWriter:
        self._atomic = atomic_path(self.path)
        tmp = self._atomic.__enter__()
        try:
            self._writer = pq.ParquetWriter(tmp, self.kind.schema, compression="zstd")
        except BaseException:
            self._atomic.__exit__(*sys.exc_info())
            raise
        return self

    def write(self, table: pa.Table) -> None:
        table = _conform(table, self.kind, str(self.path))
        self._pending.append(table)
        self._pending_rows += table.num_rows
        self.rows += table.num_rows
        if self._pending_rows >= self.row_group_rows:
            self._flush(whole_groups_only=True)

    def _flush(self, whole_groups_only: bool) -> None:
        pending = pa.concat_tables(self._pending or [self.kind.schema.empty_table()]).combine_chunks()
        cut = pending.num_rows - pending.num_rows % self.row_group_rows if whole_groups_only else pending.num_rows
        if cut or self.rows == 0:  # a file without rows still has its one empty row group, as write_table's
            self._writer.write_table(pending.slice(0, cut), row_group_size=self.row_group_rows)
        self._pending = [pending.slice(cut)]
        self._pending_rows = pending.num_rows - cut

    def __exit__(self, exc_type, exc, tb) -> bool | None:
        try:
            if exc_type is None:
                self._flush(whole_groups_only=False)
            self._writer.close()
        except BaseException:
            self._atomic.__exit__(*sys.exc_info())  # removes the temporary
            raise
        return self._atomic.__exit__(exc_type, exc, tb)


def read_table(kind: ArtifactKind, path: str | os.PathLike, filters=None) -> pa.Table:
    """Read a Parquet file of ``kind`` and check it against the kind's schema.

    :param kind: the artifact kind, e.g. ``RANKING``, ``HARDNEGS`` or ``QRELS``.
    :param path: the Parquet file.
    :param filters: pyarrow's row filters, e.g. ``[("qid", "in", ids)]``: only the matching rows are read. None:
        every row.
    :type filters: list[tuple] | None
    :returns: the table with exactly the schema's columns, in its order and types (other columns are dropped).
    :raises DataError: the file does not exist, is not a readable Parquet file, lacks a column of the schema, or
        has a column that cannot be cast to its declared type.
    """
    if not os.path.exists(path):
        raise DataError(path, None, f"{kind.name} file does not exist")
    # A whole file is read as one Parquet file: pq.read_table goes through pyarrow's dataset API, whose import
    # (pandas with it) costs a fifth of a second of every job's start; filters need it.
    try:
        table = pq.read_table(path, filters=filters) if filters is not None else pq.ParquetFile(path).read()
    except pa.ArrowException as error:  # not Parquet, cut short, corrupt
        raise DataError(path, None, f"not a readable Parquet file of {kind.name} ({error})") from None
    return _conform(table, kind, str(path))


def check_file(kind: ArtifactKind, path: str | os.PathLike) -> None:
    """Check a Parquet file of ``kind`` against the kind's schema as :func:`read_table` would, from the file's
    footer alone (no row is read: a corpus of millions of passages is checked in milliseconds).

    :raises DataError: as :func:`read_table`.
    """
    if not os.path.exists(path):
        raise DataError(path, None, f"{kind.name} file does not exist")
    try:
        schema = pq.read_schema(path)
    except pa.ArrowException as error:
        raise DataError(path, None, f"not a readable Parquet file of {kind.name} ({error})") from None
    _conform(schema.empty_table(), kind, str(path))


# ------------------------------------------------------------------------------ the summary and its tables
# The summary's columns follow the config's measures, so its kind is built from them.
def summary_kind(measures: list[str]) -> ArtifactKind:
    """The kind of ``results/summary.parquet`` for these measure columns (the summary's measures, then the
    pairwise errors ``PairwiseErrors@<depth>`` and ``PairwiseErrors``): each measure's mean over the evaluation
    split's queries and, as ``<measure> markers``, the markers of the baseline groups the run beats."""
    fields = [("run", pa.string()), ("method", pa.string()), ("split", pa.string()), ("num_queries", pa.int32())]
    for measure in measures:
        fields += [(measure, pa.float64()), (f"{measure} markers", pa.string())]
    fields.append(("total_is_lower_bound", pa.bool_()))  # PairwiseErrors is a lower bound (ranking cut short)
    return ArtifactKind(
        "summary",
        pa.schema(fields),
        "one row per run: its mean of each measure on the evaluation split and its significance markers",
    )


SUMMARY_TESTS = ArtifactKind(
    "summary_tests",
    pa.schema(
        [
            ("run", pa.string()),
            ("marker", pa.string()),  # the baseline group's marker
            ("baseline", pa.string()),
            ("measure", pa.string()),
            ("num_queries", pa.int32()),  # the queries paired
            ("run_mean", pa.float64()),
            ("baseline_mean", pa.float64()),
            ("mean_difference", pa.float64()),  # run - baseline
            ("t", pa.float64()),  # scipy.stats.ttest_rel(run, baseline); NaN when every difference is 0
            ("p", pa.float64()),  # two-sided
            ("p_corrected", pa.float64()),  # p corrected (summary.correction) over the measure's tests of run pairs
            ("better", pa.bool_()),  # the run's mean is better (higher; for pairwise errors lower)
            ("significant", pa.bool_()),  # better, p_corrected < summary.p_value, the run's values not lower bounds
            # the smallest mean difference these queries detect at summary.p_value with 80% power, from the spread of
            # the per-query differences (hardneg.evaluation.significance.detectable_difference)
            ("detectable", pa.float64()),
        ]
    ),
    "every paired t-test behind the summary's markers: one row per run, baseline group, baseline run and measure",
)
TRAINING_TIME = ArtifactKind(
    "training_time",
    pa.schema(
        [
            ("run", pa.string()),
            ("method", pa.string()),
            ("seconds", pa.float64()),  # wall clock of the training job (null: no benchmark record)
            ("steps", pa.int64()),  # optimiser steps
            ("seconds_per_step", pa.float64()),
            ("speedup_vs_ance", pa.float64()),  # an ANCE run's seconds / this run's (null: no ANCE run)
        ]
    ),
    "training time of each trained run, from its training job's benchmark record and training log",
)


def adore_indexes_kind(measures: list[str]) -> ArtifactKind:
    """The kind of ``results/tables/adore_indexes.parquet``: for each index of the PQ experiment, the ADORE
    run trained with it, its mean of each measure evaluated with that same index, and its training time."""
    fields = [("index", pa.string()), ("run", pa.string())] + [(m, pa.float64()) for m in measures]
    fields += [("seconds", pa.float64()), ("steps", pa.int64()), ("seconds_per_step", pa.float64())]
    return ArtifactKind("adore_indexes", pa.schema(fields), "ADORE trained and evaluated with each index")


REFRESH_COSTS = ArtifactKind(
    "refresh_costs",
    pa.schema(
        [
            ("checkpoint", pa.int32()),  # the episode whose checkpoint it is (null: the warm-up, inputs.init)
            ("train_seconds", pa.float64()),  # its training job (null for the warm-up: another run's)
            ("encode_seconds", pa.float64()),  # the refresh its checkpoint feeds: encoding the corpus (shards, gather)
            ("index_seconds", pa.float64()),  # building the indexes
            ("search_seconds", pa.float64()),  # searching the training queries
            ("mine_seconds", pa.float64()),  # positive scores and mining, for each episode trained on its negatives
            ("refresh_seconds", pa.float64()),  # encode + index + search + mine
            ("episodes_fed", pa.int32()),  # episodes trained on its negatives
        ]
    ),
    "an episodic run's (ANCE) wall-clock seconds per checkpoint: training it and refreshing the negatives it mines "
    "(null: the job left no benchmark record)",
)

KINDS.update({kind.name: kind for kind in (SUMMARY_TESTS, TRAINING_TIME, REFRESH_COSTS)})


def read_matching_rows(kind: ArtifactKind, path: str | os.PathLike, column: str, values: list[str]) -> pa.Table:
    """The rows of a Parquet file of ``kind`` whose ``column`` is in ``values`` (reads only what matches)."""
    path = str(path)
    check_file(kind, path)
    if not values:
        return kind.schema.empty_table()
    table = pq.read_table(path, columns=kind.schema.names, filters=[(column, "in", values)])
    return table.cast(kind.schema)
