"""Dataset adapters: each turns one source format into the canonical :class:`Dataset`.

:func:`load_dataset` dispatches on the config's ``adapter`` key; :func:`prepare_dataset` loads,
validates and writes the canonical folder.
"""

from __future__ import annotations

import logging
import os

from hardneg.datasets.canonical import Dataset, dataset_paths, read_split, write_dataset

log = logging.getLogger(__name__)

ADAPTERS = ("synthetic", "beir", "msmarco_passage", "msmarco_document", "trec", "ir_datasets")


def dataset_splits(cfg: dict) -> list[str]:
    """The split names a dataset config declares, in order."""
    adapter = cfg["adapter"]
    if adapter == "synthetic":
        return list(cfg["num_queries"])
    if adapter == "beir":
        return list(cfg["splits"])
    if adapter == "trec":
        return list(cfg["topics"])
    if adapter == "ir_datasets":
        return list(cfg["splits"])
    return list(cfg["queries"])


# The key holding each file-based adapter's per-split query files; its qrels are under ``qrels``.
_QUERY_FILES = {"msmarco_passage": "queries", "msmarco_document": "queries", "trec": "topics"}


def check_split_files(cfg: dict, where: str = "dataset") -> None:
    """Check that every split of a file-based adapter names both its query file and its qrels file.

    The canonical form has qrels for every split (training and evaluation read them, and ``judged_only`` keeps
    the judged queries), so a split with only one of the two is a :class:`ConfigError` naming the missing key,
    e.g. ``datasets.dl.qrels.test``. ``where`` is the dotted key of the dataset's config.
    """
    from hardneg.errors import ConfigError

    queries_key = _QUERY_FILES.get(cfg.get("adapter"))
    if queries_key is None:
        return
    queries, qrels = cfg.get(queries_key) or {}, cfg.get("qrels") or {}
    for split in queries:
        if split not in qrels:
            raise ConfigError(f"{where}.qrels.{split}",
                              f"required key is missing: split {split!r} has {queries_key} "
                              f"({where}.{queries_key}.{split}) but no qrels file; every split needs its qrels")
    for split in qrels:
        if split not in queries:
            raise ConfigError(f"{where}.{queries_key}.{split}",
                              f"required key is missing: split {split!r} has a qrels file ({where}.qrels.{split}) "
                              f"but no {queries_key} file")


def dataset_input_files(cfg: dict) -> list[str]:
    """The raw files a dataset is prepared from, so that editing one re-prepares the dataset."""
    adapter = cfg["adapter"]
    if adapter == "beir":
        root = cfg["path"]
        return [os.path.join(root, "corpus.jsonl"), os.path.join(root, "queries.jsonl")] + [
            os.path.join(root, "qrels", f"{s}.tsv") for s in cfg["splits"]]
    if adapter == "msmarco_passage":
        return [cfg["collection"], *cfg["queries"].values(), *cfg["qrels"].values()]
    if adapter == "msmarco_document":
        return [cfg["docs"], *cfg["queries"].values(), *cfg["qrels"].values()]
    if adapter == "trec":
        return [cfg["corpus"], *cfg["topics"].values(), *cfg["qrels"].values()]
    return []


def load_dataset(cfg: dict) -> Dataset:
    """Load a dataset described by a config entry (see ``workflow/schemas/config.schema.yaml``); keys it leaves
    out get the schema's defaults, and a wrong one (or a split without its qrels file, see :func:`check_split_files`)
    raises ``ConfigError`` naming ``dataset.<key>``."""
    from hardneg.config import validate_dataset

    cfg = validate_dataset(cfg)
    check_split_files(cfg)
    adapter = cfg["adapter"]
    if adapter == "synthetic":
        from hardneg.datasets import synthetic

        return synthetic.generate(synthetic.SyntheticSpec.from_config(cfg))
    if adapter == "beir":
        from hardneg.datasets import beir

        return beir.load(cfg["path"], list(cfg["splits"]))
    if adapter == "msmarco_passage":
        from hardneg.datasets import msmarco

        return msmarco.load_passage(cfg["collection"], cfg["queries"], cfg["qrels"], cfg["judged_only"])
    if adapter == "msmarco_document":
        from hardneg.datasets import msmarco

        return msmarco.load_document(cfg["docs"], cfg["queries"], cfg["qrels"], cfg["judged_only"])
    if adapter == "trec":
        from hardneg.datasets import trec

        return trec.load(cfg["corpus"], cfg["topics"], cfg["qrels"], cfg["topic_field"],
                         cfg["judged_only"])
    if adapter == "ir_datasets":
        from hardneg.datasets import irds

        return irds.load(cfg["splits"])
    raise ValueError(f"unknown adapter {adapter!r}")  # the config schema rejects this earlier


def prepare_dataset(cfg: dict, out_dir: str | os.PathLike) -> dict:
    """Load, validate and write a dataset in canonical form under ``out_dir``; return its statistics."""
    dataset = load_dataset(cfg)
    stats = write_dataset(dataset, out_dir)
    log.info("prepared %d documents; queries per split: %s", stats["num_docs"],
             {s: v["num_queries"] for s, v in stats["splits"].items()})
    return stats


__all__ = ["ADAPTERS", "Dataset", "check_split_files", "dataset_paths", "dataset_splits", "dataset_input_files",
           "load_dataset", "prepare_dataset", "read_split"]
