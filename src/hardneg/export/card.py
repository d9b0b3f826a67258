"""The card an export of hard negatives carries: the run's mining card (:mod:`hardneg.mining.card`) with the
export's own record added (``export``: format, rows, queries and the SHA-256 of what was written), so that whoever
receives the export can tell how its negatives were mined and that the files are those hardneg wrote.

Where it lies: inside a folder export (``sentence-transformers``, ``hf-dataset``) as :data:`CARD_NAME`; beside a
file export (``tevatron``, ``jsonl``) as ``<file name>`` + :data:`CARD_SUFFIX` (``hardnegs.jsonl`` →
``hardnegs.jsonl.hardneg_card.json``), so that two exports written to one folder keep a card each.
:func:`read_export` reads an export's card back and checks every digest.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

from hardneg.errors import HardnegError
from hardneg.io.atomic import write_text
from hardneg.mining.card import CARD_VERSION, card_text, check_list, file_sha256, listing_sha256, read_card
from hardneg.results.run_files import RunFiles

log = logging.getLogger(__name__)

CARD_NAME = "hardneg_card.json"  # the card of a folder export, inside it
CARD_SUFFIX = ".hardneg_card.json"  # the card of a file export: its name + this, beside it


def card_path(output: str | os.PathLike) -> Path:
    """Where the card of the export ``output`` lies: inside it when it is a folder, else beside it."""
    output = Path(output)
    return output / CARD_NAME if output.is_dir() else output.with_name(output.name + CARD_SUFFIX)


def run_card(files: RunFiles) -> dict | None:
    """The mining card of a run's hard-negative list (``<results>/<run>/hardnegs_card.json``); None, with a
    logged warning, when the run has none (a list mined before cards were written).

    :raises HardnegError: the card is not a mining card, or it describes another list than the run's
        ``hardnegs.parquet`` (the list changed since; the error names both files).
    """
    path = Path(files.layout.hardnegs_card(files.run))
    if not path.exists():
        log.warning(
            "run %s has no mining card (%s): the export's card records the export only; build it with snakemake %s",
            files.run,
            path,
            path,
        )
        return None
    card = read_card(path)
    changed = check_list(card, files.hard_negatives())
    if changed is not None:
        raise HardnegError(
            f"{path} does not describe the run's list: {changed}; build the card again with snakemake {path}"
        )
    return card


def _folder_files(folder: Path) -> dict[str, str]:
    """name (relative, with ``/``) → SHA-256 of every file of an export folder but its card."""
    files = {path.relative_to(folder).as_posix(): path for path in sorted(folder.rglob("*")) if path.is_file()}
    return {name: file_sha256(path) for name, path in files.items() if name != CARD_NAME}


def export_card(card: dict | None, run: str, written: str | os.PathLike, record: dict) -> dict:
    """The card of an export: the run's mining card (or, without one, the run's name only) with ``export``: the
    ``record`` given (format, rows, queries, ...) and the digest of what ``written`` holds now: for a file,
    ``sha256``; for a folder, ``files`` (each file's SHA-256, the card left out) and ``sha256`` (their listing's,
    :func:`hardneg.mining.card.listing_sha256`).

    :param card: the run's mining card, or None.
    :param run: the run's name.
    :param written: the export as written (for a folder, possibly its temporary folder, before it is renamed).
    :param record: what the export says of itself; ``name`` is set to the export's name.
    """
    written = Path(written)
    export = dict(record)
    if written.is_dir():
        files = _folder_files(written)
        export.update(files=files, sha256=listing_sha256(files))
    else:
        export.update(sha256=file_sha256(written))
    base = dict(card) if card is not None else {"card_version": CARD_VERSION, "run": run}
    return {**base, "export": export}


def write_export_card(
    card: dict | None, run: str, output: str | os.PathLike, record: dict, written: str | os.PathLike | None = None
) -> Path:
    """Write the card of an export (:func:`export_card`) where :func:`card_path` puts it, atomically.

    :param output: the export's path (its final one: a file export's card is written beside it).
    :param written: where the export is now, when that differs (a folder export's temporary folder: the card goes
        inside it, and takes ``output``'s place with it).
    :returns: the card's path.
    """
    written = Path(output if written is None else written)
    if written.is_dir():
        target, final = written / CARD_NAME, Path(output) / CARD_NAME
    else:
        target = final = card_path(output)
    write_text(target, card_text(export_card(card, run, written, record)))
    return final


def read_export(path: str | os.PathLike) -> dict:
    """The card of a hard-negative export, once every digest it records matches the files (see the module
    docstring).

    :param path: the export: a folder (``sentence-transformers``, ``hf-dataset``) or a file (``tevatron``,
        ``jsonl``).
    :returns: the card: the run's mining card (when it had one) and ``export`` (format, rows, queries, digests).
    :raises HardnegError: the export or its card is missing, the card is not an export's card, or a file of the
        export differs from its card, is missing, or is not in the card; the error names the file.
    """
    path = Path(path)
    if not path.exists():
        raise HardnegError(f"{path}: no such export")
    where = card_path(path)
    try:
        card = json.loads(where.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise HardnegError(
            f"{path}: the export has no card ({where} is missing), so its files cannot be checked"
        ) from None
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise HardnegError(f"{where}: not an export's card, the file is not JSON ({error})") from None
    export = card.get("export") if isinstance(card, dict) else None
    if not isinstance(export, dict) or not isinstance(export.get("sha256"), str):
        raise HardnegError(f"{where}: not an export's card (it has no export record with a sha256)")
    if path.is_dir():
        recorded, now = export.get("files") or {}, _folder_files(path)
        for name in sorted(set(recorded) | set(now)):
            if name not in now:
                raise HardnegError(f"{path / name}: missing from the export (its card {where} lists it)")
            if name not in recorded:
                raise HardnegError(
                    f"{path / name}: not in the export's card {where}: the folder was changed after it was exported"
                )
            if now[name] != recorded[name]:
                raise HardnegError(
                    f"{path / name}: its digest does not match the export's card {where} (sha256 "
                    f"{recorded[name][:12]}… recorded, {now[name][:12]}… now): the file was changed "
                    "after it was exported"
                )
    else:
        digest = file_sha256(path)
        if digest != export["sha256"]:
            raise HardnegError(
                f"{path}: its digest does not match the export's card {where} (sha256 "
                f"{export['sha256'][:12]}… recorded, {digest[:12]}… now): the file was changed after it "
                "was exported"
            )
    return card
