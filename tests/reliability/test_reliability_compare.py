"""`hardneg compare` on a measure the runs' evaluation left out: on the evaluation split itself (not only on
another split) the per-query values are computed from the rankings, as the command's help promises for any
ir-measures measure; it once refused with "was not evaluated with P@5"."""

from __future__ import annotations

import re
import subprocess

import pytest

from tests.support.workflow import BIN, output_of

pytestmark = pytest.mark.slow


def test_a_measure_left_out_of_the_evaluation_is_computed_on_the_evaluation_split(builds):
    workdir = builds.star_chain()
    result = subprocess.run([str(BIN / "hardneg"), "compare", "star", "adore_star", "--measure", "P@5"], cwd=workdir,
                            capture_output=True, text=True)
    out = output_of(result)
    assert result.returncode == 0, out[-3000:]
    assert re.match(r"P@5 on split test of dataset tiny: \d+ queries, each run against star", out), out[:500]
