"""``hardneg import``: a file of hard negatives mined elsewhere, written as a hard-negative list of a dataset.

The output is a folder, laid out as a mining run's folder holds its list:

* ``hardnegs.parquet``: the list (HARDNEGS: ``qid``, ``docid``, ``rank``, ``score``), each query's negatives in
  the file's order; ``score`` is the teacher's score the file carries (sentence-transformers' ``scores``,
  Tevatron's passage ``score``, FlagEmbedding's ``neg_scores``, the ``score`` of hardneg's own exports), null
  where it carries none;
* ``positives.parquet``: the positives the file names (POSITIVE_SCORES: ``qid``, ``docid``, ``relevance``: the
  file's grade, else the dataset's, else 1; ``score``: the teacher's, null where the file has none);
* ``hardnegs_card.json``: its card (:mod:`hardneg.imports.card`).

The audit and the viewer read the two tables as they read a mined list and its miner's positive scores (margins
are then in the teacher's units), ``hardneg verify`` checks the card's digests, and a run's ``inputs.negatives:
{imported: <folder>}`` trains on the list (:mod:`hardneg.pipeline.mining_plan`).
"""

from __future__ import annotations

import itertools
import logging
import os
from pathlib import Path

from hardneg.errors import HardnegError
from hardneg.imports import (
    CARD,
    FORMATS,
    LIST,
    POSITIVES,
    TITLE_SEPARATOR,
    flagembedding,
    own,
    sentence_transformers,
    tevatron,
)
from hardneg.imports.card import build_import_card
from hardneg.imports.matching import match
from hardneg.imports.sources import read_rows
from hardneg.io import artifacts
from hardneg.io.atomic import atomic_dir
from hardneg.io.layout import Layout
from hardneg.mining.card import card_text
from hardneg.results.output_paths import check_output

log = logging.getLogger(__name__)

READERS = {
    "sentence-transformers": sentence_transformers,
    "tevatron": tevatron,
    "flagembedding": flagembedding,
    "hf-dataset": own,
    "jsonl": own,
}


def is_import_folder(path: Path) -> bool:
    """Whether ``path`` is the folder of an imported list (what ``--force`` may replace)."""
    return (path / CARD).is_file() and (path / LIST).is_file()


def _dataset_files(layout: Layout, dataset: str, split: str) -> dict[str, str]:
    files = {
        "corpus": layout.corpus(dataset),
        "queries": layout.queries(dataset, split),
        "qrels": layout.qrels(dataset, split),
    }
    if not Path(layout.dataset_dir(dataset)).is_dir():
        known = sorted(p.parent.name for p in Path(layout.root, "datasets").glob("*/corpus.parquet"))
        raise HardnegError(
            f"dataset {dataset!r} is not prepared under {layout.root}: "
            f"{layout.dataset_dir(dataset)} does not exist"
            + (f" (prepared: {', '.join(known)})" if known else "; prepare it with snakemake first")
        )
    for name, path in files.items():
        if not Path(path).is_file():
            splits = sorted(p.stem for p in Path(layout.queries_dir(dataset)).glob("*.parquet"))
            raise HardnegError(
                f"dataset {dataset!r} has no {name} file {path}"
                + (f": it has no split {split!r} (its splits: {', '.join(splits)})" if name != "corpus" else "")
            )
    return files


def import_hardnegs(
    source: str | os.PathLike,
    fmt: str,
    output: str | os.PathLike,
    *,
    dataset: str,
    split: str = "train",
    results: str | os.PathLike = "results",
    title_separator: str | None = None,
    force: bool = False,
) -> dict:
    """Import the hard negatives of ``source`` as a list of ``dataset``'s ``split`` (see the module docstring).

    :param source: a JSON Lines file, a Parquet file (``*.parquet``) or a ``datasets`` folder.
    :param fmt: its format: ``sentence-transformers`` (triplet, n-tuple, labeled-pair or labeled-list, told from
        its columns), ``tevatron`` (v1 or v2, told from its keys), ``flagembedding``, or hardneg's own
        ``hf-dataset`` or ``jsonl`` export.
    :param output: the folder to write.
    :param dataset: the prepared dataset (``<results>/datasets/<dataset>``) whose ids the list uses.
    :param split: the split whose queries the file's queries are.
    :param results: the results folder holding the dataset.
    :param title_separator: what joins a document's title and text in a text-only format, besides a space
        (default :data:`hardneg.imports.TITLE_SEPARATOR`).
    :param force: replace an existing ``output`` (an earlier import, or an empty folder), or write inside
        ``results``.
    :returns: ``output``, ``format``, ``shape``, ``dataset``, ``split`` and the mapping counts
        (:func:`hardneg.imports.matching.match`).
    :raises HardnegError: an unknown format, an output that may not be written, a dataset or split not prepared,
        a row that fits no shape of the format, or queries and documents the dataset does not have (one error
        counting them all, :class:`hardneg.imports.matching.UnmatchedError`); nothing is written then.
    """
    if fmt not in FORMATS:
        raise HardnegError(f"--format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    output = check_output(
        output, folder=True, what="imported list", results=results, force=force, previous=is_import_folder
    )
    separator = TITLE_SEPARATOR if title_separator is None else title_separator
    layout = Layout(str(results))
    files = _dataset_files(layout, dataset, split)
    reader = READERS[fmt]
    rows = read_rows(source)
    first = next(rows, None)
    if first is None:
        raise HardnegError(f"{source}: no rows to import")
    shape = reader.shape(*first)
    matched = match(
        reader.examples(itertools.chain([first], rows), shape),
        corpus=files["corpus"],
        queries=artifacts.read_table(artifacts.QUERIES, files["queries"]),
        qrels=artifacts.read_table(artifacts.QRELS, files["qrels"]),
        source=str(source),
        dataset=dataset,
        split=split,
        separator=separator,
    )
    with atomic_dir(output) as tmp:
        artifacts.write_table(matched.hardnegs, artifacts.HARDNEGS, tmp / LIST)
        artifacts.write_table(matched.positives, artifacts.POSITIVE_SCORES, tmp / POSITIVES)
        card = build_import_card(
            source=source,
            fmt=fmt,
            shape=shape,
            separator=separator,
            counts=matched.counts,
            dataset=dataset,
            split=split,
            inputs={**files, "positives": tmp / POSITIVES},
            hardnegs=tmp / LIST,
            results=layout.root,
            recorded={"list": str(output / LIST), "positives": str(output / POSITIVES)},
        )
        (tmp / CARD).write_text(card_text(card), encoding="utf-8")
    log.info(
        "imported %s (%s, %s): %d negatives of %d queries",
        source,
        fmt,
        shape,
        matched.counts["negatives"],
        matched.counts["queries"],
    )
    return {"output": str(output), "format": fmt, "shape": shape, "dataset": dataset, "split": split, **matched.counts}
