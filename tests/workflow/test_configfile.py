"""A user's own config under --configfile replaces config/config.yaml: Snakemake plans only its runs, with the
schema's defaults, and records the hash `hardneg check-config` prints (the configs themselves:
tests/unit/pipeline/test_user_config.py)."""

import copy
import re

import pytest
import yaml

from hardneg.cli import main
from tests.support.configs import DATASETS, chain
from tests.support.workflow import snakemake, write_config


@pytest.mark.slow
def test_configfile_replaces_the_default_config(tmp_path, capsys):
    """The workdir's config/config.yaml has runs of its own; --configfile my.yaml plans only my.yaml's runs, with
    the schema's defaults (nothing inherited from the default file), and the hash check-config prints."""
    default = chain()
    default["runs"]["warmup"]["params"]["train"] = {"epochs": 9, "learning_rate": 0.5}
    default["runs"]["other"] = {"method": "inbatch"}
    write_config(tmp_path, default)
    mine = {"dataset": "tiny", "datasets": copy.deepcopy(DATASETS),
            "runs": {"bm25": {"method": "bm25"}, "warmup": {"method": "warmup", "inputs": {"negatives": "bm25"}}}}
    (tmp_path / "my.yaml").write_text(yaml.safe_dump(mine))
    result = snakemake(tmp_path, "results/warmup/config.yaml", "-n", "--configfile", str(tmp_path / "my.yaml"))
    assert result.returncode == 0, result.stderr[-3000:]
    result = snakemake(tmp_path, "-n", "--configfile", str(tmp_path / "my.yaml"))
    planned = result.stdout + result.stderr
    assert result.returncode == 0, planned[-3000:]
    assert "results/warmup/metrics.json" in planned and "results/other" not in planned
    assert "results/star" not in planned and "results/adore" not in planned
    result = snakemake(tmp_path, "results/warmup/config.yaml", "--configfile", str(tmp_path / "my.yaml"))
    assert result.returncode == 0, result.stderr[-3000:]
    recorded = (tmp_path / "results" / "warmup" / "config.yaml").read_text()
    resolved = yaml.safe_load(recorded)
    assert resolved["params"]["train"]["epochs"] == 3 and resolved["params"]["train"]["learning_rate"] == 0.0003
    assert resolved["loaded_model"].startswith("builtin")
    assert main(["check-config", str(tmp_path / "my.yaml")]) == 0
    printed = re.search(r"run warmup: .*config_hash (\w+)", capsys.readouterr().out).group(1)
    assert re.search(r"config_hash (\w+)", recorded).group(1).startswith(printed)


@pytest.mark.slow
def test_configfiles_are_read_strictly_merged_in_order_and_config_overrides_them(tmp_path, capsys):
    """Several --configfile files merge in order (mappings key by key), --config KEY=VALUE goes on top, and each
    file is read by hardneg's strict reader: a key written twice in one of them stops Snakemake as it stops
    check-config (Snakemake's own reader would keep the last)."""
    first, second = tmp_path / "first.yaml", tmp_path / "second.yaml"
    first.write_text(yaml.safe_dump({"seed": 1, "dataset": "tiny", "datasets": copy.deepcopy(DATASETS),
                                     "runs": {"bm25": {"method": "bm25", "params": {"k1": 0.8}}}}))
    second.write_text("seed: 2\nruns:\n  bm25:\n    params: {b: 0.3}\n")
    result = snakemake(tmp_path, "results/bm25/config.yaml", "--configfile", str(first), str(second),
                       "--config", "seed=7")
    assert result.returncode == 0, result.stderr[-3000:]
    resolved = yaml.safe_load((tmp_path / "results" / "bm25" / "config.yaml").read_text())
    assert resolved["seed"] == 7 and resolved["params"]["k1"] == 0.8 and resolved["params"]["b"] == 0.3

    second.write_text("seed: 2\nruns:\n  bm25:\n    params: {b: 0.3, b: 0.5}\n")
    result = snakemake(tmp_path, "-n", "--configfile", str(first), str(second), cores=None)
    message = f"{second}, line 4: invalid YAML: duplicate key 'b' (first on line 4)"
    assert result.returncode != 0 and (result.stdout + result.stderr).count(message) == 1, result.stderr[-3000:]
    assert main(["check-config", str(first), str(second)]) == 2
    assert message in capsys.readouterr().err
