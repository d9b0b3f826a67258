"""A hand-made results folder of three finished runs on a tiny dataset, for the comparison of runs (``hardneg
compare``, its text and its page).

Dataset ``toy``: documents d1..d8; test queries q1..q4, each with one relevant document (q2's of grade 2); training
queries t1, t2. Runs ``base`` (BM25), ``star`` (a STAR run, with its mined hard negatives) and ``adore``, each
with its resolved config, metrics.json (evaluation split ``test``), per_query.parquet (evaluated here with
:func:`hardneg.evaluation.metrics.evaluate`) and rankings of ``test`` and ``train``.

RR@10 on the test queries (the relevant document's rank in brackets)::

          q1       q2       q3       q4
    base  1/2 [2]  1 [1]    1/3 [3]  1 [1]
    star  1 [1]    1 [1]    1 [1]    1/2 [2]
    adore 1/2 [2]  1 [1]    1 [1]    1 [1]

star against base: +1/2, 0, +2/3, -1/2 (2 wins, 1 tie, 1 loss); adore against base: 0, 0, +2/3, 0. star trained
on d1 as a hard negative of t1 and t2, on d6 as one of t1 and on d5 as one of t2. The data is hostile where it is shown: q3's text is
a script, d6's title an HTML image with a handler, d7's text holds a terminal escape sequence and a line break.
"""

from __future__ import annotations

import json
from pathlib import Path

from hardneg.evaluation.metrics import evaluate
from hardneg.io import artifacts
from hardneg.io.provenance import write_resolved
from tests.support.tables import table

HOSTILE_QUERY = "<script>alert(1)</script>"
HOSTILE_TITLE = '"><img src=x onerror=alert(2)>'
CORPUS = [("d1", "Cats", "cats purr"), ("d2", "Dogs", "dogs bark loudly"), ("d3", "Fish", "fish swim"),
          ("d4", "Birds", "birds sing"), ("d5", "Lions", "lions roar"), ("d6", HOSTILE_TITLE, "a tag & more"),
          ("d7", "Wolves", "wolves \x1b[31mhowl\nat night"), ("d8", "Foxes", "foxes hide")]
QUERIES = {"test": [("q1", "do cats purr"), ("q2", "barking dogs"), ("q3", HOSTILE_QUERY), ("q4", "singing birds")],
           "train": [("t1", "roaring lions"), ("t2", "hiding foxes")]}
QRELS = {"test": [("q1", "d1", 1), ("q2", "d2", 2), ("q3", "d3", 1), ("q4", "d4", 1), ("q4", "d5", 0)],
         "train": [("t1", "d5", 1), ("t2", "d8", 1)]}
# run → split → query → documents, best first
RANKINGS = {
    "base": {"test": {"q1": ["d5", "d1", "d2"], "q2": ["d2", "d1"], "q3": ["d6", "d7", "d3"], "q4": ["d4", "d8"]},
             "train": {"t1": ["d1", "d5"], "t2": ["d8", "d2"]}},
    "star": {"test": {"q1": ["d1", "d5"], "q2": ["d2", "d6"], "q3": ["d3", "d6", "d7"], "q4": ["d8", "d4", "d5"]},
             "train": {"t1": ["d5", "d1"], "t2": ["d8"]}},
    "adore": {"test": {"q1": ["d5", "d1"], "q2": ["d2"], "q3": ["d3", "d6"], "q4": ["d4"]},
              "train": {"t1": ["d1", "d2", "d5"], "t2": ["d8"]}},
}
METHODS = {"base": "bm25", "star": "star", "adore": "adore"}
HARDNEGS = [("t1", "d1", 1, 3.0), ("t1", "d6", 2, 2.5), ("t2", "d5", 1, 2.0), ("t2", "d1", 2, 1.5)]
MEASURES = ["RR@10", "nDCG@10"]


def _ranking(run: str, split: str):
    rows = [(qid, docid, rank, float(10 - rank)) for qid, docs in RANKINGS[run][split].items()
            for rank, docid in enumerate(docs, start=1)]
    return table(artifacts.RANKING, rows)


def write_results(root: Path, runs=("base", "star", "adore")) -> Path:
    """The results folder ``root`` (see the module docstring), with the runs ``runs``; returns ``root``."""
    data = root / "datasets" / "toy"
    artifacts.write_table(table(artifacts.CORPUS, CORPUS), artifacts.CORPUS, data / "corpus.parquet")
    for split in QUERIES:
        artifacts.write_table(table(artifacts.QUERIES, QUERIES[split]), artifacts.QUERIES,
                              data / "queries" / f"{split}.parquet")
        artifacts.write_table(table(artifacts.QRELS, QRELS[split]), artifacts.QRELS, data / "qrels" / f"{split}.parquet")
    for run in runs:
        folder = root / run
        write_resolved({"name": run, "method": METHODS[run], "seed": 0, "params": {}, "dataset": {"name": "toy"},
                        "evaluation": {"split": "test", "measures": MEASURES}, "inputs": {}}, folder / "config.yaml")
        for split in QUERIES:
            artifacts.write_table(_ranking(run, split), artifacts.RANKING, folder / "rankings" / f"{split}.parquet")
        means, per_query = evaluate(_ranking(run, "test"), table(artifacts.QRELS, QRELS["test"]), MEASURES)
        artifacts.write_table(per_query, artifacts.PER_QUERY_METRICS, folder / "per_query.parquet")
        (folder / "metrics.json").write_text(json.dumps({"run": run, "dataset": "toy", "split": "test",
                                                         "num_queries": 4, "measures": means}))
    if "star" in runs:
        artifacts.write_table(table(artifacts.HARDNEGS, HARDNEGS), artifacts.HARDNEGS, root / "star" / "hardnegs.parquet")
    return root


def write_page(folder: Path) -> Path:
    """The comparison page of base, star and adore over :func:`write_results` under ``folder`` (top 3 documents of
    each ranking, the 3 queries that differ most): ``folder/compare.html``."""
    from hardneg.report.comparison_page import write_comparison_page

    results = write_results(folder / "results")
    path = folder / "compare.html"
    write_comparison_page(["base", "star", "adore"], path, results=results, top=3, depth=3)
    return path
