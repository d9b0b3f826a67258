"""One query of a finished run as the ``hardneg audit <run> --qid Q`` command shows it: read from the run's files
and formatted by :func:`hardneg.mining.audit.format_query`.

Ids, titles and texts are shown as :func:`hardneg.io.text.visible` writes them, so a control character
or a bidirectional override in the data cannot act on the terminal: every id and the query's text are escaped (a
line break in them shows as ``\\n``); in a document's title and text, line breaks and tabs are spaces (the
snippet puts a document on one line) and the other control characters are escaped."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pyarrow as pa

from hardneg.errors import HardnegError
from hardneg.io import artifacts
from hardneg.io.text import visible
from hardneg.mining.audit import format_query
from hardneg.results.run_files import RunFiles


def describe_query(
    run: str, qid: str, *, results: str | os.PathLike = "results", top: int = 10, snippet_chars: int = 160
) -> str:
    """:func:`format_query` for query ``qid`` of run ``run`` under the ``results`` folder.

    Reads ``results/<run>/{config.yaml, hardnegs.parquet}``, its miner's positive scores (if present) and, of the
    run's dataset ``results/datasets/<dataset>/``, the split whose queries contain ``qid`` (its queries and qrels)
    and the corpus rows shown. Raises HardnegError naming what is missing.
    """
    files = RunFiles.open(run, results)
    hardnegs_path = files.hard_negatives()
    layout, dataset = files.layout, files.dataset
    query_files = sorted(Path(layout.queries_dir(dataset)).glob("*.parquet"))
    if not query_files:
        raise HardnegError(
            f"dataset {dataset!r} of run {run} is not prepared: no query files in {layout.queries_dir(dataset)}"
        )
    for path in query_files:
        queries = artifacts.read_matching_rows(artifacts.QUERIES, path, "qid", [qid])
        if queries.num_rows:
            split = path.stem
            break
    else:
        raise HardnegError(
            f"query {qid!r} is unknown to dataset {dataset!r} (not in any of its splits: "
            f"{', '.join(p.stem for p in query_files)})"
        )
    qrels = artifacts.read_matching_rows(artifacts.QRELS, layout.qrels(dataset, split), "qid", [qid])
    hardnegs = artifacts.read_matching_rows(artifacts.HARDNEGS, hardnegs_path, "qid", [qid])
    positives_path = files.positive_scores()
    positives = (
        artifacts.read_matching_rows(artifacts.POSITIVE_SCORES, positives_path, "qid", [qid])
        if positives_path is not None and positives_path.exists()
        else None
    )
    shown = hardnegs.sort_by([("rank", "ascending")]).slice(0, top)
    docids = sorted(set(qrels["docid"].to_pylist()) | set(shown["docid"].to_pylist()))
    corpus = artifacts.read_matching_rows(artifacts.CORPUS, layout.corpus(dataset), "docid", docids)
    return format_query(
        visible(qid),
        queries=_shown(queries, ("text",)),
        corpus=_shown(corpus, ("title", "text"), one_line=True),
        qrels=_shown(qrels),
        hardnegs=_shown(hardnegs),
        positives=None if positives is None else _shown(positives),
        top=top,
        snippet_chars=snippet_chars,
    )


_BREAKS = re.compile(r"[\t\n\v\f\r]+")


def _shown(table: pa.Table, texts: tuple[str, ...] = (), *, one_line: bool = False) -> pa.Table:
    """``table`` with its ids (``qid``, ``docid``, where it has them) and its ``texts`` columns made
    :func:`visible`; ``one_line``: in the ``texts`` columns, each run of line breaks and tabs first becomes one
    space."""
    for name in [name for name in table.column_names if name in ("qid", "docid", *texts)]:
        values = [
            None if value is None else visible(_BREAKS.sub(" ", value) if one_line and name in texts else value)
            for value in table[name].to_pylist()
        ]
        table = table.set_column(table.column_names.index(name), name, pa.array(values, pa.string()))
    return table
