"""Hand-made and random rankings (RANKING tables), and the hybrid of two with the library's defaults."""

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hardneg import fusion
from hardneg.io import artifacts


def hybrid(sparse, dense, alpha, depth=1000, k=1000, normalization=False, weight_on_dense=False):
    return fusion.hybrid(sparse, dense, alpha, depth=depth, k=k, normalization=normalization,
                         weight_on_dense=weight_on_dense)


def ranking_table(rows):
    """A RANKING table from {qid: [(docid, score), ...]} in rank order."""
    records = [(qid, docid, rank, score) for qid, docs in rows.items() for rank, (docid, score) in enumerate(docs, 1)]
    qid, docid, rank, score = zip(*records)
    return pa.table({"qid": list(qid), "docid": list(docid), "rank": list(rank), "score": list(score)},
                    schema=artifacts.RANKING.schema)


def by_query(ranking):
    """{qid: [(docid, score), ...]} in rank order (ranks checked to be 1, 2, ...)."""
    out = {}
    for row in sorted(ranking.to_pylist(), key=lambda r: (r["qid"], r["rank"])):
        assert row["rank"] == len(out.setdefault(row["qid"], [])) + 1
        out[row["qid"]].append((row["docid"], row["score"]))
    return out


def random_rankings(seed, queries=6, docs=40, depth=15):
    """Two rankings of overlapping random documents with distinct random scores (sparse ~5-40, dense ~[-1, 1])."""
    rng = np.random.default_rng(seed)
    rankings = []
    for low, high in ((5.0, 40.0), (-1.0, 1.0)):
        rows = {}
        for q in range(queries):
            chosen = rng.choice(docs, size=int(rng.integers(2, depth + 1)), replace=False)
            scores = np.sort(rng.uniform(low, high, len(chosen)).astype(np.float32))[::-1]
            rows[f"q{q}"] = [(f"d{d}", float(s)) for d, s in zip(chosen, scores)]
        rankings.append(ranking_table(rows))
    return rankings


def shuffled_ranking(corpus, qids, per_query=6, missing=None):
    """A RANKING table of re-ranking candidates: for each query of ``qids``, ``per_query`` documents of ``corpus`` (a
    tokenized text set: its ``row_ids``) listed in shuffled order with ranks 1..per_query; ``missing``: a docid
    put in place of the first query's second document (one the corpus does not have)."""
    rng = np.random.default_rng(1)
    rows = []
    for i, qid in enumerate(qids):
        docs = [corpus.row_ids[(7 * i + 3 * k) % len(corpus)] for k in range(per_query)]
        if missing is not None and i == 0:
            docs[1] = missing
        for k in rng.permutation(per_query):
            rows.append((qid, docs[k], int(k) + 1, float(per_query - k)))
    return pa.table({"qid": [r[0] for r in rows], "docid": [r[1] for r in rows],
                     "rank": pa.array([r[2] for r in rows], pa.int32()),
                     "score": pa.array([r[3] for r in rows], pa.float32())})


def check_reranked(out, ranking, qids, depth, direct, atol, missing="not-in-cache"):
    """Assert that ``out`` re-ranks each query of ``qids`` (in that order) over its top ``depth`` of ``ranking``
    (less the ``missing`` document), ranked from 1 by decreasing score, each score what ``direct(qid, docids)``
    computes for the query's documents in their new order (within ``atol``)."""
    assert out.schema == artifacts.RANKING.schema
    assert list(dict.fromkeys(out["qid"].to_pylist())) == qids
    for qid in qids:
        got = out.filter(pc.equal(out["qid"], qid))
        given = ranking.filter(pc.equal(ranking["qid"], qid)).sort_by("rank")
        top = [d for d in given["docid"].to_pylist()[:depth] if d != missing]
        assert sorted(got["docid"].to_pylist()) == sorted(top)
        assert got["rank"].to_pylist() == list(range(1, len(top) + 1))
        scores = np.asarray(got["score"].to_pylist())
        assert np.all(np.diff(scores) <= 0)
        assert np.allclose(scores, direct(qid, got["docid"].to_pylist()), atol=atol)
