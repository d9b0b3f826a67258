"""The dataset adapters, by the name a config entry gives under ``adapter``; each declares an :class:`Adapter` in
its own module (:mod:`.synthetic`, :mod:`.beir`, :mod:`.msmarco`, :mod:`.trec`, :mod:`.irds`)."""

from __future__ import annotations

from hardneg.datasets import beir, irds, msmarco, synthetic, trec
from hardneg.datasets.adapter_declaration import Adapter
from hardneg.datasets.canonical import Dataset
from hardneg.datasets.hidden import check_hidden, hide_positives
from hardneg.datasets.splits import check_held_out, check_query_and_qrels_files, held_out_split, hold_out
from hardneg.schema.validation import validate_dataset

ADAPTERS: dict[str, Adapter] = {
    adapter.name: adapter
    for adapter in (synthetic.ADAPTER, beir.ADAPTER, msmarco.PASSAGE, msmarco.DOCUMENT, trec.ADAPTER, irds.ADAPTER)
}


def adapter_of(cfg: dict) -> Adapter:
    """The adapter of a dataset's config entry (the schema admits only the names of :data:`ADAPTERS`)."""
    return ADAPTERS[cfg["adapter"]]


def check_dataset(cfg: dict, where: str) -> None:
    """The adapter's own checks of a validated dataset entry (``Adapter.check``: what the schema cannot say), that
    a ``dev_from_train`` entry has a ``train`` split and no ``dev`` split, and that a ``hide_positives`` entry names
    one of its splits. Errors name ``<where>.<key>``."""
    check = adapter_of(cfg).check
    if check is not None:
        check(cfg, where)
    check_held_out(cfg, adapter_of(cfg).splits(cfg), where)
    check_hidden(cfg, dataset_splits(cfg), where)


def dataset_splits(cfg: dict) -> list[str]:
    """The split names a dataset config declares, in order: its adapter's, then the split it holds out of its
    training split (``dev_from_train``), if any."""
    held_out = held_out_split(cfg)
    return adapter_of(cfg).splits(cfg) + ([held_out] if held_out else [])


def check_split_files(cfg: dict, where: str = "dataset") -> None:
    """Check that every split of a file-based adapter names both its query file and its qrels file (see
    :func:`hardneg.datasets.splits.check_query_and_qrels_files`); other adapters pass."""
    adapter = ADAPTERS.get(cfg.get("adapter", ""))
    if adapter is not None and adapter.query_files is not None:
        check_query_and_qrels_files(cfg, adapter.query_files, where)


def dataset_input_files(cfg: dict) -> list[str]:
    """The raw files a dataset is prepared from, so that editing one re-prepares the dataset."""
    return adapter_of(cfg).input_files(cfg)


def load_dataset(cfg: dict) -> Dataset:
    """Load a dataset described by a config entry (see the schema's ``$defs/dataset``); keys it leaves out get
    the schema's defaults, and a wrong one (or a split without its qrels file, see :func:`check_split_files`)
    raises ``ConfigError`` naming ``dataset.<key>``. With ``dev_from_train``, the ``dev`` split is held out of
    the ``train`` split (:func:`hardneg.datasets.splits.hold_out`); then, with ``hide_positives``, a share of the
    positives of its split leave that split's qrels (:func:`hardneg.datasets.hidden.hide_positives`)."""
    cfg = validate_dataset(cfg)
    check_split_files(cfg)
    check_held_out(cfg, adapter_of(cfg).splits(cfg))
    check_hidden(cfg, dataset_splits(cfg))
    return hide_positives(hold_out(adapter_of(cfg).load(cfg), cfg), cfg)
