"""Selection policies: which candidates of a pool (:mod:`hardneg.mining.pool`) become a query's hard negatives.

A :class:`Policy` is a set of filters, each off by default; :func:`select` applies them to a CANDIDATES table, in
this order, and counts what each removed (the audit reports it per policy):

``depth``
    rank <= depth (a policy mining a shallower top-k than the pool's).
``rank_range``
    low <= rank <= high (1-based, inclusive), e.g. skipping the top ranks, where most false negatives are.
``duplicates``
    with ``exclude_duplicates``, drop documents that duplicate one of the query's judged positives.
``margin``
    NV-Retriever's TopK-MarginPos (Moreira et al. 2024): keep score <= best positive score − margin, in the
    miner's score units.
``relative_margin``
    NV-Retriever's TopK-PercPos: keep score <= best positive score − |best positive score| × relative_margin;
    their recommended setting keeps negatives below 95% of the positive's score, relative_margin 0.05. The
    margin is a share of the score's magnitude, so a larger one filters more whatever the score's sign (as
    sentence-transformers' ``mine_hard_negatives`` computes it; best × (1 − margin) would filter less for a
    negative best score).
``max_score``, ``min_score``
    keep score <= max_score, then score >= min_score: bounds on the candidate's own score, in the miner's score
    units (sentence-transformers' ``mine_hard_negatives`` has both, applied in this order after its margins).
``ce_threshold``
    RocketQA's denoising (Qu et al. 2021): drop candidates a cross-encoder gives a probability of relevance >=
    the threshold.
``ce_margin``
    drop candidates whose cross-encoder probability exceeds the query's best positive's minus the margin.
``keep``
    at most this many per query: the best-ranked (``sampling="top"``) or a seeded uniform sample (``"random"``).

Nulls pass: a row without a best positive score passes the margins, one without a cross-encoder score (or best
positive cross-encoder score) the cross-encoder filters. :func:`hardneg.mining.negatives.mine_hard_negatives` is a
policy with only ``rank_range``, ``margin``, ``relative_margin``, ``max_score``, ``min_score``, ``keep`` and
``sampling``.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, fields

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hardneg.errors import SelectionError
from hardneg.io import artifacts, logs
from hardneg.io.atomic import write_text
from hardneg.mining.rows import group_bounds, query_seed, value_codes

log = logging.getLogger(__name__)

SAMPLING = ("top", "random")  # which `keep` candidates: the best-ranked, or a seeded uniform sample
FILTERS = (
    "depth",
    "rank_range",
    "duplicates",
    "margin",
    "relative_margin",
    "max_score",
    "min_score",
    "ce_threshold",
    "ce_margin",
    "keep",
)


def _is_int(value) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def _is_number(value) -> bool:
    return (_is_int(value) or isinstance(value, (float, np.floating))) and math.isfinite(value)


class PolicyValueError(ValueError):
    """A policy key with a value :class:`Policy` refuses; ``key`` names it (the config check names
    ``<section>.<key>``)."""

    def __init__(self, key: str, message: str):
        self.key = key
        super().__init__(message)


@dataclass(frozen=True)
class Policy:
    """A selection policy: the filters :func:`select` applies to a candidate pool. Every field's default turns
    its filter off. Checked on construction; ``rank_range`` may be given as a two-element list (as YAML gives it)
    and is kept as a tuple.

    :param depth: keep rank <= depth (at least 1); None: every rank of the pool.
    :param rank_range: (low, high): keep low <= rank <= high, 1-based, ``1 <= low <= high``; None: every rank.
    :param exclude_duplicates: drop candidates whose ``duplicate_of`` is set (they duplicate a judged positive).
        On a pool built without duplicates (the columns all null) nothing is a duplicate and nothing is dropped.
    :param margin: keep score <= best_positive_score − margin, in the miner's score units (non-negative); None:
        no such filter.
    :param relative_margin: keep score <= best_positive_score − |best_positive_score| × relative_margin, in
        [0, 1]: a share of the best positive score's magnitude, so a larger margin filters at least as much
        whatever the score's sign; None: no such filter.
    :param max_score: keep score <= max_score, in the miner's score units (any finite number); None: no such filter.
    :param min_score: keep score >= min_score, in the miner's score units (any finite number, at most
        ``max_score``); None: no such filter.
    :param ce_threshold: drop candidates with ce_score >= ce_threshold, a probability in (0, 1] (0 would drop
        every candidate); None: no such filter.
    :param ce_margin: drop candidates with ce_score > best_positive_ce_score − ce_margin, in [0, 1) (1 would drop
        every candidate scored above 0); None: no such filter.
    :param keep: the most candidates kept per query (at least 1); None: all.
    :param sampling: which ``keep`` candidates: ``"top"`` (the best-ranked) or ``"random"`` (uniform without
        replacement, seeded from the seed and the qid).
    """

    depth: int | None = None
    rank_range: tuple[int, int] | None = None
    exclude_duplicates: bool = False
    margin: float | None = None
    relative_margin: float | None = None
    max_score: float | None = None
    min_score: float | None = None
    ce_threshold: float | None = None
    ce_margin: float | None = None
    keep: int | None = None
    sampling: str = "top"

    def __post_init__(self):
        if self.depth is not None and not (_is_int(self.depth) and self.depth >= 1):
            raise PolicyValueError("depth", f"depth must be an integer of at least 1 (or None), got {self.depth!r}")
        if self.rank_range is not None:
            ranks = self.rank_range
            if not (
                isinstance(ranks, (tuple, list))
                and len(ranks) == 2
                and all(map(_is_int, ranks))
                and 1 <= ranks[0] <= ranks[1]
            ):
                raise PolicyValueError(
                    "rank_range", f"rank_range must be (low, high), integers with 1 <= low <= high, got {ranks!r}"
                )
            object.__setattr__(self, "rank_range", (int(ranks[0]), int(ranks[1])))
        if not isinstance(self.exclude_duplicates, (bool, np.bool_)):
            raise PolicyValueError(
                "exclude_duplicates", f"exclude_duplicates must be true or false, got {self.exclude_duplicates!r}"
            )
        for name, high in (("margin", math.inf), ("relative_margin", 1.0), ("ce_threshold", 1.0), ("ce_margin", 1.0)):
            value = getattr(self, name)
            if value is not None and not (_is_number(value) and 0 <= value <= high):
                bounds = "non-negative" if high == math.inf else f"in [0, {high:g}]"
                raise PolicyValueError(name, f"{name} must be a number {bounds} (or None), got {value!r}")
        for name in ("max_score", "min_score"):
            value = getattr(self, name)
            if value is not None and not _is_number(value):
                raise PolicyValueError(name, f"{name} must be a finite number (or None), got {value!r}")
        if self.min_score is not None and self.max_score is not None and self.min_score > self.max_score:
            raise PolicyValueError(
                "min_score",
                f"min_score {self.min_score:g} is above max_score "
                f"{self.max_score:g}: no score lies between them; give a "
                f"min_score at most max_score",
            )
        if self.ce_threshold == 0:
            raise PolicyValueError(
                "ce_threshold",
                "ce_threshold 0 drops every candidate (a cross-encoder's "
                "probability is at least 0): give a probability in (0, 1], e.g. "
                "0.9, or leave ce_threshold out",
            )
        if self.ce_margin == 1:
            raise PolicyValueError(
                "ce_margin",
                "ce_margin 1 drops every candidate the cross-encoder scores above 0 "
                "(no probability exceeds the best positive's by 1): give a margin in "
                "[0, 1), or leave ce_margin out",
            )
        if self.keep is not None and not (_is_int(self.keep) and self.keep >= 1):
            raise PolicyValueError(
                "keep", f"keep must be an integer of at least 1 (or None for all), got {self.keep!r}"
            )
        if self.sampling not in SAMPLING:
            raise PolicyValueError("sampling", f"sampling must be one of {', '.join(SAMPLING)}, got {self.sampling!r}")

    @classmethod
    def from_params(cls, params: Mapping) -> Policy:
        """The policy of a config mapping with the keys of :data:`POLICY_SCHEMA` (a missing key takes its
        default).

        :param params: the mapping, e.g. a policy section of a config; ``rank_range`` may be a list.
        :returns: the Policy.
        :raises ValueError: an unknown key, or a value out of its range (a :class:`PolicyValueError` naming the
            key; see :class:`Policy`).
        """
        known = [f.name for f in fields(cls)]
        unknown = sorted(set(params) - set(known))
        if unknown:
            raise ValueError(f"unknown policy key(s) {', '.join(unknown)}; the keys are {', '.join(known)}")
        return cls(**params)


POLICY_SCHEMA: dict = {
    "type": "object",
    "additionalProperties": False,
    "default": {},
    "description": "a selection policy: which candidates of the pool (results/<run>/candidates.parquet) become a "
    "query's hard negatives; filters apply in the order of the keys, each off by default",
    "properties": {
        "depth": {
            "type": ["integer", "null"],
            "minimum": 1,
            "default": None,
            "description": "keep candidates ranked at most this deep by the miner (null: the pool's depth)",
        },
        "rank_range": {
            "type": ["array", "null"],
            "items": {"type": "integer", "minimum": 1},
            "minItems": 2,
            "maxItems": 2,
            "default": None,
            "description": "keep only ranks in [first, last] (1-based, both included; first <= last); null: every rank",
        },
        "exclude_duplicates": {
            "type": "boolean",
            "default": False,
            "description": "drop candidates that duplicate a judged positive of the query "
            "(exact or near duplicates; nothing is dropped from a pool built "
            "without duplicate detection)",
        },
        "margin": {
            "type": ["number", "null"],
            "minimum": 0,
            "default": None,
            "description": "TopK-MarginPos: keep candidates scoring at most best positive - margin, in the "
            "miner's score units (null: no such filter)",
        },
        "relative_margin": {
            "type": ["number", "null"],
            "minimum": 0,
            "maximum": 1,
            "default": None,
            "description": "TopK-PercPos: keep candidates scoring at most best positive - "
            "|best positive| x relative_margin (0.05: 5% of the best positive "
            "score's magnitude below it, whatever its sign; null: no such "
            "filter)",
        },
        "max_score": {
            "type": ["number", "null"],
            "default": None,
            "description": "keep candidates scoring at most this under the miner, in its score units "
            "(null: no such filter)",
        },
        "min_score": {
            "type": ["number", "null"],
            "default": None,
            "description": "keep candidates scoring at least this under the miner, in its score units, "
            "at most max_score (null: no such filter)",
        },
        "ce_threshold": {
            "type": ["number", "null"],
            "minimum": 0,
            "maximum": 1,
            "default": None,
            "description": "drop candidates the cross-encoder gives a probability of relevance at or "
            "above this, greater than 0 (RocketQA denoising; null: no such filter)",
        },
        "ce_margin": {
            "type": ["number", "null"],
            "minimum": 0,
            "maximum": 1,
            "default": None,
            "description": "drop candidates whose cross-encoder probability exceeds the best positive's "
            "minus this, less than 1 (null: no such filter)",
        },
        "keep": {
            "type": ["integer", "null"],
            "minimum": 1,
            "default": None,
            "description": "candidates kept per query (null: all)",
        },
        "sampling": {
            "enum": list(SAMPLING),
            "default": "top",
            "description": "which `keep` candidates: the best-ranked (top) or a uniform sample seeded by "
            "the seed and the query (random)",
        },
    },
}


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
    if not _is_int(seed) or seed < 0:
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
