import dataclasses
import math

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from jsonschema import Draft202012Validator

from hardneg.io import artifacts
from hardneg.mining.policies import FILTERS, POLICY_SCHEMA, Policy, PolicyValueError
from hardneg.mining.selection import select
from hardneg.mining.pool import build_pool
from hardneg.mining.rows import query_seed
from tests.support.mining import pairs, positives_table, qrels_table, ranking_table

COLUMNS = artifacts.CANDIDATES.schema.names


def pool_table(rows):
    """A CANDIDATES table from tuples in the schema's column order."""
    values = list(zip(*rows)) if rows else [[] for _ in COLUMNS]
    return pa.table({name: list(v) for name, v in zip(COLUMNS, values)}, schema=artifacts.CANDIDATES.schema)


# Columns: qid, docid, rank, score, best_positive_score, bm25_rank, bm25_score, ce_score, best_positive_ce_score,
# duplicate_of, duplicate_kind. q1's best positive scores 8.0 (cross-encoder 0.75), q2's 5.0 (0.625); q3 has
# neither, and no cross-encoder scores. Cross-encoder values are exact in float32, so boundaries are exact.
POOL = pool_table([
    ("q1", "a1", 1, 9.0, 8.0, None, None, 0.875, 0.75, None, None),
    ("q1", "a3", 3, 7.0, 8.0, 2, 12.5, 0.625, 0.75, "a2", "exact"),
    ("q1", "a4", 4, 6.0, 8.0, None, None, None, 0.75, None, None),
    ("q1", "a6", 6, 4.0, 8.0, None, None, 0.25, 0.75, None, None),
    ("q1", "a7", 7, 3.0, 8.0, None, None, 0.75, 0.75, None, None),
    ("q1", "a8", 8, 2.0, 8.0, 1, 14.0, 0.125, 0.75, "a5", "near"),
    ("q2", "b2", 2, 4.5, 5.0, None, None, 0.75, 0.625, None, None),
    ("q2", "b3", 3, 4.0, 5.0, None, None, 0.5, 0.625, None, None),
    ("q2", "b4", 4, 3.5, 5.0, None, None, 0.25, 0.625, None, None),
    ("q2", "a2", 5, 3.0, 5.0, 3, 10.0, 0.5, 0.625, None, None),
    ("q3", "c1", 1, 1.0, None, None, None, None, None, None, None),
    ("q3", "c2", 2, 0.5, None, None, None, None, None, None, None),
])
ALL = pairs(POOL)


def removed(**counts):
    return {name: counts.get(name, 0) for name in FILTERS}


def test_no_filter_selects_the_whole_pool_as_hard_negatives():
    selection = select(POOL, Policy())
    assert selection.negatives.schema == artifacts.HARDNEGS.schema
    assert selection.negatives.equals(POOL.select(["qid", "docid", "rank", "score"]))
    assert selection.removed == removed() and list(selection.removed) == list(FILTERS)
    assert (selection.candidates, selection.kept) == (12, 12)


@pytest.mark.parametrize("policy, kept, counts", [
    (Policy(depth=4), [("q1", "a1"), ("q1", "a3"), ("q1", "a4"), ("q2", "b2"), ("q2", "b3"), ("q2", "b4"),
                       ("q3", "c1"), ("q3", "c2")], {"depth": 4}),
    (Policy(rank_range=(3, 6)), [("q1", "a3"), ("q1", "a4"), ("q1", "a6"), ("q2", "b3"), ("q2", "b4"),
                                 ("q2", "a2")], {"rank_range": 6}),
    (Policy(exclude_duplicates=True), [p for p in ALL if p not in {("q1", "a3"), ("q1", "a8")}],
     {"duplicates": 2}),
    # q1: score <= 8.0 - 3.5 = 4.5; q2: <= 1.5 (none); q3 has no best positive and keeps all
    (Policy(margin=3.5), [("q1", "a6"), ("q1", "a7"), ("q1", "a8"), ("q3", "c1"), ("q3", "c2")], {"margin": 7}),
    # q1: score <= 8.0 - 8.0 * 0.25 = 6.0 (a4 at exactly 6.0 stays); q2: <= 3.75
    (Policy(relative_margin=0.25), [("q1", "a4"), ("q1", "a6"), ("q1", "a7"), ("q1", "a8"), ("q2", "b4"),
                                    ("q2", "a2"), ("q3", "c1"), ("q3", "c2")], {"relative_margin": 4}),
    # score <= 4.0 (b3 at exactly 4.0 stays); q3 has no best positive, which these bounds do not read
    (Policy(max_score=4.0), [("q1", "a6"), ("q1", "a7"), ("q1", "a8"), ("q2", "b3"), ("q2", "b4"), ("q2", "a2"),
                             ("q3", "c1"), ("q3", "c2")], {"max_score": 4}),
    # score >= 3.5 (b4 at exactly 3.5 stays)
    (Policy(min_score=3.5), [("q1", "a1"), ("q1", "a3"), ("q1", "a4"), ("q1", "a6"), ("q2", "b2"), ("q2", "b3"),
                             ("q2", "b4")], {"min_score": 5}),
    # drops ce >= 0.75 (a7 and b2 at exactly 0.75 too); a4 and q3 have no score and stay
    (Policy(ce_threshold=0.75), [p for p in ALL if p not in {("q1", "a1"), ("q1", "a7"), ("q2", "b2")}],
     {"ce_threshold": 3}),
    # drops ce > best - 0.125: q1 > 0.625 (a3 at exactly 0.625 stays), q2 > 0.5 (b3, a2 at 0.5 stay)
    (Policy(ce_margin=0.125), [p for p in ALL if p not in {("q1", "a1"), ("q1", "a7"), ("q2", "b2")}],
     {"ce_margin": 3}),
    (Policy(keep=2), [("q1", "a1"), ("q1", "a3"), ("q2", "b2"), ("q2", "b3"), ("q3", "c1"), ("q3", "c2")],
     {"keep": 6}),
])
def test_each_filter_alone(policy, kept, counts):
    selection = select(POOL, policy)
    assert pairs(selection.negatives) == kept
    assert selection.removed == removed(**counts)
    assert selection.kept == len(kept) and selection.candidates == 12


def test_filters_combine_in_order_and_each_counts_what_it_removed_from_what_was_left():
    policy = Policy(depth=7, rank_range=(2, 7), exclude_duplicates=True, margin=1.0, ce_threshold=0.75, keep=1)
    selection = select(POOL, policy)
    # depth: a8; rank_range: a1, c1; duplicates: a3 (a8 already gone); margin (q1 <= 7.0, q2 <= 4.0): b2;
    # ce_threshold: a7; keep 1: the best-ranked of a4, a6 | b3, b4, a2 | c2
    assert pairs(selection.negatives) == [("q1", "a4"), ("q2", "b3"), ("q3", "c2")]
    assert selection.negatives["rank"].to_pylist() == [4, 3, 2]
    assert selection.negatives["score"].to_pylist() == [6.0, 4.0, 0.5]
    assert selection.removed == removed(depth=1, rank_range=2, duplicates=1, margin=1, ce_threshold=1, keep=3)
    assert selection.candidates == sum(selection.removed.values()) + selection.kept


def test_both_margins_and_both_cross_encoder_filters_together():
    # margin 1.0 (q1 <= 7.0, q2 <= 4.0), then relative 0.25 (q1 <= 6.0, q2 <= 3.75)
    selection = select(POOL, Policy(margin=1.0, relative_margin=0.25))
    assert pairs(selection.negatives) == [("q1", "a4"), ("q1", "a6"), ("q1", "a7"), ("q1", "a8"), ("q2", "b4"),
                                          ("q2", "a2"), ("q3", "c1"), ("q3", "c2")]
    assert selection.removed == removed(margin=2, relative_margin=2)
    # threshold 0.75 removes a1, a7, b2; the ce margin then nothing more; swapped sizes: the margin removes more
    assert select(POOL, Policy(ce_threshold=0.75, ce_margin=0.125)).removed == removed(ce_threshold=3)
    selection = select(POOL, Policy(ce_threshold=0.875, ce_margin=0.25))
    assert selection.removed == removed(ce_threshold=1, ce_margin=5)  # ce > 0.5 (q1), > 0.375 (q2)
    assert pairs(selection.negatives) == [("q1", "a4"), ("q1", "a6"), ("q1", "a8"), ("q2", "b4"), ("q3", "c1"),
                                          ("q3", "c2")]


def test_max_score_then_min_score_after_the_margins():
    # margin 1.0 (q1 <= 7.0, q2 <= 4.0) removes a1, b2; max 6.0 then a3; min 3.0 then a8, c1, c2
    selection = select(POOL, Policy(margin=1.0, max_score=6.0, min_score=3.0))
    assert pairs(selection.negatives) == [("q1", "a4"), ("q1", "a6"), ("q1", "a7"), ("q2", "b3"), ("q2", "b4"),
                                          ("q2", "a2")]
    assert selection.removed == removed(margin=2, max_score=1, min_score=3)
    # a bound meets the float32 score it names: float32(0.8) is 0.800000011920929 > 0.8, yet within both bounds
    pool = pool_table([("q", "n1", 1, 0.8, None, None, None, None, None, None, None),
                       ("q", "n2", 2, 0.7, None, None, None, None, None, None, None)])
    assert pairs(select(pool, Policy(max_score=0.8, min_score=0.8)).negatives) == [("q", "n1")]
    assert select(pool, Policy(max_score=-1e300, min_score=-1e300)).removed == removed(max_score=2)  # no overflow


def test_keep_comes_after_the_margins():
    assert pairs(select(POOL, Policy(margin=3.5, keep=1)).negatives) == [("q1", "a6"), ("q3", "c1")]


def test_nulls_pass_the_margin_and_cross_encoder_filters():
    strict = Policy(margin=100.0, relative_margin=1.0, ce_threshold=0.01, ce_margin=0.99)  # 0 and 1 drop all
    # only rows without a best positive score pass both margins: q3's, which have no ce score either
    assert pairs(select(POOL, strict).negatives) == [("q3", "c1"), ("q3", "c2")]
    # a4 has no ce score, and only q3 lacks a best positive ce score
    assert pairs(select(POOL, Policy(ce_threshold=0.01)).negatives) == [("q1", "a4"), ("q3", "c1"), ("q3", "c2")]
    no_best_ce = POOL.set_column(COLUMNS.index("best_positive_ce_score"), "best_positive_ce_score",
                                 pa.array([0.75] * 6 + [None] * 6, pa.float32()))
    assert pairs(select(no_best_ce, Policy(ce_margin=0.99)).negatives) == [("q1", "a4")] + ALL[6:]


def without(*names):
    table = POOL
    for name in names:
        table = table.set_column(COLUMNS.index(name), name, pa.nulls(POOL.num_rows, POOL.schema.field(name).type))
    return table


@pytest.mark.parametrize("policy, columns, message", [
    (Policy(margin=1.0), ["best_positive_score"], "margin filter needs the pool's best_positive_score"),
    (Policy(relative_margin=0.05), ["best_positive_score"], "relative_margin filter needs the pool's best_pos"),
    (Policy(ce_threshold=0.9), ["ce_score"], "ce_threshold filter needs the pool's ce_score"),
    (Policy(ce_margin=0.1), ["ce_score"], "ce_margin filter needs the pool's ce_score"),
    (Policy(ce_margin=0.1), ["best_positive_ce_score"], "ce_margin filter needs the pool's best_positive_ce_sc"),
])
def test_a_filter_on_a_pool_without_its_column_is_an_error(policy, columns, message):
    with pytest.raises(ValueError, match=message):
        select(without(*columns), policy)
    empty = without(*columns).slice(0, 0)
    assert select(empty, policy).kept == 0  # an empty pool has nothing to filter


def test_exclude_duplicates_on_a_pool_without_duplicates_removes_nothing():
    selection = select(without("duplicate_of", "duplicate_kind"), Policy(exclude_duplicates=True))
    assert pairs(selection.negatives) == ALL and selection.removed["duplicates"] == 0


def test_a_pool_that_is_not_a_candidates_table_or_a_bad_seed_is_an_error():
    with pytest.raises(ValueError, match="missing column"):
        select(POOL.drop_columns(["ce_score"]), Policy())
    with pytest.raises(ValueError, match="seed"):
        select(POOL, Policy(), seed=-1)


def test_an_unsorted_pool_is_selected_in_query_then_rank_order():
    shuffled = POOL.take(pa.array(np.random.default_rng(1).permutation(POOL.num_rows)))
    out = select(shuffled, Policy(keep=2)).negatives
    first = list(dict.fromkeys(shuffled["qid"].to_pylist()))
    assert list(dict.fromkeys(out["qid"].to_pylist())) == first
    assert sorted(pairs(out)) == sorted(pairs(select(POOL, Policy(keep=2)).negatives))


# ---------------------------------------------------------------------------------------------- random sampling
def big_pool(num_queries=20, per_query=30):
    rows = [(f"q{q}", f"d{q}_{r}", r, float(-r), None, None, None, None, None, None, None)
            for q in range(num_queries) for r in range(1, per_query + 1)]
    return pool_table(rows)


def by_query(table):
    out = {}
    for qid, docid in pairs(table):
        out.setdefault(qid, []).append(docid)
    return out


def test_random_sampling_is_reproducible_per_seed_and_query():
    pool = big_pool()
    policy = Policy(keep=5, sampling="random")
    a = select(pool, policy, seed=11)
    assert a.negatives.equals(select(pool, policy, seed=11).negatives)
    assert set(pc.value_counts(a.negatives["qid"]).field("counts").to_pylist()) == {5}
    assert a.removed == removed(keep=20 * 25)
    assert set(pairs(a.negatives)) != set(pairs(select(pool, Policy(keep=5)).negatives))  # not simply the top 5
    assert set(pairs(a.negatives)) != set(pairs(select(pool, policy, seed=12).negatives))
    for qid, docids in by_query(a.negatives).items():  # in rank order within each query
        ranks = [int(d.split("_")[1]) for d in docids]
        assert ranks == sorted(ranks), qid


def test_random_sampling_does_not_depend_on_other_queries_or_their_order():
    pool = big_pool()
    policy = Policy(keep=5, sampling="random")
    full = by_query(select(pool, policy, seed=3).negatives)
    alone = by_query(select(pool.filter(pc.equal(pool["qid"], "q7")), policy, seed=3).negatives)
    assert alone == {"q7": full["q7"]}
    reversed_pool = pool.take(pa.array(np.arange(pool.num_rows)[::-1]))  # queries and ranks reversed
    assert by_query(select(reversed_pool, policy, seed=3).negatives) == full
    # another filter that leaves q7 alone changes nothing for it
    other = pool.filter(pc.invert(pc.and_(pc.equal(pool["qid"], "q2"), pc.less(pool["rank"], 10))))
    assert by_query(select(other, policy, seed=3).negatives)["q7"] == full["q7"]
    # a query with at most `keep` candidates keeps them all
    assert by_query(select(pool, Policy(keep=30, sampling="random"), seed=3).negatives) == by_query(pool)


# ------------------------------------------------------------------------------------------------ the schema
def test_policy_is_checked_on_construction():
    assert Policy(rank_range=[2, 5]).rank_range == (2, 5)
    assert Policy(margin=0, relative_margin=1, ce_threshold=1.0, ce_margin=0.0, depth=1, keep=1)
    for empty, message in ((dict(ce_threshold=0), "ce_threshold 0 drops every candidate"),
                           (dict(ce_margin=1.0), "ce_margin 1 drops every candidate")):  # they would select nothing
        with pytest.raises(ValueError, match=message):
            Policy(**empty)
    for bad, message in ((dict(depth=0), "depth"), (dict(depth=2.0), "depth"), (dict(depth=True), "depth"),
                         (dict(rank_range=(5, 2)), "rank_range"), (dict(rank_range=(0, 3)), "rank_range"),
                         (dict(rank_range=[1, 2, 3]), "rank_range"), (dict(rank_range=(1.0, 2)), "rank_range"),
                         (dict(exclude_duplicates="yes"), "exclude_duplicates"),
                         (dict(margin=-0.5), "margin"), (dict(margin=math.nan), "margin"),
                         (dict(margin=math.inf), "margin"), (dict(margin="1"), "margin"),
                         (dict(relative_margin=1.5), "relative_margin"), (dict(relative_margin=-0.1), "relative"),
                         (dict(max_score=math.inf), "max_score"), (dict(min_score=math.nan), "min_score"),
                         (dict(max_score="1"), "max_score"), (dict(min_score=True), "min_score"),
                         (dict(min_score=0.5, max_score=0.25), "min_score 0.5 is above max_score 0.25"),
                         (dict(ce_threshold=1.1), "ce_threshold"), (dict(ce_margin=-0.1), "ce_margin"),
                         (dict(ce_margin=2), "ce_margin"), (dict(keep=0), "keep"),
                         (dict(sampling="hardest"), "sampling")):
        with pytest.raises(PolicyValueError, match=message) as info:
            Policy(**bad)
        assert info.value.key in bad, bad  # the error names the key at fault
    assert Policy(max_score=-2.5, min_score=-2.5) and Policy(min_score=-1e9) and Policy(max_score=7)


def test_from_params_takes_the_schema_keys_with_their_defaults():
    assert Policy.from_params({}) == Policy()
    defaults = {key: spec["default"] for key, spec in POLICY_SCHEMA["properties"].items()}
    assert Policy.from_params(defaults) == Policy()
    assert Policy.from_params({"rank_range": [3, 50], "keep": 8, "sampling": "random", "relative_margin": 0.05}) == \
        Policy(rank_range=(3, 50), keep=8, sampling="random", relative_margin=0.05)
    with pytest.raises(ValueError, match="unknown policy key.*seed"):
        Policy.from_params({"keep": 3, "seed": 1})


def test_policy_schema_is_draft_2020_12_and_matches_the_policy():
    Draft202012Validator.check_schema(POLICY_SCHEMA)
    assert POLICY_SCHEMA["additionalProperties"] is False
    assert list(POLICY_SCHEMA["properties"]) == [f.name for f in dataclasses.fields(Policy)]
    for key, spec in POLICY_SCHEMA["properties"].items():
        assert "default" in spec and spec.get("description"), key
        assert spec["default"] == getattr(Policy(), key), key
    validator = Draft202012Validator(POLICY_SCHEMA)
    # the schema and from_params agree (but for rank_range's order and min_score <= max_score, which only
    # from_params can check)
    for params in ({}, {"depth": 0}, {"depth": 1}, {"keep": 0}, {"rank_range": [0, 2]}, {"rank_range": [1]},
                   {"margin": -1}, {"margin": 2.5}, {"relative_margin": 1.01}, {"ce_threshold": 1.2},
                   {"ce_margin": -0.5}, {"ce_threshold": 0.9, "ce_margin": 0.1}, {"sampling": "hardest"},
                   {"max_score": -3}, {"min_score": "0.5"}, {"min_score": 0.1, "max_score": 0.9},
                   {"exclude_duplicates": 1}, {"exclude_duplicates": True}, {"other": 1}):
        valid = validator.is_valid(params)
        try:
            Policy.from_params(params)
            accepted = True
        except ValueError:
            accepted = False
        assert valid == accepted, params


# --------------------------------------------------------------------------------- random pools: properties
def random_problem(seed, num_queries=15):
    """A run with rank and score ties, shuffled half the time; qrels with relevance 0 to 2; positives for two
    queries in three; cross-encoder scores for most pairs; duplicates flagged on some documents."""
    rng = np.random.default_rng(seed)
    run, judged, positives, ce, ce_positives = [], [], [], [], []
    for q in range(num_queries):
        qid = f"q{q}"
        n = int(rng.integers(1, 30))
        docs = [f"d{d}" for d in rng.choice(200, size=n, replace=False)]
        ranks = np.sort(rng.integers(1, n + 1, size=n))
        scores = np.sort(rng.normal(size=n).round(1))[::-1]
        run += [(qid, d, int(r), float(s)) for d, r, s in zip(docs, ranks, scores)]
        for d in rng.choice(docs, size=min(5, n), replace=False):
            relevance = int(rng.integers(0, 3))
            judged.append((qid, str(d), relevance))
            if q % 3:
                positives.append((qid, str(d), relevance, float(rng.normal(0.5))))
                ce_positives.append((qid, str(d), relevance, float(rng.random())))
        ce += [(qid, d, 1, round(rng.random(), 2)) for d in docs if rng.random() < 0.8]
    run = ranking_table(run)
    if seed % 2:
        run = run.take(pa.array(rng.permutation(run.num_rows)))

    def flags(qids, docids):
        hit = pc.match_substring_regex(docids, "[05]$")  # one document in five "duplicates a positive"
        return (pc.if_else(hit, "d0", pa.scalar(None, pa.string())),
                pc.if_else(hit, "exact", pa.scalar(None, pa.string())))

    depth = int(rng.integers(1, 30))
    pool = build_pool(run, qrels_table(judged), positives_table(positives), depth=depth, ce_scores=ranking_table(ce),
                      ce_positive_scores=positives_table(ce_positives), duplicates=flags)
    return rng, run, qrels_table(judged), positives_table(positives), depth, pool


def rows_of(table, columns=("qid", "docid", "rank", "score")):
    return set(zip(*(table[c].to_pylist() for c in columns)))


def reference_selection(pool, policy, seed):
    """The policy applied one query at a time in plain Python: the specification select's vectorised code meets."""
    by_query = {}
    for row in pool.to_pylist():
        by_query.setdefault(row["qid"], []).append(row)
    out = []
    for qid, rows in by_query.items():
        rows = sorted(rows, key=lambda r: r["rank"])  # stable: ties keep pool order
        best, best_ce = rows[0]["best_positive_score"], rows[0]["best_positive_ce_score"]
        kept = []
        for r in rows:
            if policy.depth is not None and r["rank"] > policy.depth:
                continue
            if policy.rank_range is not None and not policy.rank_range[0] <= r["rank"] <= policy.rank_range[1]:
                continue
            if policy.exclude_duplicates and r["duplicate_of"] is not None:
                continue
            if best is not None and policy.margin is not None and not r["score"] <= best - policy.margin:
                continue
            if best is not None and policy.relative_margin is not None and \
                    not r["score"] <= best - abs(best) * policy.relative_margin:
                continue
            if policy.max_score is not None and r["score"] > np.float32(policy.max_score):
                continue
            if policy.min_score is not None and r["score"] < np.float32(policy.min_score):
                continue
            if r["ce_score"] is not None and policy.ce_threshold is not None and r["ce_score"] >= policy.ce_threshold:
                continue
            if r["ce_score"] is not None and policy.ce_margin is not None and best_ce is not None and \
                    r["ce_score"] > best_ce - policy.ce_margin:
                continue
            kept.append(r)
        if policy.keep is not None and len(kept) > policy.keep:
            if policy.sampling == "top":
                kept = kept[:policy.keep]
            else:
                chosen = np.random.default_rng(query_seed(seed, qid)).choice(len(kept), size=policy.keep, replace=False)
                kept = [r for i, r in enumerate(kept) if i in set(chosen.tolist())]
        out += [(r["qid"], r["docid"], r["rank"], r["score"]) for r in kept]
    return out


def test_selection_meets_a_query_by_query_reference_on_random_pools():
    checked = 0
    for seed in range(50):
        rng, run, qrels, positives, depth, pool = random_problem(seed)
        low = int(rng.integers(1, 10))
        policy = Policy(depth=int(rng.integers(1, 30)) if rng.random() < 0.5 else None,
                        rank_range=(low, low + int(rng.integers(0, 20))) if rng.random() < 0.5 else None,
                        exclude_duplicates=bool(rng.random() < 0.5),
                        keep=int(rng.integers(1, 8)) if rng.random() < 0.7 else None,
                        sampling=str(rng.choice(["top", "random"])),
                        margin=round(rng.random(), 1) if rng.random() < 0.5 else None,
                        relative_margin=round(rng.random(), 2) / 2 if rng.random() < 0.5 else None,
                        max_score=round(rng.uniform(0, 2), 1) if rng.random() < 0.3 else None,
                        min_score=round(rng.uniform(-2, 0), 1) if rng.random() < 0.3 else None,
                        ce_threshold=round(rng.random(), 2) if rng.random() < 0.5 else None,
                        ce_margin=round(rng.random(), 2) / 2 if rng.random() < 0.5 else None)
        selection = select(pool, policy, seed=seed)
        want = reference_selection(pool, policy, seed)
        got = list(zip(*(selection.negatives[c].to_pylist() for c in ("qid", "docid", "rank", "score"))))
        assert got == want, (seed, policy)
        assert selection.candidates == sum(selection.removed.values()) + selection.kept
        checked += len(want)
    assert checked > 300  # the comparisons were not all of empty tables


def test_a_stricter_filter_keeps_a_subset_of_a_looser_one():
    for seed in range(50):
        rng, *_, pool = random_problem(seed)  # best positive scores of either sign
        a, b = (float(x) for x in sorted(rng.random(2).round(2).clip(0.01, 0.99)))  # 0 and 1: refused filters
        for loose, strict in ((Policy(margin=a), Policy(margin=b)),
                              (Policy(relative_margin=a), Policy(relative_margin=b)),
                              (Policy(max_score=b), Policy(max_score=a)),
                              (Policy(min_score=-b), Policy(min_score=-a)),
                              (Policy(ce_threshold=b), Policy(ce_threshold=a)),
                              (Policy(ce_margin=a), Policy(ce_margin=b)),
                              (Policy(margin=a, ce_threshold=b), Policy(margin=b, ce_threshold=a))):
            kept = rows_of(select(pool, strict).negatives)
            assert kept <= rows_of(select(pool, loose).negatives), (seed, strict)


def test_a_larger_relative_margin_filters_more_below_a_negative_best_positive_score():
    # best -2.0: the bound is -2.0 - 2.0 x margin (-2.0, -2.5, -3.0, -4.0), not -2.0 x (1 - margin), which rises
    scores = [-1.5, -2.0, -2.5, -3.0, -3.5]
    pool = pool_table([("q", f"n{i}", i, s, -2.0, None, None, None, None, None, None)
                       for i, s in enumerate(scores, 1)])
    for margin, kept in ((0.0, ["n2", "n3", "n4", "n5"]), (0.25, ["n3", "n4", "n5"]), (0.5, ["n4", "n5"]),
                         (1.0, [])):
        selection = select(pool, Policy(relative_margin=margin))
        assert [docid for _, docid in pairs(selection.negatives)] == kept, margin
        assert selection.removed == removed(relative_margin=5 - len(kept))


def test_no_policy_returns_a_positive_or_an_excluded_duplicate_or_anything_outside_the_pool():
    flagged = 0
    for seed in range(50):
        rng, run, qrels, positives, depth, pool = random_problem(seed)
        relevant = {(q, d) for q, d, r in zip(*(qrels[c].to_pylist() for c in ("qid", "docid", "relevance")))
                    if r >= 1}
        duplicates = set(zip(*(pool.filter(pc.is_valid(pool["duplicate_of"]))[c].to_pylist()
                               for c in ("qid", "docid"))))
        flagged += len(duplicates)
        policy = Policy(depth=int(rng.integers(1, 30)) if rng.random() < 0.5 else None,
                        exclude_duplicates=True, margin=float(rng.random()) if rng.random() < 0.3 else None,
                        ce_threshold=float(rng.random()) if rng.random() < 0.5 else None,
                        keep=int(rng.integers(1, 10)) if rng.random() < 0.5 else None,
                        sampling=str(rng.choice(["top", "random"])))
        for chosen in (select(pool, policy, seed=seed), select(pool, Policy(), seed=seed)):
            found = set(pairs(chosen.negatives))
            assert not found & relevant, seed
            assert rows_of(chosen.negatives) <= rows_of(pool), seed
        assert not set(pairs(select(pool, policy, seed=seed).negatives)) & duplicates, seed
    assert flagged > 100  # the pools did flag duplicates
