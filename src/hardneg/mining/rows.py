"""Vectorised row helpers of the mining modules: ids as integer codes (Arrow hash lookups), groups of a table
sorted by query, blocks of whole queries, and the seed of a query's random sample."""

from __future__ import annotations

import hashlib

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


def value_codes(values: pa.ChunkedArray | pa.Array, value_set: pa.Array) -> np.ndarray:
    """Index of each value in ``value_set`` as int64, -1 where absent."""
    index = pc.index_in(values, value_set=value_set)
    return pc.fill_null(index, -1).to_numpy().astype(np.int64, copy=False) if len(values) else np.zeros(0, np.int64)


def isin(values: np.ndarray, value_set: np.ndarray) -> np.ndarray:
    """``np.isin`` through Arrow's hash set, several times faster on tens of millions of int64 keys."""
    if len(values) == 0:
        return np.zeros(0, dtype=bool)
    array = pa.array(values)
    return pc.is_in(array, value_set=pa.array(value_set, type=array.type)).to_numpy(zero_copy_only=False)


def relevant_judgements(table: pa.Table) -> pa.Table:
    """The rows of a qrels-like table (a ``relevance`` column) that judge the document relevant (1 or more)."""
    return table.filter(pc.greater_equal(table["relevance"], 1))


def query_seed(seed: int, qid: str) -> list[int]:
    """Seed material of one query's generator: stable across runs and processes (unlike ``hash``)."""
    digest = hashlib.blake2b(qid.encode("utf-8"), digest_size=8).digest()
    return [seed, int.from_bytes(digest, "little")]


def group_bounds(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For codes sorted so that equal codes are contiguous: (start, size) of each group and each row's group."""
    if len(codes) == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64)
    is_start = np.r_[True, codes[1:] != codes[:-1]]
    starts = np.flatnonzero(is_start)
    sizes = np.diff(np.r_[starts, len(codes)])
    return starts, sizes, np.cumsum(is_start) - 1


MINE_BLOCK_ROWS = 1 << 20  # ranking rows mined at a time (whole queries)


def query_blocks(ranking: pa.Table, block_rows: int = MINE_BLOCK_ROWS) -> list[tuple[int, int]]:
    """Row ranges [lo, hi) of ``ranking`` that hold whole queries, about ``block_rows`` rows each, when every query's
    rows are contiguous (as a search writes them); one range over the whole ranking otherwise."""
    n = ranking.num_rows
    if n == 0:
        return [(0, 0)]
    codes = value_codes(
        ranking["qid"], pc.unique(ranking["qid"])
    )  # in first-appearance order: contiguous iff never decreasing
    if np.any(np.diff(codes) < 0):
        return [(0, n)]
    starts = np.flatnonzero(np.r_[True, codes[1:] != codes[:-1]])
    after = np.searchsorted(starts, np.arange(block_rows, n, block_rows), side="left")
    bounds = np.r_[0, np.unique(starts[after[after < len(starts)]]), n]
    return [(int(lo), int(hi)) for lo, hi in zip(bounds[:-1], bounds[1:])]
