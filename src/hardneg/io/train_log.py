"""The training log: one Parquet row per optimiser step (``results/<run>/train_log.parquet``), and the record of
the model a training kept (``train.keep``, :mod:`hardneg.dense.model_selection`): a ``kept`` column, true on the
kept step's row, and the record itself, as JSON, in the file's metadata (``hardneg.kept``)."""

from __future__ import annotations

import json
import os

import pyarrow as pa
import pyarrow.parquet as pq

from hardneg.io.atomic import atomic_path

KEPT_METADATA = b"hardneg.kept"


def write_train_log(rows: list[dict], path: str | os.PathLike, *, kept: dict | None = None) -> None:
    """Write a training log (one row per optimiser step) as Parquet; ``kept``: the model kept
    (:meth:`hardneg.dense.model_selection.ModelSelection.record`), a ``kept`` column true on its step's row and
    the record itself in the file's metadata (``hardneg.kept``, JSON)."""
    table = pa.Table.from_pylist(rows) if rows else pa.table({"step": pa.array([], pa.int64())})
    if kept is not None:
        table = mark_kept(table, kept)
    with atomic_path(path) as tmp:
        pq.write_table(table, tmp)


def mark_kept(table: pa.Table, kept: dict) -> pa.Table:
    """``table`` (a training log) with its ``kept`` column and metadata for the record ``kept``."""
    if "kept" in table.column_names:
        table = table.drop_columns(["kept"])
    column = pa.array([step == kept["step"] for step in table["step"].to_pylist()], pa.bool_())
    table = table.append_column("kept", column)
    return table.replace_schema_metadata(
        {**(table.schema.metadata or {}), KEPT_METADATA: json.dumps(kept, sort_keys=True).encode()}
    )


def read_kept(path: str | os.PathLike) -> dict | None:
    """The record of the model kept in training log ``path`` (None in a log without one)."""
    metadata = pq.read_schema(path).metadata or {}
    return json.loads(metadata[KEPT_METADATA]) if KEPT_METADATA in metadata else None
