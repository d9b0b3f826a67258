"""A comparison of runs (:func:`hardneg.results.comparison.compare_results`) as one self-contained HTML page: the
table of each run against the first with its tests, and the queries that changed most with the runs' rankings
side by side (texts, relevance, hard-negative marks). ``hardneg compare --html FILE`` writes it; so does the
workflow for each comparison of the config's ``compare`` list (``results/tables/compare_<name>.html``, a page of
the report).

Every id and text from the data is HTML-escaped: a query holding ``<script>`` is shown as text (and a control
character or a bidirectional override as its escape, as on the terminal). The page loads
nothing from elsewhere and runs no script (:mod:`hardneg.report.pages`); its tables wrap long texts rather than
grow wider than the page. Same inputs → the same bytes.
"""

from __future__ import annotations

import html
import os

from hardneg.evaluation.compare import method_note, number_text, table_cells
from hardneg.evaluation.significance import RESAMPLES, SEED
from hardneg.evaluation.summary_measures import lower_is_better
from hardneg.io.atomic import write_text
from hardneg.io.text import visible
from hardneg.report.pages import page
from hardneg.results.comparison import ChangedQuery, RunsComparison, ShownDocument, compare_results
from hardneg.results.comparison_text import seed_cells, seed_note

STYLE = """
.fit { max-width: 100%; overflow-x: auto; }
table.wide { width: 100%; table-layout: fixed; }
table.wide td, table.wide th { overflow-wrap: anywhere; }
table.wide th, table.stats th { white-space: normal; }
table.stats th, table.stats td { padding: 3px 5px; }
col.rank { width: 4.5em; } col.id { width: 9em; } col.grade { width: 4.5em; } col.at { width: 7em; }
.mark { display: inline-block; font-size: 11px; font-weight: 600; padding: 0 4px; margin-right: 3px;
        border-radius: 3px; white-space: nowrap; }
.rel { background: #dafbe1; color: #116329; } .hn { background: #fff1e5; color: #953800; }
.better { color: #116329; } .worse { color: #a40e26; }
td.doc code { font-size: 12px; }
section.query { border-top: 1px solid #d0d7de; margin-top: 14px; }
p.note { max-width: 100ch; }
"""


def _e(text) -> str:
    """Text from the data as HTML: control characters and bidirectional overrides shown as escapes
    (:func:`hardneg.io.text.visible`), then HTML-escaped."""
    return html.escape(visible(str(text)), quote=True)


def _marks(document: ShownDocument) -> str:
    marks = []
    if document.relevance is not None and document.relevance >= 1:
        marks.append(
            f'<span class="mark rel" title="judged relevant, grade {document.relevance}">R{document.relevance}</span>'
        )
    if document.hard_negative:
        marks.append('<span class="mark hn" title="the run trained on it as a hard negative of this query">HN</span>')
    if document.other_queries:
        marks.append(
            f'<span class="mark hn" title="the run trained on it as a hard negative of '
            f'{document.other_queries} other training queries">HN×{document.other_queries}</span>'
        )
    return "".join(marks)


def _delta_class(delta: float, measure: str) -> str:
    if delta != delta or abs(delta) < 1e-9:  # NaN or a tie
        return ""
    better = delta < 0 if lower_is_better(measure) else delta > 0
    return ' class="num better"' if better else ' class="num worse"'


def _stats_table(report: RunsComparison) -> str:
    header, rows = table_cells(report.comparison)
    out = ['<div class="fit"><table class="stats"><thead><tr>']
    # a header may break after a slash (wins/ties/losses), so the table fits a narrow frame
    out += [
        f"<th{'' if i == 0 else ' class=num'}>{_e(cell).replace('/', '/<wbr>')}</th>" for i, cell in enumerate(header)
    ]
    out.append("</tr></thead><tbody>")
    for row in rows:
        cells = [f"<td>{_e(row[0])}</td>"] + [f'<td class="num">{_e(cell)}</td>' for cell in row[1:]]
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</tbody></table></div>")
    return "".join(out)


def _seed_table(report: RunsComparison) -> str:
    header, rows = seed_cells(report)
    out = ['<div class="fit"><table class="stats seeds"><thead><tr>']
    out += [f"<th{'' if i == 0 else ' class=num'}>{_e(cell)}</th>" for i, cell in enumerate(header)]
    out.append("</tr></thead><tbody>")
    for row in rows:
        out.append(
            "<tr>" + f"<td>{_e(row[0])}</td>" + "".join(f'<td class="num">{_e(c)}</td>' for c in row[1:]) + "</tr>"
        )
    out.append("</tbody></table></div>")
    return "".join(out) + f'<p class="note">{_e(seed_note(report))}</p>'


def _query_section(number: int, query: ChangedQuery, report: RunsComparison) -> str:
    comparison = report.comparison
    measure, runs = comparison.measure, comparison.runs
    text = '<span class="muted">(not among the split\'s queries)</span>' if query.text is None else _e(query.text)
    out = [
        f'<section class="query" id="query-{number}">',
        f'<h3>{number}. query <code>{_e(query.qid)}</code>: <span class="text">{text}</span></h3>',
    ]
    out.append(
        '<div class="fit"><table class="values"><thead><tr><th>run</th>'
        f'<th class="num">{_e(measure)}</th><th class="num">Δ vs {_e(comparison.reference)}</th>'
        "</tr></thead><tbody>"
    )
    for run in runs:
        delta = query.deltas.get(run)
        delta_cell = (
            f"<td{_delta_class(delta, measure)}>{_e(number_text(delta, measure, signed=True))}</td>"
            if delta is not None
            else '<td class="num"></td>'
        )
        out.append(
            f'<tr><td>{_e(run)}</td><td class="num">{_e(number_text(query.values[run], measure))}</td>{delta_cell}</tr>'
        )
    out.append("</tbody></table></div>")
    if query.relevant:
        out.append(
            '<div class="fit"><table class="wide relevant"><colgroup><col class="id"><col class="grade">'
            + '<col class="at">' * len(runs)
            + "<col></colgroup><thead><tr><th>relevant</th>"
            "<th class=num>grade</th>"
            + "".join(f'<th class="num">rank in {_e(run)}</th>' for run in runs)
            + "<th>title — text</th></tr></thead><tbody>"
        )
        for document in query.relevant:
            ranks = "".join(
                f'<td class="num">{"–" if document.ranks[run] is None else document.ranks[run]}</td>' for run in runs
            )
            out.append(
                f"<tr><td><code>{_e(document.docid)}</code></td><td class=num>{document.relevance}</td>"
                f"{ranks}<td>{_e(document.snippet)}</td></tr>"
            )
        out.append("</tbody></table></div>")
    else:
        out.append('<p class="muted">No document of this query is judged relevant.</p>')
    out.append(
        '<div class="fit"><table class="wide rankings"><colgroup><col class="rank">'
        + "<col>" * len(runs)
        + '</colgroup><thead><tr><th class="num">rank</th>'
        + "".join(f"<th>{_e(run)}</th>" for run in runs)
        + "</tr></thead><tbody>"
    )
    for rank in range(max((len(query.rankings[run]) for run in runs), default=0)):
        cells = []
        for run in runs:
            shown = query.rankings[run]
            if rank < len(shown):
                ranked = shown[rank]
                cells.append(
                    f'<td class="doc">{_marks(ranked)}<code>{_e(ranked.docid)}</code> {_e(ranked.snippet)}</td>'
                )
            else:
                cells.append("<td></td>")
        out.append(f'<tr><td class="num">{rank + 1}</td>{"".join(cells)}</tr>')
    out.append("</tbody></table></div></section>")
    return "\n".join(out)


def comparison_html(report: RunsComparison) -> str:
    """The whole page of a comparison (see the module docstring)."""
    comparison = report.comparison
    title = f"Comparison of runs: {', '.join(comparison.runs)}"
    body = [
        f"<h1>{_e(title)}</h1>",
        f'<p class="muted">{_e(comparison.measure)} on split <code>{_e(report.split)}</code> of dataset '
        f"<code>{_e(report.dataset)}</code>: {comparison.num_queries} queries, each run against "
        f"<strong>{_e(comparison.reference)}</strong>.</p>",
        _stats_table(report),
        f'<p class="note">{_e(method_note(comparison))}</p>',
        *([_seed_table(report)] if report.seeds else []),
        '<p class="note muted">Per-query values: '
        + "; ".join(f"{_e(run)}: <code>{_e(path)}</code>" for run, path in report.sources.items())
        + ". Hard negatives each run trained on: "
        + "; ".join(
            f"{_e(run)}: " + (f"<code>{_e(path)}</code>" if path else "none (it trains on no mined list)")
            for run, path in report.hard_negatives.items()
        )
        + ".</p>",
    ]
    if report.queries:
        body += [
            f"<h2>The {len(report.queries)} queries that changed most</h2>",
            f'<p class="note">Largest |Δ{_e(comparison.measure)}| against {_e(comparison.reference)} in any '
            f"run; the top {report.depth} documents of each run's ranking side by side. "
            '<span class="mark rel">R2</span> judged relevant (grade 2); <span class="mark hn">HN</span> the '
            'run trained on the document as a hard negative of this query; <span class="mark hn">HN×3</span> '
            "of 3 other training queries.</p>",
        ]
        body += [_query_section(number, query, report) for number, query in enumerate(report.queries, start=1)]
    elif comparison.num_queries and not comparison.most_changed(1):  # with top 0, changed queries go unshown
        body.append(
            f'<p class="muted">No query changed: every run scores each query as {_e(comparison.reference)} does.</p>'
        )
    return page(title, "\n".join(body), style=STYLE)


def write_comparison_page(
    runs: list[str],
    html_path: str | os.PathLike,
    *,
    results: str | os.PathLike = "results",
    measure: str = "RR@10",
    split: str | None = None,
    top: int = 10,
    depth: int = 10,
    correction: str = "holm",
    resamples: int = RESAMPLES,
    seed: int = SEED,
) -> RunsComparison:
    """Stage function: compare ``runs`` (:func:`hardneg.results.comparison.compare_results`, with these
    arguments) and write the page to ``html_path`` atomically.

    :returns: the comparison shown.
    :raises HardnegError: see :func:`hardneg.results.comparison.compare_results`.
    """
    report = compare_results(
        runs,
        results=results,
        measure=measure,
        split=split,
        top=top,
        depth=depth,
        correction=correction,
        resamples=resamples,
        seed=seed,
    )
    write_text(html_path, comparison_html(report))
    return report
