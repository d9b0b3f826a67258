"""A hand-made mining of hard negatives (its ranking, qrels, positive scores, list and BM25 ranking), for the audit
and the hard-negative viewer."""

import pyarrow as pa

from hardneg.io import artifacts


def table(kind, rows):
    columns = list(zip(*rows)) if rows else [[] for _ in kind.schema]
    return pa.table({f.name: list(c) for f, c in zip(kind.schema, columns)}, schema=kind.schema)


# q1: positives p1 (rank 2, score 8.0) and p2; negative n1 outscores p1 (a suspected false negative).
# q2: its positive p3 is not in the mining run; negative m3 ties the best positive score (also suspected).
# q3: a training query without negatives. q4: no relevant document, so not a training query.
RANKING = table(artifacts.RANKING, [
    ("q1", "n1", 1, 9.0), ("q1", "p1", 2, 8.0), ("q1", "n2", 3, 7.5), ("q1", "n3", 4, 6.0), ("q1", "p2", 5, 5.0),
    ("q2", "m1", 1, 4.0), ("q2", "m3", 2, 3.5), ("q2", "m2", 3, 3.0),
    ("q3", "p4", 1, 2.0),
    ("q4", "y", 1, 1.0),
])
QRELS = table(artifacts.QRELS, [("q1", "p1", 1), ("q1", "p2", 2), ("q2", "p3", 1), ("q3", "p4", 1), ("q4", "x", 0)])
POSITIVES = table(artifacts.POSITIVE_SCORES, [("q1", "p1", 1, 8.0), ("q1", "p2", 2, 5.0), ("q2", "p3", 1, 3.5),
                                              ("q3", "p4", 1, 2.0)])
HARDNEGS = table(artifacts.HARDNEGS, [
    ("q1", "n1", 1, 9.0), ("q1", "n2", 3, 7.5), ("q1", "n3", 4, 6.0),
    ("q2", "m1", 1, 4.0), ("q2", "m3", 2, 3.5), ("q2", "m2", 3, 3.0),
    ("q4", "y", 1, 1.0),
])
# BM25 finds n1 and n3 of q1 within depth 3; q2's m2 only at rank 4, beyond depth 3.
BM25 = table(artifacts.RANKING, [
    ("q1", "n1", 1, 20.0), ("q1", "p1", 2, 19.0), ("q1", "n3", 3, 18.0), ("q1", "n2", 4, 17.0),
    ("q2", "a", 1, 9.0), ("q2", "b", 2, 8.0), ("q2", "c", 3, 7.0), ("q2", "m2", 4, 6.0),
])
