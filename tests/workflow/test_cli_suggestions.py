"""Errors that name the cause, and commands suggested in errors that work as printed: ``hardneg table`` for runs
without metrics names the Snakemake command that builds them (with the config it read), and Snakemake plans that
command; a target written after ``--configfile`` (which Snakemake then reads as a config file) is named as such."""

import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import REPO

pytestmark = pytest.mark.slow

BIN = Path(sys.executable).parent


@pytest.fixture(scope="module")
def checkout(tmp_path_factory):
    work = tmp_path_factory.mktemp("checkout")
    for name in ("Snakefile", "rules", "scripts", "workflow", "profiles", "config"):
        (work / name).symlink_to(REPO / name)
    return work


@pytest.mark.parametrize("args", [["warmup", "star"], [], ["star", "--config", "config/msmarco-passage.yaml"]],
                         ids=["runs", "none-built", "another-config"])
def test_hardneg_table_suggests_a_command_snakemake_plans(checkout, args):
    table = subprocess.run([str(BIN / "hardneg"), "table", *args], cwd=checkout, capture_output=True, text=True)
    assert table.returncode != 0 and table.stderr.startswith("hardneg: error: ")
    argv = shlex.split(table.stderr.rsplit("snakemake ", 1)[1])  # the suggested command's arguments
    assert argv[:2] == ["--cores", "all"], table.stderr
    planned = subprocess.run([str(BIN / "snakemake"), *argv, "-n", "--quiet", "rules"], cwd=checkout,
                             capture_output=True, text=True)
    assert planned.returncode == 0, f"{table.stderr}\n{planned.stderr[-3000:]}"


def test_a_target_written_after_configfile_is_named_as_one(checkout):
    target = checkout / "results" / "adore_star" / "metrics.json"
    target.parent.mkdir(parents=True)
    target.write_text('{"measures": {"RR@10": 0.3}, "dataset": "synthetic"}\n')  # a built target: Snakemake reads it
    run = subprocess.run([str(BIN / "snakemake"), "-n", "--configfile", "config/msmarco-passage.yaml",
                          "results/adore_star/metrics.json"], cwd=checkout, capture_output=True, text=True)
    out = run.stdout + run.stderr
    assert run.returncode != 0
    assert ("results/adore_star/metrics.json: a result of the workflow, read as a config file: --configfile takes "
            "every path after it as a config file, so write targets before it") in out, out[-3000:]
    assert "unknown key" not in out


def test_the_configfile_form_the_error_suggests_takes_one_file_and_leaves_the_target(checkout):
    """`--configfile=FILE` takes that one file, so a target after it is a target, built or not; the spaced form
    reads a target not built yet as a config file, and Snakemake stops on it before the workflow starts."""
    target = "results/msmarco-passage/adore_star/metrics.json"
    joined = subprocess.run([str(BIN / "snakemake"), "-n", "--quiet", "rules",
                             "--configfile=config/msmarco-passage.yaml", target],
                            cwd=checkout, capture_output=True, text=True)
    assert joined.returncode == 0, joined.stderr[-3000:]
    assert "adore" in joined.stdout + joined.stderr
    spaced = subprocess.run([str(BIN / "snakemake"), "-n", "--configfile", "config/msmarco-passage.yaml", target],
                            cwd=checkout, capture_output=True, text=True)
    assert spaced.returncode != 0
    assert f"No such file or directory: '{target}'" in spaced.stdout + spaced.stderr
