"""Does a selection policy keep false negatives out? Leakage of known false negatives into a hard-negative list,
and the hardness the list keeps, against a reference policy.

A dataset with ``hide_positives`` (:mod:`hardneg.datasets.hidden`) hides a share of the judged positives of its
training split: the miner, the pool and the policies see the visible judgements only, so a hidden positive the
miner ranks within the pool's depth is a candidate like any negative, and a policy that selects it trains on a
false negative. For a pool (CANDIDATES), the negatives a policy selected from it (HARDNEGS) and the hidden
judgements (QRELS):

* **leakage**: the share of the hidden positives that are selected as negatives, over all hidden positives
  (``leakage``) and over those in the pool, i.e. that the miner ranked within the pool's depth (``pool_leakage``);
  ``false_negative_share`` is the share of the selected negatives that are hidden positives;
* **hardness**: the selected negatives' mean rank under the miner (``mean_rank``; 1 = the top document, lower is
  harder) and their mean margin (``mean_margin``: the negative's score minus its query's best visible positive
  score, in the miner's score units, e.g. cosine / temperature; closer to 0 or above is harder);
* against a reference policy (plain top-k: ``keep`` only), ``hardness_kept`` = the reference's mean rank / the
  policy's (1.0: as hard; below 1: easier) and ``leakage_cut`` = 1 - leakage / the reference's leakage (1.0: no
  false negative left; 0: as many as the reference; NaN when the reference leaks none).

Every function is vectorised over the rows (Arrow hash lookups of integer pair codes, NumPy reductions);
:func:`write_leakage` is the stage that writes the table (Parquet and Markdown).
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hardneg.io import artifacts
from hardneg.io.artifacts import ArtifactKind
from hardneg.io.atomic import write_text
from hardneg.io.text import markdown_table
from hardneg.mining.rows import isin, relevant_judgements, value_codes

LEAKAGE = ArtifactKind(
    "leakage",
    pa.schema(
        [
            ("policy", pa.string()),
            ("reference", pa.bool_()),  # the reference policy (plain top-k), which the relative columns compare with
            ("settings", pa.string()),  # the policy's filters in words, e.g. "keep 8, margin 0.5"
            ("negatives", pa.int64()),  # selected negatives (rows of its list)
            ("queries_with_negatives", pa.int64()),
            ("hidden_positives", pa.int64()),  # hidden (query, positive) pairs of the split
            ("hidden_in_pool", pa.int64()),  # of those, the pairs the miner ranked within the pool's depth
            ("leaked", pa.int64()),  # hidden positives selected as negatives
            ("leakage", pa.float64()),  # leaked / hidden_positives
            ("pool_leakage", pa.float64()),  # leaked / hidden_in_pool (NaN: none in the pool)
            ("false_negative_share", pa.float64()),  # leaked / negatives (NaN: no negative)
            ("mean_rank", pa.float64()),  # the selected negatives' mean rank under the miner (1-based)
            ("mean_margin", pa.float64()),  # their mean (score - best visible positive score), miner's units
            ("hardness_kept", pa.float64()),  # the reference's mean_rank / this policy's
            ("leakage_cut", pa.float64()),  # 1 - leakage / the reference's leakage
        ]
    ),
    "one row per selection policy of the false-negative experiment: how many hidden positives it selects as "
    "negatives (leakage), how hard its negatives are (mean rank, mean margin), and both against the reference policy",
)


@dataclass(frozen=True)
class Leakage:
    """The hidden positives a selection takes in: ``hidden_positives`` (pairs of the hidden judgements),
    ``hidden_in_pool`` (of those, the pool's candidates), ``leaked`` (of those, the selected negatives), ``negatives``
    (the selection's rows), and the shares ``leakage`` = leaked / hidden_positives, ``pool_leakage`` = leaked /
    hidden_in_pool and ``false_negative_share`` = leaked / negatives (each NaN when its denominator is 0)."""

    hidden_positives: int
    hidden_in_pool: int
    leaked: int
    negatives: int
    leakage: float
    pool_leakage: float
    false_negative_share: float


@dataclass(frozen=True)
class Hardness:
    """How hard a selection's negatives are: ``mean_rank`` (their mean 1-based rank under the miner) and
    ``mean_margin`` (their mean score minus their query's best visible positive score, in the miner's score units,
    over the negatives whose query has one), NaN without negatives; ``queries_with_negatives``."""

    mean_rank: float
    mean_margin: float
    queries_with_negatives: int


def _share(part: int, whole: int) -> float:
    return part / whole if whole else math.nan


def _unique_pairs(table: pa.Table) -> pa.Table:
    """The distinct (qid, docid) pairs of a table, as a two-column table."""
    return table.select(["qid", "docid"]).group_by(["qid", "docid"]).aggregate([])


def _pair_keys(tables: list[pa.Table]) -> list[np.ndarray]:
    """Each table's (qid, docid) pairs as one int64 per row: query code * number of documents + document code, over
    the ids of all the tables together (equal pairs get equal keys, whichever table they are in)."""
    queries = pc.unique(pa.chunked_array([t["qid"].cast(pa.string()) for t in tables], pa.string()))
    docs = pc.unique(pa.chunked_array([t["docid"].cast(pa.string()) for t in tables], pa.string()))
    return [value_codes(t["qid"], queries) * len(docs) + value_codes(t["docid"], docs) for t in tables]


def leakage(pool: pa.Table, selection: pa.Table, hidden: pa.Table) -> Leakage:
    """How many of the hidden positives ``selection`` selected as negatives (see :class:`Leakage`).

    :param pool: the CANDIDATES table the selection was made from (``qid``, ``docid``; a pool built with the
        visible judgements, so a hidden positive the miner ranked within depth is one of its candidates).
    :param selection: the selected negatives, a HARDNEGS table (``qid``, ``docid``).
    :param hidden: the hidden judgements, a QRELS table; its rows with relevance >= 1 are the hidden positives
        (a pair judged twice counts once).
    :returns: the counts and shares.
    """
    positives = _unique_pairs(relevant_judgements(hidden))
    selected = _unique_pairs(selection)
    pool_keys, selected_keys, hidden_keys = _pair_keys([pool, selected, positives])
    in_pool = int(np.count_nonzero(isin(hidden_keys, pool_keys)))
    leaked = int(np.count_nonzero(isin(hidden_keys, selected_keys)))
    total, negatives = positives.num_rows, selection.num_rows
    return Leakage(
        hidden_positives=total,
        hidden_in_pool=in_pool,
        leaked=leaked,
        negatives=negatives,
        leakage=_share(leaked, total),
        pool_leakage=_share(leaked, in_pool),
        false_negative_share=_share(leaked, negatives),
    )


def hardness(pool: pa.Table, selection: pa.Table) -> Hardness:
    """How hard the selected negatives are (see :class:`Hardness`).

    :param pool: the CANDIDATES table the selection was made from: each query's ``best_positive_score`` (the
        miner's best score of its visible positives; null where none was scored) is read from it.
    :param selection: the selected negatives, a HARDNEGS table: ``rank`` (1-based, under the miner) and ``score``
        (the miner's).
    :returns: the mean rank and mean margin (float64, NaN without negatives; the margin's mean is over the
        negatives whose query has a best positive score, NaN when none has) and the queries with a negative.
    """
    if selection.num_rows == 0:
        return Hardness(math.nan, math.nan, 0)
    rank = selection["rank"].to_numpy().astype(np.float64)
    score = pc.fill_null(selection["score"].cast(pa.float64()), math.nan).to_numpy()
    queries = pc.unique(selection["qid"])
    best = np.full(len(queries), np.nan)
    codes = value_codes(pool["qid"], queries)
    if pool.num_rows:
        values = pc.fill_null(pool["best_positive_score"].cast(pa.float64()), math.nan).to_numpy()
        np.fmax.at(best, codes[codes >= 0], values[codes >= 0])  # one value per query; fmax: NaN loses
    margin = score - best[value_codes(selection["qid"], queries)]
    mean_margin = float(np.nanmean(margin)) if np.any(~np.isnan(margin)) else math.nan
    return Hardness(mean_rank=float(rank.mean()), mean_margin=mean_margin, queries_with_negatives=len(queries))


def hardness_kept(reference_mean_rank: float, mean_rank: float) -> float:
    """The reference's mean rank over the policy's: 1.0 when its negatives are as hard, below 1 when easier (deeper
    ranks), above 1 when harder; NaN when either is NaN or the policy's is 0."""
    if math.isnan(reference_mean_rank) or math.isnan(mean_rank) or mean_rank == 0:
        return math.nan
    return reference_mean_rank / mean_rank


def leakage_cut(reference_leakage: float, policy_leakage: float) -> float:
    """1 - the policy's leakage / the reference's: 1.0 when it selects no hidden positive, 0 when it selects as many
    as the reference, negative when more; NaN when the reference leaks none (nothing to cut) or either is NaN."""
    if math.isnan(reference_leakage) or math.isnan(policy_leakage) or reference_leakage == 0:
        return math.nan
    return 1.0 - policy_leakage / reference_leakage


def leakage_table(
    pool: pa.Table,
    selections: Mapping[str, pa.Table],
    hidden: pa.Table,
    *,
    reference: str | None = None,
    settings: Mapping[str, str] | None = None,
) -> pa.Table:
    """One row per policy: its leakage, its hardness and both against the reference policy.

    :param pool: the CANDIDATES table every selection was made from.
    :param selections: policy name → its selected negatives (HARDNEGS), in the order of the rows.
    :param hidden: the hidden judgements (QRELS).
    :param reference: the reference policy, a key of ``selections`` (None: the first).
    :param settings: policy name → its filters in words (the ``settings`` column; "" where missing).
    :returns: a :data:`LEAKAGE` table; a value with nothing to measure (a share of nothing) is null.
    :raises ValueError: no selection, or a reference that is not one of them.
    """
    if not selections:
        raise ValueError("no selection to measure: give at least one policy's negatives")
    reference = next(iter(selections)) if reference is None else reference
    if reference not in selections:
        raise ValueError(f"the reference policy {reference!r} is not one of the selections ({', '.join(selections)})")
    measured = {name: (leakage(pool, table, hidden), hardness(pool, table)) for name, table in selections.items()}
    base_leak, base_hard = measured[reference]
    rows = []
    for name, (leak, hard) in measured.items():
        row = {
            "policy": name,
            "reference": name == reference,
            "settings": (settings or {}).get(name, ""),
            **asdict(leak),
            **asdict(hard),
            "hardness_kept": hardness_kept(base_hard.mean_rank, hard.mean_rank),
            "leakage_cut": leakage_cut(base_leak.leakage, leak.leakage),
        }
        # a share with nothing to measure (nothing hidden, no negative) is stored as null, never as NaN
        rows.append(
            {key: None if isinstance(value, float) and math.isnan(value) else value for key, value in row.items()}
        )
    return pa.Table.from_pylist(rows, schema=LEAKAGE.schema)


def policy_settings(policy: Mapping) -> str:
    """A policy's filters in words, the keys that are set in order (e.g. ``keep 8, relative_margin 0.05``);
    ``all candidates`` when none is."""
    off = {"rank_range": None, "exclude_duplicates": False, "sampling": "top"}
    parts = []
    for key, value in policy.items():
        if value is None or (key in off and value == off[key]):
            continue
        if key == "rank_range":
            value = f"{value[0]}-{value[1]}"
        parts.append(key if value is True else f"{key} {value}")
    return ", ".join(parts) or "all candidates"


def _number(value: float, digits: int, percent: bool = False) -> str:
    if value is None or math.isnan(value):
        return "–"
    return f"{100 * value:.{digits}f}%" if percent else f"{value:.{digits}f}"


def leakage_markdown(table: pa.Table, *, miner: str, dataset: str, split: str, depth: int) -> str:
    """The leakage table as a Markdown page: one row per policy, the reference marked, and what each column is.

    :param table: a :data:`LEAKAGE` table.
    :param miner: the run whose pool the policies select from; ``dataset``, ``split``: whose hidden positives;
        ``depth``: the pool's depth (ranks).
    """
    rows = table.to_pylist()
    reference = next((row["policy"] for row in rows if row["reference"]), rows[0]["policy"] if rows else "")
    hidden = rows[0]["hidden_positives"] if rows else 0
    in_pool = rows[0]["hidden_in_pool"] if rows else 0
    lines = [
        "# False negatives: does each policy keep the hidden positives out?",
        "",
        f"Dataset `{dataset}` hides {hidden} judged positives of split `{split}` (hide_positives); the miner "
        f"`{miner}` ranks {in_pool} of them within its pool's depth ({depth}), where every policy can select "
        f"them as negatives. Reference: `{reference}`.",
        "",
    ]
    header = [
        "policy",
        "settings",
        "negatives",
        "leaked",
        "leakage",
        "leakage in pool",
        "false negatives among negatives",
        "mean rank",
        "mean margin",
        "hardness kept",
        "leakage cut",
    ]
    cells = [
        [
            f"**{row['policy']}** (reference)" if row["reference"] else row["policy"],
            row["settings"],
            str(row["negatives"]),
            str(row["leaked"]),
            _number(row["leakage"], 1, True),
            _number(row["pool_leakage"], 1, True),
            _number(row["false_negative_share"], 2, True),
            _number(row["mean_rank"], 2),
            _number(row["mean_margin"], 3),
            _number(row["hardness_kept"], 3),
            _number(row["leakage_cut"], 3),
        ]
        for row in rows
    ]
    lines += markdown_table(header, cells, "ll" + "r" * 9)
    lines += [
        "",
        "Leakage: the share of the hidden positives selected as negatives (in pool: of those the miner "
        "ranked within the pool's depth). Mean rank: the selected negatives' mean rank under the miner "
        "(lower is harder); mean margin: their mean score minus their query's best visible positive score, "
        "in the miner's score units (closer to 0 is harder). Hardness kept: the reference's mean rank / "
        "the policy's (1 = as hard). Leakage cut: 1 - leakage / the reference's leakage (1 = no hidden "
        "positive selected). Goal: a leakage cut of at least 0.5 with a hardness kept of at least 0.9.",
    ]
    return "\n".join(lines) + "\n"


def write_leakage(
    pool_path: str | os.PathLike,
    selection_paths: Mapping[str, str | os.PathLike],
    hidden_path: str | os.PathLike,
    table_path: str | os.PathLike,
    markdown_path: str | os.PathLike,
    *,
    reference: str | None = None,
    settings: Mapping[str, str] | None = None,
    miner: str = "",
    dataset: str = "",
    split: str = "",
    depth: int = 0,
) -> pa.Table:
    """Stage function: :func:`leakage_table` from files, written as Parquet (:data:`LEAKAGE`) and Markdown
    (:func:`leakage_markdown`), both atomically.

    :param pool_path: the CANDIDATES Parquet file the selections were made from.
    :param selection_paths: policy name → its HARDNEGS Parquet file, the reference first (unless ``reference``).
    :param hidden_path: the hidden judgements (QRELS Parquet, ``results/datasets/<dataset>/hidden/<split>.parquet``).
    :param table_path: the Parquet file to write.
    :param markdown_path: the Markdown file to write.
    :param reference: the reference policy (None: the first of ``selection_paths``).
    :param settings: policy name → its filters in words.
    :param miner: the miner whose pool it is (the Markdown's heading; :func:`leakage_markdown`).
    :param dataset: the dataset whose positives were hidden (the heading).
    :param split: the split they were hidden from (the heading).
    :param depth: the pool's depth (the heading).
    :returns: the table written.
    :raises DataError: a file that is missing or does not match its schema.
    """
    pool = artifacts.read_table(artifacts.CANDIDATES, pool_path)
    hidden = artifacts.read_table(artifacts.QRELS, hidden_path)
    selections = {name: artifacts.read_table(artifacts.HARDNEGS, path) for name, path in selection_paths.items()}
    table = leakage_table(pool, selections, hidden, reference=reference, settings=settings)
    artifacts.write_table(table, LEAKAGE, table_path)
    write_text(markdown_path, leakage_markdown(table, miner=miner, dataset=dataset, split=split, depth=depth))
    return table
