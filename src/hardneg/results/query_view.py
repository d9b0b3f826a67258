"""One query of a finished run as the ``hardneg audit <run> --qid Q`` command shows it: read from the run's files
and formatted by :func:`format_query`.

Ids, titles and texts are shown as :func:`hardneg.io.text.visible` writes them, so a control character
or a bidirectional override in the data cannot act on the terminal: every id and the query's text are escaped (a
line break in them shows as ``\\n``); in a document's title and text, line breaks and tabs are spaces (the
snippet puts a document on one line) and the other control characters are escaped."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from hardneg.errors import HardnegError
from hardneg.io import artifacts
from hardneg.io.text import text_snippet, visible
from hardneg.mining.rows import relevant_judgements
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


def _columns(rows: list[list[str]], right: set[int]) -> list[str]:
    """Rows of cells as aligned text lines; columns in ``right`` are right-aligned, the last is left as is."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    return [
        "  "
        + "  ".join(
            [cell.rjust(w) if i in right else cell.ljust(w) for i, (cell, w) in enumerate(zip(row, widths))] + [row[-1]]
        )
        for row in rows
    ]


def format_query(
    qid: str,
    *,
    queries: pa.Table,
    corpus: pa.Table,
    qrels: pa.Table,
    hardnegs: pa.Table,
    positives: pa.Table | None = None,
    top: int = 10,
    snippet_chars: int = 160,
) -> str:
    """One query as plain text: its text, its relevant documents (docid, relevance, mining-model score when
    ``positives`` has it, title + text snippet of ``snippet_chars`` characters) and its ``top`` best-ranked mined
    negatives (rank, docid, score, margin = score - best positive score, snippet).

    Raises HardnegError when ``qid`` is not in ``queries`` or has no row in ``hardnegs``.
    """
    text = queries.filter(pc.equal(queries["qid"], qid))["text"].to_pylist()
    if not text:
        raise HardnegError(f"query {qid!r} is unknown to the dataset (no such qid among its queries)")
    negs = hardnegs.filter(pc.equal(hardnegs["qid"], qid)).sort_by([("rank", "ascending")])
    if negs.num_rows == 0:
        raise HardnegError(
            f"query {qid!r} is in the dataset but has no mined hard negatives (negatives are mined "
            "only for training queries that the mining run ranked)"
        )
    rel = relevant_judgements(qrels.filter(pc.equal(qrels["qid"], qid)))
    rel = rel.sort_by([("relevance", "descending"), ("docid", "ascending")])
    scores: dict[str, float] = {}
    if positives is not None:
        mine = positives.filter(pc.equal(positives["qid"], qid))
        scores = {d: s for d, s in zip(mine["docid"].to_pylist(), mine["score"].to_pylist()) if s is not None}
    best = max((scores[d] for d in rel["docid"].to_pylist() if d in scores), default=None)
    shown = negs.slice(0, top)
    wanted = pa.concat_arrays([rel["docid"].combine_chunks(), shown["docid"].combine_chunks()])
    docs = corpus.filter(pc.is_in(corpus["docid"], value_set=wanted))
    texts = {
        d: (t, x) for d, t, x in zip(docs["docid"].to_pylist(), docs["title"].to_pylist(), docs["text"].to_pylist())
    }

    def snippet(docid: str) -> str:
        return text_snippet(*texts[docid], snippet_chars) if docid in texts else "(not in the corpus)"

    lines = [f"query {qid}: {text[0]}", ""]
    lines.append(f"positives ({rel.num_rows}" + (f", best score {best:.4f}" if best is not None else "") + "):")
    if rel.num_rows:
        rows = [["docid", "relevance", "score", "title / text"]]
        for docid, relevance in zip(rel["docid"].to_pylist(), rel["relevance"].to_pylist()):
            score = f"{scores[docid]:.4f}" if docid in scores else "–"
            rows.append([docid, str(relevance), score, snippet(docid)])
        lines += _columns(rows, right={1, 2})
    else:
        lines.append("  (none judged relevant)")
    lines += ["", f"negatives (top {shown.num_rows} of {negs.num_rows}):"]
    rows = [["rank", "docid", "score", "margin", "title / text"]]
    for rank, docid, score in zip(*(shown[c].to_pylist() for c in ("rank", "docid", "score"))):
        # an imported list's negative may have no score (a file without teacher scores)
        margin = f"{score - best:+.4f}" if best is not None and score is not None else "–"
        rows.append([str(rank), docid, f"{score:.4f}" if score is not None else "–", margin, snippet(docid)])
    lines += _columns(rows, right={0, 2, 3})
    return "\n".join(lines) + "\n"
