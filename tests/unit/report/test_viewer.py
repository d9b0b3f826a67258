"""The hard-negative viewer: what it shows of each query (ranks, scores, margins, BM25, flags), the seeded sample,
escaped texts, same bytes twice; and Markdown reports rendered as pages."""

import copy
import re

import pytest
import yaml

from hardneg.errors import ConfigError
from hardneg.io import artifacts
from hardneg.mining.audit import audit_hard_negatives
from hardneg.pipeline.config import validate_config
from hardneg.report.pages import markdown_page
from hardneg.report.viewer import ViewerSettings, render_viewer, sample_queries, viewer_queries, viewer_stage
from tests.support import REPO
from tests.support.tables import BM25, HARDNEGS, POSITIVES, QRELS, RUN, table

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
def audit():
    return audit_hard_negatives(HARDNEGS, RUN, QRELS, POSITIVES, BM25, depth=DEPTH, empty_docids=["m2"])[1]


def _queries(audit, qids=("q1", "q2", "q3"), negatives=2, bm25=BM25):
    return viewer_queries(list(qids), queries=QUERIES, qrels=QRELS, hardnegs=HARDNEGS, positives=POSITIVES,
                          audit=audit, corpus=CORPUS, mining_run=RUN, bm25_run=bm25, depth=DEPTH,
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
                             POSITIVES), ("audit", artifacts.AUDIT, audit), ("run", artifacts.RUN, RUN),
                             ("bm25", artifacts.RUN, BM25), ("corpus", artifacts.CORPUS, CORPUS),
                             ("queries", artifacts.QUERIES, QUERIES), ("qrels", artifacts.QRELS, QRELS)):
        paths[name] = root / f"{name}.parquet"
        artifacts.write_table(data, kind, paths[name])
    paths["audit_md"] = root / "audit.md"
    paths["audit_md"].write_text("# Hard-negative audit\n\n| | value |\n|---|---|\n| negatives | 7 |\n")
    return paths


def _stage(paths, output, **settings):
    return viewer_stage("star", hardnegs_path=paths["hardnegs"], positives_path=paths["positives"],
                        audit_path=paths["audit"], audit_markdown_path=paths["audit_md"], mining_run_path=paths["run"],
                        corpus_path=paths["corpus"], queries_path=paths["queries"], qrels_path=paths["qrels"],
                        output_path=output, bm25_run_path=paths["bm25"], miner="warmup", split="train", depth=DEPTH,
                        seed=7, settings={"queries": 2, "negatives": 1, "snippet_chars": 40, **settings})


def test_stage_writes_one_section_per_sampled_query(audit, tmp_path):
    paths = _write_inputs(tmp_path, audit)
    assert _stage(paths, tmp_path / "a.html") == 2
    page = (tmp_path / "a.html").read_text()
    sections = re.findall(r'<section class="query" id="q-(\w+)" data-suspected="(\d+)">', page)
    assert len(sections) == 2 and set(sections) <= {("q1", "1"), ("q2", "2"), ("q3", "0")}
    shown = {qid for qid, _ in sections}
    with_negatives = len(shown - {"q3"})
    assert page.count("Top 1 of 3 mined negatives</h3>") == with_negatives
    assert page.count('<tr class="suspect">') == len(shown & {"q1", "q2"})  # their best-ranked negatives outscore
    assert "<h2>Hard-negative audit</h2>" not in page and "<h1>Hard-negative audit</h1>" in page
    _stage(paths, tmp_path / "b.html")
    assert (tmp_path / "a.html").read_bytes() == (tmp_path / "b.html").read_bytes()
    assert _stage(paths, tmp_path / "all.html", queries=50) == 3


def test_settings_come_from_the_config_section():
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    filled = validate_config(copy.deepcopy(config))["viewer"]
    assert ViewerSettings.from_config(filled) == ViewerSettings(queries=100, negatives=20, snippet_chars=300)
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
