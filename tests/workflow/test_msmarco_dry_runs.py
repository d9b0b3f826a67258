"""Dry runs of config/msmarco-passage.yaml and config/msmarco-doc.yaml: full DAGs that download nothing, the
download jobs first, nothing of config/config.yaml merged in under --configfile, full-scale resources per job (the
configs themselves: tests/unit/pipeline/test_msmarco_configs.py)."""

import re
from pathlib import Path

import pytest
import yaml

from tests.support.configs import DOC, PASSAGE
from tests.support.workflow import dry_run, job_resources, snakemake


def planned(workdir: Path, config: Path, *targets: str) -> tuple[dict, str, list[dict]]:
    """(job counts by rule, Snakemake's output, the jobs) of ``snakemake -n`` in ``workdir``."""
    result, jobs = dry_run(workdir, *targets, "--configfile", str(config))
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-3000:]
    table = output.split("Job stats:")[1].split("total")[0]
    counts = {m.group(1): int(m.group(2)) for m in re.finditer(r"^(\w+)\s+(\d+)$", table, re.M)}
    return counts, output, jobs


@pytest.mark.slow
def test_passage_dry_run_builds_adore_star_from_the_downloads(tmp_path):
    counts, output, jobs = planned(tmp_path, PASSAGE, "results/msmarco-passage/adore_star/metrics.json")
    assert counts["download"] == 1 and counts["extract_member"] == 5 and counts["prepare_dataset"] == 1
    assert counts["train_dense"] == 3  # warmup, star, adore_star
    assert counts["encode_corpus_shard"] == 32  # 16 shards each of warmup and star
    assert "collectionandqueries.tar.gz" in output and "synthetic" not in output  # nothing of config/config.yaml
    assert not (tmp_path / "data").exists()  # a dry run fetches nothing
    star = job_resources(jobs, "train_dense", "run=star")
    assert "gpu=1" in star and "runtime=2880" in star and "mem_mb=64000" in star
    assert "gpu=1" in job_resources(jobs, "encode_corpus_shard", "run=star, shard=0")
    assert "mem_mb=32000" in job_resources(jobs, "prepare_dataset", "dataset=msmarco-passage")


@pytest.mark.slow
def test_passage_dry_run_of_the_tct_and_ance_chains(tmp_path):
    counts, output, jobs = planned(tmp_path, PASSAGE, *[f"results/msmarco-passage/{run}/metrics.json"
                                                         for run in ("tct_hnp", "ance", "colbert_teacher")])
    assert counts["download"] == 1 and counts["extract_member"] == 5
    assert counts["train_episode"] == 10 and counts["assemble_episodes"] == 1
    assert counts["train_dense"] == 5  # warmup, colbert_teacher, tct, colbert_teacher_hn, tct_hnp
    assert counts["rerank"] == 1  # the teacher re-ranks BM25's dev top 1000 for its own metrics
    episode = job_resources(jobs, "train_episode", "run=ance/episodes/3")
    assert "gpu=4" in episode and "runtime=720" in episode
    assert "gpu=1" in job_resources(jobs, "rerank", "run=colbert_teacher, split=dev")


@pytest.mark.slow
def test_doc_dry_run_fetches_the_five_files_first(tmp_path):
    counts, output, jobs = planned(tmp_path, DOC, "results/msmarco-doc/doc_adore_star/metrics.json",
                                   "results/msmarco-doc/doc_ance/metrics.json")
    assert counts["download"] == 5 and "extract_member" not in counts and counts["prepare_dataset"] == 1
    assert counts["train_dense"] == 3 and counts["train_episode"] == 10
    assert "msmarco-docs.tsv.gz" in output and "synthetic" not in output
    assert "mem_mb=96000" in job_resources(jobs, "prepare_dataset", "dataset=msmarco-doc")
    assert not (tmp_path / "data").exists()


@pytest.mark.slow
def test_files_already_there_are_not_fetched_and_resource_names_are_checked(tmp_path):
    for name in ("collection.tsv", "queries.train.tsv", "qrels.train.tsv", "queries.dev.small.tsv",
                 "qrels.dev.small.tsv"):
        (tmp_path / "data" / "msmarco-passage").mkdir(parents=True, exist_ok=True)
        (tmp_path / "data" / "msmarco-passage" / name).touch()
    counts, _, _ = planned(tmp_path, PASSAGE, "results/msmarco-passage/bm25/metrics.json")
    assert "download" not in counts and "extract_member" not in counts and counts["prepare_dataset"] == 1
    config = yaml.safe_load(PASSAGE.read_text())
    config["resources"]["train_dens"] = {"runtime": 10}
    (tmp_path / "typo.yaml").write_text(yaml.safe_dump(config))
    result = snakemake(tmp_path, "-n", "--configfile", str(tmp_path / "typo.yaml"), cores=None)
    assert result.returncode != 0 and "config key 'resources.train_dens'" in result.stdout + result.stderr
