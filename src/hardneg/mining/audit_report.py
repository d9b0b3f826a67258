"""The audit of a hard-negative list as a Markdown report (``hardnegs_audit.md``): the summary that
:func:`hardneg.mining.audit.audit_hard_negatives` computes, rendered by :func:`audit_markdown` and written beside
the per-query AUDIT table by :func:`write_audit`. Ids from the data are code spans (:func:`markdown_code`)."""

from __future__ import annotations

import os

import numpy as np
import pyarrow as pa

from hardneg.io import artifacts
from hardneg.io.atomic import write_text
from hardneg.io.text import EMPTY_MARK, markdown_code, markdown_table

MARKDOWN_TOP = 50  # suspected false negatives and query ids listed in the Markdown report


def _selection_markdown(selection: dict) -> list[str]:
    policy = ", ".join(
        f"{key} {value}"
        for key, value in selection["policy"].items()
        if value not in (None, False)
        and key != "sampling"
        or key == "sampling"
        and selection["policy"]["keep"] is not None
    )
    name = f"policy `{selection['name']}`" if selection["name"] else "the run's policy"
    lines = [
        "## Selection from the candidate pool",
        "",
        f"{selection['kept']} of {selection['candidates']} candidates kept by {name}"
        f" ({policy or 'no filter'}); each filter removed, in order:",
        "",
    ]
    lines += _md_table(["filter", "removed"], [[key, count] for key, count in selection["removed"].items()])
    duplicates = selection["duplicates"]
    lines += [
        f"Candidates that duplicate a judged positive of their query: {duplicates['pool']} "
        f"({duplicates['exact']} exact, {duplicates['near']} near); among the negatives: "
        f"{duplicates['negatives']}.",
        "",
    ]
    return lines


def _num(value, digits: int = 4) -> str:
    if value is None:
        return "–"
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    return f"{value:.{digits}f}"


def _pct(value) -> str:
    return "–" if value is None else f"{100 * value:.1f}%"


def _md_table(header: list[str], rows: list[list]) -> list[str]:
    return [*markdown_table([str(cell) for cell in header], [[str(cell) for cell in row] for row in rows]), ""]


def audit_markdown(summary: dict, *, bars: bool = True) -> str:
    """The audit summary as a Markdown report. Ids from the data are code spans (:func:`markdown_code`), shown as
    they are by any renderer: never a link, an image or formatting. ``bars``: the margin histogram's table has a
    column of ``#`` bars (a page that draws the histogram leaves them out)."""
    depth = summary["depth"]
    per_query = summary["negatives_per_query"]
    lines = ["# Hard-negative audit", ""]
    lines += _md_table(
        ["", "value"],
        [
            ["training queries (with a relevant document)", summary["num_queries"]],
            ["queries with negatives", summary["queries_with_negatives"]],
            ["queries without negatives", summary["queries_without_negatives"]],
            ["negatives", summary["num_negatives"]],
            ["negatives per query: mean / median", f"{_num(per_query['mean'], 2)} / {_num(per_query['median'], 1)}"],
            ["negatives per query: min / max", f"{_num(per_query['min'])} / {_num(per_query['max'])}"],
            ["negatives of queries without a relevant document (not audited)", summary["negatives_of_other_queries"]],
            [f"mean share of negatives in BM25's top {depth}", _pct(summary["bm25_overlap_mean"])],
            ["suspected false negatives (score >= best positive)", summary["suspected_false_negatives"]["count"]],
            [
                "negatives that are empty documents (no title, no text)",
                "not checked"
                if summary.get("empty_negatives") is None
                else f"{summary['empty_negatives']['count']}" + (" ⚠" if summary["empty_negatives"]["count"] else ""),
            ],
        ],
    )
    if summary.get("selection"):
        lines += _selection_markdown(summary["selection"])
    ranks = summary["best_positive_rank"]
    if ranks is None:  # an imported list: no mining run here, its scores are the file's
        lines += [
            "## Imported list",
            "",
            "Mined elsewhere: no ranking to find the positives in; scores and margins "
            "are those the imported file carries (none where it carries none).",
            "",
        ]
    else:
        lines += [f"## Best-ranked positive in the mining run (depth {depth})", ""]
        lines += _md_table(
            ["rank 1", "rank <= 10", f"rank <= {depth}", f"beyond {depth}"],
            [[_pct(ranks["at_1"]), _pct(ranks["within_10"]), _pct(ranks["within_depth"]), _pct(ranks["beyond_depth"])]],
        )
    margin = summary["margin"]
    lines += [
        "## Margin: negative score - best positive score",
        "",
        f"Over {margin['count']} negatives of queries with a scored positive; "
        "a margin >= 0 means the negative outscores every positive.",
        "",
    ]
    lines += _md_table(["quantile", *margin["quantiles"]], [["margin", *map(_num, margin["quantiles"].values())]])
    counts, edges = margin["histogram"]["counts"], margin["histogram"]["edges"]
    if counts:
        peak = max(counts) or 1
        lines += _md_table(
            ["margin from", "to", "negatives"] + ([""] if bars else []),
            [
                [_num(edges[i]), _num(edges[i + 1]), c] + (["#" * round(30 * c / peak)] if bars else [])
                for i, c in enumerate(counts)
            ],
        )
    suspects = summary["suspected_false_negatives"]
    lines += [
        "## Suspected false negatives",
        "",
        f"{suspects['count']} negatives score at or above their query's best positive"
        + (f"; the {MARKDOWN_TOP} with the largest excess:" if suspects["count"] > MARKDOWN_TOP else "."),
        "",
    ]
    if suspects["pairs"]:
        lines += _md_table(
            ["qid", "docid", "negative score", "best positive score", "excess"],
            [
                [
                    markdown_code(p["qid"]),
                    markdown_code(p["docid"]) + (f" {EMPTY_MARK}" if p.get("empty_document") else ""),
                    _num(p["negative_score"]),
                    _num(p["best_positive_score"]),
                    _num(p["excess"]),
                ]
                for p in suspects["pairs"][:MARKDOWN_TOP]
            ],
        )
    empty = summary.get("empty_negatives")
    if empty and empty["count"]:
        docids = empty["docids"]
        more = f" … and {len(docids) - MARKDOWN_TOP} more" if len(docids) > MARKDOWN_TOP else ""
        lines += [
            "## Empty documents among the negatives",
            "",
            f"{empty['count']} negatives of {empty['queries']} queries are empty documents (no title, no text; "
            f"marked {EMPTY_MARK} above): {', '.join(map(markdown_code, docids[:MARKDOWN_TOP]))}{more}. Dense "
            f"models give every "
            "empty document the same vector; the dataset setting `empty_documents: exclude` leaves them out of "
            "dense runs.",
            "",
        ]
    without = summary["queries_without_negatives_qids"]
    lines += ["## Queries without negatives", ""]
    if without:
        more = f" … and {len(without) - MARKDOWN_TOP} more" if len(without) > MARKDOWN_TOP else ""
        lines += [", ".join(map(markdown_code, without[:MARKDOWN_TOP])) + more, ""]
    else:
        lines += ["None.", ""]
    return "\n".join(lines)


def write_audit(
    summary: dict, table: pa.Table, markdown_path: str | os.PathLike, parquet_path: str | os.PathLike
) -> None:
    """Write the summary as a Markdown report and the per-query table as AUDIT Parquet, both atomically."""
    artifacts.write_table(table, artifacts.AUDIT, parquet_path)
    write_text(markdown_path, audit_markdown(summary))
