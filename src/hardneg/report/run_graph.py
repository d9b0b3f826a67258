"""The graph of a report's runs: which run feeds which (warm-up → STAR → ADORE, BM25 → hybrid), one self-contained
HTML page with the graph drawn as inline SVG.

Snakemake's rule graph shows the stages, each rule once, whatever run it serves; this graph shows the runs. A run
sits in the column of its depth (a run without input runs in the first, every other one column right of its
deepest input), and an arrow from each input run to it is labelled with the input's roles (``init``,
``negatives``, ``docs``, ...). Names and labels come from the config and are escaped.
"""

from __future__ import annotations

import html
import os

from hardneg.io.atomic import write_text
from hardneg.report.pages import page

BOX_WIDTH, BOX_HEIGHT = 170, 44  # a run's box, in pixels
COLUMN_GAP, ROW_GAP, MARGIN = 90, 26, 16

STYLE = """
svg text { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; }
svg .run rect { fill: #f6f8fa; stroke: #57606a; rx: 6px; }
svg .run .name { font-size: 13px; font-weight: 600; fill: #1f2328; }
svg .run .method { font-size: 11px; fill: #59636e; }
svg .edge path { fill: none; stroke: #8c959f; stroke-width: 1.4px; marker-end: url(#arrow); }
svg .edge text { font-size: 10px; fill: #59636e; }
"""


def depths(graph: dict) -> dict[str, int]:
    """run → its column: 0 without input runs in ``graph``, else one more than its deepest input's."""
    found: dict[str, int] = {}

    def depth(run: str, path: tuple = ()) -> int:
        if run not in found:
            if run in path:  # not a config the workflow accepts; drawn rather than looping
                return 0
            parents = [other for others in graph[run]["inputs"].values() for other in others if other in graph]
            found[run] = 1 + max((depth(other, path + (run,)) for other in parents), default=-1)
        return found[run]

    for run in graph:
        depth(run)
    return found


def layout(graph: dict) -> dict[str, tuple[int, int]]:
    """run → (x, y) of its box's top-left corner: one column per depth, runs in config order down each column."""
    columns: dict[int, list[str]] = {}
    for run, column in depths(graph).items():
        columns.setdefault(column, []).append(run)
    return {
        run: (MARGIN + column * (BOX_WIDTH + COLUMN_GAP), MARGIN + row * (BOX_HEIGHT + ROW_GAP))
        for column, runs in columns.items()
        for row, run in enumerate(runs)
    }


def graph_svg(graph: dict) -> str:
    """The graph as an SVG element: a box per run (its name, and its method where that differs) and one arrow per
    input run, labelled with its roles. An arrow that skips columns passes below the boxes."""
    places = layout(graph)
    width = max((x for x, _ in places.values()), default=0) + BOX_WIDTH + MARGIN
    bottom = max((y for _, y in places.values()), default=0) + BOX_HEIGHT
    below = bottom + ROW_GAP  # where arrows that skip columns run
    edges, boxes, skips = [], [], 0
    for run, (x, y) in places.items():
        roles: dict[str, list[str]] = {}
        for role, others in graph[run]["inputs"].items():
            for other in others:
                if other in places and role not in roles.setdefault(other, []):
                    roles[other].append(role)
        for other, named in roles.items():
            label = ", ".join(named)
            x0, y0 = places[other][0] + BOX_WIDTH, places[other][1] + BOX_HEIGHT / 2
            x1, y1 = x, y + BOX_HEIGHT / 2
            if x1 - x0 > COLUMN_GAP + 1:  # it skips a column: down, along below the boxes, and up
                skips += 1
                low = below + (skips - 1) * 14
                path = f"M{x0:.0f},{y0:.0f} C{x0 + 60:.0f},{low:.0f} {x1 - 60:.0f},{low:.0f} {x1 - 2:.0f},{y1:.0f}"
                tx, ty = (x0 + x1) / 2, low - 4 - (low - max(y0, y1)) * 0.25
            else:
                middle = (x0 + x1) / 2
                path = f"M{x0:.0f},{y0:.0f} C{middle:.0f},{y0:.0f} {middle:.0f},{y1:.0f} {x1 - 2:.0f},{y1:.0f}"
                tx, ty = middle, (y0 + y1) / 2 - 4
            edges.append(
                f'<g class="edge"><path d="{path}"/><text x="{tx:.0f}" y="{ty:.0f}" '
                f'text-anchor="middle">{html.escape(label)}</text>'
                + "".join(
                    f"<title>{html.escape(other)} → {html.escape(run)} ({html.escape(role)})</title>" for role in named
                )
                + "</g>"
            )
        method = graph[run]["method"]
        name_y = y + (19 if method != run else 27)
        boxes.append(
            f'<g class="run" id="run-{html.escape(run, quote=True)}"><rect x="{x}" y="{y}" '
            f'width="{BOX_WIDTH}" height="{BOX_HEIGHT}"/><text class="name" x="{x + 10}" y="{name_y}">'
            f"{html.escape(run)}</text>"
            + (f'<text class="method" x="{x + 10}" y="{y + 35}">{html.escape(method)}</text>' if method != run else "")
            + "</g>"
        )
    height = (below + skips * 14 if skips else bottom) + MARGIN
    marker = (
        '<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" '
        'orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#8c959f"/></marker></defs>'
    )
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
        f'viewBox="0 0 {width:.0f} {height:.0f}" role="img" aria-label="the runs and their inputs">'
        f"{marker}{''.join(edges)}{''.join(boxes)}</svg>"
    )


def write_run_graph(graph: dict, path: str | os.PathLike) -> None:
    """Stage function: the page of the run graph.

    :param graph: run → ``{"method": name, "inputs": {role: [input runs]}}``, the report's runs in config order
        (:meth:`hardneg.pipeline.report_plan.ReportPlan.run_graph_runs`).
    :param path: the HTML page to write (atomically).
    """
    count = sum(len(others) for run in graph.values() for others in run["inputs"].values())
    body = (
        f'<h1>The runs of this report</h1>\n<p class="muted">{len(graph)} runs; an arrow goes from a run '
        f"to each run that takes it as an input ({count} inputs), labelled with the input's role.</p>\n"
        f'<div class="graph">{graph_svg(graph)}</div>'
    )
    write_text(path, page("The runs of this report", body, style=STYLE))
