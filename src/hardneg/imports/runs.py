"""A run's copy of the imported list it trains on (rule ``import_hard_negatives``): the list, its positives and its
card, in the run's folder under the names a mining run gives its own (``hardnegs.parquet``,
``hardnegs_card.json``; the positives as ``hardnegs_positives.parquet``), so that training, the audit and
``hardneg verify <run>`` read it as they read a mined list."""

from __future__ import annotations

import json
import logging
import os
import shutil

from hardneg.errors import DataError, HardnegError
from hardneg.imports.card import is_import_card
from hardneg.io.atomic import atomic_path, write_text
from hardneg.mining.card import card_text, check_list, current_digest, list_record, read_card
from hardneg.mining.verify import input_paths

log = logging.getLogger(__name__)


def _copy(source: str | os.PathLike, target: str | os.PathLike) -> None:
    with atomic_path(target) as tmp:
        shutil.copyfile(source, tmp)


def take_imported_list(
    *,
    hardnegs: str | os.PathLike,
    positives: str | os.PathLike,
    card: str | os.PathLike,
    run: str,
    dataset: str,
    split: str,
    out_hardnegs: str | os.PathLike,
    out_positives: str | os.PathLike,
    out_card: str | os.PathLike,
    results: str | os.PathLike = "results",
) -> dict:
    """Copy an imported list into run ``run``'s folder, once its card shows it is the list of the run's dataset and
    training split and its files are those the card records.

    :param hardnegs: the imported list (``<folder>/hardnegs.parquet``); ``positives``: its positives; ``card``: its
        card.
    :param run: the run trained on it; ``dataset``, ``split``: the run's dataset and training split.
    :param out_hardnegs: where the run's copy of the list goes (``results/<run>/hardnegs.parquet``);
        ``out_positives``: of its positives; ``out_card``: the run's card, the import's with ``run`` and the
        copies' paths.
    :param results: the results folder the run's files are in, as the output paths spell it: the run's card
        records it, and the dataset's files under it (the import's card records them under the folder the list
        was imported against, spelled as that command was given it, e.g. an absolute path), so that ``hardneg
        verify <run> --results <folder>`` finds every file of the card under one folder.
    :returns: the run's card.
    :raises HardnegError: the card is not an import card, is of another dataset or split, or the list or its
        positives changed since they were imported (each naming the file).
    """
    imported = read_card(card)
    if not is_import_card(imported):
        raise HardnegError(
            f"{card}: not the card of an imported list (hardneg import writes one); run {run} names "
            "its folder as an imported list"
        )
    for key, wanted in (("dataset", dataset), ("split", split)):
        if imported[key] != wanted:
            raise DataError(
                card,
                None,
                f"the list was imported for {key} {imported[key]!r}, run {run} trains on "
                f"{key} {wanted!r}: import it again with --{key} {wanted}",
            )
    changed = check_list(imported, hardnegs)
    entry = imported["inputs"]["positives"]
    now = current_digest(entry, positives)
    if changed is not None or now is None or now["sha256"] != entry["sha256"]:
        what = hardnegs if changed is not None else positives
        raise DataError(
            what,
            None,
            f"not the file its card {card} records (changed or missing since it was imported): import the list again",
        )
    _copy(hardnegs, out_hardnegs)
    _copy(positives, out_positives)
    moved = input_paths(imported, results)  # the dataset's files, as the run's results folder holds them
    inputs = {name: {**recorded, "path": str(moved[name])} for name, recorded in imported["inputs"].items()}
    inputs["positives"] = {**entry, "path": str(out_positives)}
    copied = {
        **imported,
        "run": run,
        "results": str(results),
        "inputs": inputs,
        "list": {**list_record(out_hardnegs), "path": str(out_hardnegs)},
    }
    write_text(out_card, card_text(copied))
    log.info("run %s: the imported list %s (%d rows) copied to %s", run, hardnegs, copied["list"]["rows"], out_hardnegs)
    return json.loads(card_text(copied))
