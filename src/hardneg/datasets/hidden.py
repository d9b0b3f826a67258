"""Hidden positives: a dataset option (``hide_positives``, shared by every adapter) that takes a seeded share of the
judged positives of one split out of its qrels, for the false-negative benchmark.

For each query of the split with at least two judged positives (relevance >= 1), ``share`` of them (rounded, at
least one hidden, at least one kept) leave the prepared qrels (``results/datasets/<dataset>/qrels/<split>.parquet``)
and are written beside them as ``results/datasets/<dataset>/hidden/<split>.parquet`` (QRELS schema). Everything
that trains, mines or audits on the dataset reads the visible qrels only, as a user who does not know the hidden
positives would; the hidden ones are the known false negatives a hard-negative filter should keep out
(:mod:`hardneg.mining.leakage`). Queries with one positive, judged non-relevant documents (relevance 0) and every
other split are unchanged.

Which positives a query hides is drawn by a generator seeded from (``seed``, qid) among its positives in docid
order: the draw depends on the query's own judgements only, not on the other queries or on the order of a file's
lines.
"""

from __future__ import annotations

import hashlib
import logging
import math
from dataclasses import replace

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hardneg.datasets.canonical import Dataset, Source
from hardneg.errors import ConfigError
from hardneg.io import artifacts

log = logging.getLogger(__name__)

OPTION = "hide_positives"


def hidden_split(cfg: dict) -> str | None:
    """The split whose positives a dataset entry hides (``hide_positives.split``); None when it hides none."""
    option = cfg.get(OPTION)
    return option["split"] if option is not None else None


def check_hidden(cfg: dict, splits: list[str], where: str = "dataset") -> None:
    """Check that a dataset entry asking for ``hide_positives`` names one of its splits. ``splits``: the splits the
    entry declares (its adapter's and a held-out ``dev``); ``where``: the dotted key of the entry.

    :raises ConfigError: naming ``<where>.hide_positives.split``.
    """
    split = hidden_split(cfg)
    if split is not None and split not in splits:
        raise ConfigError(
            f"{where}.{OPTION}.split",
            f"the dataset has no split {split!r} to hide positives of (it has {', '.join(splits)})",
        )


def hidden_count(positives: int, share: float) -> int:
    """How many of a query's ``positives`` judged positives are hidden: ``share`` of them rounded half up, at least
    one and at least one kept; 0 for a query with fewer than two."""
    if positives < 2:
        return 0
    return min(positives - 1, max(1, math.floor(share * positives + 0.5)))


def _query_rng(seed: int, qid: str) -> np.random.Generator:
    """The generator of one query's draw: seeded from (seed, qid), stable across runs and processes."""
    digest = hashlib.blake2b(qid.encode("utf-8"), digest_size=8).digest()
    return np.random.default_rng([seed, int.from_bytes(digest, "little")])


def hidden_rows(qrels: pa.Table, share: float, seed: int) -> np.ndarray:
    """The rows of ``qrels`` that :func:`hide_positives` hides: a boolean mask aligned with its rows.

    :param qrels: a QRELS table (``qid``, ``docid``, ``relevance``), rows in any order.
    :param share: the share of each query's positives hidden, between 0 and 1 (both excluded).
    :param seed: the seed of the draws (non-negative).
    :returns: True for each hidden row: per query with k >= 2 rows of relevance >= 1, :func:`hidden_count` of them,
        drawn by a generator seeded from (``seed``, qid) among its positive rows sorted by docid (a docid judged
        twice for one query is drawn as one row per judgement).
    """
    mask = np.zeros(qrels.num_rows, dtype=bool)
    if qrels.num_rows == 0:
        return mask
    positive = pc.greater_equal(qrels["relevance"], 1).to_numpy(zero_copy_only=False)
    rows = np.flatnonzero(positive)
    if len(rows) == 0:
        return mask
    qids = qrels["qid"].to_numpy(zero_copy_only=False)[rows]
    docids = qrels["docid"].to_numpy(zero_copy_only=False)[rows]
    order = np.lexsort((rows, docids, qids))  # by query, then docid (then line): the draw ignores the file's order
    rows, qids = rows[order], qids[order]
    starts = np.flatnonzero(np.r_[True, qids[1:] != qids[:-1]])
    sizes = np.diff(np.r_[starts, len(rows)])
    for start, size in zip(starts[sizes >= 2], sizes[sizes >= 2]):  # a generator per query: independent draws
        picked = _query_rng(seed, str(qids[start])).choice(size, size=hidden_count(int(size), share), replace=False)
        mask[rows[start + picked]] = True
    return mask


def hide_positives(dataset: Dataset, cfg: dict) -> Dataset:
    """``dataset`` with a share of the positives of split ``hide_positives.split`` hidden, as
    ``cfg["hide_positives"]`` asks (``split``, ``share``, ``seed``; see :func:`hidden_rows`); the dataset itself
    when the entry hides none.

    :param dataset: the dataset its adapter loaded (and ``dev_from_train`` split).
    :param cfg: the validated dataset entry.
    :returns: a new dataset whose qrels of the split are the visible ones and whose ``hidden`` maps the split to
        the hidden judgements (QRELS), with ``hidden_positives`` in its statistics (the split, the queries hiding
        some, the judgements hidden, the share and seed).
    :raises ConfigError: a split the dataset does not have (``dataset.hide_positives.split``).
    """
    split = hidden_split(cfg)
    if split is None:
        return dataset
    option = cfg[OPTION]
    if split not in dataset.qrels:
        raise ConfigError(
            f"dataset.{OPTION}.split",
            f"the dataset has no split {split!r} to hide positives of (it has {', '.join(dataset.splits)})",
        )
    qrels = dataset.qrels[split]
    mask = hidden_rows(qrels, option["share"], option["seed"])
    visible, hidden = qrels.filter(pa.array(~mask)), qrels.filter(pa.array(mask))
    hidden = hidden.select(artifacts.QRELS.schema.names).cast(artifacts.QRELS.schema)
    queries = len(pc.unique(hidden["qid"])) if hidden.num_rows else 0
    if queries == 0:
        log.warning(
            "dataset option hide_positives: no query of split %r has two judged positives or more; no "
            "positive is hidden",
            split,
        )
    source = dataset.qrels_source.get(split)
    qrels_source = dict(dataset.qrels_source)
    if source is not None:  # errors about the visible rows still name their lines
        qrels_source[split] = Source(source.path, None if source.lines is None else source.lines[~mask])
    stats = {
        **dataset.extra_stats,
        "hidden_positives": {
            "split": split,
            "queries": queries,
            "judgements": hidden.num_rows,
            "share": option["share"],
            "seed": option["seed"],
        },
    }
    return replace(
        dataset,
        qrels={**dataset.qrels, split: visible},
        qrels_source=qrels_source,
        hidden={**dataset.hidden, split: hidden},
        extra_stats=stats,
    )
