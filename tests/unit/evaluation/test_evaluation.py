"""Evaluation values checked against hand-computed numbers."""

import json
import math

import pyarrow as pa
import pytest

from hardneg.evaluation.metrics import evaluate, evaluate_run
from hardneg.io import artifacts

QRELS = pa.table({"qid": ["q1", "q1", "q2", "q3", "q4"], "docid": ["d1", "d2", "d3", "d5", "d6"],
                  "relevance": [1, 2, 1, 1, 0]}, schema=artifacts.QRELS.schema)
RANKING = pa.table({"qid": ["q1", "q1", "q1", "q2", "q2"], "docid": ["d9", "d2", "d1", "d3", "d4"],
                "rank": [1, 2, 3, 1, 2], "score": [9.0, 8.0, 7.0, 5.0, 4.0]}, schema=artifacts.RANKING.schema)


def test_hand_computed_values():
    means, per_query = evaluate(RANKING, QRELS, ["RR@10", "R@100", "nDCG@10", "RR@1"])
    rows = {(r["qid"], r["measure"]): r["value"] for r in per_query.to_pylist()}
    assert rows[("q1", "RR@10")] == pytest.approx(0.5)
    assert rows[("q2", "RR@10")] == pytest.approx(1.0)
    assert rows[("q3", "RR@10")] == 0.0  # judged but not retrieved: counts as 0
    assert ("q4", "RR@10") not in rows  # no relevant document: not counted
    dcg = 2 / math.log2(3) + 1 / math.log2(4)
    ideal = 2 + 1 / math.log2(3)
    assert rows[("q1", "nDCG@10")] == pytest.approx(dcg / ideal)
    assert means["RR@10"] == pytest.approx(0.5)  # (0.5 + 1 + 0) / 3
    assert means["R@100"] == pytest.approx(2 / 3)
    assert means["RR@1"] == pytest.approx(1 / 3)


def test_metrics_file_records_provenance(tmp_path):
    artifacts.write_table(RANKING, artifacts.RANKING, tmp_path / "test.parquet")
    artifacts.write_table(RANKING.slice(0, 3), artifacts.RANKING, tmp_path / "train.parquet")
    artifacts.write_table(QRELS, artifacts.QRELS, tmp_path / "qrels" / "test.parquet")
    artifacts.write_table(QRELS, artifacts.QRELS, tmp_path / "qrels" / "train.parquet")
    resolved = {"name": "toy", "seed": 5, "dataset": {"name": "toy-data"}, "params": {},
                "evaluation": {"split": "test", "measures": ["RR@10", "nDCG@10"]}}
    runs = {"train": tmp_path / "train.parquet", "test": tmp_path / "test.parquet"}
    record = evaluate_run(runs, tmp_path / "qrels", resolved, tmp_path / "metrics.json", tmp_path / "per_query.parquet")
    on_disk = json.loads((tmp_path / "metrics.json").read_text())
    assert on_disk == record
    assert on_disk["num_queries"] == 3 and on_disk["split"] == "test" and on_disk["dataset"] == "toy-data"
    assert on_disk["measures"]["RR@10"] == pytest.approx(0.5)
    assert on_disk["splits"]["test"] == on_disk["measures"]
    assert on_disk["splits"]["train"]["RR@10"] == pytest.approx(0.5 / 3)  # only q1 answered in train
    assert on_disk["provenance"]["seed"] == 5 and len(on_disk["provenance"]["config_hash"]) == 64
    assert on_disk["provenance"]["packages"]["ir-measures"]
    per_query = artifacts.read_table(artifacts.PER_QUERY_METRICS, tmp_path / "per_query.parquet").to_pandas()
    # 3 queries × (2 measures + top-200 and total pairwise errors); the pairwise rows average to metrics.json's
    assert len(per_query) == 12
    means = per_query.groupby("measure")["value"].mean()
    assert means["PairwiseErrors@200"] == pytest.approx(on_disk["pairwise_errors"]["top200_pairwise_errors"])
    assert means["PairwiseErrors"] == pytest.approx(on_disk["pairwise_errors"]["total_pairwise_errors"])
    assert means["RR@10"] == pytest.approx(0.5)


def test_ranking_file_with_wrong_schema_is_rejected(tmp_path):
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"qid": ["q1"], "doc": ["d1"]}), tmp_path / "bad.parquet")
    with pytest.raises(Exception, match=r"bad\.parquet: not a ranking table: missing column\(s\) docid, rank, score"):
        artifacts.read_table(artifacts.RANKING, tmp_path / "bad.parquet")
