"""A policy applied to a candidate pool: :func:`select` keeps the candidates that pass a
:class:`hardneg.mining.policies.Policy`'s filters, in the order that module gives, and counts what each filter
removed (:class:`Selection`); :func:`select_stage` does it from a pool file and writes the hard-negative list and
the selection's JSON, which the audit reports.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hardneg.errors import SelectionError
from hardneg.io import artifacts, logs
from hardneg.io.atomic import write_text
from hardneg.mining.policies import FILTERS, Policy, is_integer
from hardneg.mining.rows import group_bounds, query_seed, value_codes

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Selection:
    """What :func:`select` chose: ``negatives`` (a HARDNEGS table), ``removed`` (per filter of :data:`FILTERS`, in
    order, the candidates it removed from what the filters before it left; 0 for a filter that is off),
    ``candidates`` (rows of the pool) and ``kept`` (rows of ``negatives``): candidates = sum(removed) + kept."""

    negatives: pa.Table
    removed: dict[str, int]
    candidates: int
    kept: int


def _float32(value: float) -> np.float32:
    """``value`` rounded to float32 (beyond its range: infinite, without a warning)."""
    with np.errstate(over="ignore"):
        return np.float32(value)


def _floats(column: pa.ChunkedArray) -> np.ndarray:
    """A float column as float64, NaN where null."""
    return pc.fill_null(column.cast(pa.float64()), math.nan).to_numpy() if len(column) else np.zeros(0)


def _check_pool(pool: pa.Table, policy: Policy) -> None:
    missing = [name for name in artifacts.CANDIDATES.schema.names if name not in pool.column_names]
    if missing:
        raise ValueError(f"not a candidate pool (CANDIDATES table): missing column(s) {', '.join(missing)}")
    if pool.num_rows == 0:
        return

    def absent(column: str) -> bool:
        return pool[column].null_count == pool.num_rows

    for name, needs, hint in (
        ("margin", "best_positive_score", "positives"),
        ("relative_margin", "best_positive_score", "positives"),
        ("ce_threshold", "ce_score", "ce_scores"),
        ("ce_margin", "ce_score", "ce_scores"),
        ("ce_margin", "best_positive_ce_score", "ce_positive_scores"),
    ):
        if getattr(policy, name) is not None and absent(needs):
            raise ValueError(
                f"the policy's {name} filter needs the pool's {needs}, which is null in every row: "
                f"build the pool with {hint}"
            )


def _keep_per_query(
    rows: np.ndarray, query: np.ndarray, queries: pa.Array, keep: int, sampling: str, seed: int
) -> np.ndarray:
    """``rows`` (sorted by query code, then rank) cut to at most ``keep`` per query: the first, or a uniform
    sample drawn by a generator seeded from (``seed``, qid), as ``mine_hard_negatives`` draws it."""
    starts, sizes, group = group_bounds(query[rows])
    position = np.arange(len(rows)) - starts[group]
    if sampling == "top":
        return rows[position < keep]
    chosen = position < np.where(sizes > keep, 0, keep)[group]  # small queries keep all
    names = queries.to_pylist()
    for g in np.flatnonzero(sizes > keep):  # one generator per query: independent of the others and their order
        rng = np.random.default_rng(query_seed(seed, names[query[rows[starts[g]]]]))
        chosen[starts[g] + rng.choice(sizes[g], size=keep, replace=False)] = True
    return rows[chosen]


def select(pool: pa.Table, policy: Policy, *, seed: int = 0) -> Selection:
    """The hard negatives a policy selects from a candidate pool.

    The filters of ``policy`` apply in the order of :data:`FILTERS` (see :class:`Policy`), each to what the
    previous left, and ``removed`` counts what each removed. Scores are compared in float64, as
    ``mine_hard_negatives`` compares them. Deterministic: the same pool, policy and seed give the same table.

    :param pool: a CANDIDATES table (``build_pool``), rows in any order: queries are taken in order of first
        appearance, each query's rows by rank (ties in pool order).
    :param policy: the filters.
    :param seed: the seed of ``sampling="random"`` (non-negative); a query's sample depends on (seed, qid) and its
        own candidates only.
    :returns: a Selection: ``negatives``, a HARDNEGS table (``qid``, ``docid`` strings, ``rank`` int32, ``score``
        float32, from the pool) ordered by query then rank, a query left without negatives having no row;
        ``removed``, a dict from each name of :data:`FILTERS` to the candidates it removed; ``candidates`` and
        ``kept``, the row counts of the pool and of ``negatives``.
    :raises ValueError: a negative ``seed``; a pool lacking a CANDIDATES column; a margin on a pool (with rows)
        whose ``best_positive_score`` is null in every row, ``ce_threshold`` or ``ce_margin`` on one whose
        ``ce_score`` is, or ``ce_margin`` on one whose ``best_positive_ce_score`` is.
    """
    if not is_integer(seed) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    _check_pool(pool, policy)
    n = pool.num_rows
    queries = pc.unique(pool["qid"]) if n else pa.array([], pa.string())  # in first-appearance order
    query = value_codes(pool["qid"], queries)
    rank = pool["rank"].to_numpy().astype(np.int64, copy=False) if n else np.zeros(0, np.int64)

    # Row indices into ``pool``, narrowed by each filter; kept sorted by (query, rank) throughout.
    rows = np.arange(n)
    dq = np.diff(query)
    if n > 1 and not np.all((dq > 0) | ((dq == 0) & (np.diff(rank) >= 0))):  # build_pool gives them sorted
        rows = np.lexsort((rank, query))  # stable: rank ties keep pool order
    del dq

    removed = dict.fromkeys(FILTERS, 0)

    def apply(name: str, ok: np.ndarray) -> None:
        nonlocal rows
        removed[name] = int(len(rows) - np.count_nonzero(ok))
        rows = rows[ok]

    if policy.depth is not None:
        apply("depth", rank[rows] <= policy.depth)
    if policy.rank_range is not None:
        low, high = policy.rank_range
        apply("rank_range", (rank[rows] >= low) & (rank[rows] <= high))
    if policy.exclude_duplicates:
        duplicate = pc.is_valid(pool["duplicate_of"]).to_numpy(zero_copy_only=False) if n else np.zeros(0, bool)
        apply("duplicates", ~duplicate[rows])
    if policy.margin is not None or policy.relative_margin is not None:
        score, best = _floats(pool["score"])[rows], _floats(pool["best_positive_score"])[rows]
        no_best = np.isnan(best)  # a query without a positive score keeps its candidates
        if policy.margin is not None:
            ok = (score <= best - policy.margin) | no_best
            apply("margin", ok)
            score, best, no_best = score[ok], best[ok], no_best[ok]
        if policy.relative_margin is not None:
            # a share of the magnitude: best × (1 − margin) would rise with the margin for a negative best score
            apply("relative_margin", (score <= best - np.abs(best) * policy.relative_margin) | no_best)
    if policy.max_score is not None or policy.min_score is not None:
        # the bounds at the pool's float32 precision, as mine_hard_negatives compares its float32 scores: a score
        # stored as float32(0.8) is within max_score 0.8
        score = _floats(pool["score"])[rows]
        if policy.max_score is not None:
            ok = score <= _float32(policy.max_score)
            apply("max_score", ok)
            score = score[ok]
        if policy.min_score is not None:
            apply("min_score", score >= _float32(policy.min_score))
    if policy.ce_threshold is not None or policy.ce_margin is not None:
        ce = _floats(pool["ce_score"])[rows]  # NaN (not scored) passes: every comparison below is False
        if policy.ce_threshold is not None:
            ok = ~(ce >= policy.ce_threshold)
            apply("ce_threshold", ok)
            ce = ce[ok]
        if policy.ce_margin is not None:
            best_ce = _floats(pool["best_positive_ce_score"])[rows]
            apply("ce_margin", ~(ce > best_ce - policy.ce_margin))
    if policy.keep is not None and len(rows):
        kept = _keep_per_query(rows, query, queries, policy.keep, policy.sampling, seed)
        removed["keep"] = len(rows) - len(kept)
        rows = kept

    negatives = pool.take(pa.array(rows, pa.int64())).select(artifacts.HARDNEGS.schema.names)
    negatives = negatives.cast(artifacts.HARDNEGS.schema).combine_chunks()
    return Selection(negatives=negatives, removed=removed, candidates=n, kept=negatives.num_rows)


def select_stage(
    pool_path: str | os.PathLike,
    hardnegs_path: str | os.PathLike,
    selection_path: str | os.PathLike,
    *,
    policy: Mapping,
    seed: int = 0,
    name: str | None = None,
    max_queries_without: float | None = None,
    where: str = "params.mining",
) -> Selection:
    """Stage function: :func:`select` from a pool file; the negatives written as HARDNEGS Parquet and what the
    selection did as JSON, both atomically.

    :param pool_path: the CANDIDATES Parquet file (a pool of :mod:`hardneg.mining.pool`).
    :param hardnegs_path: the HARDNEGS Parquet file to write.
    :param selection_path: the JSON file to write: ``policy`` (its keys, all of them), ``name`` (the policy's name
        in the config, or null), ``seed``, ``pool`` (the pool's path), ``candidates``, ``kept``, ``removed``
        (per filter, in order), ``queries`` (with candidates), ``queries_with_negatives`` and
        ``queries_without_negatives``.
    :param policy: the policy's keys (:meth:`Policy.from_params`).
    :param seed: the seed of random sampling.
    :param name: the policy's name in the config's ``policies``, if it has one.
    :param max_queries_without: the largest share of the pool's queries the selection may leave without a
        negative; None: any.
    :param where: the config key of ``max_queries_without``, named in the error.
    :returns: the Selection.
    :raises DataError: a pool file that is missing or does not match its schema.
    :raises SelectionError: more than ``max_queries_without`` of the queries left without a negative; nothing is
        written then.
    :raises ValueError: a policy :class:`Policy` rejects, or one the pool cannot serve (see :func:`select`).
    """
    chosen = Policy.from_params(policy)
    pool = artifacts.read_table(artifacts.CANDIDATES, pool_path)
    selection = select(pool, chosen, seed=seed)
    queries = len(pc.unique(pool["qid"])) if pool.num_rows else 0
    with_negatives = len(pc.unique(selection.negatives["qid"])) if selection.kept else 0
    without = queries - with_negatives
    if max_queries_without is not None and queries and without / queries > max_queries_without:
        removed = ", ".join(f"{key} {count}" for key, count in selection.removed.items() if count) or "none"
        shown = f"policy {name!r}" if name else f"the policy of {where}"
        raise SelectionError(
            f"{shown} leaves {without} of {queries} queries ({without / queries:.0%}) of pool "
            f"{pool_path} without a hard negative (kept {selection.kept} of {selection.candidates} "
            f"candidates; removed: {removed}), more than {where}.max_queries_without "
            f"({max_queries_without:g}): they would train on random negatives. Loosen the policy, "
            f"or raise max_queries_without"
        )
    artifacts.write_table(selection.negatives, artifacts.HARDNEGS, hardnegs_path)
    record = {
        "policy": {
            key: list(value) if isinstance(value, tuple) else value for key, value in dataclasses.asdict(chosen).items()
        },
        "name": name,
        "seed": seed,
        "pool": str(pool_path),
        "candidates": selection.candidates,
        "kept": selection.kept,
        "removed": selection.removed,
        "queries": queries,
        "queries_with_negatives": with_negatives,
        "queries_without_negatives": without,
    }
    write_text(selection_path, json.dumps(record, indent=2) + "\n")
    removed = ", ".join(f"{key} {count}" for key, count in selection.removed.items() if count)
    logs.progress(
        log,
        "selected %d of %d candidates for %d of %d queries (removed: %s)",
        selection.kept,
        selection.candidates,
        record["queries_with_negatives"],
        record["queries"],
        removed or "none",
        last=True,
    )
    return selection
