"""Leakage of hidden positives into a selection and the hardness it keeps (hardneg.mining.leakage), on hand-made
pools: the counts and shares, the mean rank and margin, both against a reference, the table and its files; and a
constructed case where a margin policy keeps out the hidden positives plain top-k selects."""

import dataclasses
import math

import pyarrow as pa
import pytest

from hardneg.io import artifacts
from hardneg.mining.leakage import (LEAKAGE, hardness, hardness_kept, leakage, leakage_cut, leakage_table,
                                    policy_settings, write_leakage)
from hardneg.mining.policies import Policy
from hardneg.mining.selection import select
from tests.support.mining import qrels_table

COLUMNS = artifacts.CANDIDATES.schema.names


def pool_table(rows):
    """A CANDIDATES table from (qid, docid, rank, score, best_positive_score) tuples, the other columns null."""
    rows = [row + (None,) * (len(COLUMNS) - len(row)) for row in rows]
    values = list(zip(*rows)) if rows else [[] for _ in COLUMNS]
    return pa.table({name: list(v) for name, v in zip(COLUMNS, values)}, schema=artifacts.CANDIDATES.schema)


def negatives(pool, docids):
    """The pool's rows of these (qid, docid) pairs, as a HARDNEGS table (a selection)."""
    keep = [(q, d) in docids for q, d in zip(pool["qid"].to_pylist(), pool["docid"].to_pylist())]
    return pool.filter(pa.array(keep)).select(artifacts.HARDNEGS.schema.names).cast(artifacts.HARDNEGS.schema)


# q1's best visible positive scores 10 under the miner; h1 and h2 are hidden positives of q1 ranked 2 and 4 (scores
# 9.8 and 9.5, close to the positive's, as a relevant document scores), the others negatives. q2's best positive
# scores 6; h3 is a hidden positive it ranks 1. q3 has no scored positive. Hidden h4 (q1) and h5 (q4) are in no pool.
POOL = pool_table([
    ("q1", "a1", 1, 9.0, 10.0), ("q1", "h1", 2, 9.8, 10.0), ("q1", "a3", 3, 8.0, 10.0), ("q1", "h2", 4, 9.5, 10.0),
    ("q1", "a5", 5, 7.0, 10.0), ("q1", "a6", 6, 6.0, 10.0),
    ("q2", "h3", 1, 5.9, 6.0), ("q2", "b2", 2, 5.0, 6.0), ("q2", "b3", 3, 4.0, 6.0),
    ("q3", "c1", 1, 1.0, None), ("q3", "c2", 2, 0.5, None),
])
HIDDEN = qrels_table([("q1", "h1", 1), ("q1", "h2", 2), ("q2", "h3", 1), ("q1", "h4", 1), ("q4", "h5", 1),
                      ("q1", "h1", 1), ("q2", "b2", 0)])  # h1 judged twice counts once; a relevance 0 row: none


def test_leakage_counts_the_hidden_positives_selected():
    selection = negatives(POOL, {("q1", "a1"), ("q1", "h1"), ("q2", "h3"), ("q2", "b2"), ("q3", "c1")})
    result = leakage(POOL, selection, HIDDEN)
    assert (result.hidden_positives, result.hidden_in_pool, result.leaked, result.negatives) == (5, 3, 2, 5)
    assert result.leakage == pytest.approx(2 / 5) and result.pool_leakage == pytest.approx(2 / 3)
    assert result.false_negative_share == pytest.approx(2 / 5)
    assert leakage(POOL, negatives(POOL, {("q2", "h3"), ("q1", "h2")}), HIDDEN).leaked == 2
    other_query = negatives(pool_table([("q2", "h1", 1, 1.0, 2.0)]), {("q2", "h1")})
    assert leakage(POOL, other_query, HIDDEN).leaked == 0  # h1 is a hidden positive of q1, not of q2


def test_leakage_without_hidden_positives_or_negatives_is_nan_not_an_error():
    empty = negatives(POOL, set())
    result = leakage(POOL, empty, qrels_table([]))
    assert (result.hidden_positives, result.leaked, result.negatives) == (0, 0, 0)
    assert math.isnan(result.leakage) and math.isnan(result.pool_leakage)
    assert math.isnan(result.false_negative_share)
    assert leakage(POOL, empty, HIDDEN).leakage == 0.0


def test_hardness_is_the_mean_rank_and_margin_to_the_best_visible_positive():
    result = hardness(POOL, negatives(POOL, {("q1", "a1"), ("q1", "a3"), ("q2", "b2"), ("q3", "c2")}))
    assert result.mean_rank == pytest.approx((1 + 3 + 2 + 2) / 4)
    assert result.mean_margin == pytest.approx(((9 - 10) + (8 - 10) + (5 - 6)) / 3)  # q3: no positive score
    assert result.queries_with_negatives == 3
    nothing = hardness(POOL, negatives(POOL, set()))
    assert math.isnan(nothing.mean_rank) and math.isnan(nothing.mean_margin) and nothing.queries_with_negatives == 0
    assert math.isnan(hardness(POOL, negatives(POOL, {("q3", "c1")})).mean_margin)


def test_hardness_kept_and_leakage_cut_against_the_reference():
    assert hardness_kept(4.0, 4.0) == 1.0 and hardness_kept(4.0, 5.0) == pytest.approx(0.8)
    assert math.isnan(hardness_kept(4.0, math.nan)) and math.isnan(hardness_kept(math.nan, 2.0))
    assert leakage_cut(0.4, 0.1) == pytest.approx(0.75) and leakage_cut(0.4, 0.0) == 1.0
    assert leakage_cut(0.2, 0.4) == pytest.approx(-1.0)  # leaks more than the reference
    assert math.isnan(leakage_cut(0.0, 0.0)) and math.isnan(leakage_cut(math.nan, 0.1))


def test_a_margin_policy_keeps_out_the_hidden_positives_plain_top_k_selects():
    """The constructed case: the hidden positives score near their query's best visible positive (as relevant
    documents do), so a margin below the positive's score removes them, and the negatives left stay near the top."""
    policies = {"top3": Policy(keep=3), "margin": Policy(margin=0.6, keep=3), "skip2": Policy(rank_range=(3, 6),
                                                                                               keep=3)}
    selections = {name: select(POOL, policy).negatives for name, policy in policies.items()}
    table = leakage_table(POOL, selections, HIDDEN)
    rows = {row["policy"]: row for row in table.to_pylist()}
    assert table.schema == LEAKAGE.schema and list(rows) == ["top3", "margin", "skip2"]
    assert rows["top3"]["reference"] and not rows["margin"]["reference"]
    assert rows["top3"]["leaked"] == 2 and rows["margin"]["leaked"] == 0  # h1, h3 selected by top-3 only
    assert rows["margin"]["leaked"] < rows["top3"]["leaked"]
    assert rows["top3"]["leakage"] == pytest.approx(2 / 5) and rows["margin"]["leakage_cut"] == 1.0
    assert rows["top3"]["hardness_kept"] == 1.0 and rows["top3"]["leakage_cut"] == 0.0
    # top-3: ranks 1, 2, 3 (q1), 1, 2, 3 (q2), 1, 2 (q3); margin: a1, a3, a5 (q1), b2, b3 (q2), c1, c2 (q3)
    assert rows["top3"]["mean_rank"] == pytest.approx(15 / 8) and rows["margin"]["mean_rank"] == pytest.approx(17 / 7)
    assert rows["margin"]["hardness_kept"] == pytest.approx((15 / 8) / (17 / 7))
    assert rows["skip2"]["leaked"] == 1  # h2 at rank 4: a rank window skips the top but not every false negative


def test_the_reference_is_named_or_the_first_and_must_be_a_selection():
    selections = {"a": negatives(POOL, {("q1", "a1")}), "b": negatives(POOL, {("q1", "h1"), ("q1", "a1")})}
    table = leakage_table(POOL, selections, HIDDEN, reference="b")
    assert table["reference"].to_pylist() == [False, True]
    assert table["leakage_cut"].to_pylist()[0] == 1.0 and table["hardness_kept"].to_pylist()[0] == pytest.approx(1.5)
    with pytest.raises(ValueError, match="reference policy 'c' is not one of the selections"):
        leakage_table(POOL, selections, HIDDEN, reference="c")
    with pytest.raises(ValueError, match="no selection"):
        leakage_table(POOL, {}, HIDDEN)


def test_a_policy_s_settings_in_words():
    keys = {"depth": None, "rank_range": [6, 200], "exclude_duplicates": False, "margin": None,
            "relative_margin": 0.05, "ce_threshold": None, "ce_margin": None, "keep": 8, "sampling": "top"}
    assert policy_settings(keys) == "rank_range 6-200, relative_margin 0.05, keep 8"
    assert policy_settings({**keys, "rank_range": None, "relative_margin": None, "keep": None}) == "all candidates"
    assert policy_settings({"exclude_duplicates": True, "sampling": "random", "keep": 2}) == \
        "exclude_duplicates, sampling random, keep 2"
    bounded = dataclasses.asdict(Policy(max_score=0.9, min_score=-0.5, keep=8))  # the keys in the policy's order
    assert policy_settings(bounded) == "max_score 0.9, min_score -0.5, keep 8"


def test_the_stage_writes_the_table_and_its_page(tmp_path):
    pool_path, hidden_path = tmp_path / "pool.parquet", tmp_path / "hidden.parquet"
    artifacts.write_table(POOL, artifacts.CANDIDATES, pool_path)
    artifacts.write_table(HIDDEN, artifacts.QRELS, hidden_path)
    paths = {}
    for name, policy in {"top3": Policy(keep=3), "margin": Policy(margin=0.6, keep=3)}.items():
        paths[name] = tmp_path / f"{name}.parquet"
        artifacts.write_table(select(POOL, policy).negatives, artifacts.HARDNEGS, paths[name])
    table = write_leakage(pool_path, paths, hidden_path, tmp_path / "leakage.parquet", tmp_path / "leakage.md",
                          settings={"top3": "keep 3", "margin": "margin 0.6, keep 3"}, miner="warmup",
                          dataset="synthetic_hidden", split="train", depth=6)
    assert artifacts.read_table(LEAKAGE, tmp_path / "leakage.parquet").equals(table)
    page = (tmp_path / "leakage.md").read_text()
    assert "hides 5 judged positives of split `train`" in page and "ranks 3 of them within its pool's depth (6)" in page
    assert "| **top3** (reference) | keep 3 | 8 | 2 | 40.0% | 66.7% |" in page
    assert "| margin | margin 0.6, keep 3 | 7 | 0 | 0.0% | 0.0% | 0.00% |" in page


def test_a_table_with_nothing_to_measure_stores_nulls_not_nan():
    """Nothing hidden and no negative: the shares of nothing are null in the stored table (its numbers are finite
    or absent, as every stored number is), and the Markdown shows a dash."""
    table = leakage_table(POOL, {"none": negatives(POOL, set()), "all": negatives(POOL, {("q1", "a1")})},
                          qrels_table([]))
    for column in ("leakage", "pool_leakage", "false_negative_share", "leakage_cut"):
        values = table[column].to_pylist()
        assert None in values and not any(isinstance(v, float) and math.isnan(v) for v in values), column
    assert all(math.isfinite(v) for column in table.column_names if pa.types.is_floating(table[column].type)
               for v in table[column].to_pylist() if v is not None)
