"""Hand-made and random rankings (RUN tables), and the hybrid of two with the library's defaults."""

import numpy as np
import pyarrow as pa

from hardneg import fusion
from hardneg.io import artifacts


def hybrid(sparse, dense, alpha, depth=1000, k=1000, normalization=False, weight_on_dense=False):
    return fusion.hybrid(sparse, dense, alpha, depth=depth, k=k, normalization=normalization,
                         weight_on_dense=weight_on_dense)


def run_table(rows):
    """A RUN table from {qid: [(docid, score), ...]} in rank order."""
    records = [(qid, docid, rank, score) for qid, docs in rows.items() for rank, (docid, score) in enumerate(docs, 1)]
    qid, docid, rank, score = zip(*records)
    return pa.table({"qid": list(qid), "docid": list(docid), "rank": list(rank), "score": list(score)},
                    schema=artifacts.RUN.schema)


def by_query(run):
    """{qid: [(docid, score), ...]} in rank order (ranks checked to be 1, 2, ...)."""
    out = {}
    for row in sorted(run.to_pylist(), key=lambda r: (r["qid"], r["rank"])):
        assert row["rank"] == len(out.setdefault(row["qid"], [])) + 1
        out[row["qid"]].append((row["docid"], row["score"]))
    return out


def random_runs(seed, queries=6, docs=40, depth=15):
    """Two runs over overlapping random documents with distinct random scores (sparse ~5-40, dense ~[-1, 1])."""
    rng = np.random.default_rng(seed)
    runs = []
    for low, high in ((5.0, 40.0), (-1.0, 1.0)):
        rows = {}
        for q in range(queries):
            chosen = rng.choice(docs, size=int(rng.integers(2, depth + 1)), replace=False)
            scores = np.sort(rng.uniform(low, high, len(chosen)).astype(np.float32))[::-1]
            rows[f"q{q}"] = [(f"d{d}", float(s)) for d, s in zip(chosen, scores)]
        runs.append(run_table(rows))
    return runs
