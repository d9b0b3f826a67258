"""What datasets share about their splits: each split of a file-based dataset names both its query file and its
qrels file, and any dataset may hold a seeded share of its training queries out as a ``dev`` split
(``dev_from_train``)."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hardneg.datasets.canonical import Dataset, Source
from hardneg.errors import ConfigError, DataError


def check_query_and_qrels_files(cfg: dict, queries_key: str, where: str = "dataset") -> None:
    """Check that every split under ``cfg[queries_key]`` has a file under ``cfg["qrels"]`` and the other way round.

    The canonical form has qrels for every split (training and evaluation read them, and ``judged_only`` keeps
    the judged queries), so a split with only one of the two is a :class:`ConfigError` naming the missing key,
    e.g. ``datasets.dl.qrels.test``. ``where`` is the dotted key of the dataset's config.
    """
    queries, qrels = cfg.get(queries_key) or {}, cfg.get("qrels") or {}
    for split in queries:
        if split not in qrels:
            raise ConfigError(
                f"{where}.qrels.{split}",
                f"required key is missing: split {split!r} has {queries_key} "
                f"({where}.{queries_key}.{split}) but no qrels file; every split needs its qrels",
            )
    for split in qrels:
        if split not in queries:
            raise ConfigError(
                f"{where}.{queries_key}.{split}",
                f"required key is missing: split {split!r} has a qrels file ({where}.qrels.{split}) "
                f"but no {queries_key} file",
            )


# ------------------------------------------------------------------------------------------ held-out split
# The split a dataset entry's ``dev_from_train`` makes from its training split, and the split it is made from.
HELD_OUT = "dev"
TRAIN = "train"


def held_out_split(cfg: dict) -> str | None:
    """The split a dataset entry holds out of its training split (``dev_from_train``): ``dev``; None when it holds
    none out."""
    return HELD_OUT if cfg.get("dev_from_train") is not None else None


def check_held_out(cfg: dict, splits: list[str], where: str = "dataset") -> None:
    """Check that a dataset entry asking for ``dev_from_train`` has a ``train`` split to take it from and no ``dev``
    split already. ``splits``: the splits its adapter reads; ``where``: the dotted key of the entry.

    :raises ConfigError: naming ``<where>.dev_from_train``.
    """
    if held_out_split(cfg) is None:
        return
    if TRAIN not in splits:
        raise ConfigError(
            f"{where}.dev_from_train",
            f"holds out a share of split {TRAIN!r}, which the dataset does not have (it has {', '.join(splits)})",
        )
    if HELD_OUT in splits:
        raise ConfigError(
            f"{where}.dev_from_train",
            f"the dataset has a split {HELD_OUT!r} already; remove dev_from_train, or the {HELD_OUT!r} split",
        )


def held_out_queries(qrels: pa.Table, share: float, seed: int) -> list[str]:
    """The queries held out of a training split: ``share`` of its judged queries (a relevance of 1 or more),
    rounded, at least one and never all, drawn with ``seed`` from the judged qids in sorted order (so the draw
    depends on the judgements only, not on the order of a file's lines).

    :param qrels: the training split's QRELS table (``qid``, ``docid``, ``relevance``).
    :param share: the share held out, between 0 and 1 (both excluded).
    :param seed: the seed of the draw.
    :returns: the held-out qids, sorted; empty when fewer than two queries are judged (none can be spared).
    """
    judged = sorted(set(qrels.filter(pc.greater_equal(qrels["relevance"], 1))["qid"].to_pylist()))
    if len(judged) < 2:
        return []
    count = min(len(judged) - 1, max(1, math.floor(share * len(judged) + 0.5)))
    picked = np.random.default_rng(seed).choice(len(judged), size=count, replace=False)
    return sorted(judged[i] for i in picked)


def _rows(source: Source, keep: np.ndarray) -> Source:
    """``source`` for the rows of its table that ``keep`` keeps."""
    return Source(source.path, None if source.lines is None else source.lines[keep])


def hold_out(dataset: Dataset, cfg: dict) -> Dataset:
    """``dataset`` with its ``dev`` split held out of its ``train`` split, as ``cfg["dev_from_train"]`` asks
    (``share``, ``seed``; see :func:`held_out_queries`); the dataset itself when the entry asks for none.

    The held-out queries and their judgements leave ``train`` for ``dev``, so nothing trained on ``train`` sees
    them; errors about their rows still name the training split's files and lines.

    :param dataset: the dataset its adapter loaded.
    :param cfg: the validated dataset entry.
    :returns: a new dataset (``dev`` last among its splits).
    :raises DataError: the training split has fewer than two judged queries (none can be held out).
    """
    if held_out_split(cfg) is None:
        return dataset
    option = cfg["dev_from_train"]
    queries, qrels = dataset.queries[TRAIN], dataset.qrels[TRAIN]
    held = held_out_queries(qrels, option["share"], option["seed"])
    qrels_source = dataset.qrels_source.get(TRAIN, Source(f"<qrels {TRAIN}>"))
    if not held:
        raise DataError(
            qrels_source.path,
            None,
            f"split {TRAIN!r} has fewer than two judged queries: none can be "
            f"held out as split {HELD_OUT!r} (dev_from_train)",
        )
    held_set = pa.array(held, pa.string())
    in_queries = pc.is_in(queries["qid"], value_set=held_set).to_numpy(zero_copy_only=False)
    in_qrels = pc.is_in(qrels["qid"], value_set=held_set).to_numpy(zero_copy_only=False)
    queries_source = dataset.queries_source.get(TRAIN, Source(f"<queries {TRAIN}>"))
    split = {
        TRAIN: (
            queries.filter(pa.array(~in_queries)),
            qrels.filter(pa.array(~in_qrels)),
            _rows(queries_source, ~in_queries),
            _rows(qrels_source, ~in_qrels),
        ),
        HELD_OUT: (
            queries.filter(pa.array(in_queries)),
            qrels.filter(pa.array(in_qrels)),
            _rows(queries_source, in_queries),
            _rows(qrels_source, in_qrels),
        ),
    }

    def with_split(mapping: dict, part: int) -> dict:
        out = {name: split[name][part] if name == TRAIN else value for name, value in mapping.items()}
        return out | {HELD_OUT: split[HELD_OUT][part]}

    return replace(
        dataset,
        queries=with_split(dataset.queries, 0),
        qrels=with_split(dataset.qrels, 1),
        queries_source=with_split(dataset.queries_source, 2) if dataset.queries_source else {},
        qrels_source=with_split(dataset.qrels_source, 3) if dataset.qrels_source else {},
    )
