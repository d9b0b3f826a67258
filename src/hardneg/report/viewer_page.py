"""The hard-negative viewer's page (:mod:`hardneg.report.viewer` chooses the queries and reads the tables): the
queries' sections with their documents and flags, the audit's margin histogram drawn as SVG, where an imported
list came from, and the little inline script that filters the queries. Every text from the data is HTML-escaped:
a document holding ``<script>`` is shown as text; the page loads nothing from elsewhere
(:mod:`hardneg.report.pages`)."""

from __future__ import annotations

import html
import re

from hardneg.report.pages import markdown_html, page

# Words too common to highlight in the documents (the rest of a query's words of three letters or more are marked).
# fmt: off
STOPWORDS = frozenset((
    "the", "and", "for", "are", "but", "not", "you", "all", "any", "can", "had", "her", "was", "one", "our", "out",
    "has", "his", "how", "its", "may", "new", "now", "old", "see", "two", "who", "did", "get", "him", "let", "put",
    "say", "she", "too", "use", "what", "when", "where", "which", "while", "with", "from", "that", "this", "than",
    "then", "there", "these", "they", "those", "into", "over", "such", "only", "also", "about", "after", "before",
    "does", "each", "more", "most", "other", "some", "very", "will", "would", "your", "between", "through",
    "during", "under", "again", "further", "once", "here", "why", "both", "few", "same", "own", "just", "don",
    "should",
))
# fmt: on


def query_terms(text: str) -> list[str]:
    """The words of a query the viewer highlights in documents: lower-cased, three letters or more, not
    :data:`STOPWORDS`, each once, longest first (so that a longer word wins over a word inside it)."""
    words = {word for word in re.findall(r"\w+", text.lower()) if len(word) >= 3 and word not in STOPWORDS}
    return sorted(words, key=lambda word: (-len(word), word))


def highlighted(text: str, terms: list[str]) -> str:
    """``text`` escaped for HTML, with each whole-word occurrence of ``terms`` (any case) in ``<mark>``."""
    if not terms:
        return _e(text)
    pattern = re.compile(r"\b(" + "|".join(map(re.escape, terms)) + r")\b", re.IGNORECASE)
    pieces, end = [], 0
    for match in pattern.finditer(text):
        pieces += [_e(text[end : match.start()]), f"<mark>{_e(match.group(0))}</mark>"]
        end = match.end()
    return "".join(pieces) + _e(text[end:])


STYLE = """
header { position: sticky; top: 0; background: #fff; padding: 6px 0 8px; border-bottom: 1px solid #d0d7de;
         z-index: 1; }
header input[type=search] { width: 28em; padding: 3px 6px; font-size: 14px; }
header label { margin-left: 12px; }
#count { margin-left: 12px; }
section.query { border-bottom: 1px solid #d0d7de; padding: 4px 0 10px; }
section.query h2 code { font-size: 13px; }
.facts { margin: 2px 0 4px; }
section.query table { width: 100%; }
td.snippet { min-width: 12em; overflow-wrap: anywhere; }
td.flag { min-width: 8em; }
tr.suspect td { background: #ffebe9; }
mark { background: #fff3b0; color: inherit; padding: 0 1px; }
p.why { margin: 2px 0 4px; color: #a40e26; font-weight: 600; }
.histogram rect.bar { fill: #8c959f; } .histogram rect.bar.above { fill: #cf222e; }
.histogram text { font-size: 11px; fill: #59636e; } .histogram line { stroke: #57606a; }
.flag { color: #a40e26; font-weight: 600; }
details.audit { margin: 8px 0 12px; }
details.audit > summary { cursor: pointer; font-weight: 600; }
"""

SCRIPT = """
(function () {
  var search = document.getElementById("search"), suspects = document.getElementById("suspects"),
      flagged = document.getElementById("flagged"), count = document.getElementById("count"),
      queries = document.querySelectorAll("section.query");
  var texts = Array.prototype.map.call(queries, function (q) { return q.textContent.toLowerCase(); });
  function update() {
    var words = search.value.toLowerCase().split(/\\s+/).filter(Boolean), shown = 0;
    queries.forEach(function (q, i) {
      var visible = (!suspects.checked || q.dataset.suspected !== "0") &&
        (!flagged.checked || q.dataset.flagged === "1") &&
        words.every(function (w) { return texts[i].indexOf(w) >= 0; });
      q.hidden = !visible;
      if (visible) { shown += 1; }
    });
    count.textContent = shown + " of " + queries.length + " queries shown";
  }
  search.addEventListener("input", update);
  suspects.addEventListener("change", update);
  flagged.addEventListener("change", update);
  update();
})();
"""


def _e(value) -> str:
    return html.escape(str(value), quote=True)


def _score(value) -> str:
    return "–" if value is None else f"{value:.4f}"


def _margin(value) -> str:
    return "–" if value is None else f"{value:+.4f}".replace("-", "−")


def _cells(values: list[tuple[str, str]]) -> str:
    """``(text, class)`` pairs → table cells; the text is escaped here."""
    return "".join(f'<td class="{cls}">{_e(text)}</td>' if cls else f"<td>{_e(text)}</td>" for text, cls in values)


def _header_row(names: list[tuple[str, str]]) -> str:
    return (
        "<tr>"
        + "".join(f'<th class="{cls}">{_e(name)}</th>' if cls else f"<th>{_e(name)}</th>" for name, cls in names)
        + "</tr>"
    )


def _facts(query: dict, depth: int, with_bm25: bool, ranked: bool) -> str:
    parts = []
    rank = query["best_positive_rank"]
    if ranked:
        parts.append(f"best positive at rank {rank}" if rank is not None else f"no positive in the top {depth}")
    if query["num_negatives"] is not None:
        parts.append(f"{query['num_negatives']} negatives")
    if with_bm25 and query["bm25_overlap"] is not None:
        parts.append(f"{100 * query['bm25_overlap']:.1f}% of them in BM25's top {depth}")
    if query["min_margin"] is not None:
        parts.append(f"margins {_margin(query['min_margin'])} to {_margin(query['max_margin'])}")
    suspected = query["suspected_false_negatives"]
    text = " · ".join(_e(p) for p in parts)
    if suspected:
        text += f' · <span class="flag">⚠ {suspected} suspected false negative{"s" if suspected != 1 else ""}</span>'
    return f'<p class="facts muted">{text}</p>'


def _query_section(query: dict, depth: int, with_bm25: bool, ranked: bool = True) -> str:
    """One query's section; ``ranked``: False for an imported list (no mining ranking: no ranks of positives)."""
    why = query.get("flagged")
    terms = query_terms(query["text"])
    lines = [
        f'<section class="query" id="q-{_e(query["qid"])}" '
        f'data-suspected="{int(query["suspected_false_negatives"] or 0)}" data-flagged="{int(bool(why))}">',
        f"<h2><code>{_e(query['qid'])}</code> {_e(query['text'])}</h2>",
    ]
    if why:
        lines.append(f'<p class="why">⚑ flagged: {_e(why)}</p>')
    lines.append(_facts(query, depth, with_bm25, ranked))
    lines.append(f"<h3>Relevant documents ({len(query['positives'])})</h3>")
    if query["positives"]:
        lines.append(
            "<table>"
            + _header_row(
                [("docid", ""), ("relevance", "num")]
                + [("rank", "num")] * ranked
                + [("score", "num"), ("title / text", "")]
            )
        )
        for p in query["positives"]:
            # a positive the imported file names that the qrels do not judge relevant: its grade is the file's
            grade = p["relevance"] if p.get("judged", True) else f"{p['relevance']} · not in the qrels"
            cells = [(p["docid"], ""), (grade, "num")]
            cells += [("–" if p["rank"] is None else p["rank"], "num")] if ranked else []
            lines.append(
                "<tr>"
                + _cells(cells + [(_score(p["score"]), "num")])
                + f'<td class="snippet">{highlighted(p["snippet"], terms)}</td></tr>'
            )
        lines.append("</table>")
    else:
        lines.append('<p class="muted">none judged relevant</p>')
    total = query["num_negatives"] if query["num_negatives"] is not None else len(query["negatives"])
    lines.append(f"<h3>Top {len(query['negatives'])} of {total} {'mined' if ranked else 'imported'} negatives</h3>")
    if query["negatives"]:
        header = [("rank", "num"), ("docid", ""), ("score", "num"), ("margin", "num")]
        header += [("BM25", "")] if with_bm25 else []
        lines.append("<table>" + _header_row(header + [("flag", ""), ("title / text", "")]))
        for n in query["negatives"]:
            cells = [(n["rank"], "num"), (n["docid"], ""), (_score(n["score"]), "num"), (_margin(n["margin"]), "num")]
            if with_bm25:
                cells.append(("✓" if n["in_bm25"] else "", ""))
            flags = [
                name
                for name, on in (
                    ("⚠ suspected false negative", n["suspected"]),
                    ("empty document", n["empty"]),
                    (f"⚠ duplicates positive {n.get('duplicate')}", n.get("duplicate")),
                )
                if on
            ]
            cells.append(("; ".join(flags), "flag"))
            lines.append(
                ('<tr class="suspect">' if n["suspected"] else "<tr>")
                + _cells(cells)
                + f'<td class="snippet">{highlighted(n["snippet"], terms)}</td></tr>'
            )
        lines.append("</table>")
    else:
        lines.append(f'<p class="muted">no {"mined" if ranked else "imported"} negatives</p>')
    lines.append("</section>")
    return "\n".join(lines)


def histogram_svg(histogram: dict) -> str:
    """The audit's margin histogram (``{"edges", "counts"}``) drawn as an SVG bar chart: bars of the bins that
    reach a margin >= 0 (where suspected false negatives lie) in red, a line at margin 0, the count over each bar
    and the bins' edges under them. Empty for an empty histogram."""
    counts, edges = histogram.get("counts") or [], histogram.get("edges") or []
    if not counts:
        return ""
    width, height, left, bottom, top = 600, 190, 30, 34, 22
    step = (width - 2 * left) / len(counts)
    peak = max(counts) or 1
    span = edges[-1] - edges[0] or 1.0
    parts = []
    for i, count in enumerate(counts):
        bar = (height - bottom - top) * count / peak
        x, y = left + i * step, height - bottom - bar
        above = " above" if edges[i + 1] >= 0 else ""
        parts.append(
            f'<rect class="bar{above}" x="{x + 1:.1f}" y="{y:.1f}" width="{step - 2:.1f}" height="{bar:.1f}">'
            f"<title>{_margin(edges[i])} to {_margin(edges[i + 1])}: {count} negatives</title></rect>"
            f'<text x="{x + step / 2:.1f}" y="{y - 3:.1f}" text-anchor="middle">{count}</text>'
        )
    for i, edge in enumerate(edges):
        if i % 2 == 0 or len(edges) <= 6:
            parts.append(
                f'<text x="{left + i * step:.1f}" y="{height - bottom + 14}" text-anchor="middle">'
                f"{_margin(edge)}</text>"
            )
    if edges[0] < 0 < edges[-1]:
        zero = left + (width - 2 * left) * (0 - edges[0]) / span
        parts.append(
            f'<line x1="{zero:.1f}" x2="{zero:.1f}" y1="4" y2="{height - bottom}" stroke-dasharray="4 3"/>'
            f'<text x="{zero - 4:.1f}" y="12" text-anchor="end">margin 0 →</text>'
        )
    parts.append(
        f'<text x="{width / 2:.0f}" y="{height - 4}" text-anchor="middle">margin = negative score − best '
        "positive score</text>"
    )
    return (
        f'<svg class="histogram" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="histogram of the margins">{"".join(parts)}</svg>'
    )


def _origin(card: dict, run: str) -> str:
    """Where an imported list came from, from its card (:mod:`hardneg.imports.card`): the source file, its format
    and shape, its SHA-256 and the mapping counts. Every value is escaped."""
    section, counts = card["import"], card["import"].get("mapping") or {}
    source = section["source"]

    def count(key: str) -> str:
        return _e(counts.get(key, "?"))

    folder = f", a folder of {len(source['files'])} files" if source.get("files") else ""
    return (
        f'<p class="origin">Imported with <code>hardneg import</code> from <code>{_e(source["path"])}</code> '
        f"({_e(section['format'])}, {_e(section['shape'])}{folder}; SHA-256 "
        f"<code>{_e(str(source.get('sha256', ''))[:16])}</code>…) as a list of the <code>{_e(card['split'])}"
        f"</code> queries of dataset <code>{_e(card['dataset'])}</code>: {count('negatives')} negatives of "
        f"{count('queries')} queries, {count('negatives_scored')} with the file's teacher score; "
        f"{count('positives')} positives, {count('positives_scored')} scored, {count('positives_not_judged')} "
        f"not judged relevant in the qrels; {count('negatives_judged_relevant')} negatives the qrels judge "
        f"relevant left out. <code>hardneg verify {_e(run)}</code> checks that the file still has this digest."
        "</p>"
    )


def render_viewer(
    queries: list[dict],
    *,
    run: str,
    miner: str | None,
    split: str,
    depth: int,
    seed: int,
    num_training_queries: int,
    with_bm25: bool,
    audit_markdown: str | None = None,
    histogram: dict | None = None,
    num_flagged: int = 0,
    positive_rank: int | None = None,
    imported: dict | None = None,
) -> str:
    """The viewer page of run ``run`` (mined by run ``miner`` from its ranking of split ``split``, top ``depth``):
    ``queries`` as :func:`viewer_queries` gives them, the flagged ones first (each with its ``flagged`` reason;
    ``num_flagged`` are flagged in all, ``positive_rank`` the rank below which a best positive is flagged), then a
    sample (seed ``seed``) of the other training queries, of ``num_training_queries`` in all; the audit's Markdown
    report, when given, in a fold above them, and its margin ``histogram`` drawn. ``imported``: the card of an
    imported list (``miner`` is None then): the page says where the list came from in place of the miner, and has
    no ranks of positives."""
    ranked = imported is None
    shown_flagged = sum(1 for query in queries if query.get("flagged"))
    sampled = len(queries) - shown_flagged
    flagged_text = ""
    if positive_rank is not None:
        rank_reason = f", or the best positive below rank {positive_rank} of the mining ranking" if ranked else ""
        flagged_text = (
            f"First the {shown_flagged} flagged queries"
            + (f" (the worst of {num_flagged})" if num_flagged > shown_flagged else "")
            + f": a suspected false negative among its negatives{rank_reason}; the worst first. Then "
        )
    if ranked:
        origin = (
            f"Mined by run <code>{_e(miner)}</code> from its ranking of the <code>{_e(split)}</code> queries "
            f"(top {depth}, relevant documents removed), "
        )
        scores = "Scores are the mining model's; <b>rank</b> is the rank in its ranking (– beyond what it retrieved)"
        shown = "relevant documents and best-ranked mined negatives"
    else:
        origin = ""
        scores = (
            "Scores are the teacher scores the imported file carried (– where it carried none, and then no "
            "margin); <b>rank</b> is the negative's place among the query's negatives in the file (the rank "
            "the file records, where it records one); <b>relevance</b> is the file's grade, else the qrels'"
        )
        shown = "relevant documents (the qrels' and those the file names) and its first negatives in the file"
    intro = (
        f"{origin}{num_training_queries} training queries. {flagged_text}"
        f"{sampled} {'of the other ' if flagged_text else 'of the '}training queries (a sample drawn with seed "
        f"{seed}), each with its {shown}; the query's words are <mark>marked</mark> in their texts. {scores}; "
        '<b>margin</b> = negative score − best positive score; a margin ≥ 0 flags a <span class="flag">⚠ '
        "suspected false negative</span> (it scores at or above every positive)"
        + (f"; <b>BM25</b> ✓: also in BM25's top {depth}." if with_bm25 else ".")
    )
    body = [f"<h1>Hard negatives of run <code>{_e(run)}</code></h1>"]
    body += [_origin(imported, run)] if imported is not None else []
    body.append(f'<p class="muted">{intro}</p>')
    drawn = histogram_svg(histogram or {})
    if drawn:
        body.append(
            f'<h2>Margins of the {"mined" if ranked else "imported"} negatives</h2>\n<div class="scroll">{drawn}</div>'
        )
    if audit_markdown is not None:
        body.append(
            '<details class="audit"><summary>Audit of the whole list</summary>\n'
            f"{markdown_html(audit_markdown)}</details>"
        )
    body.append(
        '<header><input type="search" id="search" placeholder="filter: query id, words of the query or '
        'of a document" aria-label="filter queries"><label><input type="checkbox" id="flagged"> only '
        'flagged queries</label><label><input type="checkbox" id="suspects"> only queries with suspected '
        'false negatives</label><span id="count" class="muted"></span></header>'
    )
    body += [_query_section(q, depth, with_bm25, ranked) for q in queries]
    return page(f"Hard negatives of run {run}", "\n".join(body), style=STYLE, script=SCRIPT)
