import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from hardneg.io import artifacts
from hardneg.mining.pool import build_pool, pool_stage
from tests.support.mining import QRELS, RANKING, pairs, positives_table, qrels_table, ranking_table


def column(table, name):
    return table[name].to_pylist()


# b3's row has relevance 0: not a positive, so its 9.0 is not q2's best positive score.
POSITIVES = positives_table([("q1", "a2", 1, 8.0), ("q1", "a5", 2, 5.0), ("q2", "b1", 1, 5.0), ("q2", "b3", 0, 9.0)])
POOL_PAIRS = [("q1", "a1"), ("q1", "a3"), ("q1", "a4"), ("q1", "a6"), ("q1", "a7"), ("q1", "a8"),
              ("q2", "b2"), ("q2", "b3"), ("q2", "b4"), ("q2", "a2"), ("q3", "c1"), ("q3", "c2")]


def test_pool_is_the_ranking_minus_positives_with_judged_non_relevant_kept():
    pool = build_pool(RANKING, QRELS, depth=100)
    assert pool.schema == artifacts.CANDIDATES.schema
    assert pairs(pool) == POOL_PAIRS
    assert column(pool, "rank") == [1, 3, 4, 6, 7, 8, 2, 3, 4, 5, 1, 2]
    assert column(pool, "score") == [9.0, 7.0, 6.0, 4.0, 3.0, 2.0, 4.5, 4.0, 3.5, 3.0, 1.0, 0.5]
    for name in ("best_positive_score", "bm25_rank", "bm25_score", "ce_score", "best_positive_ce_score",
                 "duplicate_of", "duplicate_kind"):
        assert pool[name].null_count == pool.num_rows, name


def test_depth_cuts_the_ranking():
    assert pairs(build_pool(RANKING, QRELS, depth=5)) == [
        ("q1", "a1"), ("q1", "a3"), ("q1", "a4"), ("q2", "b2"), ("q2", "b3"), ("q2", "b4"), ("q2", "a2"),
        ("q3", "c1"), ("q3", "c2")]
    assert pairs(build_pool(RANKING, QRELS, depth=1)) == [("q1", "a1"), ("q3", "c1")]  # q2's rank 1 is its positive
    with pytest.raises(ValueError, match="depth"):
        build_pool(RANKING, QRELS, depth=0)


def test_unsorted_run_with_rank_ties_is_ordered_by_first_appearance_then_rank_ties_in_run_order():
    run = ranking_table([("q2", "x", 2, 1.0), ("q1", "y", 1, 2.0), ("q2", "z", 1, 3.0), ("q2", "w", 2, 0.5),
                     ("q1", "v", 1, 1.5)])
    pool = build_pool(run, qrels_table([]), depth=10)
    assert pairs(pool) == [("q2", "z"), ("q2", "x"), ("q2", "w"), ("q1", "y"), ("q1", "v")]
    assert column(pool, "rank") == [1, 2, 2, 1, 1]


def test_best_positive_score_is_the_maximum_over_relevant_rows_and_null_without_one():
    pool = build_pool(RANKING, QRELS, POSITIVES, depth=100)
    assert column(pool, "best_positive_score") == [8.0] * 6 + [5.0] * 4 + [None] * 2


def test_bm25_columns_join_on_query_and_document():
    bm25 = ranking_table([
        ("q1", "a3", 2, 12.5), ("q1", "a8", 1, 14.0),
        ("q2", "a1", 1, 20.0),  # a1 is a candidate of q1, not of q2: no match
        ("q2", "a2", 3, 10.0), ("q2", "a2", 9, 1.0),  # a repeated pair: its first row counts
        ("q9", "c1", 1, 5.0),  # a query outside the run
    ])
    pool = build_pool(RANKING, QRELS, depth=100, bm25=bm25)
    assert column(pool, "bm25_rank") == [None, 2, None, None, None, 1, None, None, None, 3, None, None]
    assert column(pool, "bm25_score") == [None, 12.5, None, None, None, 14.0, None, None, None, 10.0, None, None]
    assert pool["bm25_rank"].type == pa.int32() and pool["bm25_score"].type == pa.float32()
    empty = build_pool(RANKING, QRELS, depth=100, bm25=ranking_table([]))
    assert empty["bm25_rank"].null_count == empty.num_rows


def test_cross_encoder_columns():
    ce = ranking_table([("q1", "a1", 1, 0.875), ("q1", "a7", 2, 0.25), ("q2", "b4", 1, 0.5), ("q3", "a1", 1, 0.75)])
    ce_positives = positives_table([("q1", "a2", 1, 0.5), ("q1", "a5", 2, 0.75), ("q1", "a3", 0, 1.0),
                                    ("q3", "zz", 1, 0.625)])
    pool = build_pool(RANKING, QRELS, depth=100, ce_scores=ce, ce_positive_scores=ce_positives)
    assert column(pool, "ce_score") == [0.875, None, None, None, 0.25, None, None, None, 0.5, None, None, None]
    # relevance-0 rows are no positives; the best comes from the table's judgements even for a query of no qrels
    assert column(pool, "best_positive_ce_score") == [0.75] * 6 + [None] * 4 + [0.625] * 2
    # a table of (qid, docid, score) only is enough for the candidates' scores
    bare = build_pool(RANKING, QRELS, depth=100, ce_scores=ce.select(["qid", "docid", "score"]))
    assert column(bare, "ce_score") == column(pool, "ce_score")


@pytest.mark.parametrize("bad", [1.5, -0.25, float("nan")])
def test_cross_encoder_scores_must_be_probabilities(bad):
    with pytest.raises(ValueError, match=r"ce_scores: cross-encoder scores must be probabilities in \[0, 1\]"):
        build_pool(RANKING, QRELS, depth=100, ce_scores=ranking_table([("q1", "a1", 1, 0.5), ("q1", "a3", 2, bad)]))
    with pytest.raises(ValueError, match="ce_positive_scores: cross-encoder scores must be probabilities"):
        build_pool(RANKING, QRELS, depth=100, ce_positive_scores=positives_table([("q1", "a2", 1, bad)]))


def test_duplicates_from_a_callable_or_aligned_arrays():
    seen = []

    def flag(qids, docids):
        seen.append((qids.to_pylist(), docids.to_pylist()))
        of = pc.if_else(pc.equal(docids, "a3"), "a2", pa.scalar(None, pa.string()))
        kind = pc.if_else(pc.equal(docids, "a3"), "exact", pa.scalar(None, pa.string()))
        return of, kind

    pool = build_pool(RANKING, QRELS, depth=100, duplicates=flag)
    assert seen == [([q for q, _ in POOL_PAIRS], [d for _, d in POOL_PAIRS])]  # called once, on the pool's rows
    assert column(pool, "duplicate_of") == [None, "a2"] + [None] * 10
    assert column(pool, "duplicate_kind") == [None, "exact"] + [None] * 10

    of = [None] * 5 + ["a5"] + [None] * 6
    kind = [None] * 5 + ["near"] + [None] * 6
    pool = build_pool(RANKING, QRELS, depth=100, duplicates=(pa.array(of, pa.string()), pa.array(kind, pa.string())))
    assert column(pool, "duplicate_of") == of and column(pool, "duplicate_kind") == kind

    with pytest.raises(ValueError, match="aligned with the 12 pool rows"):
        build_pool(RANKING, QRELS, depth=100, duplicates=(pa.array(of[:3]), pa.array(kind[:3])))
    with pytest.raises(ValueError, match="null in the same rows"):
        build_pool(RANKING, QRELS, depth=100, duplicates=(pa.array(of), pa.array([None] * 12, pa.string())))

    def fail(qids, docids):
        raise AssertionError("called on an empty pool")

    assert build_pool(ranking_table([]), QRELS, depth=100, duplicates=fail).num_rows == 0


def test_empty_run_gives_an_empty_pool():
    pool = build_pool(ranking_table([]), QRELS, POSITIVES, depth=10, bm25=RANKING)
    assert pool.num_rows == 0 and pool.schema == artifacts.CANDIDATES.schema


def random_inputs(seed, num_queries=40, contiguous=True):
    """A run (rank ties, shuffled or not), qrels (relevance 0 to 2, some of queries outside the run), positives
    (some queries without), a BM25 run in another query order, cross-encoder tables."""
    rng = np.random.default_rng(seed)
    run, judged, positives, bm25, ce, ce_positives = [], [], [], [], [], []
    for q in rng.permutation(num_queries):
        qid = f"q{q}"
        n = int(rng.integers(1, 25))
        docs = [f"d{d}" for d in rng.choice(300, size=n, replace=False)]
        ranks = np.sort(rng.integers(1, n + 1, size=n))
        scores = np.sort(rng.normal(size=n).round(1))[::-1]
        run += [(qid, d, int(r), float(s)) for d, r, s in zip(docs, ranks, scores)]
        for d in rng.choice(docs + ["d999"], size=min(4, n), replace=False):
            relevance = int(rng.integers(0, 3))
            judged.append((qid, d, relevance))
            if q % 3:  # every third query has no positive scores
                positives.append((qid, d, relevance, float(rng.normal())))
                ce_positives.append((qid, d, relevance, float(rng.random())))
        bm25 += [(qid, d, i + 1, float(-i)) for i, d in enumerate(rng.permutation(docs)[: n // 2])]
        ce += [(qid, d, i + 1, float(rng.random())) for i, d in enumerate(docs) if rng.random() < 0.7]
    judged.append(("q_outside", "d1", 1))
    run = ranking_table(run)
    if not contiguous:
        run = run.take(pa.array(rng.permutation(run.num_rows)))
    bm25 = ranking_table(bm25)
    bm25 = bm25.take(pa.array(np.argsort(column(bm25, "qid"), kind="stable")))  # not the run's query order
    return (run, qrels_table(judged), positives_table(positives), bm25, ranking_table(ce),
            positives_table(ce_positives))


def flag_even_documents(qids, docids):
    even = pc.equal(pc.bit_wise_and(pc.cast(pc.utf8_slice_codeunits(docids, 1), pa.int64()), 1), 0)
    return (pc.if_else(even, pc.binary_join_element_wise(qids, "pos", ""), pa.scalar(None, pa.string())),
            pc.if_else(even, "near", pa.scalar(None, pa.string())))


def write_inputs(tmp_path, inputs):
    ranking, qrels, positives, bm25, ce, ce_positives = inputs
    paths = {}
    for name, table, kind in (("ranking", ranking, artifacts.RANKING), ("qrels", qrels, artifacts.QRELS),
                              ("positives", positives, artifacts.POSITIVE_SCORES), ("bm25", bm25, artifacts.RANKING),
                              ("ce", ce, artifacts.RANKING), ("ce_positives", ce_positives, artifacts.POSITIVE_SCORES)):
        paths[name] = tmp_path / f"{name}.parquet"
        artifacts.write_table(table, kind, paths[name])
    return paths


@pytest.mark.parametrize("contiguous", [True, False])
def test_pool_stage_in_blocks_writes_the_same_file_as_one_block(tmp_path, contiguous):
    inputs = random_inputs(5, contiguous=contiguous)
    paths = write_inputs(tmp_path, inputs)

    def stage(name, block_rows):
        out = tmp_path / "out" / f"{name}.parquet"
        rows = pool_stage(paths["ranking"], paths["qrels"], out, depth=15, positives_path=paths["positives"],
                          bm25_path=paths["bm25"], ce_path=paths["ce"], ce_positives_path=paths["ce_positives"],
                          duplicates=flag_even_documents, block_rows=block_rows)
        return rows, out

    rows_small, small = stage("small", 7)
    rows_whole, whole = stage("whole", 10**9)
    assert small.read_bytes() == whole.read_bytes()
    pool = artifacts.read_table(artifacts.CANDIDATES, whole)
    assert rows_small == rows_whole == pool.num_rows > 0

    ranking, qrels, positives, bm25, ce, ce_positives = inputs
    expected = build_pool(ranking, qrels, positives, depth=15, bm25=bm25, ce_scores=ce, ce_positive_scores=ce_positives,
                          duplicates=flag_even_documents)
    assert pool.equals(expected)
    for name in artifacts.CANDIDATES.schema.names:  # every column is filled somewhere, and null somewhere
        if name not in ("qid", "docid", "rank", "score"):
            assert 0 < pool[name].null_count < pool.num_rows, name


def test_pool_stage_with_the_run_only_and_an_empty_run(tmp_path, caplog):
    artifacts.write_table(RANKING, artifacts.RANKING, tmp_path / "run.parquet")
    artifacts.write_table(QRELS, artifacts.QRELS, tmp_path / "qrels.parquet")
    assert pool_stage(tmp_path / "run.parquet", tmp_path / "qrels.parquet", tmp_path / "pool.parquet", depth=5,
                      block_rows=2) == 9
    assert pairs(artifacts.read_table(artifacts.CANDIDATES, tmp_path / "pool.parquet")) == pairs(
        build_pool(RANKING, QRELS, depth=5))

    artifacts.write_table(ranking_table([("q1", "a1", 1, 0.5)]), artifacts.RANKING, tmp_path / "ce.parquet")
    with caplog.at_level("WARNING"):
        pool_stage(tmp_path / "run.parquet", tmp_path / "qrels.parquet", tmp_path / "pool.parquet", depth=5,
                   ce_path=tmp_path / "ce.parquet", block_rows=2)
    assert "8 of 9 candidates have no cross-encoder score" in caplog.text

    artifacts.write_table(ranking_table([]), artifacts.RANKING, tmp_path / "empty.parquet")
    assert pool_stage(tmp_path / "empty.parquet", tmp_path / "qrels.parquet", tmp_path / "none.parquet",
                      depth=5) == 0
    assert artifacts.read_table(artifacts.CANDIDATES, tmp_path / "none.parquet").num_rows == 0
