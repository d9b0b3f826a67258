"""The DAG Snakemake builds for ANCE's episodes (lag 0 and 1): which checkpoint's encoding an episode's training
waits for, which ranking its negatives are mined from (the episodes: tests/unit/pipeline/test_episodes.py)."""

import re
from pathlib import Path

import pytest
import yaml

from tests.support import REPO
from tests.support.workflow import dry_run, output_of, write_config


def _dag_edges(workdir: Path, config: dict) -> dict[str, set[str]]:
    """job (its rule and outputs) → the jobs it depends on directly, from the jobs ``snakemake -n`` plans (each
    with its input and output files)."""
    write_config(workdir, config)
    result, planned = dry_run(workdir, "results/ance/metrics.json")
    assert result.returncode == 0, output_of(result)[-3000:]
    jobs = []
    for job in planned:  # "path (update)": an output Snakemake keeps while it is remade
        files = {key: [re.sub(r" \(.*\)$", "", path) for path in job[key]] for key in ("input", "output")}
        jobs.append((f"{job['rule']} {' '.join(files['output'])}", files))
    producer = {path: job for job, files in jobs for path in files["output"]}
    return {job: {producer[path] for path in files["input"] if path in producer} for job, files in jobs}


def _ancestors(parents: dict[str, set[str]], job: str) -> set[str]:
    seen, todo = set(), [job]
    while todo:
        for parent in parents[todo.pop()]:
            if parent not in seen:
                seen.add(parent)
                todo.append(parent)
    return seen


@pytest.mark.parametrize("lag", [0, 1])
def test_with_lag_1_training_an_episode_does_not_wait_for_the_previous_checkpoint_s_encoding(tmp_path, lag):
    raw = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    raw["runs"]["ance"]["params"]["ance"]["lag"] = lag
    parents = _dag_edges(tmp_path, raw)
    train = next(job for job in parents if job.startswith("train_episode") and "ance/episodes/2" in job)
    encodes = {job for job in _ancestors(parents, train) if job.startswith("encode_corpus_shard")}
    needs_checkpoint_1 = any("ance/episodes/1" in job for job in encodes)
    assert needs_checkpoint_1 == (lag == 0), sorted(encodes)
    select = next(job for job in parents if job.startswith("select_hard_negatives") and "ance/episodes/2" in job)
    pool = next(job for job in parents[select] if job.startswith("candidate_pool"))
    assert [job.split()[1] for job in parents[pool] if job.startswith("dense_search")] == \
        [f"results/ance/episodes/{1 - lag}/rankings/train.parquet"]
