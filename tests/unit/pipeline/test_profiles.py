"""The Snakemake profiles: profiles/default/ stays neutral, the named ones repeat its settings (a named workflow
profile replaces it), and profiles/slurm names no site, leaves partition and account to the lines the user edits,
and leaves each rule's memory, runtime and GPUs to the workflow and its config. tests/slurm/cluster.sh runs
profiles/slurm on a real SLURM cluster (`make slurm-test`)."""

import re

import pytest
import yaml

from tests.support import REPO

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
