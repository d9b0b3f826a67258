"""What every figure shares (the papers' and the experiments'): a fresh matplotlib figure, a fixed palette, and
byte-stable PNG and Parquet writes."""

from __future__ import annotations

import logging
import os

import pyarrow as pa
import pyarrow.parquet as pq

from hardneg.errors import DataError
from hardneg.io import artifacts
from hardneg.io.atomic import atomic_path

log = logging.getLogger(__name__)

DPI = 120
# matplotlib's "tab10" colours, named here so a run keeps its colour whatever the backend's defaults
PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf")


def new_figure(width: float, height: float, panels: int = 1):
    """A figure of ``width`` × ``height`` inches with ``panels`` axes side by side: (figure, list of axes).

    The figure is not registered with pyplot (no global state, no GUI backend); saving renders it with Agg."""
    from matplotlib.figure import Figure  # matplotlib: imported only when drawing

    figure = Figure(figsize=(width, height), layout="constrained")
    axes = figure.subplots(1, panels, squeeze=False)[0]
    return figure, list(axes)


def save_png(figure, path: str | os.PathLike) -> None:
    """Render ``figure`` to a PNG at ``path``, atomically. The PNG's text chunks would otherwise record
    matplotlib's version string as "Software"; no chunk holds a date, so the same figure gives the same bytes."""
    with atomic_path(path) as tmp:
        figure.savefig(tmp, format="png", dpi=DPI, metadata={"Software": None})
    log.info("drew %s", path)


def write_data(table: pa.Table, kind: artifacts.ArtifactKind, path: str | os.PathLike) -> pa.Table:
    """Write a figure's data (a table of ``kind``) to ``path`` atomically and return it as written."""
    artifacts.write_table(table, kind, path)
    return artifacts.read_table(kind, path)


def log_steps(path: str | os.PathLike, column: str, missing: str):
    """The steps of a training log (``train_log.parquet``) with a value of ``column``, in step order, as a
    DataFrame of ``step`` and ``column``; a :class:`DataError` naming the log when it does not exist, or when no
    step has a value (``missing`` says why, in words)."""
    if not os.path.exists(path):
        raise DataError(path, None, "training log does not exist")
    steps = pq.read_table(path).to_pandas()
    if column not in steps.columns or steps[column].isna().all():
        raise DataError(path, None, missing)
    return steps.loc[steps[column].notna(), ["step", column]].sort_values("step")
