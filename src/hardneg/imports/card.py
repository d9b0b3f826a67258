"""The card of an imported hard-negative list (``hardnegs_card.json`` in the list's folder, and in the folder of a
run trained on it), and the digest check ``hardneg verify`` makes of it.

A mining card (:mod:`hardneg.mining.card`) says how to mine a list again; an imported list was mined elsewhere, so
its card says where it came from instead: ``import`` holds the ``source`` (its path as given and its SHA-256; for a
``datasets`` folder, each file's and the listing's), its ``format`` and ``shape`` (e.g. ``sentence-transformers`` /
``triplet``, ``tevatron`` / ``v2``), the ``title_separator`` documents were matched with, and ``mapping``: the
counts of :func:`hardneg.imports.matching.match`. As in a mining card, ``inputs`` records the dataset's
``corpus``, ``queries`` and ``qrels`` files the ids were mapped against and the list's ``positives`` (their grades
and teacher scores), and ``list`` the hard-negative list itself (path, rows, queries, SHA-256).

Verifying an imported list mines nothing: it checks that the source still hashes to the recorded digest, and the
dataset's files and the list's files too (:func:`verify_import`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from hardneg.imports import LIST, POSITIVES
from hardneg.mining.card import (
    CARD_VERSION,
    check_inputs,
    check_list,
    current_digest,
    digest_entry,
    list_record,
    package_versions,
)
from hardneg.mining.verify import checked_lines, input_paths, verdict_lines

KIND = "import"  # the card's ``kind``: an imported list (a mining card has none)


def is_import_card(card: Mapping) -> bool:
    """Whether ``card`` is the card of an imported list (else it is a mining card)."""
    return card.get("kind") == KIND


def build_import_card(
    *,
    source: str | os.PathLike,
    fmt: str,
    shape: str,
    separator: str,
    counts: Mapping,
    dataset: str,
    split: str,
    inputs: Mapping[str, str | os.PathLike],
    hardnegs: str | os.PathLike,
    recorded: Mapping[str, str] | None = None,
    results: str = "results",
    run: str | None = None,
) -> dict:
    """The card of an imported list (see the module docstring).

    :param source: the imported file or folder, as given.
    :param fmt: its format (``hardneg import --format``); ``shape``: the shape read from it.
    :param separator: the title separator documents were matched with.
    :param counts: the mapping counts.
    :param dataset: the dataset's name; ``split``: the split whose queries the list is of.
    :param inputs: name → path of the dataset files (``corpus``, ``queries``, ``qrels``) and ``positives``.
    :param hardnegs: the HARDNEGS Parquet file of the list.
    :param recorded: name → the path to record instead of the one read (the list's folder is written under a
        temporary name, then renamed): ``list`` and input names.
    :param results: the results folder the dataset's paths start with (``hardneg verify`` maps them to another).
    :param run: the run trained on the list, for its copy in the run's folder; None for the list's own folder.
    """
    recorded = recorded or {}
    entries = {name: {**digest_entry(path), "path": str(recorded.get(name, path))} for name, path in inputs.items()}
    return {
        "card_version": CARD_VERSION,
        "kind": KIND,
        "run": run,
        "dataset": dataset,
        "split": split,
        "results": str(results),
        "inputs": dict(sorted(entries.items())),
        "import": {
            "source": digest_entry(source),
            "format": fmt,
            "shape": shape,
            "title_separator": separator,
            "mapping": dict(counts),
        },
        "list": {**list_record(hardnegs), "path": str(recorded.get("list", hardnegs))},
        "versions": package_versions(),
    }


def _change(name: str, path, recorded: str, current: str | None) -> str:
    if current is None:
        return f"{name} {path} is missing (it had sha256 {recorded[:12]}… when the list was imported)"
    return f"{name} {path} changed since the list was imported (sha256 {recorded[:12]}… → {current[:12]}…)"


def verify_import(
    card: Mapping, *, results: str | os.PathLike = "results", folder: str | os.PathLike | None = None
) -> dict:
    """Check an imported list against its card: the source, the dataset's files and the list's own files each
    still hash to the digest the card records. Nothing is mined.

    :param card: the card (:func:`hardneg.mining.card.read_card` reads it).
    :param results: the results folder now holding the dataset (the card's recorded paths are moved there).
    :param folder: the list's folder, where its files are looked for; None: where the card records them.
    :returns: the report: ``run``, ``list`` (path, rows, queries), ``source`` (path), ``inputs_checked``,
        ``changed`` (one line per changed or missing file), ``remined`` (False), ``notes`` and ``reproduced``
        (nothing changed).
    """
    paths = input_paths(card, results)
    if folder is not None:
        paths.update(list=Path(folder) / LIST, positives=Path(folder) / POSITIVES)
    source = card["import"]["source"]
    now = current_digest(source)
    changed = (
        []
        if now is not None and now["sha256"] == source["sha256"]
        else [_change("source", source["path"], source["sha256"], None if now is None else now["sha256"])]
    )
    changed += [_change(c.name, c.path, c.recorded, c.current) for c in check_inputs(card, paths)]
    listed = check_list(card, paths["list"])
    if listed is not None:
        changed.append(_change("hard-negative list", listed.path, listed.recorded, listed.current))
    return {
        "run": card.get("run"),
        "list": {**card["list"], "path": str(paths["list"])},
        "source": source["path"],
        "inputs_checked": len(card["inputs"]) + 1,
        "changed": changed,
        "remined": False,
        "notes": ["an imported list: its files are checked against their digests, nothing is mined again"],
        "reproduced": not changed,
    }


def format_import_report(report: Mapping, card: Mapping) -> str:
    """The report of :func:`verify_import` as a few lines of text for a person."""
    listed, imported = report["list"], card["import"]
    owner = f"run {report['run']}: " if report.get("run") else ""
    lines = [
        f"{owner}hard negatives {listed['path']} ({listed['rows']} rows, {listed.get('queries', '?')} queries), "
        f"imported from {report['source']} ({imported['format']}, {imported['shape']}) for split "
        f"{card['split']} of {card['dataset']}"
    ]
    lines += checked_lines(report, "files", "the source, the dataset's and the list's")
    return "\n".join(lines + verdict_lines(report))
