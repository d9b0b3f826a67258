"""Hand-made tables for the mining tests (a ranking, its qrels and positive scores), and the (qid, docid) pairs of
a table."""

import numpy as np
import pyarrow as pa

from hardneg.io import artifacts


def ranking_table(rows):
    """A RANKING table from (qid, docid, rank, score) tuples."""
    return _table(artifacts.RANKING, rows)


def qrels_table(rows):
    """A QRELS table from (qid, docid, relevance) tuples."""
    return _table(artifacts.QRELS, rows)


def positives_table(rows):
    """A POSITIVE_SCORES table from (qid, docid, relevance, score) tuples."""
    return _table(artifacts.POSITIVE_SCORES, rows)


def _table(kind, rows):
    columns = list(zip(*rows)) if rows else [[] for _ in kind.schema]
    return pa.table({f.name: list(c) for f, c in zip(kind.schema, columns)}, schema=kind.schema)


def pairs(table):
    return list(zip(table["qid"].to_pylist(), table["docid"].to_pylist()))


# q1: a2 (relevance 1) and a5 (relevance 2) are positives, a3 is judged non-relevant (0) and stays a candidate.
# q2: b1 is its positive; a2 (a positive of q1 only) is a candidate for q2. q3 has no judgements at all.
RANKING = ranking_table([
    ("q1", "a1", 1, 9.0), ("q1", "a2", 2, 8.0), ("q1", "a3", 3, 7.0), ("q1", "a4", 4, 6.0),
    ("q1", "a5", 5, 5.0), ("q1", "a6", 6, 4.0), ("q1", "a7", 7, 3.0), ("q1", "a8", 8, 2.0),
    ("q2", "b1", 1, 5.0), ("q2", "b2", 2, 4.5), ("q2", "b3", 3, 4.0), ("q2", "b4", 4, 3.5), ("q2", "a2", 5, 3.0),
    ("q3", "c1", 1, 1.0), ("q3", "c2", 2, 0.5),
])
QRELS = qrels_table([("q1", "a2", 1), ("q1", "a5", 2), ("q1", "a3", 0), ("q2", "b1", 1), ("q2", "zz", 1)])


def random_problem(num_queries=30, per_query=50, seed=0):
    """A run of ``num_queries`` queries, ``per_query`` documents each (of 400, scores falling with the rank), and
    six judged documents per query, graded 0 to 2 at random: (run, qrels)."""
    rng = np.random.default_rng(seed)
    rows, judged = [], []
    for q in range(num_queries):
        docs = rng.choice(400, size=per_query, replace=False)
        scores = np.sort(rng.normal(size=per_query))[::-1]
        rows += [(f"q{q}", f"d{d}", r + 1, float(s)) for r, (d, s) in enumerate(zip(docs, scores))]
        for d in rng.choice(docs, size=6, replace=False):
            judged.append((f"q{q}", f"d{d}", int(rng.integers(0, 3))))
    return ranking_table(rows), qrels_table(judged)
