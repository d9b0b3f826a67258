"""A read-only run folder: Snakemake, run without the root user's power to override permissions (``setpriv``
drops CAP_DAC_OVERRIDE, so the folder's mode applies as it does to every other user), is asked for a job that
writes there; it stops before the first job with one line naming the folders (``refuse_unwritable``,
rules/common.smk), no traceback, nothing changed; the advice the line gives (make them writable) then lets the
same command build."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from tests.support.builds import copy_build
from tests.support.reliability import digests
from tests.support.workflow import command, job_env, output_of

pytestmark = pytest.mark.slow

# The process's capabilities less those that let root ignore a file's mode (util-linux's setpriv).
AS_A_USER = [shutil.which("setpriv") or "setpriv", "--bounding-set=-dac_override,-dac_read_search"]


def _folders(root: Path) -> list[Path]:
    return [root, *(p for p in root.rglob("*") if p.is_dir())]


def test_a_read_only_run_folder_stops_the_run_before_its_first_job_with_one_line(builds, tmp_path):
    workdir = copy_build(builds.star_chain(), tmp_path / "work")
    run = workdir / "results" / "star"
    for folder in _folders(run):
        folder.chmod(folder.stat().st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
    before = digests(workdir / "results")
    asked = command(workdir, "-R", "evaluate", "--until", "evaluate", "results/star/metrics.json")
    refused = subprocess.run([*AS_A_USER, *asked], capture_output=True, text=True, env=job_env())
    out = output_of(refused)
    assert refused.returncode == 1, out[-3000:]
    assert "Traceback" not in out and "PermissionError" not in out, out[-3000:]
    line = next(line for line in out.splitlines() if line.startswith("hardneg error:"))
    assert "cannot be written: results/star" in line and "results/star/logs" in line, line
    assert "chmod -R u+w" in line and "Nothing was run" in line, line
    assert "Error in rule" not in out  # stopped before any job
    assert digests(workdir / "results") == before
    assert not (workdir / ".snakemake" / "locks").exists() or not os.listdir(workdir / ".snakemake" / "locks")

    for folder in _folders(run):  # the advice: make them writable
        folder.chmod(folder.stat().st_mode | stat.S_IWUSR)
    built = subprocess.run([*AS_A_USER, *asked], capture_output=True, text=True, env=job_env())
    assert built.returncode == 0, output_of(built)[-3000:]
    assert "hardneg error" not in output_of(built)
    after = digests(workdir / "results")
    assert {path: after.get(path) for path in before} == before  # the same evaluations, the same bytes
