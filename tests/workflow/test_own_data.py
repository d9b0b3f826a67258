"""The page "Your own data" (docs/own-data.md), run command for command on a small collection of the kind users bring
(a BEIR folder and MS MARCO passage TSVs with two empty documents and some long queries), in a working
directory whose config/config.yaml is the default config: only the user's runs are built, the empty documents
reach no dense ranking or hard-negative list, the console says what was cut and left out, and each resolved
config names the model loaded."""

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml

from tests.support import REPO
from tests.support.docs import DOCS, shell_commands
from tests.support.user_data import EMPTY_DOCS, write_beir, write_msmarco

pytestmark = pytest.mark.slow

BIN = Path(sys.executable).parent
PLACEHOLDERS = {"path/to/collection": "{beir}", "path/to/msmarco": "{msmarco}"}


def page_commands() -> list[str]:
    """The commands of the bash blocks of docs/own-data.md, in order."""
    return [command for _, command in shell_commands(DOCS / "own-data.md")]


def test_readmes_three_commands_are_the_pages_first():
    readme = [command for section, command in shell_commands(REPO / "README.md")
              if section == "Your own data in three commands"]
    assert len(readme) == 3 and page_commands()[:3] == readme


@pytest.fixture(scope="module")
def session(tmp_path_factory):
    """Run every command of the section; return the working directory and each command's output. The configs
    ``hardneg init`` writes are run as written but for their training length: every run's ``epochs`` is cut to one
    (the starter sizes them for at least 100 optimiser steps, which nothing here measures), so the nine trainings
    of the page fit in a test."""
    root = tmp_path_factory.mktemp("own-data")
    beir, msmarco = write_beir(root / "collection"), write_msmarco(root / "msmarco")
    work = root / "work"
    work.mkdir()
    for name in ("Snakefile", "rules", "scripts", "workflow", "profiles", "config"):
        (work / name).symlink_to(REPO / name)  # a checkout, with the default config/config.yaml in place
    outputs = []
    for command in page_commands():
        for placeholder, key in PLACEHOLDERS.items():
            command = command.replace(placeholder, key.format(beir=beir, msmarco=msmarco))
        argv = shlex.split(command)
        if argv[0].startswith(".venv/bin/"):
            argv[0] = str(BIN / argv[0][len(".venv/bin/"):])
        result = subprocess.run(argv, cwd=work, capture_output=True, text=True)
        assert result.returncode == 0, f"{command}\n{result.stdout[-3000:]}\n{result.stderr[-5000:]}"
        outputs.append((command, result.stdout + result.stderr))
        if argv[1:2] == ["init"]:
            written = work / argv[argv.index("--output") + 1]
            text, cuts = re.subn(r"(?m)^(\s+epochs:) \d+$", r"\1 1", written.read_text())
            assert cuts >= 2, written  # the trained runs of the starter config
            written.write_text(text)
    return work, outputs


def test_the_section_has_the_commands_a_user_needs():
    commands = page_commands()
    assert any("init --beir" in c for c in commands) and any("init --msmarco-passage" in c for c in commands)
    assert any("--model minilm" in c for c in commands)
    assert sum(c.split()[0].endswith("snakemake") and "--configfile" in c for c in commands) == 3


def test_only_the_users_runs_are_built(session):
    """Each config's runs, under its own results folder (the BEIR configs share results/mydata, the MS MARCO
    one has results/msmarco): nothing of the default config, nothing outside them."""
    work, _ = session
    configs = [yaml.safe_load((work / name).read_text()) for name in ("my.yaml", "my-minilm.yaml", "msmarco.yaml")]
    assert [config["results"] for config in configs] == ["results/mydata", "results/mydata", "results/msmarco"]
    expected = {f"{config['results']}/{run}" for config in configs for run in config["runs"]}
    assert {p.name for p in (work / "results").iterdir()} == {"mydata", "msmarco"}
    built = {f"results/{folder.name}/{run.name}" for folder in (work / "results").iterdir()
             for run in folder.iterdir()} - {"results/mydata/datasets", "results/msmarco/datasets"}
    assert built == expected
    for name in ("mydata", "msmarco"):
        assert [p.name for p in (work / "results" / name / "datasets").iterdir()] == [name]
    for run in expected:
        assert (work / run / "metrics.json").is_file(), run


def test_empty_documents_reach_no_dense_ranking_or_negative_list(session):
    work, _ = session
    results = work / "results"
    dense = [model.parent for model in results.glob("*/*/model")]
    assert len(dense) == 10  # warmup, star and adore_star of each config, and minilm_zeroshot
    checked = []
    for run in dense:
        files = [(path, "docid") for path in (run / "runs").glob("*.parquet")]
        files += [(run / "hardnegs.parquet", "docid"), (run / "embeddings" / "corpus.ids.parquet", "id")]
        for path, column in files:
            if path.exists():
                assert not set(pq.read_table(path, columns=[column])[column].to_pylist()) & set(EMPTY_DOCS), path
                checked.append(path.name)
    assert checked.count("hardnegs.parquet") == 3 and checked.count("corpus.ids.parquet") >= 5
    corpus = pq.read_table(results / "mydata" / "datasets" / "mydata" / "corpus.parquet")
    assert set(EMPTY_DOCS) <= set(corpus["docid"].to_pylist())  # kept in the dataset, left out of dense artifacts


def test_the_console_names_truncation_and_empty_documents(session):
    _, outputs = session
    console = "\n".join(out for command, out in outputs if "snakemake" in command.split()[0])
    assert re.search(r"dataset mydata: 2 of \d+ documents are empty \(no title, no text\): d_empty1, d_empty2",
                     console), console[-3000:]
    assert "empty_documents: exclude leaves them out of dense runs" in console
    assert re.search(r"\d+ of \d+ queries of dataset mydata \(\d+\.\d%\) are longer than "
                     r"query_max_length 32 tokens and are cut \(.*'train': \d+ of \d+", console), console[-3000:]


def test_resolved_configs_name_the_model_loaded(session):
    work, _ = session
    results = work / "results" / "mydata"
    warmup = yaml.safe_load((results / "warmup" / "config.yaml").read_text())
    assert warmup["loaded_model"].startswith("builtin")
    star = yaml.safe_load((results / "minilm_star" / "config.yaml").read_text())
    zeroshot = yaml.safe_load((results / "minilm_zeroshot" / "config.yaml").read_text())
    assert star["params"]["model"]["name"] == zeroshot["params"]["model"]["name"] == "minilm"  # found at run time
    assert star["loaded_model"].startswith("results/mydata/minilm_warmup/model")
    adore = yaml.safe_load((results / "minilm_adore_star" / "config.yaml").read_text())
    assert adore["params"]["model"] == star["params"]["model"]
    assert adore["loaded_model"].startswith("results/mydata/minilm_star/model")
