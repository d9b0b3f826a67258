"""A dataset prepared: loaded by its adapter, validated and written in canonical form."""

from __future__ import annotations

import logging
import os

from hardneg.datasets.adapters import load_dataset
from hardneg.datasets.canonical import write_dataset

log = logging.getLogger(__name__)


def prepare_dataset(cfg: dict, out_dir: str | os.PathLike) -> dict:
    """Load, validate and write a dataset in canonical form under ``out_dir``; return its statistics."""
    dataset = load_dataset(cfg)
    stats = write_dataset(dataset, out_dir)
    log.info("prepared %d documents; queries per split: %s", stats["num_docs"],
             {s: v["num_queries"] for s, v in stats["splits"].items()})
    return stats
