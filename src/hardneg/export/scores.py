"""Teacher scores of the exported training groups: each positive's and each hard negative's score under the
``miner`` (the dense run whose ranking the list was selected from) or the ``cross-encoder`` that scored the run's
candidate pool, for distillation losses (sentence-transformers' MarginMSE and KL-divergence losses read them as
``mine_hard_negatives(..., output_scores=True)`` writes them).

They are read from the files the run's mining card names (:mod:`hardneg.mining.card`), each checked against the
digest the card records, so the scores are those of the model that selected or denoised the list:

* ``miner``: the negatives' scores of the list itself, the positives' of the miner's positive scores
  (``inputs.positives``, ``results/<miner>/pools/positives_<split>.parquet``); for a run trained on an imported
  list, the teacher scores its file carried (the card's ``positives``, :mod:`hardneg.imports`);
* ``cross-encoder``: the probabilities of relevance in the candidate pool (``inputs.pool``, its ``ce_score``) and of
  the judged positives (``inputs.ce_positives``); only for a run whose pool a cross-encoder scored.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hardneg.errors import DataError, HardnegError
from hardneg.export import SCORE_SOURCES as SOURCES
from hardneg.export.groups import Groups
from hardneg.io import artifacts
from hardneg.mining.card import current_digest


def card_input(card: dict, name: str, results: str | os.PathLike) -> Path:
    """Where the card's input ``name`` is now under ``results`` (the card records paths under the results folder it
    was written in), once its digest matches the card's; HardnegError naming the file otherwise."""
    entry = card["inputs"].get(name)
    if entry is None:
        raise HardnegError(f"run {card['run']}: its mining card records no {name!r} input")
    recorded = Path(entry["path"])
    try:
        path = Path(results) / recorded.relative_to(card["results"])
    except ValueError:
        path = recorded
    now = current_digest(entry, path)
    if now is None or now["sha256"] != entry["sha256"]:
        raise HardnegError(
            f"{path} ({name}) is {'missing' if now is None else 'not the file'} the run's mining "
            f"card records: its scores would not be those the list was made with"
        )
    return path


def _lookup(table: pa.Table, column: str, qids: pa.Array, docids: pa.Array, path: Path, what: str) -> np.ndarray:
    """``table[column]`` of each (qid, docid) pair, float32; a DataError naming ``path`` for a pair it lacks."""
    keys = pc.binary_join_element_wise(table["qid"], table["docid"], "\x1f")
    wanted = pc.binary_join_element_wise(qids, docids, "\x1f")
    at = pc.index_in(wanted, value_set=keys.combine_chunks())
    if at.null_count:
        first = int(np.flatnonzero(at.is_null().to_numpy(zero_copy_only=False))[0])
        raise DataError(
            path,
            None,
            f"{at.null_count} {what} have no score here, e.g. query {qids[first].as_py()!r}, "
            f"document {docids[first].as_py()!r}",
        )
    values = table[column].combine_chunks().take(at)
    if values.null_count:
        raise DataError(path, None, f"{values.null_count} {what} have a null {column}")
    return values.to_numpy(zero_copy_only=False).astype(np.float32)


def group_scores(
    groups: Groups, card: dict | None, results: str | os.PathLike, source: str, hardnegs: pa.Table | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """The ``source`` scores (float32) of the groups' positives and negatives, in the order of ``groups.pos_doc``
    and ``groups.neg_doc``.

    :param card: the run's mining card (:func:`hardneg.export.card.run_card`); None: a HardnegError (the scores
        are found through it).
    :param results: the results folder the run is in.
    :param source: ``miner`` or ``cross-encoder`` (see the module docstring).
    :raises HardnegError: an unknown source, no card, a pool no cross-encoder scored, a score file that changed.
    :raises DataError: a pair without a score in its file.
    """
    if source not in SOURCES:
        raise HardnegError(f"--scores must be one of {', '.join(SOURCES)}, got {source!r}")
    if card is None:
        raise HardnegError(
            "--scores reads the files of the run's mining card, and the run has none: build "
            "results/<run>/hardnegs_card.json first"
        )
    docids = groups.doc_columns["docid"]
    pos_qids, pos_docids = groups.qids.take(pa.array(groups.pos_query)), docids.take(pa.array(groups.pos_doc))
    if source == "miner":
        path = card_input(card, "positives", results)
        positives = artifacts.read_table(artifacts.POSITIVE_SCORES, path)
        return (
            _lookup(positives, "score", pos_qids, pos_docids, path, "positives"),
            np.asarray(groups.neg_score, np.float32),
        )
    if "pool" not in card:  # an imported list's card (hardneg.imports.card): its scores came with the file
        raise HardnegError(
            f"run {card['run']} trains on an imported list, whose teacher scores are those its file "
            f"carried: export them with --scores miner"
        )
    if not card["pool"].get("cross_encoder"):
        raise HardnegError(
            f"run {card['run']}: no cross-encoder scored its pool ({card['pool']['name']}): name one "
            f"as the run's cross_encoder input, or export --scores miner"
        )
    pool_path, positives_path = card_input(card, "pool", results), card_input(card, "ce_positives", results)
    pool = artifacts.read_table(artifacts.CANDIDATES, pool_path)
    positives = artifacts.read_table(artifacts.POSITIVE_SCORES, positives_path)
    neg_qids, neg_docids = groups.qids.take(pa.array(groups.neg_query)), docids.take(pa.array(groups.neg_doc))
    return (
        _lookup(positives, "score", pos_qids, pos_docids, positives_path, "positives"),
        _lookup(pool, "ce_score", neg_qids, neg_docids, pool_path, "hard negatives"),
    )


__all__ = ["SOURCES", "card_input", "group_scores"]
