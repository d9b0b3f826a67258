import json

import pyarrow as pa
import pytest

from hardneg.cli import main
from hardneg.errors import HardnegError
from hardneg.io import artifacts
from hardneg.io.provenance import write_resolved
from hardneg.mining.audit import audit_hard_negatives, audit_stage
from hardneg.mining.audit_report import write_audit
from hardneg.results.query_view import format_query
from tests.support.tables import BM25, HARDNEGS, POSITIVES, QRELS, RANKING, table


def test_per_query_audit_numbers():
    _, audit = audit_hard_negatives(HARDNEGS, RANKING, QRELS, POSITIVES, BM25, depth=3)
    assert audit.schema == artifacts.AUDIT.schema
    assert audit.to_pylist() == [
        {"qid": "q1", "best_positive_rank": 2, "best_positive_score": 8.0, "num_negatives": 3,
         "bm25_overlap": pytest.approx(2 / 3), "min_margin": -2.0, "max_margin": 1.0, "suspected_false_negatives": 1,
         "empty_negatives": None},
        {"qid": "q2", "best_positive_rank": None, "best_positive_score": 3.5, "num_negatives": 3,
         "bm25_overlap": 0.0, "min_margin": -0.5, "max_margin": 0.5, "suspected_false_negatives": 2,
         "empty_negatives": None},
        {"qid": "q3", "best_positive_rank": 1, "best_positive_score": 2.0, "num_negatives": 0,
         "bm25_overlap": None, "min_margin": None, "max_margin": None, "suspected_false_negatives": 0,
         "empty_negatives": None},
    ]


def test_summary_numbers():
    summary, _ = audit_hard_negatives(HARDNEGS, RANKING, QRELS, POSITIVES, BM25, depth=3)
    assert summary["num_queries"] == 3
    assert summary["queries_with_negatives"] == 2
    assert summary["queries_without_negatives"] == 1 and summary["queries_without_negatives_qids"] == ["q3"]
    assert summary["num_negatives"] == 6 and summary["negatives_of_other_queries"] == 1
    assert summary["negatives_per_query"] == {"mean": 2.0, "median": 3.0, "min": 0, "max": 3}
    assert summary["bm25_overlap_mean"] == pytest.approx(1 / 3)
    assert summary["best_positive_rank"] == {"at_1": pytest.approx(1 / 3), "within_10": pytest.approx(2 / 3),
                                             "within_depth": pytest.approx(2 / 3), "beyond_depth": pytest.approx(1 / 3)}
    margin = summary["margin"]  # margins: 1, -0.5, -2 (q1) and 0.5, 0, -0.5 (q2)
    assert margin["count"] == 6
    assert margin["quantiles"]["0"] == -2.0 and margin["quantiles"]["1"] == 1.0
    assert margin["quantiles"]["0.5"] == pytest.approx(-0.25)
    assert len(margin["histogram"]["counts"]) == 10 and sum(margin["histogram"]["counts"]) == 6
    assert margin["histogram"]["edges"][0] == -2.0 and margin["histogram"]["edges"][-1] == 1.0
    assert summary["suspected_false_negatives"] == {"count": 3, "pairs": [
        {"qid": "q1", "docid": "n1", "negative_score": 9.0, "best_positive_score": 8.0, "excess": 1.0,
         "empty_document": None},
        {"qid": "q2", "docid": "m1", "negative_score": 4.0, "best_positive_score": 3.5, "excess": 0.5,
         "empty_document": None},
        {"qid": "q2", "docid": "m3", "negative_score": 3.5, "best_positive_score": 3.5, "excess": 0.0,
         "empty_document": None},
    ]}
    assert summary["empty_negatives"] is None  # the corpus was not checked
    json.dumps(summary)  # serialisable as is


def test_without_bm25_and_with_greater_depth():
    summary, audit = audit_hard_negatives(HARDNEGS, RANKING, QRELS, POSITIVES, depth=200)
    assert audit["bm25_overlap"].to_pylist() == [None, None, None]
    assert summary["bm25_overlap_mean"] is None
    assert audit["best_positive_rank"].to_pylist() == [2, None, 1]
    _, shallow = audit_hard_negatives(HARDNEGS, RANKING, QRELS, POSITIVES, depth=1)
    assert shallow["best_positive_rank"].to_pylist() == [None, None, 1]


def test_write_audit_markdown_and_parquet(tmp_path):
    summary, audit = audit_hard_negatives(HARDNEGS, RANKING, QRELS, POSITIVES, BM25, depth=3)
    write_audit(summary, audit, tmp_path / "audit.md", tmp_path / "audit.parquet")
    assert artifacts.read_table(artifacts.AUDIT, tmp_path / "audit.parquet").equals(audit)
    text = (tmp_path / "audit.md").read_text()
    assert "| training queries (with a relevant document) | 3 |" in text
    assert "| queries without negatives | 1 |" in text
    assert "| negatives per query: mean / median | 2.00 / 3.0 |" in text
    assert "| mean share of negatives in BM25's top 3 | 33.3% |" in text
    assert "| 33.3% | 66.7% | 66.7% | 33.3% |" in text  # best positive rank 1 / <=10 / <=3 / beyond
    assert "| `q1` | `n1` | 9.0000 | 8.0000 | 1.0000 |" in text
    assert "| margin | -2.0000 |" in text
    assert "## Queries without negatives\n\n`q3`\n" in text
    assert "| negatives that are empty documents (no title, no text) | not checked |" in text


def test_empty_documents_are_counted_and_marked(tmp_path):
    """Under empty_documents: keep, empty documents can be mined (n1 for q1, at rank 1, suspected false negative;
    m2 for q2): the audit counts them per query and marks them in the report."""
    summary, audit = audit_hard_negatives(HARDNEGS, RANKING, QRELS, POSITIVES, BM25, depth=3,
                                          empty_docids=["n1", "m2", "never_mined"])
    assert audit["empty_negatives"].to_pylist() == [1, 1, 0]
    assert summary["empty_negatives"] == {"count": 2, "queries": 2, "docids": ["m2", "n1"]}
    flags = {(p["qid"], p["docid"]): p["empty_document"] for p in summary["suspected_false_negatives"]["pairs"]}
    assert flags == {("q1", "n1"): True, ("q2", "m1"): False, ("q2", "m3"): False}
    write_audit(summary, audit, tmp_path / "audit.md", tmp_path / "audit.parquet")
    assert artifacts.read_table(artifacts.AUDIT, tmp_path / "audit.parquet")["empty_negatives"].to_pylist() == [1, 1, 0]
    text = (tmp_path / "audit.md").read_text()
    assert "| negatives that are empty documents (no title, no text) | 2 ⚠ |" in text
    assert "| `q1` | `n1` (empty document) | 9.0000 | 8.0000 | 1.0000 |" in text
    assert "| `q2` | `m1` | 4.0000 |" in text
    assert "## Empty documents among the negatives" in text
    assert "2 negatives of 2 queries are empty documents" in text and "`m2`, `n1`." in text
    none, audit = audit_hard_negatives(HARDNEGS, RANKING, QRELS, POSITIVES, depth=3, empty_docids=[])
    assert audit["empty_negatives"].to_pylist() == [0, 0, 0] and none["empty_negatives"]["count"] == 0


def test_ids_from_the_data_are_shown_as_text_in_the_report(tmp_path):
    """Ids are whatever a dataset holds (no whitespace, nothing else checked): in the Markdown report and in the
    HTML it becomes (the viewer's fold, the report's pages) each reads as written, never a link, an image or
    formatting, and a '|' does not split its table cell."""
    from hardneg.report.pages import markdown_html

    hostile = {"n1": "![px](http://127.0.0.1:9/track.png)", "m1": "[x](javascript:alert(1))", "q3": "*em*_x_",
               "q1": "a|b`c"}

    def rename(table: pa.Table) -> pa.Table:
        columns = {name: [hostile.get(v, v) for v in table[name].to_pylist()] if name in ("qid", "docid") else
                   table[name] for name in table.column_names}
        return pa.table(columns, schema=table.schema)

    summary, audit = audit_hard_negatives(*(rename(t) for t in (HARDNEGS, RANKING, QRELS, POSITIVES, BM25)), depth=3,
                                          empty_docids=[hostile["n1"]])
    write_audit(summary, audit, tmp_path / "audit.md", tmp_path / "audit.parquet")
    text = (tmp_path / "audit.md").read_text()
    assert "| ``a\\|b`c`` | `![px](http://127.0.0.1:9/track.png)` (empty document) |" in text
    page = markdown_html(text)
    assert "<img" not in page and "<a " not in page and "<em>" not in page
    for value in ("![px](http://127.0.0.1:9/track.png)", "[x](javascript:alert(1))", "*em*_x_", "a|b`c"):
        assert f"<code>{value}</code>" in page, value


def test_audit_stage(tmp_path):
    paths = {}
    for name, kind, data in [("hardnegs", artifacts.HARDNEGS, HARDNEGS), ("ranking", artifacts.RANKING, RANKING),
                             ("qrels", artifacts.QRELS, QRELS), ("pos", artifacts.POSITIVE_SCORES, POSITIVES),
                             ("bm25", artifacts.RANKING, BM25)]:
        paths[name] = tmp_path / f"{name}.parquet"
        artifacts.write_table(data, kind, paths[name])
    corpus = table(artifacts.CORPUS, [("n1", "Dogs", "bark"), ("n2", " ", "\n"), ("n3", None, ""), ("m1", "", "m")])
    artifacts.write_table(corpus, artifacts.CORPUS, tmp_path / "corpus.parquet")
    summary = audit_stage(paths["hardnegs"], paths["ranking"], paths["qrels"], paths["pos"], tmp_path / "a.md",
                          tmp_path / "a.parquet", bm25_ranking_path=paths["bm25"], summary_path=tmp_path / "a.json",
                          depth=3, corpus_path=tmp_path / "corpus.parquet")
    assert json.loads((tmp_path / "a.json").read_text()) == json.loads(json.dumps(summary))
    assert summary["suspected_false_negatives"]["count"] == 3
    assert summary["empty_negatives"] == {"count": 2, "queries": 1, "docids": ["n2", "n3"]}  # blank counts as empty
    assert (tmp_path / "a.md").exists() and (tmp_path / "a.parquet").exists()


CORPUS = table(artifacts.CORPUS, [
    ("p1", "Cats", "Cats purr when they are content."), ("p2", "Purring", "Purring is a sound " + "very " * 60),
    ("n1", "Dogs", "Dogs bark at strangers."), ("n2", "Fish", "Fish swim."), ("n3", "Birds", "Birds sing."),
    ("m1", "", "m1 text"), ("m2", "", "m2 text"), ("m3", "", "m3 text"), ("p3", "", "p3 text"), ("p4", "", "p4"),
    ("t9", "", "a test document"),
])
QUERIES = table(artifacts.QUERIES, [("q1", "why do cats purr"), ("q2", "second query"), ("q3", "third query")])


def test_format_query():
    text = format_query("q1", queries=QUERIES, corpus=CORPUS, qrels=QRELS, hardnegs=HARDNEGS, positives=POSITIVES,
                        top=2, snippet_chars=40)
    lines = text.splitlines()
    assert lines[0] == "query q1: why do cats purr"
    assert "positives (2, best score 8.0000):" in lines
    assert any(l.split()[:3] == ["p1", "1", "8.0000"] and "Cats — Cats purr when" in l for l in lines)
    assert any(l.split()[:3] == ["p2", "2", "5.0000"] and l.endswith("…") for l in lines)
    assert "negatives (top 2 of 3):" in lines
    assert any(l.split()[:4] == ["1", "n1", "9.0000", "+1.0000"] and "Dogs bark" in l for l in lines)
    assert any(l.split()[:4] == ["3", "n2", "7.5000", "-0.5000"] for l in lines)
    assert "n3" not in text
    without_scores = format_query("q1", queries=QUERIES, corpus=CORPUS, qrels=QRELS, hardnegs=HARDNEGS)
    assert "positives (2):" in without_scores and "+1.0000" not in without_scores
    corpus = pa.concat_tables([CORPUS.filter(pa.compute.not_equal(CORPUS["docid"], "n1")),
                               table(artifacts.CORPUS, [("n1", "", "  ")])])
    shown = format_query("q1", queries=QUERIES, corpus=corpus, qrels=QRELS, hardnegs=HARDNEGS, top=1)
    assert any(l.split()[:2] == ["1", "n1"] and l.endswith("(empty document)") for l in shown.splitlines())


def test_format_query_errors():
    with pytest.raises(HardnegError, match="'zz' is unknown to the dataset"):
        format_query("zz", queries=QUERIES, corpus=CORPUS, qrels=QRELS, hardnegs=HARDNEGS)
    with pytest.raises(HardnegError, match="'q3' is in the dataset but has no mined hard negatives"):
        format_query("q3", queries=QUERIES, corpus=CORPUS, qrels=QRELS, hardnegs=HARDNEGS)


@pytest.fixture
def results(tmp_path):
    """A tiny results folder: dataset 'toy' (train and test splits) and run 'star' with its hard negatives."""
    root = tmp_path / "results"
    data = root / "datasets" / "toy"
    artifacts.write_table(CORPUS, artifacts.CORPUS, data / "corpus.parquet")
    artifacts.write_table(QUERIES, artifacts.QUERIES, data / "queries" / "train.parquet")
    artifacts.write_table(QRELS.slice(0, 4), artifacts.QRELS, data / "qrels" / "train.parquet")
    artifacts.write_table(table(artifacts.QUERIES, [("t1", "a test query")]), artifacts.QUERIES,
                          data / "queries" / "test.parquet")
    artifacts.write_table(table(artifacts.QRELS, [("t1", "t9", 1)]), artifacts.QRELS, data / "qrels" / "test.parquet")
    for run in ("star", "other"):
        write_resolved({"name": run, "method": "star", "seed": 0, "params": {"train": {"split": "train"}},
                        "dataset": {"name": "toy"}, "evaluation": {}, "inputs": {"negatives": {"name": "warmup"}}},
                       root / run / "config.yaml")
    artifacts.write_table(HARDNEGS, artifacts.HARDNEGS, root / "star" / "hardnegs.parquet")
    # the miner's scores of the training positives, beside its candidate pools
    artifacts.write_table(POSITIVES, artifacts.POSITIVE_SCORES, root / "warmup" / "pools" / "positives_train.parquet")
    return root


def test_cli_audit_prints_a_query(results, capsys):
    assert main(["audit", "star", "--qid", "q1", "--results", str(results), "--top", "2"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("query q1: why do cats purr\n")
    assert "Cats purr when they are content." in out and "8.0000" in out  # a positive, with its score
    assert "Dogs bark at strangers." in out and "+1.0000" in out  # the top negative and its margin
    assert "Fish swim." in out and "Birds sing." not in out  # --top 2


def test_cli_audit_errors(results, capsys):
    assert main(["audit", "star", "--qid", "nope", "--results", str(results)]) == 2
    assert "query 'nope' is unknown to dataset 'toy' (not in any of its splits: test, train)" in capsys.readouterr().err
    assert main(["audit", "star", "--qid", "t1", "--results", str(results)]) == 2
    assert "'t1' is in the dataset but has no mined hard negatives" in capsys.readouterr().err
    assert main(["audit", "other", "--qid", "q1", "--results", str(results)]) == 2
    path = results / "other" / "hardnegs.parquet"
    assert (f"run other has no hard-negative list: {path} is missing; build it with snakemake {path}"
            in capsys.readouterr().err)
    assert main(["audit", "missing", "--qid", "q1", "--results", str(results)]) == 2
    assert "run 'missing' has no results folder" in capsys.readouterr().err


def test_cli_audit_names_a_broken_resolved_config(results, capsys):
    config = results / "other" / "config.yaml"
    config.write_text("name: other\n")  # no method, no dataset
    assert main(["audit", "other", "--qid", "q1", "--results", str(results)]) == 2
    assert f"run other: {config} is not a resolved run configuration" in capsys.readouterr().err
    config.write_text("method: [\n")
    assert main(["audit", "other", "--qid", "q1", "--results", str(results)]) == 2
    assert f"run other: {config}, line 2 is not valid YAML" in capsys.readouterr().err


def test_the_selection_counts_duplicates_of_positives_in_the_pool_and_among_the_negatives():
    from hardneg.mining.audit import selection_summary
    from hardneg.mining.audit_report import audit_markdown

    pool = table(artifacts.CANDIDATES, [
        ("q1", "n1", 1, 9.0, 8.0, None, None, None, None, "p1", "exact"),
        ("q1", "n2", 3, 7.5, 8.0, None, None, None, None, "p2", "near"),
        ("q1", "n3", 4, 6.0, 8.0, None, None, None, None, None, None),
    ])
    selection = {"policy": {"keep": 2, "sampling": "top", "exclude_duplicates": False}, "name": "top2",
                 "candidates": 3, "kept": 2, "removed": {"depth": 0, "keep": 1}}
    kept = table(artifacts.HARDNEGS, [("q1", "n1", 1, 9.0), ("q1", "n2", 3, 7.5)])
    summary = selection_summary(selection, pool, kept)
    assert summary["duplicates"] == {"pool": 2, "exact": 1, "near": 1, "negatives": 2}
    assert summary["removed"] == {"depth": 0, "keep": 1} and summary["name"] == "top2"
    audit, _ = audit_hard_negatives(HARDNEGS, RANKING, QRELS, POSITIVES)
    text = audit_markdown({**audit, "selection": summary})
    assert "2 of 3 candidates kept by policy `top2` (keep 2, sampling top)" in text
    assert "| keep | 1 |" in text and "2 (1 exact, 1 near); among the negatives: 2." in text
