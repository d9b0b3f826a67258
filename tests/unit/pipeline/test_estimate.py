"""The estimate `hardneg init` and `check-config` print: the runs the targets build, each with its heavy jobs, and
their time from the measured encoding rate by the arithmetic of hardneg.pipeline.estimate."""

import copy

import pytest
import yaml

from hardneg.pipeline import estimate
from hardneg.pipeline.config import validate_config
from hardneg.pipeline.plan import Plan
from tests.support import REPO


@pytest.fixture(scope="module")
def config():
    return validate_config(yaml.safe_load((REPO / "config" / "config.yaml").read_text()))


def test_the_estimate_covers_the_targets_and_what_they_read(config):
    small = copy.deepcopy(config)
    small["targets"] = ["adore_star"]
    assert estimate.target_runs(small) == ["bm25", "warmup", "star", "adore_star"]


def test_the_arithmetic_of_a_training_run(config):
    """At 100 documents a second (and 100 × doc_max_length / query_max_length queries), warmup's 252 steps of 32
    rows (a query, its positive, one negative) cost 3 forward passes a text; encoding its 5,000 documents 50 s;
    each of its 8 jobs (config, training, encoding, index, a search of each of 3 splits, evaluation) 10 s."""
    small = copy.deepcopy(config)
    small["targets"] = ["warmup"]
    found = {item.run: item for item in estimate.estimate(small, Plan(small), rate=lambda section, length: 100.0)}
    model = small["runs"]["warmup"]["params"]["model"]
    query_rate = 100.0 * model["doc_max_length"] / model["query_max_length"]
    steps = 252  # 2,000 queries in batches of 32 (a last one of 16), 4 epochs
    expected = 5_000 / 100.0 + steps * 3 * (32 / query_rate + 32 * 2 / 100.0) + 10 * 8
    assert found["warmup"].seconds == pytest.approx(expected)
    assert found["warmup"].jobs == ["train 252 optimiser steps", "encode 5,000 documents"]
    assert found["bm25"].jobs == [] and found["bm25"].seconds == 10 * 5


def test_dev_evaluation_counts_the_candidates_or_the_corpus(config):
    small = copy.deepcopy(config)
    small["targets"] = ["star"]
    small["runs"]["star"]["params"]["train"]["dev_every"] = 50
    plan = Plan(validate_config(copy.deepcopy(small)))
    found = {item.run: item for item in estimate.estimate(small, plan, rate=lambda section, length: 100.0)}
    assert "(3 dev evaluations of 200 queries, 5,000 documents each)" in found["star"].jobs[0]  # 200 × 60 > 5,000
    small["runs"]["star"]["params"]["train"]["dev_depth"] = 5
    plan = Plan(validate_config(copy.deepcopy(small)))
    found = {item.run: item for item in estimate.estimate(small, plan, rate=lambda section, length: 100.0)}
    assert "(3 dev evaluations of 200 queries, 2,000 documents each)" in found["star"].jobs[0]


def test_the_lines_end_with_the_total():
    lines = estimate.describe([estimate.RunEstimate("a", ["train 3 optimiser steps"], 90.0),
                               estimate.RunEstimate("b", [], 30.0)])
    assert lines == ["  a: train 3 optimiser steps: ~2 min", "  b: light jobs only: ~1 min",
                     "  in all: ~2 min on this machine (a rough estimate from its measured encoding rate; jobs that "
                     "can run at once, with --cores, take less)"]


def test_a_rate_is_measured_once_and_kept(tmp_path, monkeypatch):
    monkeypatch.setenv("HARDNEG_CACHE", str(tmp_path / "cache"))
    measured = []
    monkeypatch.setattr(estimate, "_measure_rate", lambda section, length, texts, batch: measured.append(length) or 50.0)
    section = {"name": "builtin", "doc_max_length": 64}
    assert estimate.encoding_rate(section, 64) == 50.0 and estimate.encoding_rate(section, 64) == 50.0
    assert estimate.encoding_rate(section, 32) == 50.0 and measured == [64, 32]
    assert (tmp_path / "cache" / "encoding_rates.json").is_file()
    (tmp_path / "cache" / "encoding_rates.json").write_text("not json")  # a broken cache is measured again
    assert estimate.encoding_rate(section, 64) == 50.0 and measured == [64, 32, 64]
