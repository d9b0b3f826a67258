"""`hardneg audit`'s view of one query shows the data's control characters and bidirectional overrides as escapes:
nothing from a dataset reaches the terminal raw."""

import pyarrow.compute as pc

from hardneg.io import artifacts
from hardneg.io.provenance import write_resolved
from hardneg.results.query_view import describe_query
from tests.support.tables import HARDNEGS, POSITIVES, QRELS, table

QID = "q1\x1b[8m"  # an id that would hide what follows it
CORPUS = table(artifacts.CORPUS, [
    ("p1", "Purring\x1b]0;owned\x07", "cats purr\nwhen\tcontent"), ("p2", "Cats", "a soft \u202eruop sound"),
    ("n1\u2066", "Dogs", "dogs \x9b31m bark"), ("n2", None, "wolves howl"), ("n3", "Fish", "fish swim"),
])


def test_ids_titles_and_texts_are_shown_escaped(tmp_path):
    results = tmp_path / "results"
    data = results / "datasets" / "toy"
    rename = {"q1": QID, "n1": "n1\u2066"}
    qrels = table(artifacts.QRELS, [(rename.get(q, q), d, r) for q, d, r in zip(*QRELS.to_pydict().values())])
    hardnegs = table(artifacts.HARDNEGS, [(rename.get(q, q), rename.get(d, d), k, s)
                                          for q, d, k, s in zip(*HARDNEGS.to_pydict().values())])
    positives = table(artifacts.POSITIVE_SCORES, [(rename.get(q, q), d, k, s)
                                                  for q, d, k, s in zip(*POSITIVES.to_pydict().values())])
    artifacts.write_table(CORPUS, artifacts.CORPUS, data / "corpus.parquet")
    artifacts.write_table(table(artifacts.QUERIES, [(QID, "why do cats\rpurr \u202d?")]), artifacts.QUERIES,
                          data / "queries" / "train.parquet")
    artifacts.write_table(qrels, artifacts.QRELS, data / "qrels" / "train.parquet")
    write_resolved({"name": "star", "method": "star", "seed": 0, "params": {"train": {"split": "train"}},
                    "dataset": {"name": "toy"}, "evaluation": {}, "inputs": {"negatives": {"name": "warmup"}}},
                   results / "star" / "config.yaml")
    artifacts.write_table(hardnegs, artifacts.HARDNEGS, results / "star" / "hardnegs.parquet")
    artifacts.write_table(positives, artifacts.POSITIVE_SCORES, results / "warmup" / "pools" / "positives_train.parquet")
    assert pc.any(pc.match_substring(hardnegs["qid"], "\x1b")).as_py()  # the data does hold them

    text = describe_query("star", QID, results=results)
    lines = text.splitlines()
    assert lines[0] == "query q1\\x1b[8m: why do cats\\rpurr \\u202d?"
    assert "Purring\\x1b]0;owned\\x07 — cats purr when content" in text  # line breaks and tabs of a text: spaces
    assert "a soft \\u202eruop sound" in text
    assert any(line.split()[:2] == ["1", "n1\\u2066"] and "dogs \\x9b31m bark" in line for line in lines)
    assert all(line.isprintable() for line in lines)
    assert len(lines) == text.count("\n") and "\r" not in text
