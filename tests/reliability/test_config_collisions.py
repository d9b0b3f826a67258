"""Configs whose runs have the same names never write over each other's results: each writes under its own
``results`` folder. On a copy of the session's tiny chain (runs ``bm25``, ``warmup``, ``star``, ``adore_star`` under
``results/``, the default config's names), the MS MARCO passage config, whose runs have those names too, plans
nothing outside ``results/msmarco-passage/`` (asked for ``results/adore_star/metrics.json`` it builds nothing:
the file is no output of it), and a config of other data built for real in the same folder leaves every artifact
of the chain as it was, which Snakemake then finds up to date."""

from __future__ import annotations

import copy

import pytest
import yaml

from tests.support.builds import copy_build
from tests.support.configs import PASSAGE, STAR_CONFIG, STAR_TARGETS
from tests.support.reliability import digests
from tests.support.workflow import dry_run, output_of, snakemake

pytestmark = pytest.mark.slow


@pytest.fixture
def chain(builds, tmp_path):
    workdir = copy_build(builds.star_chain(), tmp_path / "work")
    return workdir, digests(workdir / "results")


def test_the_msmarco_config_plans_nothing_in_the_default_configs_folders(chain):
    workdir, before = chain
    asked = snakemake(workdir, "-n", "results/adore_star/metrics.json", "--configfile", str(PASSAGE), cores=None)
    out = output_of(asked)
    assert asked.returncode != 0 and "results/adore_star/metrics.json" in out, out[-3000:]
    assert "Params have changed" not in out  # what rebuilt the synthetic runs in place, when the names collided
    result, jobs = dry_run(workdir, "--configfile", str(PASSAGE))  # its own targets: the whole chain, planned
    assert result.returncode == 0, output_of(result)[-3000:]
    outputs = [path.split(" ")[0] for job in jobs for path in job["output"]]
    assert len(jobs) > 20 and outputs
    assert all(path.startswith(("results/msmarco-passage/", "data/")) for path in outputs), \
        [path for path in outputs if not path.startswith(("results/msmarco-passage/", "data/"))][:10]
    assert digests(workdir / "results") == before


def test_a_config_of_other_data_built_beside_leaves_the_chain_as_it_was(chain):
    workdir, before = chain
    other = copy.deepcopy(STAR_CONFIG)
    other["results"] = "results/other"
    other["datasets"]["tiny"]["num_docs"] = 120  # other data under the same dataset and run names
    other["runs"] = {"bm25": other["runs"]["bm25"]}
    (workdir / "other.yaml").write_text(yaml.safe_dump(other, sort_keys=False))
    built = snakemake(workdir, "results/other/bm25/metrics.json", "--configfile", str(workdir / "other.yaml"))
    assert built.returncode == 0, output_of(built)[-3000:]
    assert (workdir / "results" / "other" / "bm25" / "metrics.json").is_file()
    after = {path: digest for path, digest in digests(workdir / "results").items() if not path.startswith("other/")}
    assert after == before
    again = snakemake(workdir, *STAR_TARGETS)
    assert again.returncode == 0 and "Nothing to be done" in output_of(again), output_of(again)[-3000:]
