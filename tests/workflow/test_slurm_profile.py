"""profiles/slurm in a dry run of the passage config (the profiles' files: tests/unit/pipeline/test_profiles.py;
tests/slurm/cluster.sh runs profiles/slurm on a real SLURM cluster)."""

import pytest

from tests.support import REPO
from tests.support.configs import PASSAGE
from tests.support.workflow import SLURM_PLUGIN, dry_run, job_resources

PROFILES = REPO / "profiles"


@pytest.mark.slow
def test_the_slurm_profile_keeps_the_config_resources_and_gpus(tmp_path):
    """A dry run through profiles/slurm of the passage config: jobs keep the config's memory and runtime and
    their GPUs (the plugin's `gpu` resource), the rules' own values where the config names none."""
    result, jobs = dry_run(tmp_path, "--workflow-profile", str(PROFILES / "slurm"), "results/msmarco-passage/star/metrics.json",
                           "--configfile", str(PASSAGE), cwd=REPO, paths=(SLURM_PLUGIN,))
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-3000:]
    assert f"workflow specific profile {PROFILES / 'slurm'}" in output
    star = job_resources(jobs, "train_dense", "run=star")
    assert "gpu=1" in star and "runtime=2880" in star and "mem_mb=64000" in star
    assert "gpu=1" in job_resources(jobs, "encode_corpus_shard", "run=star, shard=0")
    assert "gpu=1" in job_resources(jobs, "dense_search", "run=star, split=dev")
    assert "gpu" not in job_resources(jobs, "bm25_index", "run=bm25")
