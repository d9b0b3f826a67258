"""A comparison of runs (:func:`hardneg.results.comparison.compare_results`) as plain text for the terminal: the
table of each run against the first, what its tests are, and the queries that changed most with the runs'
rankings side by side.

Every id and text from the data is shown as :func:`hardneg.io.text.visible` writes it, on one line (runs of white
space become one space), so nothing in a dataset acts on the terminal."""

from __future__ import annotations

import textwrap

from hardneg.evaluation.compare import method_note, number_text, table_cells
from hardneg.io.text import visible
from hardneg.results.comparison import ChangedQuery, RunsComparison, ShownDocument

WIDTH = 100  # characters of a wrapped paragraph


def _one_line(text: str) -> str:
    return visible(" ".join(text.split()))


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: max(width - 1, 0)] + "…"


def _aligned(rows: list[list[str]], left: set[int]) -> list[str]:
    """Rows of cells as aligned lines: the columns in ``left`` left-aligned, the others right-aligned."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return [
        "  ".join(
            cell.ljust(w) if i in left else cell.rjust(w) for i, (cell, w) in enumerate(zip(row, widths))
        ).rstrip()
        for row in rows
    ]


def document_marks(document: ShownDocument) -> str:
    """A shown document's marks: ``R<grade>`` when relevant, ``HN`` when the run trained on it as a hard negative
    of this query, ``HN×<n>`` when it did for n other training queries."""
    marks = []
    if document.relevance is not None and document.relevance >= 1:
        marks.append(f"R{document.relevance}")
    if document.hard_negative:
        marks.append("HN")
    if document.other_queries:
        marks.append(f"HN×{document.other_queries}")
    return " ".join(f"[{mark}]" for mark in marks)


def _query_lines(number: int, query: ChangedQuery, report: RunsComparison) -> list[str]:
    comparison = report.comparison
    measure, runs = comparison.measure, comparison.runs
    text = "(not among the split's queries)" if query.text is None else _one_line(query.text)
    lines = [f"{number}. query {visible(query.qid)}: {text}"]
    values = ", ".join(
        f"{run} {number_text(query.values[run], measure)}"
        + (f" ({number_text(query.deltas[run], measure, signed=True)})" if run in query.deltas else "")
        for run in runs
    )
    lines.append(f"   {measure}: {values}")
    for document in query.relevant:
        ranks = ", ".join(f"{run} {'–' if document.ranks[run] is None else document.ranks[run]}" for run in runs)
        lines.append(
            f"   relevant {visible(document.docid)} [R{document.relevance}], ranked {ranks}: "
            f"{_clip(_one_line(document.snippet), 60)}"
        )
    if not query.relevant:
        lines.append("   (no document judged relevant)")
    width = max(30, (WIDTH - 6) // len(runs))
    rows = [["rank", *runs]]
    for rank in range(report.depth):
        cells = []
        for run in runs:
            shown = query.rankings[run]
            if rank < len(shown):
                ranked = shown[rank]
                marks = document_marks(ranked)
                cells.append(
                    _clip(f"{visible(ranked.docid)}{' ' + marks if marks else ''} {_one_line(ranked.snippet)}", width)
                )
            else:
                cells.append("")
        if any(cells):
            rows.append([str(rank + 1), *cells])
    lines += ["   " + line for line in _aligned(rows, left=set(range(1, len(runs) + 1)))]
    return lines


def seed_cells(report: RunsComparison) -> tuple[list[str], list[list[str]]]:
    """The table of the runs over their seeds (header, rows): each run's seeds, the mean and sample standard
    deviation of its seeds' means, Welch's p against the reference."""
    measure, reference = report.comparison.measure, report.comparison.reference
    header = ["run", "seeds", f"mean {measure}", "sd", f"Welch p vs {reference}"]
    rows = [
        [
            spread.run,
            str(len(spread.means)),
            f"{spread.mean:.4f}",
            "–" if spread.sd is None else f"{spread.sd:.4f}",
            "–" if spread.p_welch is None else f"{spread.p_welch:.3g}",
        ]
        for spread in report.seeds
    ]
    return header, rows


def seed_note(report: RunsComparison) -> str:
    """What the table of the runs over their seeds shows, and which replicates it read."""
    return (
        f"Over seeds: each run and its replicates (<run>_seed<s>) found under the results folder, each "
        f"replicate's mean {report.comparison.measure} over the {report.comparison.num_queries} queries; "
        f"Welch's t-test takes the seeds as the samples (it needs two or more seeds on both sides). "
        "Replicates: " + "; ".join(f"{s.run}: {', '.join(s.replicates)}" for s in report.seeds) + "."
    )


def _seed_lines(report: RunsComparison) -> list[str]:
    header, rows = seed_cells(report)
    return (
        _aligned([[visible(cell) for cell in row] for row in [header, *rows]], left={0})
        + [""]
        + textwrap.wrap(visible(seed_note(report)), WIDTH)
    )


def _wrap_paths(text: str) -> list[str]:
    """``text`` wrapped at spaces only, so that a path (``pytest-of-root/...``, ``star_kl/...``) stays whole on one
    line, to be copied as it is."""
    return textwrap.wrap(text, WIDTH, break_on_hyphens=False, break_long_words=False)


def comparison_text(report: RunsComparison) -> str:
    """The comparison as terminal text (see the module docstring); ends with a line break."""
    comparison = report.comparison
    header, rows = table_cells(comparison)
    lines = [
        f"{comparison.measure} on split {visible(report.split)} of dataset {visible(report.dataset)}: "
        f"{comparison.num_queries} queries, each run against {comparison.reference}",
        "",
    ]
    lines += _aligned([header, *rows], left={0})
    lines += [""] + textwrap.wrap(method_note(comparison), WIDTH)
    if report.seeds:
        lines += [""] + _seed_lines(report)
    lines += [""] + _wrap_paths(
        "Per-query values: " + "; ".join(f"{run}: {visible(path)}" for run, path in report.sources.items())
    )
    marks = "; ".join(
        f"{run}: {visible(path) if path else 'none (it trains on no mined list)'}"
        for run, path in report.hard_negatives.items()
    )
    lines += _wrap_paths(f"Hard negatives each run trained on: {marks}")
    if report.queries:
        lines += [""] + textwrap.wrap(
            f"The {len(report.queries)} queries that changed most (largest |Δ{comparison.measure}| against "
            f"{comparison.reference}), top {report.depth} of each ranking. [R<g>]: judged relevant with grade g; "
            f"[HN]: the run trained on it as a hard negative of this query; [HN×n]: of n other training queries.",
            WIDTH,
        )
        for number, query in enumerate(report.queries, start=1):
            lines += [""] + _query_lines(number, query, report)
    elif comparison.num_queries and not comparison.most_changed(1):  # with --top 0, changed queries go unshown
        lines += ["", f"No query changed: every run scores each query as {comparison.reference} does."]
    return "\n".join(lines) + "\n"
