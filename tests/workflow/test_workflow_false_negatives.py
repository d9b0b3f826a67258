"""The false-negative experiment built by the workflow on a tiny config (tests/support/configs.py,
FALSE_NEGATIVES_CONFIG; no training): the dataset's hidden positives beside its visible qrels, each policy's
selection from the miner's pool, the leakage table with one row per policy, the figure and the page."""

import pyarrow.compute as pc
import pytest

from hardneg.io import artifacts
from hardneg.mining.leakage import LEAKAGE
from tests.support.configs import FALSE_NEGATIVES_CONFIG
from tests.support.mining import pairs

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


@pytest.mark.slow
def test_the_experiment_measures_each_policy_on_the_hidden_positives(builds):
    work = builds.workflow(FALSE_NEGATIVES_CONFIG, "false_negatives")
    results = work / "results"
    hidden = artifacts.read_table(artifacts.QRELS, results / "datasets" / "hidden" / "hidden" / "train.parquet")
    visible = artifacts.read_table(artifacts.QRELS, results / "datasets" / "hidden" / "qrels" / "train.parquet")
    assert hidden.num_rows > 0 and not set(pairs(hidden)) & set(pairs(visible))
    pool = artifacts.read_table(artifacts.CANDIDATES, results / "inbatch" / "pools" / "train_top50_nodup.parquet")
    in_pool = set(pairs(hidden)) & set(pairs(pool))
    assert in_pool  # the miner ranks hidden positives within depth: they are candidates like any negative

    table = artifacts.read_table(LEAKAGE, results / "false_negatives" / "leakage.parquet")
    rows = {row["policy"]: row for row in table.to_pylist()}
    assert list(rows) == ["top", "margin", "window"] and table["reference"].to_pylist() == [True, False, False]
    for name, row in rows.items():
        selection = artifacts.read_table(artifacts.HARDNEGS, results / "false_negatives" / "selections" /
                                         f"{name}.parquet")
        assert row["negatives"] == selection.num_rows
        assert row["leaked"] == len(set(pairs(selection)) & set(pairs(hidden)))
        assert (row["hidden_positives"], row["hidden_in_pool"]) == (hidden.num_rows, len(in_pool))
        assert pc.max(pc.value_counts(selection["qid"]).field("counts")).as_py() <= 20  # keep: 20
    assert rows["top"]["leaked"] > 0 and rows["top"]["hardness_kept"] == 1.0
    # the margin policy keeps out hidden positives that plain top-k selects (they score near the visible positive)
    assert rows["margin"]["leaked"] < rows["top"]["leaked"] and rows["margin"]["leakage_cut"] > 0
    assert rows["window"]["mean_rank"] > rows["top"]["mean_rank"]  # skipping the top ranks gives up hardness

    figure = results / "false_negatives" / "leakage.png"
    assert figure.read_bytes().startswith(PNG_SIGNATURE)
    page = (results / "false_negatives" / "leakage.html").read_text()
    assert "False negatives" in page and "margin 0.01, keep 20" in page
