"""The mining stages and the commands that write, on a full disk: a copy of the session's tiny STAR chain
(tests/support/builds.py) with results/ on a small disk (a tmpfs, tests/support/disk.py) filled up, each of the
mining stages run again (``snakemake -R <rule> --until <rule>``: the candidate pool, the near-duplicate table, the
audit, the mining card) fails with one line on the console saying the disk is full and naming the job, keeps the
artifacts of before byte for byte and leaves no temporary; ``hardneg compare --html`` into the full folder fails
with one line naming the file, and writes nothing. (The chain's other stages on a full disk:
tests/reliability/test_reliability_disk.py.)"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.builds import copy_build
from tests.support.disk import fill, used_bytes
from tests.support.reliability import digests, temporaries
from tests.support.workflow import output_of, snakemake

pytestmark = pytest.mark.slow

CARD = "results/star/hardnegs_card.json"
RERUN = [("candidate_pool", "results/star/metrics.json"), ("near_duplicates", "results/star/metrics.json"),
         ("audit_hard_negatives", "results/star/metrics.json"), ("mining_card", CARD)]
FAILED_RULE = re.compile(r"Error in rule (\w+):")


@pytest.fixture
def full(builds, small_disk, tmp_path):
    """The chain's working directory with its results on a small disk (the mining card built), and that disk."""
    workdir = copy_build(builds.star_chain(), tmp_path / "work")
    kept = workdir / "results.kept"
    (workdir / "results").rename(kept)
    results = small_disk(workdir / "results", f"{2 * used_bytes(kept) // 1024 + 8192}k")
    shutil.copytree(kept, results, symlinks=True, dirs_exist_ok=True)  # files with their times: up to date
    shutil.rmtree(kept)
    card = snakemake(workdir, CARD)
    assert card.returncode == 0, output_of(card)[-3000:]
    return workdir, results


def test_each_mining_stage_on_a_full_disk_fails_with_one_line_and_keeps_its_artifacts(full):
    workdir, results = full
    want = digests(results)
    for rule, target in RERUN:
        ballast = fill(results)
        again = snakemake(workdir, target, "-R", rule, "--until", rule)
        out = output_of(again)
        assert again.returncode != 0 and FAILED_RULE.findall(out)[:1] == [rule], f"{rule}: {out[-4000:]}"
        said = [line for line in out.splitlines() if line.startswith("hardneg error: ")]
        assert len(said) == 1 and "no space left on the device" in said[0], f"{rule}: {out[-4000:]}"
        # the traceback is in the job's log (Snakemake shows the log after its error), not on the console
        assert "Traceback" not in out.split("\nLogfile ")[0], f"{rule}: {out[-4000:]}"
        assert temporaries(results) == [], f"{rule}: {temporaries(results)}"
        got = {path: digest for path, digest in digests(results).items() if path != ballast.name}
        assert got == want, f"{rule}: {sorted(set(got) ^ set(want))}"
        ballast.unlink()


def test_compare_into_a_full_folder_says_so_and_writes_nothing(full):
    workdir, results = full
    ballast = fill(results)
    page = results / "tables" / "mine.html"
    done = subprocess.run([str(Path(sys.executable).parent / "hardneg"), "compare", "star", "adore_star", "--html",
                           str(page), "--force"], cwd=workdir, capture_output=True, text=True)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.count("hardneg: error: ") == 1 and "Traceback" not in done.stderr
    assert "no space left on device" in done.stderr and str(page) in done.stderr, done.stderr
    assert not page.exists() and temporaries(results) == []
    ballast.unlink()
