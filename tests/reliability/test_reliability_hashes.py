"""One config hash per run, wherever a hash is shown: on the session's tiny chain, `hardneg check-config` prints
for each run the hash that the run's recorded config names in its header and its ``metrics.json`` records (they
once hashed three different things), and a model card names its own hash for what it is, the training hash."""

from __future__ import annotations

import json
import re
import subprocess

import pytest
import yaml

from tests.support.workflow import BIN

pytestmark = pytest.mark.slow


def test_check_config_metrics_and_the_record_show_one_config_hash(builds):
    workdir = builds.star_chain()
    checked = subprocess.run([str(BIN / "hardneg"), "check-config", "config/config.yaml"], cwd=workdir,
                             capture_output=True, text=True)
    assert checked.returncode == 0, checked.stderr[-3000:]
    printed = dict(re.findall(r"run (\w+): .*config_hash (\w+)", checked.stdout))
    assert set(printed) == {"bm25", "warmup", "star", "adore_star"}
    evaluated = 0
    for run, short in printed.items():
        record = (workdir / "results" / run / "config.yaml").read_text()
        header = re.match(r"# resolved configuration of run '\w+'; config_hash (\w+)\n", record).group(1)
        assert header.startswith(short), run
        if run != "bm25":
            assert "loaded_model" in yaml.safe_load(record)  # recorded beside the config, outside its hash
        metrics = workdir / "results" / run / "metrics.json"
        if metrics.exists():  # the chain's targets: STAR and ADORE
            assert json.loads(metrics.read_text())["provenance"]["config_hash"] == header, run
            evaluated += 1
    assert evaluated == 2
    card = (workdir / "results" / "star" / "model" / "README.md").read_text()
    assert "| training hash | `" in card and "config hash |" not in card
