"""A dataset whose definition changes is prepared again, with everything built on it: a BM25 run on the synthetic
dataset ``tiny``, then ``tiny`` redefined as a BEIR folder, re-prepares and re-evaluates (other queries, other
metrics); redefined over files that are not there, it is refused before anything runs, where Snakemake would keep
the earlier preparation (an output whose job cannot run) and report success on the old data."""

from __future__ import annotations

import copy
import json

import pytest

from tests.support.configs import TINY
from tests.support.user_data import write_beir
from tests.support.workflow import output_of, snakemake_jobs, write_config

pytestmark = pytest.mark.slow

TARGET = "results/bm25/metrics.json"


def test_a_redefined_dataset_is_prepared_again_and_a_missing_one_refused(tmp_path):
    workdir = tmp_path / "work"
    write_config(workdir, TINY)
    first, _ = snakemake_jobs(workdir, TARGET)
    assert first.returncode == 0, output_of(first)[-3000:]
    before = json.loads((workdir / TARGET).read_text())

    redefined = copy.deepcopy(TINY)
    redefined["datasets"]["tiny"] = {"adapter": "beir", "path": str(write_beir(tmp_path / "beir")),
                                     "splits": ["train", "test"]}
    write_config(workdir, redefined)
    second, jobs = snakemake_jobs(workdir, TARGET)
    assert second.returncode == 0, output_of(second)[-3000:]
    assert {"prepare_dataset", "bm25_index", "bm25_search", "evaluate"} <= {job["rule"] for job in jobs}
    after = json.loads((workdir / TARGET).read_text())
    assert after["num_queries"] != before["num_queries"] and after["measures"] != before["measures"]

    redefined["datasets"]["tiny"]["path"] = "/nonexistent"
    write_config(workdir, redefined)
    third, jobs = snakemake_jobs(workdir, TARGET)
    out = output_of(third)
    assert third.returncode != 0 and jobs == []
    assert "config key 'datasets.tiny': /nonexistent/corpus.jsonl does not exist" in out, out[-3000:]
    assert json.loads((workdir / TARGET).read_text()) == after
