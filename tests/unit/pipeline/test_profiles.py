"""The Snakemake profiles: profiles/default/ stays neutral, the named ones repeat its settings (a named workflow
profile replaces it), and profiles/slurm names no site, leaves partition and account to the lines the user edits,
and leaves each rule's memory, runtime and GPUs to the workflow and its config. tests/slurm/cluster.sh runs
profiles/slurm on a real SLURM cluster (`make slurm-test`)."""

import re
import subprocess

import pytest
import yaml

from tests.support import REPO
from tests.support.configs import PASSAGE
from tests.support.workflow import SNAKEMAKE, job_resources

PROFILES = REPO / "profiles"
NAMED = ["slurm", "local-gpu"]


def profile(name: str) -> dict:
    return yaml.safe_load((PROFILES / name / "config.yaml").read_text())


def test_the_default_profile_holds_only_neutral_settings():
    assert set(profile("default")) <= {"printshellcmds", "rerun-incomplete", "show-failed-logs"}


@pytest.mark.parametrize("name", NAMED)
def test_a_named_profile_repeats_the_default_settings(name):
    assert profile("default").items() <= profile(name).items()


def test_the_slurm_profile_submits_with_the_plugin_and_names_no_site():
    slurm = profile("slurm")
    assert slurm["executor"] == "slurm" and slurm["jobs"] >= 1 and slurm["latency-wait"] >= 1
    assert {"mem_mb", "runtime"} <= set(slurm["default-resources"])
    # Partition and account are the user's: commented out, on the lines tests/slurm/cluster.sh fills in
    assert not {"slurm_partition", "slurm_account", "slurm_extra"} & set(slurm["default-resources"])
    text = (PROFILES / "slurm" / "config.yaml").read_text()
    assert text.count("\n  # slurm_partition: <partition>\n") == 1 and text.count("\n  # slurm_account: <account>\n") == 1
    assert "set-resources" not in slurm  # memory and runtime per rule come from the config's `resources`


def test_no_rule_names_a_partition_or_an_account():
    for rules in (REPO / "rules").glob("*.smk"):
        assert not re.search(r"slurm_partition|slurm_account|slurm_extra", rules.read_text()), rules.name


def test_the_local_gpu_profile_uses_every_core_and_counts_no_gpus_unless_told():
    local = profile("local-gpu")
    assert local["cores"] == "all" and "resources" not in local and "executor" not in local


@pytest.mark.slow
def test_the_slurm_profile_keeps_the_config_resources_and_gpus(tmp_path):
    """A dry run through profiles/slurm of the passage config: jobs keep the config's memory and runtime and
    their GPUs (the plugin's `gpu` resource), the rules' own values where the config names none."""
    result = subprocess.run([SNAKEMAKE, "--snakefile", str(REPO / "Snakefile"), "--directory", str(tmp_path),
                             "--workflow-profile", str(PROFILES / "slurm"), "-n", "results/star/metrics.json",
                             "--configfile", str(PASSAGE)], capture_output=True, text=True, cwd=REPO)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-3000:]
    assert f"workflow specific profile {PROFILES / 'slurm'}" in output
    star = job_resources(output, "train_dense", "run=star")
    assert "gpu=1" in star and "runtime=2880" in star and "mem_mb=64000" in star
    assert "gpu=1" in job_resources(output, "encode_corpus_shard", "run=star, shard=0")
    assert "gpu=1" in job_resources(output, "dense_search", "run=star, split=dev")
    assert "gpu" not in job_resources(output, "bm25_index", "run=bm25")
