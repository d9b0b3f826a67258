"""The Snakemake report, opened as a user would: on a tiny config that mines hard negatives, the runs are built
first (as `make run` builds its target), then `make report`'s two commands build the report without training
anything; Debian's chromium, headless, loads it, follows the front page's link to the summary (one click) and opens
every item the report holds, whatever they are (found in the report's own data, not listed here): images must load,
HTML pages (the hard-negative viewer, the summary table, the graph of the runs, ...) must render in their frame with
no column cut off, other files must download intact, every item has a caption rendered as written, and no script
error may occur on the way. Screenshots of the report and of each item are saved under the test's temporary folder
(their paths are printed).

chromium is installed by `make test` (as root, with apt-get); without it this test fails under CI and is skipped
elsewhere, as the SciFact tests are."""

import base64
import json
import re
from pathlib import Path

import pytest

from tests.support.browser import Chromium
from tests.support.configs import TINY_DENSE
from tests.support.workflow import dry_run, output_of, snakemake, write_config

pytestmark = pytest.mark.slow

TINY = {**TINY_DENSE, "search": {"top_k": 50}}
# BM25, a warm-up (evaluated on dev at every step) that mines STAR's hard negatives, STAR, and the hybrid of BM25
# and the warm-up. The report's runs: STAR and the hybrid, and the runs behind them (the warm-up, BM25); its
# summary, the graph of those runs, STAR's hard-negative viewer, and the figures this config can draw of them
# (pairwise errors, the training curve, the hybrid's alpha). The summary's second group names a run outside the
# report (inbatch, defined but never built): it is left out, with a line.
REPORT_RUNS = ["star", "hybrid"]
CONFIG = {
    "seed": 4,
    "dataset": "tiny",
    "targets": ["bm25", "warmup", "results/star/hardnegs_viewer.html"],
    "report": {"runs": REPORT_RUNS},
    "viewer": {"queries": 12, "negatives": 8},
    "summary": {"groups": [{"marker": "†", "label": "BM25", "runs": ["bm25"]},
                           {"marker": "‡", "label": "in-batch", "runs": ["inbatch"]}]},
    "figures": {"pairwise_errors": {"runs": ["bm25", "warmup"]}, "training_curves": {"runs": ["warmup"]},
                "hybrid_alpha": {"run": "hybrid"}},
    "datasets": {"tiny": {"adapter": "synthetic", "num_docs": 200, "docs_per_cluster": 20, "concept_vocab": 150,
                          "num_queries": {"train": 60, "dev": 20, "test": 20}}},
    "runs": {
        "bm25": {"method": "bm25", "params": {"top_k": 50}},
        "warmup": {"method": "warmup", "inputs": {"negatives": "bm25"},
                   "params": {**TINY, "train": {**TINY["train"], "dev_every": 1}}},
        "star": {"method": "star", "inputs": {"init": "warmup", "negatives": "warmup", "bm25": "bm25"},
                 "params": {**TINY, "mining": {"depth": 30}}},
        "inbatch": {"method": "inbatch", "params": TINY},
        "hybrid": {"method": "hybrid", "inputs": {"runs": ["bm25", "warmup"]},
                   "params": {"alpha_grid": [0, 0.1, 1], "tune": {"split": "dev"}}},
    },
}
# What `make report` may run once the report's runs are built: evaluations (with the searches of the evaluation
# split by runs whose models and indexes exist), pages and figures; nothing that trains, encodes the corpus, builds
# an index or mines.
PAGE_RULES = {"report", "evaluate", "bm25_search", "dense_search", "run_graph", "summary", "training_time_table",
              "markdown_page", "compare"}
SHOWN_IN_PLACE = {"image/png": "img", "image/jpeg": "img", "image/svg+xml": "img", "text/html": "html",
                  "application/pdf": "pdf"}  # what Snakemake's report displays itself; it offers the rest to download
# The eye button of Snakemake's report, which shows (or downloads) a result: found by its icon.
EYE_BUTTONS = ("(() => { const eye = new Icon({}).paths['eye'][0].path; return Array.from("
               "document.querySelectorAll('a[type=button]')).filter(a => a.querySelector(`path[d=\"${eye}\"]`)); })()")
BROKEN_IMAGES = ("Array.from(document.images).filter(i => i.complete && i.naturalWidth === 0)"
                 ".map(i => i.src.slice(0, 100))")


@pytest.fixture(scope="module")
def built(builds) -> Path:
    """The runs built (as `make run` builds its target), then `make report`'s two commands: the report target,
    then the report. The report target's dry run and message are kept beside them."""
    def make(workdir):
        write_config(workdir, CONFIG)
        build = snakemake(workdir, *[f"results/{run}/metrics.json" for run in REPORT_RUNS])
        assert build.returncode == 0, build.stderr[-4000:]
        plan, jobs = dry_run(workdir, "report")
        assert plan.returncode == 0, output_of(plan)[-4000:]
        (workdir / "report_jobs.json").write_text(json.dumps(jobs))
        target = snakemake(workdir, "report")
        assert target.returncode == 0, target.stderr[-4000:]
        (workdir / "report_target.log").write_text(output_of(target))
        report = snakemake(workdir, "report", "--report", "results/report.html")
        assert report.returncode == 0, report.stderr[-4000:]

    return builds.build("workflow_report", make)[0]


def test_the_report_target_after_the_runs_makes_only_pages_and_figures(built):
    jobs = json.loads((built / "report_jobs.json").read_text())
    rules = {job["rule"] for job in jobs}
    assert "run_graph" in rules and "summary" in rules
    assert {rule for rule in rules if not rule.startswith("figure_")} <= PAGE_RULES, rules
    message = next(job["message"] for job in jobs if job["rule"] == "report")
    assert message.startswith("the report of runs bm25, warmup, star, hybrid; left out: ")
    assert "summary group ‡ in-batch: inbatch not in the summary, left out" in message
    assert message in (built / "report_target.log").read_text()  # one line on the terminal
    summary = (built / "results" / "summary.md").read_text()
    assert "| inbatch" not in summary
    assert "- ‡ in-batch (inbatch): no run of this group is in the summary; it marks nothing" in summary


def test_after_make_run_the_report_of_the_default_config_trains_nothing(main_run):
    """`make report` after `make run`: the default config's report (adore_star and the runs behind it) asks only
    for evaluations (warm-up's and STAR's test queries searched with their built indexes), pages and figures."""
    plan, jobs = dry_run(main_run, "report", snakefile=None)
    assert plan.returncode == 0, output_of(plan)[-3000:]
    rules = {job["rule"] for job in jobs}
    assert {"report", "run_graph", "summary"} <= rules
    assert {rule for rule in rules if not rule.startswith("figure_")} <= PAGE_RULES, rules
    message = next(job["message"] for job in jobs if job["rule"] == "report")
    assert message.startswith("the report of runs bm25, warmup, star, adore_star; left out: ")


def test_the_report_builds_with_the_viewer_and_live_curves_beside_training(built):
    report = (built / "results" / "report.html").read_text()
    assert "var results = " in report and "results/star/hardnegs_viewer.html" in report
    for item in ("results/summary.html", "results/tables/training_time.html", "results/figures/pairwise_errors.png",
                 "results/figures/training_curves.png", "results/figures/hybrid_alpha.png", "results/run_graph.html"):
        assert item in report, item
    viewer = (built / "results" / "star" / "hardnegs_viewer.html").read_text()
    flagged = viewer.count('data-flagged="1"')  # first, then 12 sampled others (viewer.queries), of 60
    assert flagged and viewer.count('<section class="query"') == flagged + min(12, 60 - flagged)
    assert list((built / "results" / "warmup" / "tensorboard").glob("events.out.tfevents.*"))


def _report_data(browser: Chromium) -> tuple[dict, dict]:
    data = json.loads(browser.evaluate(
        "JSON.stringify({categories, results: Object.fromEntries(Object.entries(results).map(([path, r]) => "
        "[path, {mime: r.mime_type, caption: r.caption, size: r.size}]))})"))
    return data["results"], data["categories"]


def _frame_of(browser: Chromium, data_uri: str) -> str:
    """The id of the frame showing ``data_uri`` (the report shows HTML and PDF results in an iframe)."""
    for _ in range(100):
        frame = next((f["id"] for f in browser.frames() if f["url"] == data_uri), None)
        if frame is not None:
            return frame
        browser.pump(0.1)
    raise AssertionError("the result's frame never appeared")


# What sticks out of a page shown in the report's frame: the page itself wider than the frame, or a table (or the
# graph of the runs) whose right edge lies beyond it and that cannot be scrolled to.
CUT_OFF = ("(() => { const width = document.documentElement.clientWidth; const out = [];"
           " if (document.documentElement.scrollWidth > width + 1) out.push('page ' +"
           " document.documentElement.scrollWidth + ' > ' + width);"
           " for (const t of document.querySelectorAll('table, svg')) { const box = t.closest('.scroll') || t;"
           " const scrolls = box !== t && getComputedStyle(box).overflowX === 'auto';"
           " if (!scrolls && t.getBoundingClientRect().right > width + 1) out.push(t.tagName + ' ' +"
           " Math.round(t.getBoundingClientRect().right) + ' > ' + width); } return out; })()")
SECTIONS = "Array.from(document.querySelectorAll('section.query'))"
SHOWN = f"{SECTIONS}.filter(s => s.getClientRects().length > 0).map(s => s.id)"  # laid out, i.e. not hidden


def _check_viewer(browser: Chromium, frame: str, path: str) -> None:
    """The hard-negative viewer: queries with their tables, and its two filters (words, suspected false negatives)
    show exactly the queries they should."""
    every = browser.evaluate(f"{SECTIONS}.map(s => s.id)", frame=frame)
    assert every, f"{path}: no query shown"
    assert browser.evaluate(f"{SECTIONS}.every(s => s.querySelectorAll('table').length >= 1)", frame=frame)
    assert browser.evaluate(SHOWN, frame=frame) == every
    words = browser.evaluate("document.querySelector('section.query h2').textContent", frame=frame).split()[:2]
    term = " ".join(words)  # the first query's id and first word
    matching = browser.evaluate(f"{SECTIONS}.filter(s => {json.dumps(term.lower().split())}.every(w => "
                                f"s.textContent.toLowerCase().includes(w))).map(s => s.id)", frame=frame)
    assert every[0] in matching
    typed = browser.evaluate(f"(() => {{ const box = document.getElementById('search'); box.value = {json.dumps(term)};"
                             f" box.dispatchEvent(new Event('input')); return {SHOWN}; }})()", frame=frame)
    assert typed == matching
    assert browser.evaluate("document.getElementById('count').textContent", frame=frame) == \
        f"{len(matching)} of {len(every)} queries shown"
    flagged = browser.evaluate(f"(() => {{ const box = document.getElementById('search'); box.value = '';"
                               f" box.dispatchEvent(new Event('input')); document.getElementById('suspects').click();"
                               f" return {SHOWN}; }})()", frame=frame)
    assert flagged == browser.evaluate(f"{SECTIONS}.filter(s => s.dataset.suspected !== '0').map(s => s.id)",
                                       frame=frame)
    browser.evaluate("document.getElementById('suspects').click()", frame=frame)
    assert browser.evaluate(SHOWN, frame=frame) == every
    marked = browser.evaluate(f"{SECTIONS}.filter(s => s.dataset.flagged === '1').map(s => s.id)", frame=frame)
    assert every[:len(marked)] == marked  # the flagged queries come first
    only = browser.evaluate(f"(() => {{ document.getElementById('flagged').click(); return {SHOWN}; }})()",
                            frame=frame)
    assert only == marked
    browser.evaluate("document.getElementById('flagged').click()", frame=frame)
    assert browser.evaluate("document.querySelectorAll('svg.histogram rect.bar').length", frame=frame) > 0


def _open_item(browser: Chromium, workdir: Path, path: str, item: dict, category: str) -> dict:
    """Open one result as a user does (its entry, then its eye button) and check it shows; returns what it showed."""
    browser.evaluate(f"app.showResultInfo({json.dumps(path)})")
    browser.wait(f"{EYE_BUTTONS}.length === 1", what=f"the view button of {path}")
    data_uri = browser.evaluate(f"results[{json.dumps(path)}].data_uri")
    kind = SHOWN_IN_PLACE.get(item["mime"])
    if kind is None:  # offered for download: the link must hold the file's exact bytes
        href = browser.evaluate(f"{EYE_BUTTONS}[0].getAttribute('href')")
        assert href == data_uri and base64.b64decode(href.split("base64,", 1)[1]) == (workdir / path).read_bytes()
        return {"kind": "download", "tables": 0}
    browser.evaluate(f"{EYE_BUTTONS}[0].click()")
    if kind == "img":
        browser.wait(f"Array.from(document.images).some(i => i.src === {json.dumps(data_uri)} && i.complete)",
                     what=f"the image {path}")
        width = browser.evaluate(f"Array.from(document.images).find(i => i.src === {json.dumps(data_uri)})"
                                 ".naturalWidth")
        assert width > 0, f"{path}: the image does not load"
        return {"kind": "img", "tables": 0}
    frame = _frame_of(browser, data_uri)
    if kind == "pdf":
        return {"kind": "pdf", "tables": 0}
    browser.wait("document.readyState === 'complete' && document.body && document.body.innerText.trim().length > 0",
                 frame=frame, what=f"the page {path}")
    assert browser.evaluate(BROKEN_IMAGES, frame=frame) == [], path
    assert browser.evaluate(CUT_OFF, frame=frame) == [], f"{path}: cut off in the report's frame"
    tables = browser.evaluate("document.querySelectorAll('table').length", frame=frame)
    if category == "Hard negatives":
        _check_viewer(browser, frame, path)
    return {"kind": "html", "tables": tables}


def test_every_item_of_the_report_renders_in_a_headless_browser(built, chromium, tmp_path):
    shots = tmp_path / "screenshots"
    shots.mkdir()
    saved = []
    with Chromium(chromium, tmp_path / "profile") as browser:
        browser.open(built / "results" / "report.html")
        browser.wait("typeof app !== 'undefined' && document.querySelector('#app').children.length > 0",
                     what="the report's application")
        browser.pump(1.0)
        assert browser.evaluate(BROKEN_IMAGES) == []
        saved.append(browser.screenshot(shots / "report.png"))

        items, categories = _report_data(browser)
        assert items, "the report holds no result"
        category_of = {path: category for category, subcategories in categories.items()
                       for paths in subcategories.values() for path in paths}
        assert set(category_of) == set(items)  # every result is listed under a category
        assert {"Hard negatives", "Summary", "Figures"} <= set(categories)  # viewer, summary, figures
        shown = {}
        for index, path in enumerate(sorted(items)):
            item = items[path]
            assert re.sub(r"<[^>]+>", "", item["caption"]).strip(), f"{path} has no caption"
            assert "mailto:" not in item["caption"], f"{path}: its caption's text became a link"
            shown[path] = _open_item(browser, built, path, item, category_of[path])
            browser.pump(0.3)
            assert browser.evaluate(BROKEN_IMAGES) == [], path
            saved.append(browser.screenshot(shots / f"{index:02d}-{Path(path).name}.png"))
            assert browser.errors == [], f"script errors while opening {path}: {browser.errors}"
        # the summary table is shown in the report, not only offered for download; every figure is an image
        assert shown["results/summary.html"]["kind"] == "html" and shown["results/summary.html"]["tables"], shown
        assert all(shown[p]["kind"] == "img" for p in items if category_of[p] == "Figures"), shown
        assert browser.errors == []
    print("report screenshots:", *saved, sep="\n  ")
    assert all(path.stat().st_size > 10_000 for path in saved)  # a blank viewport compresses to far less


def test_the_browser_check_sees_script_errors_and_broken_images(chromium, tmp_path):
    """What the report test relies on: errors in a frame's script and broken images do not go unnoticed."""
    inner = base64.b64encode(b"<p>inner</p><script>console.error('inner failure')</script>").decode()
    page = tmp_path / "page.html"
    page.write_text("<!doctype html><p>outer</p><img src='missing.png'>"
                    f"<iframe src='data:text/html;base64,{inner}'></iframe>"
                    "<script>setTimeout(() => { throw new Error('outer failure'); }, 10);</script>")
    with Chromium(chromium, tmp_path / "profile") as browser:
        browser.open(page)
        browser.pump(1.0)
        assert browser.evaluate(BROKEN_IMAGES) == [(tmp_path / "missing.png").as_uri()]
        assert any("outer failure" in error for error in browser.errors), browser.errors
        assert any("inner failure" in error for error in browser.errors), browser.errors
        frame = _frame_of(browser, f"data:text/html;base64,{inner}")
        assert browser.evaluate("document.querySelector('p').textContent", frame=frame) == "inner"


def test_the_summary_is_one_click_from_the_front_page(built, chromium, tmp_path):
    with Chromium(chromium, tmp_path / "profile") as browser:
        browser.open(built / "results" / "report.html")
        browser.wait("typeof app !== 'undefined' && document.querySelector('#app').children.length > 0",
                     what="the report's application")
        links = "Array.from(document.querySelectorAll('a')).filter(a => a.textContent === 'the summary table')"
        browser.wait(f"{links}.length === 1", what="the front page's link to the summary")
        browser.evaluate(f"{links}[0].click()")  # the one click
        frame = _frame_of(browser, browser.evaluate("results['results/summary.html'].data_uri"))
        browser.wait("document.readyState === 'complete' && document.querySelectorAll('table').length > 0",
                     frame=frame, what="the summary table")
        header = browser.evaluate("Array.from(document.querySelector('table').rows[0].cells).map(c => c.textContent)",
                                  frame=frame)
        assert header[0] == "run" or "run" in header[0].lower(), header
        assert browser.evaluate(CUT_OFF, frame=frame) == []
        rows = browser.evaluate("Array.from(document.querySelector('table').rows).slice(1).map(r => r.cells[0]"
                                ".textContent.trim())", frame=frame)
        assert [row.split()[0] for row in rows] == ["bm25", "warmup", "star", "hybrid"], rows
        graph = "results/run_graph.html"
        browser.open(built / "results" / "report.html")  # the front page again
        browser.wait("typeof app !== 'undefined' && document.querySelector('#app').children.length > 0",
                     what="the report's application")
        links = "Array.from(document.querySelectorAll('a')).filter(a => a.textContent === 'the graph of the runs')"
        browser.wait(f"{links}.length === 1", what="the front page's link to the graph of the runs")
        browser.evaluate(f"{links}[0].click()")
        frame = _frame_of(browser, browser.evaluate(f"results[{json.dumps(graph)}].data_uri"))
        browser.wait("document.readyState === 'complete' && document.querySelector('svg') !== null", frame=frame,
                     what="the graph of the runs")
        boxes = browser.evaluate("Array.from(document.querySelectorAll('g.run .name')).map(t => t.textContent)",
                                 frame=frame)
        assert boxes == ["bm25", "warmup", "star", "hybrid"]
        roles = browser.evaluate("Array.from(document.querySelectorAll('g.edge title')).map(t => t.textContent)",
                                 frame=frame)
        assert sorted(roles) == sorted(["bm25 → warmup (negatives)", "warmup → star (init)",
                                        "warmup → star (negatives)", "bm25 → star (bm25)", "bm25 → hybrid (runs)",
                                        "warmup → hybrid (runs)"]), roles
        assert browser.errors == []
