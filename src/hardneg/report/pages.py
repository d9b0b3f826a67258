"""Self-contained HTML pages for the Snakemake report: the page frame, and Markdown reports rendered into it.

Snakemake's report shows images, HTML and PDF in place; any other file (a Markdown table, a Parquet file) it only
offers for download. The Markdown reports of the pipeline (the summary, an experiment's tables, the hard-negative
audit inside the viewer) are therefore rendered here into HTML pages. A page loads nothing from elsewhere (inline
CSS and script, no fonts, no network), so it renders the same inside the report's frame, opened on its own, or
offline. Raw HTML inside Markdown is escaped, never passed through: report texts hold ids and document texts from
the data.
"""

from __future__ import annotations

import html
import os

from hardneg.io.atomic import write_text

STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; font-size: 14px; line-height: 1.45;
       color: #1f2328; background: #fff; margin: 0; padding: 16px 24px; }
h1 { font-size: 20px; margin: 0 0 8px; } h2 { font-size: 16px; margin: 18px 0 6px; }
h3 { font-size: 14px; margin: 12px 0 4px; }
table { border-collapse: collapse; margin: 6px 0 12px; font-size: 13px; }
th, td { border: 1px solid #d0d7de; padding: 3px 6px; text-align: left; vertical-align: top; }
th { background: #f6f8fa; }
.scroll th { overflow-wrap: anywhere; }
.scroll { overflow-x: auto; max-width: 100%; }
svg { max-width: 100%; height: auto; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
code { background: #f6f8fa; padding: 0 3px; border-radius: 3px; }
.muted { color: #59636e; }
"""


def markdown_html(text: str) -> str:
    """Markdown (CommonMark with pipe tables) → an HTML fragment; raw HTML in ``text`` is shown as text. Each
    table sits in a box that scrolls sideways when the table is wider than the page (the report shows pages in a
    frame half the window wide): a wide table is never cut off."""
    from markdown_it import MarkdownIt  # markdown-it: imported only when a page is rendered

    rendered = MarkdownIt("commonmark", {"html": False}).enable("table").render(text)
    return rendered.replace("<table>", '<div class="scroll"><table>').replace("</table>", "</table></div>")


def page(title: str, body: str, *, style: str = "", script: str = "") -> str:
    """A whole HTML document: ``title`` (plain text, escaped here), ``body`` (HTML, escaped by the caller), the
    shared style plus ``style`` and an optional inline ``script`` run after the body."""
    script_tag = f"<script>\n{script}\n</script>\n" if script else ""
    return (
        '<!doctype html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{html.escape(title)}</title>\n<style>{STYLE}{style}</style>\n</head>\n"
        f"<body>\n{body}\n{script_tag}</body>\n</html>\n"
    )


def markdown_page(markdown_path: str | os.PathLike, html_path: str | os.PathLike, title: str) -> None:
    """Stage function: a Markdown report (UTF-8) → a self-contained HTML page titled ``title``, written
    atomically."""
    with open(markdown_path, encoding="utf-8") as handle:
        text = handle.read()
    write_text(html_path, page(title, markdown_html(text)))
