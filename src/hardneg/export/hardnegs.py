"""A run's hard negatives as training data for other toolkits (``hardneg export hardnegs``).

The training groups are those of :mod:`hardneg.export.groups`: training queries with at least one relevant
document and one hard negative, in the order of the split's queries, positives in qrels order with their grades
there (the qrels' relevance, 1 or more), negatives in rank order (``--negatives N`` keeps the first N,
``--negatives all`` every one). Four formats:

``sentence-transformers``
    Exactly what ``sentence_transformers.util.mine_hard_negatives`` returns for a dataset of (``query``,
    ``positive``) pairs listing each query's positives in that order, with the hard negatives as the mined ones,
    saved with ``Dataset.save_to_disk``: open it with ``datasets.load_from_disk(PATH)``. Its ``output_format``
    (``--st-format``, default ``triplet`` as there):

    * ``triplet``: columns ``query``, ``positive``, ``negative``; one row per (query, positive, negative), by
      query, then positive, then negative in rank order;
    * ``n-tuple``: ``query``, ``positive``, ``negative_1`` … ``negative_N``; one row per (query, positive), N the
      ``--negatives`` given, else the most negatives a query has; as there, queries with fewer than N negatives
      have no row;
    * ``labeled-pair``: ``query``, ``positive`` (any document, as there), ``label`` (int64: 1 relevant, 0
      negative, whatever the positive's grade: the label is the target probability of sentence-transformers'
      ``BinaryCrossEntropyLoss``); per query its positives, then its negatives;
    * ``labeled-list``: ``query``, ``positive`` (list: the positive, then the negatives), ``labels`` (list of
      int64: the positive's grade, then 0s, the graded relevance its listwise losses, e.g. ``LambdaLoss``, read;
      1, then 0s, as ``mine_hard_negatives`` writes them, where every grade is 1); one row per (query, positive).

    With ``--scores miner`` or ``--scores cross-encoder`` (:mod:`hardneg.export.scores`) the teacher scores are
    written as ``mine_hard_negatives(..., output_scores=True)`` writes them: a list ``scores`` ([positive,
    negative] of a triplet, [positive, negative_1 … negative_N] of an n-tuple: MarginMSE and KL-divergence
    distillation), ``score`` instead of a labeled pair's ``label``, ``scores`` instead of a labeled list's
    ``labels``.

    Texts are strings: a document is its title and text joined as hardneg's encoder reads them
    (:mod:`hardneg.export.texts`; ``--title-separator`` sets the separator).

    Each query keeps its first :data:`ST_NEGATIVES` negatives unless ``--negatives`` says otherwise (3, as
    ``mine_hard_negatives``' ``num_negatives``): a triplet is a row per (positive, negative) pair, so every
    negative of a deep list makes a large dataset (``--negatives all`` asks for it). Before writing, the size is
    estimated (:func:`hardneg.export.st_rows.st_size`: rows, and bytes of text).

``tevatron``
    Tevatron's training JSON Lines (the inline format of Tevatron v1, which Tevatron v2's ``TrainDataset`` still
    reads, recognising it by ``positive_passages``), one line per query::

        {"query_id": str, "query": str,
         "positive_passages": [{"docid": str, "title": str, "text": str, "relevance": int}, ...],
         "negative_passages": [{"docid": str, "title": str, "text": str}, ...]}

    negatives in rank order; a missing title is "" (Tevatron joins ``title + " " + text`` itself). A positive's
    ``relevance`` is its grade: Tevatron has no field for grades (v2's own rows list ``positive_document_ids``
    only), but reads a passage's ``title`` and ``text`` (and, to distil, ``score``) and passes over its other
    keys, so the grade travels with the passage. With ``--scores``, every passage also has its teacher ``score``.

``hf-dataset``
    A Hugging Face dataset (``Dataset.save_to_disk``; open it with ``datasets.load_from_disk(PATH)``), one row per
    query: ``qid`` (string), ``query`` (string), ``positives`` (list of {docid, title, text, relevance (int32: the
    grade)}), ``negatives`` (list of {docid, title, text, rank (int32), score (float32)}, in rank order).

``jsonl``
    One JSON object per query, the fields of ``hf-dataset``: ``{"qid", "query", "positives": [{"docid", "title",
    "text", "relevance"}], "negatives": [{"docid", "title", "text", "rank", "score"}]}``; scores are written with
    the shortest decimal that reads back as the same float32.

Grades: the positives' grades are kept by every format with room for them: ``hf-dataset``, ``jsonl`` and
``tevatron`` (a positive's ``relevance``) and sentence-transformers' ``labeled-list`` (its ``labels``, unless
``--scores`` puts the teacher's scores there). A triplet or an n-tuple has no field for them, and a labeled pair's
label stays 1 or 0.

Every export carries a card (:mod:`hardneg.export.card`): the run's mining card with the export's format, rows,
queries and the SHA-256 of what was written, inside a folder export (``hardneg_card.json``) or beside a file
export (``<file>.hardneg_card.json``); :func:`hardneg.export.read_export` checks an export against it.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from functools import partial

import numpy as np
import pyarrow as pa

from hardneg.errors import HardnegError
from hardneg.export import FORMATS
from hardneg.export.card import run_card, write_export_card
from hardneg.export.groups import Groups, load_groups
from hardneg.export.outputs import is_saved_dataset, write_hf_dataset, write_jsonl
from hardneg.export.scores import group_scores
from hardneg.export.st_rows import st_schema, st_size, st_table
from hardneg.export.texts import joined_texts, tokenizer_separator
from hardneg.results.output_paths import check_output
from hardneg.results.run_files import RunFiles

log = logging.getLogger(__name__)

_FOLDER_FORMATS = ("sentence-transformers", "hf-dataset")
ALL = "all"  # ``negatives``: every negative of each query
ST_NEGATIVES = 3  # the sentence-transformers export's negatives per query by default (mine_hard_negatives' own)

_DOCUMENT = [("docid", pa.string()), ("title", pa.string()), ("text", pa.string())]
_GRADED = [("relevance", pa.int32())]  # a positive's grade in the qrels
_RANKED = [("rank", pa.int32()), ("score", pa.float32())]
HF_SCHEMA = pa.schema(
    [
        ("qid", pa.string()),
        ("query", pa.string()),
        ("positives", pa.list_(pa.struct(_DOCUMENT + _GRADED))),
        ("negatives", pa.list_(pa.struct(_DOCUMENT + _RANKED))),
    ]
)


# ---------------------------------------------------------------------------------- one row per query
def group_table(
    groups: Groups,
    lo: int,
    hi: int,
    *,
    ranked: bool = True,
    json_scores: bool = False,
    teacher: tuple[np.ndarray, np.ndarray] | None = None,
) -> pa.Table:
    """Queries ``lo`` to ``hi`` as a table of one row per query: ``qid``, ``query``, ``positives`` and
    ``negatives`` (lists of {docid, title, text}; positives with their ``relevance``, the qrels' grade;
    negatives with ``rank`` and ``score`` when ``ranked``; every document with its ``score`` from ``teacher``, the
    scores of every positive and negative of ``groups``, when given). ``json_scores``: scores as float64 holding
    the shortest decimal of each float32 (what JSON should
    print)."""
    docs = groups.doc_columns

    def scored(values: np.ndarray) -> pa.Array:
        score = pa.array(values, pa.float32())
        return score.cast(pa.string()).cast(pa.float64()) if json_scores else score

    def documents(rows: np.ndarray, offsets: np.ndarray, extra: dict[str, pa.Array]) -> pa.ListArray:
        fields = [docs[name].take(pa.array(rows)) for name, _ in _DOCUMENT] + list(extra.values())
        values = pa.StructArray.from_arrays(fields, names=[name for name, _ in _DOCUMENT] + list(extra))
        return pa.ListArray.from_arrays(pa.array(offsets - offsets[0], pa.int32()), values)

    pos, neg = groups.pos_offsets[lo : hi + 1], groups.neg_offsets[lo : hi + 1]
    pos_extra, neg_extra = {"relevance": pa.array(groups.pos_relevance[pos[0] : pos[-1]], pa.int32())}, {}
    if ranked:
        neg_extra = {
            "rank": pa.array(groups.neg_rank[neg[0] : neg[-1]], pa.int32()),
            "score": scored(groups.neg_score[neg[0] : neg[-1]]),
        }
    if teacher is not None:
        pos_extra["score"] = scored(teacher[0][pos[0] : pos[-1]])
        neg_extra["score"] = scored(teacher[1][neg[0] : neg[-1]])
    return pa.table(
        {
            "qid": groups.qids[lo:hi],
            "query": groups.queries[lo:hi],
            "positives": documents(groups.pos_doc[pos[0] : pos[-1]], pos, pos_extra),
            "negatives": documents(groups.neg_doc[neg[0] : neg[-1]], neg, neg_extra),
        }
    )


def _jsonl_blocks(groups: Groups):
    for lo, hi in groups.blocks():
        yield group_table(groups, lo, hi, json_scores=True).to_pylist()


_TEVATRON_NAMES = ["query_id", "query", "positive_passages", "negative_passages"]


def _tevatron_blocks(groups: Groups, teacher: tuple[np.ndarray, np.ndarray] | None = None):
    for lo, hi in groups.blocks():
        table = group_table(groups, lo, hi, ranked=False, json_scores=True, teacher=teacher)
        yield table.rename_columns(_TEVATRON_NAMES).to_pylist()


# ------------------------------------------------------------------- sentence-transformers: the texts
def document_texts(groups: Groups, files: RunFiles, title_separator: str | None) -> pa.Array:
    """Each document of ``groups`` as one string (:func:`hardneg.export.texts.joined_texts`). The separator is
    ``title_separator``, else that of the run's tokenizer, loaded only when some document has a title."""
    titles = groups.doc_columns["title"].to_pylist()
    texts = groups.doc_columns["text"].to_pylist()
    separator = title_separator
    if separator is None:
        titled = any(title.strip() for title in titles)
        separator = tokenizer_separator(files.tokenizer_source(), files.run) if titled else ""
        if titled:
            log.info(
                "titles and texts joined with %r, as the tokenizer %s pairs them", separator, files.tokenizer_source()
            )
    return pa.array(joined_texts(titles, texts, separator), pa.string())


# -------------------------------------------------------------------------------------------- the command
def export_hardnegs(
    run: str,
    fmt: str,
    output: str | os.PathLike,
    *,
    results: str | os.PathLike = "results",
    negatives: int | str | None = None,
    st_format: str | None = None,
    title_separator: str | None = None,
    force: bool = False,
    scores: str | None = None,
    announce: Callable[[dict], None] | None = None,
) -> dict:
    """Write a run's hard negatives as training data for another toolkit (``hardneg export hardnegs``).

    The training groups are the training queries with at least one relevant document and one hard negative, in
    the order of the split's queries, positives in qrels order, negatives in rank order. The output is written
    atomically; nothing is read or written before ``output`` is checked. Its card (:mod:`hardneg.export.card`:
    the run's mining card, when it has one, with the export's rows and SHA-256) is written inside a folder
    output, before it takes its place, or beside a file output, once it is in place.

    :param run: the name of a run that mined hard negatives (its ``hardnegs.parquet``).
    :param fmt: the format: ``"sentence-transformers"`` (a ``datasets`` folder shaped as
        ``sentence_transformers.util.mine_hard_negatives`` returns it), ``"tevatron"`` (Tevatron's training JSON
        Lines: ``query_id``, ``query``, ``positive_passages``, ``negative_passages``), ``"hf-dataset"`` (a
        ``datasets`` folder, one row per query: ``qid``, ``query``, ``positives``, ``negatives`` with ``rank``
        and ``score``) or ``"jsonl"`` (the same fields as JSON Lines). Open a folder with
        ``datasets.load_from_disk``.
    :param output: the file (``tevatron``, ``jsonl``) or folder (``sentence-transformers``, ``hf-dataset``) to
        write.
    :param results: the results folder holding the run.
    :param negatives: keep the first N negatives of each query (at least 1), or ``"all"``; None: the format's
        default, :data:`ST_NEGATIVES` for sentence-transformers (as ``mine_hard_negatives``), all for the others.
    :param st_format: sentence-transformers' ``output_format``: ``"triplet"`` (the default), ``"n-tuple"``,
        ``"labeled-pair"`` or ``"labeled-list"``; only with ``fmt="sentence-transformers"``.
    :param title_separator: what joins a document's title and text in sentence-transformers' strings; None: the
        pair separator of the run's tokenizer. Only with ``fmt="sentence-transformers"``.
    :param scores: with each positive and negative, its teacher score for distillation: ``"miner"`` (the dense
        run that mined the list) or ``"cross-encoder"`` (the cross-encoder that scored the run's pool), read through
        the run's mining card (:mod:`hardneg.export.scores`). sentence-transformers: as ``mine_hard_negatives(...,
        output_scores=True)`` writes them (what its MarginMSE and KL-divergence losses read); tevatron: a ``score``
        in every passage. None: no scores. Not for hf-dataset and jsonl, whose negatives carry the miner's score.
    :param force: replace an existing ``output`` (for a folder: an earlier export or an empty folder), or write
        inside the ``results`` folder.
    :param announce: for sentence-transformers, called before anything is written with the estimate
        (:func:`hardneg.export.st_rows.st_size`): a dict of ``rows``, ``bytes``, ``negatives`` (per query: a
        number or ``"all"``), ``queries`` and ``st_format``.
    :returns: what was written: ``format``, ``output``, ``queries`` (training groups), ``rows`` (lines or
        dataset rows), ``negatives`` (per query, a number or ``"all"``) and, for sentence-transformers,
        ``st_format``, ``columns`` and ``estimated_bytes``.
    :raises HardnegError: an unknown ``fmt`` or ``st_format``, a sentence-transformers option with another
        format, ``negatives`` below 1 (or a text other than ``"all"``), an ``output`` that may not be written
        (exists without ``force``, lies in
        ``results``, ...), a run without hard negatives, a training split without any group, or a mining card
        (``<results>/<run>/hardnegs_card.json``) that describes another list than the run's.
    :raises DataError: hard negatives naming queries or documents the dataset does not have.
    """
    if fmt not in FORMATS:
        raise HardnegError(f"--format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    if fmt != "sentence-transformers" and (st_format is not None or title_separator is not None):
        raise HardnegError("--st-format and --title-separator apply to --format sentence-transformers only")
    if scores is not None and fmt not in ("sentence-transformers", "tevatron"):
        raise HardnegError(
            f"--scores applies to --format sentence-transformers and tevatron; {fmt}'s negatives carry "
            f"the miner's rank and score already"
        )
    st_format = st_format or "triplet"
    st_schema(st_format, 1)  # an unknown --st-format fails before anything is read
    if negatives is None:
        negatives = ST_NEGATIVES if fmt == "sentence-transformers" else ALL
    if isinstance(negatives, str) and negatives != ALL:
        raise HardnegError(f"--negatives must be a number of at least 1 or {ALL!r}, got {negatives!r}")
    keep = None if isinstance(negatives, str) else negatives  # a text left is ALL
    what = f"{fmt} export"
    output = check_output(
        output, folder=fmt in _FOLDER_FORMATS, what=what, results=results, force=force, previous=is_saved_dataset
    )
    files = RunFiles.open(run, results)
    groups = load_groups(files, keep)
    mining = run_card(files)  # before anything is written: a card that describes another list is an error
    teacher = None if scores is None else group_scores(groups, mining, results, scores)
    summary: dict = {"format": fmt, "output": str(output), "queries": len(groups), "negatives": negatives}
    if scores is not None:
        summary["scores"] = scores

    def card(written, rows: int, **extra) -> None:  # the export's card: inside a folder export, beside a file
        record = {
            "format": fmt,
            "name": output.name,
            "queries": len(groups),
            "negatives": negatives,
            "rows": rows,
            **({"scores": scores} if scores is not None else {}),
            **extra,
        }
        write_export_card(mining, run, output, record, written=written)

    if fmt in ("jsonl", "tevatron"):
        blocks = _jsonl_blocks(groups) if fmt == "jsonl" else _tevatron_blocks(groups, teacher)
        summary["rows"] = write_jsonl(output, blocks)
        card(output, summary["rows"])
    elif fmt == "hf-dataset":
        summary["rows"] = write_hf_dataset(
            output, HF_SCHEMA, (group_table(groups, lo, hi) for lo, hi in groups.blocks()), finish=card
        )
    else:
        size = None
        if st_format == "n-tuple":
            counts = np.diff(groups.neg_offsets)
            size = keep or int(counts.max())
            short = int((counts < size).sum())
            if short:
                log.warning(
                    "%d of %d queries have fewer than %d negatives: no n-tuple row (as mine_hard_negatives "
                    "leaves out rows without num_negatives negatives)",
                    short,
                    len(groups),
                    size,
                )
        texts = document_texts(groups, files, title_separator)
        rows, size_bytes = st_size(groups, texts, st_format, size)
        log.info("writing about %d rows, %d bytes of text (%s negatives per query)", rows, size_bytes, negatives)
        if announce is not None:
            announce(
                {
                    "rows": rows,
                    "bytes": size_bytes,
                    "negatives": negatives,
                    "queries": len(groups),
                    "st_format": st_format,
                }
            )
        schema = st_schema(st_format, size, scores=teacher is not None)
        table = partial(st_table, groups, texts=texts, st_format=st_format, size=size, scores=teacher)
        summary["rows"] = write_hf_dataset(
            output,
            schema,
            (table(lo, hi) for lo, hi in groups.blocks()),
            finish=partial(card, st_format=st_format, columns=schema.names),
        )
        summary.update(st_format=st_format, columns=schema.names, estimated_bytes=size_bytes)
    log.info("wrote %s: %d rows of %d training queries (%s)", output, summary["rows"], len(groups), fmt)
    return summary
