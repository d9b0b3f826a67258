"""A dataset prepared: loaded by its adapter, validated and written in canonical form."""

from __future__ import annotations

import logging
import os

from hardneg.datasets.adapters import load_dataset
from hardneg.datasets.canonical import write_dataset

log = logging.getLogger(__name__)


def prepare_dataset(cfg: dict, out_dir: str | os.PathLike) -> dict:
    """Load a dataset with its adapter, validate it and write it in canonical form under ``out_dir``.

    This is what the workflow's ``prepare_dataset`` job does; the folder written is described under
    ``write_dataset``.

    :param cfg: one dataset's configuration, an entry of the config's ``datasets`` (``adapter`` and that
        adapter's keys); keys it leaves out get the schema's defaults.
    :param out_dir: the dataset folder to write, e.g. ``results/datasets/<dataset>``.
    :returns: the dataset's statistics, as written to ``stats.json`` (see ``write_dataset``).
    :raises ConfigError: a configuration entry the schema or the adapter rejects, naming ``dataset.<key>``.
    :raises DataError: a source file that is missing or malformed, or a dataset that fails validation; the
        error names the file and, where known, the line.
    :raises HardnegError: an ``ir_datasets`` entry that the package cannot serve (not installed, unknown id,
        files it cannot fetch).
    """
    dataset = load_dataset(cfg)
    stats = write_dataset(dataset, out_dir)
    log.info(
        "prepared %d documents; queries per split: %s",
        stats["num_docs"],
        {s: v["num_queries"] for s, v in stats["splits"].items()},
    )
    return stats
