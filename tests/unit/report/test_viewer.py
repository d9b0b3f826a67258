"""The hard-negative viewer: what it shows of each query (ranks, scores, margins, BM25, flags), the flagged queries
before the seeded sample, the query's words marked, the margin histogram drawn, escaped texts, same bytes twice; an
imported list's page (its source, grades and teacher scores, no ranks); and Markdown reports rendered as pages."""

import copy
import json
import re

import pytest
import yaml

from hardneg.errors import ConfigError, HardnegError
from hardneg.io import artifacts
from hardneg.mining.audit import audit_hard_negatives
from hardneg.pipeline.config import validate_config
from hardneg.report.pages import markdown_page
from hardneg.report.viewer import ViewerSettings, flagged_queries, sample_queries, viewer_queries, viewer_stage
from hardneg.report.viewer_page import highlighted, histogram_svg, query_terms, render_viewer
from tests.support import REPO
from tests.support.tables import BM25, HARDNEGS, POSITIVES, QRELS, RANKING, table

# The audit tests' world (q1: n1 outscores its best positive; q2: m3 ties it, its positive p3 unranked; q3: no
# negatives), with texts: n2 holds markup, m2 is an empty document.
CORPUS = table(artifacts.CORPUS, [
    ("p1", "Cats", "cats purr"), ("p2", "Kittens", "kittens  sleep\nall day"), ("p3", "Dogs", "dogs bark"),
    ("p4", "Fish", "fish swim"), ("n1", "Lions", "lions roar"),
    ("n2", "<script>alert('x')</script>", "tags & <b>bold</b> words"), ("n3", "Tigers", "tigers hunt"),
    ("m1", "Wolves", "wolves howl"), ("m2", "", "  "), ("m3", "Foxes", "foxes hide"),
])
QUERIES = table(artifacts.QUERIES, [("q1", "do cats purr <loudly>"), ("q2", "barking dogs"), ("q3", "swimming fish"),
                                    ("q4", "nothing relevant")])
DEPTH = 3


@pytest.fixture(scope="module")
def audited():
    return audit_hard_negatives(HARDNEGS, RANKING, QRELS, POSITIVES, BM25, depth=DEPTH, empty_docids=["m2"])


@pytest.fixture(scope="module")
def audit(audited):
    return audited[1]


def _queries(audit, qids=("q1", "q2", "q3"), negatives=2, bm25=BM25):
    return viewer_queries(list(qids), queries=QUERIES, qrels=QRELS, hardnegs=HARDNEGS, positives=POSITIVES,
                          audit=audit, corpus=CORPUS, mining_ranking=RANKING, bm25_ranking=bm25, depth=DEPTH,
                          negatives=negatives, snippet_chars=80)


def test_what_each_query_shows(audit):
    q1, q2, q3 = _queries(audit)
    assert q1["text"] == "do cats purr <loudly>" and q1["best_positive_rank"] == 2 and q1["num_negatives"] == 3
    assert q1["suspected_false_negatives"] == 1 and q1["bm25_overlap"] == pytest.approx(2 / 3)
    # positives: relevance first; rank in the mining run and score under the mining model
    assert [(p["docid"], p["relevance"], p["rank"], p["score"]) for p in q1["positives"]] == \
        [("p2", 2, 5, 5.0), ("p1", 1, 2, 8.0)]
    assert q1["positives"][0]["snippet"] == "Kittens — kittens sleep all day"
    # the 2 best-ranked negatives: margin to the best positive (8.0), BM25's top 3, the flag at margin >= 0
    assert [(n["rank"], n["docid"], n["margin"], n["in_bm25"], n["suspected"]) for n in q1["negatives"]] == \
        [(1, "n1", 1.0, True, True), (3, "n2", -0.5, False, False)]
    assert [(p["docid"], p["rank"], p["score"]) for p in q2["positives"]] == [("p3", None, 3.5)]
    assert [(n["docid"], n["margin"], n["suspected"]) for n in q2["negatives"]] == \
        [("m1", 0.5, True), ("m3", 0.0, True)]  # a tie is suspected, as in the audit
    assert q3["negatives"] == [] and q3["positives"][0]["rank"] == 1
    empty = _queries(audit, ["q2"], negatives=3)[0]["negatives"][2]
    assert empty["docid"] == "m2" and empty["empty"] and empty["snippet"] == "(empty document)"
    assert all(n["in_bm25"] is None for n in _queries(audit, ["q1"], bm25=None)[0]["negatives"])


def test_the_sample_is_seeded_and_keeps_the_order():
    qids = [f"q{i}" for i in range(100)]
    first = sample_queries(qids, 10, seed=3)
    assert first == sample_queries(qids, 10, seed=3) and len(set(first)) == 10
    assert first == sorted(first, key=qids.index)
    assert first != sample_queries(qids, 10, seed=4)
    assert sample_queries(qids[:5], 10, seed=3) == qids[:5]  # fewer than asked: all of them


def test_every_text_is_escaped(audit):
    page = render_viewer(_queries(audit, negatives=3), run="star<x>", miner="warmup", split="train", depth=DEPTH,
                         seed=1, num_training_queries=3, with_bm25=True, audit_markdown="| a |\n|---|\n| <i>b</i> |\n")
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in page  # the document's markup, as text
    assert "tags &amp; &lt;b&gt;bold&lt;/b&gt; words" in page
    assert "do cats purr &lt;loudly&gt;" in page and "star&lt;x&gt;" in page
    assert "&lt;i&gt;b&lt;/i&gt;" in page  # raw HTML inside the audit's Markdown too
    assert page.count("<script") == 1  # the viewer's own filter script, nothing else
    assert not re.search(r"(src|href)=\"(https?:)?//", page)  # nothing loaded from elsewhere


def _write_inputs(root, audit):
    paths = {}
    for name, kind, data in (("hardnegs", artifacts.HARDNEGS, HARDNEGS), ("positives", artifacts.POSITIVE_SCORES,
                             POSITIVES), ("audit", artifacts.AUDIT, audit), ("ranking", artifacts.RANKING, RANKING),
                             ("bm25", artifacts.RANKING, BM25), ("corpus", artifacts.CORPUS, CORPUS),
                             ("queries", artifacts.QUERIES, QUERIES), ("qrels", artifacts.QRELS, QRELS)):
        paths[name] = root / f"{name}.parquet"
        artifacts.write_table(data, kind, paths[name])
    summary = audit_hard_negatives(HARDNEGS, RANKING, QRELS, POSITIVES, BM25, depth=DEPTH, empty_docids=["m2"])[0]
    paths["audit_json"] = root / "audit.json"
    paths["audit_json"].write_text(json.dumps(summary))
    return paths


SETTINGS = {"queries": 2, "negatives": 1, "snippet_chars": 40, "positive_rank": 10, "flagged": 500}


def _stage_paths(paths):
    """The stage's input paths (a mined list's, with its BM25 reference) from :func:`_write_inputs`."""
    return dict(hardnegs_path=paths["hardnegs"], positives_path=paths["positives"], audit_path=paths["audit"],
                audit_summary_path=paths["audit_json"], mining_ranking_path=paths["ranking"], corpus_path=paths["corpus"],
                queries_path=paths["queries"], qrels_path=paths["qrels"], bm25_ranking_path=paths["bm25"])


def _stage(paths, output, **settings):
    return viewer_stage("star", **_stage_paths(paths), output_path=output, miner="warmup", split="train", depth=DEPTH,
                        seed=7, settings={**SETTINGS, **settings})


def test_the_flagged_queries_come_first_then_the_sample(audit, tmp_path):
    # q1: a suspected false negative, best positive at rank 2; q2: two suspects, its positive beyond the depth;
    # q3: no negatives, its positive at rank 1
    assert flagged_queries(audit, positive_rank=10, depth=DEPTH, limit=500) == (
        [("q2", "2 suspected false negatives; no positive in the top 3 of the mining ranking"),
         ("q1", "1 suspected false negative")], 2)
    assert flagged_queries(audit, positive_rank=1, depth=DEPTH, limit=1) == (
        [("q2", "2 suspected false negatives; no positive in the top 3 of the mining ranking")], 2)
    paths = _write_inputs(tmp_path, audit)
    assert _stage(paths, tmp_path / "a.html") == 3  # the two flagged, then a sample of the one other
    page = (tmp_path / "a.html").read_text()
    sections = re.findall(r'<section class="query" id="q-(\w+)" data-suspected="(\d+)" data-flagged="(\d)">', page)
    assert sections == [("q2", "2", "1"), ("q1", "1", "1"), ("q3", "0", "0")]
    assert page.count('<p class="why">⚑ flagged: ') == 2
    assert page.count("Top 1 of 3 mined negatives</h3>") == 2
    assert page.count('<tr class="suspect">') == 2  # their best-ranked negatives outscore
    assert "<h1>Hard-negative audit</h1>" in page and "<h2>Margins of the mined negatives</h2>" in page
    assert page.count('<rect class="bar') == 10 and "#####" not in page  # drawn, not ASCII
    _stage(paths, tmp_path / "b.html")
    assert (tmp_path / "a.html").read_bytes() == (tmp_path / "b.html").read_bytes()
    assert _stage(paths, tmp_path / "none.html", flagged=0, queries=1) == 1  # no flagged queries asked for


def test_the_query_words_are_marked_in_the_texts(audit):
    assert query_terms("Do cats purr <loudly> at the cats?") == ["loudly", "cats", "purr"]
    assert highlighted("Cats <b>purr</b>; bobcats too", ["cats", "purr"]) == \
        "<mark>Cats</mark> &lt;b&gt;<mark>purr</mark>&lt;/b&gt;; bobcats too"  # whole words, escaped
    page = render_viewer(_queries(audit, ["q1"], negatives=3), run="star", miner="warmup", split="train",
                         depth=DEPTH, seed=1, num_training_queries=3, with_bm25=True)
    assert "<mark>Cats</mark> — <mark>cats</mark> <mark>purr</mark>" in page


def test_the_margin_histogram_is_drawn(audited):
    svg = histogram_svg(audited[0]["margin"]["histogram"])
    counts = audited[0]["margin"]["histogram"]["counts"]
    bars = re.findall(r'<rect class="bar( above)?"[^>]*height="([\d.]+)"', svg)
    assert len(bars) == len(counts) and max(float(h) for _, h in bars) == pytest.approx(134.0)  # 190 - 34 - 22
    edges = audited[0]["margin"]["histogram"]["edges"]
    assert [bool(a) for a, _ in bars] == [edges[i + 1] >= 0 for i in range(len(counts))]  # red from margin 0
    assert histogram_svg({"edges": [], "counts": []}) == ""


def test_settings_come_from_the_config_section():
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    filled = validate_config(copy.deepcopy(config))["viewer"]
    assert ViewerSettings.from_config(filled) == ViewerSettings(queries=100, negatives=20, snippet_chars=300,
                                                                positive_rank=10, flagged=500)
    with pytest.raises(ConfigError, match="viewer.querie"):
        validate_config({**copy.deepcopy(config), "viewer": {"querie": 5}})
    with pytest.raises(ConfigError) as error:
        ViewerSettings.from_config({**filled, "extra": 1})
    assert error.value.key == "viewer.extra"


def test_markdown_page(tmp_path):
    (tmp_path / "m.md").write_text("# PQ matrix\n\n| train \\ eval | Flat |\n|---|---|\n| Flat | 0.35 |\n\n<b>x</b>\n")
    markdown_page(tmp_path / "m.md", tmp_path / "m.html", "A <title>")
    page = (tmp_path / "m.html").read_text()
    assert "<title>A &lt;title&gt;</title>" in page and "<h1>PQ matrix</h1>" in page
    assert "<th>train \\ eval</th>" in page and "<td>0.35</td>" in page and "&lt;b&gt;x&lt;/b&gt;" in page


def test_a_negative_that_duplicates_a_positive_is_flagged_with_the_positive():
    pool = table(artifacts.CANDIDATES, [("q1", "n2", 3, 7.5, 8.0, None, None, None, None, "p1", "near")])
    audit = audit_hard_negatives(HARDNEGS, RANKING, QRELS, POSITIVES)[1]
    shown = viewer_queries(["q1"], queries=QUERIES, qrels=QRELS, hardnegs=HARDNEGS, positives=POSITIVES, audit=audit,
                           corpus=CORPUS, mining_ranking=RANKING, bm25_ranking=None, depth=200, negatives=10, snippet_chars=80,
                           pool=pool)
    duplicates = {n["docid"]: n["duplicate"] for n in shown[0]["negatives"]}
    assert duplicates["n2"] == "p1 (near)" and duplicates["n1"] is None


# An imported list of the same world: the file's teacher scores (none for q2's negatives, so no margins there), its
# grades (q1's p2 graded 3 where the qrels say 2) and a positive the qrels do not judge (q1's p4).
IMPORTED_NEGATIVES = table(artifacts.HARDNEGS, [("q1", "n1", 1, 0.9), ("q1", "n2", 2, 0.1), ("q1", "n3", 3, None),
                                                ("q2", "m1", 1, None), ("q2", "m3", 2, None), ("q2", "m2", 3, None)])
IMPORTED_POSITIVES = table(artifacts.POSITIVE_SCORES, [("q1", "p1", 1, 0.8), ("q1", "p2", 3, 0.5),
                                                       ("q1", "p4", 2, None), ("q2", "p3", 1, None)])


def test_an_imported_list_shows_its_source_grades_and_teacher_scores(tmp_path):
    from hardneg.imports.card import build_import_card

    summary, audit = audit_hard_negatives(IMPORTED_NEGATIVES, None, QRELS, IMPORTED_POSITIVES, BM25, depth=DEPTH,
                                          empty_docids=["m2"])
    paths = _write_inputs(tmp_path, audit)
    for name, kind, data in (("hardnegs", artifacts.HARDNEGS, IMPORTED_NEGATIVES),
                             ("positives", artifacts.POSITIVE_SCORES, IMPORTED_POSITIVES)):
        artifacts.write_table(data, kind, paths[name])
    paths["audit_json"].write_text(json.dumps(summary))
    source = tmp_path / "<b>mined<b> & elsewhere.jsonl"  # a hostile file name, shown as text
    source.write_text('{"query_id": "q1"}\n')
    card = build_import_card(source=source, fmt="tevatron", shape="v1", separator="[SEP]",
                             counts={"rows": 2, "queries": 2, "negatives": 6, "negatives_scored": 2, "positives": 4,
                                     "positives_scored": 2, "positives_not_judged": 1,
                                     "negatives_judged_relevant": 0},
                             dataset="toy", split="train", inputs={"positives": paths["positives"]},
                             hardnegs=paths["hardnegs"], run="star<i>")
    (tmp_path / "card.json").write_text(json.dumps(card))
    shown = viewer_stage("star<i>", **{**_stage_paths(paths), "mining_ranking_path": None},
                         card_path=tmp_path / "card.json", output_path=tmp_path / "v.html", miner=None,
                         split="train", depth=DEPTH, seed=7, settings=dict(SETTINGS, negatives=3))
    page = (tmp_path / "v.html").read_text()
    # flagged for a suspected false negative only: q2's positive has no rank, and that flags nothing here
    assert shown == 3 and re.findall(r'id="q-(\w+)" data-suspected="(\d+)" data-flagged="(\d)"', page) == \
        [("q1", "1", "1"), ("q2", "0", "0"), ("q3", "0", "0")]
    assert "best positive below rank" not in page and "Mined by run" not in page and "no positive in the top" not in page
    assert ("Imported with <code>hardneg import</code> from <code>" + str(tmp_path) + "/&lt;b&gt;mined&lt;b&gt; &amp; "
            f"elsewhere.jsonl</code> (tevatron, v1; SHA-256 <code>{card['import']['source']['sha256'][:16]}</code>…)"
            in page)
    assert "6 negatives of 2 queries, 2 with the file's teacher score" in page
    assert "<code>hardneg verify star&lt;i&gt;</code>" in page and page.count("<script") == 1
    assert "<b>mined" not in page and "<i>" not in page
    assert page.count("Top 3 of 3 imported negatives</h3>") == 2 and "<h2>Margins of the imported negatives</h2>" in page
    # positives: no rank column; the file's grades, its positive the qrels do not judge marked; teacher scores
    q1 = page[page.index('id="q-q1"'):page.index('id="q-q2"')]
    assert '<tr><th>docid</th><th class="num">relevance</th><th class="num">score</th>' in q1
    assert re.findall(r"<tr><td>(p\d)</td><td class=\"num\">([^<]*)</td><td class=\"num\">([^<]*)</td>", q1) == \
        [("p2", "3", "0.5000"), ("p4", "2 · not in the qrels", "–"), ("p1", "1", "0.8000")]
    # negatives: the file's rank and score (– without one, and then no margin)
    assert re.findall(r'<td class="num">(\d)</td><td>(n\d)</td><td class="num">([^<]*)</td><td class="num">([^<]*)'
                      r"</td>", q1) == [("1", "n1", "0.9000", "+0.1000"), ("2", "n2", "0.1000", "−0.7000"),
                                        ("3", "n3", "–", "–")]
    mining_card = tmp_path / "mining_card.json"  # a card without an import section: not an imported list's
    mining_card.write_text(json.dumps({k: v for k, v in card.items() if k not in ("import", "kind")}))
    with pytest.raises(HardnegError, match="mining_card.json: not the card of an imported list"):
        viewer_stage("star", **_stage_paths(paths), card_path=mining_card, output_path=tmp_path / "x.html",
                     miner=None, split="train", depth=DEPTH, seed=7, settings=SETTINGS)
    assert not (tmp_path / "x.html").exists()
