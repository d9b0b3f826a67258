"""config/msmarco-passage.yaml and config/msmarco-doc.yaml: valid on their own, with the papers' hyper-parameters,
every raw file fetched by the workflow (checked against its MD5), full-scale resources per rule, and full DAGs
from a dry run that downloads nothing: the download jobs come first, and nothing of config/config.yaml is merged
in under --configfile."""

import re
import subprocess
from pathlib import Path

import pytest
import yaml

from hardneg.datasets.adapters import dataset_input_files
from hardneg.datasets.download import downloaded_files, extracted_files
from hardneg.pipeline.config import load_config_files
from tests.support import REPO
from tests.support.configs import DOC, PASSAGE
from tests.support.workflow import SNAKEMAKE, job_resources

OFFICIAL = "https://msmarco.z22.web.core.windows.net/msmarcoranking/"


@pytest.fixture(scope="module")
def passage():
    return load_config_files(PASSAGE)


@pytest.fixture(scope="module")
def doc():
    return load_config_files(DOC)


def train(config, run):
    return config["runs"][run]["params"]["train"]


def test_star_and_adore_as_in_the_paper(passage, doc):
    for config, prefix, length, cut in ((passage, "", 120, 200), (doc, "doc_", 512, 10)):
        star = config["runs"][f"{prefix}star"]["params"]
        assert (star["train"]["learning_rate"], star["train"]["batch_size"], star["train"]["optimizer"]) == \
            (1e-4, 256, "lamb")
        assert star["mining"]["depth"] == 200 and star["model"]["doc_max_length"] == length
        assert star["model"]["name"] == "roberta-base"  # inherited from the warm-up
        adore = config["runs"][f"{prefix}adore_star"]["params"]
        assert adore["adore"]["cut"] == cut and adore["adore"]["top_k"] == 200
        assert (adore["train"]["learning_rate"], adore["train"]["batch_size"], adore["train"]["max_grad_norm"]) == \
            (5e-6, 32, 1.0)
        assert config["runs"][f"{prefix}adore_star"]["inputs"] == {"docs": f"{prefix}star"}


def test_ance_as_the_authors_run_it(passage, doc):
    for config, run, lr, warmup_steps in ((passage, "ance", 1e-6, 5000), (doc, "doc_ance", 5e-6, 3000)):
        params = config["runs"][run]["params"]
        settings = params["train"]
        assert (settings["learning_rate"], settings["optimizer"]) == (lr, "lamb")
        assert settings["batch_size"] * settings["grad_accumulation"] == 64  # 8 per GPU x 4 GPUs x 2 accumulated
        assert settings["gpus"] == 4
        ance = params["ance"]
        assert (ance["lag"], ance["steps_per_episode"]) == (1, 10000)
        assert round(settings["warmup_ratio"] * ance["episodes"] * ance["steps_per_episode"]) == warmup_steps
        assert params["mining"]["depth"] == 200 and params["model"]["doc_max_length"] == 512  # FirstP


def test_tct_colbert_as_in_the_paper(passage):
    for run in ("tct", "tct_hn", "tct_tct_hn", "tct_hnp"):
        params = passage["runs"][run]["params"]
        assert (params["train"]["batch_size"], params["train"]["learning_rate"]) == (96, 7e-6), run
        assert params["tct"]["teacher_temperature"] == 0.25, run
        assert (params["model"]["query_max_length"] + 1, params["model"]["doc_max_length"]) == (32, 150), run
        assert params["mining"]["depth"] == 200, run
    assert passage["runs"]["tct_hnp"]["inputs"]["teacher"] == "colbert_teacher_hn"
    assert passage["runs"]["colbert_teacher"]["params"]["model"]["name"] == "bert-base-uncased"


def test_trained_runs_use_gpus_in_reduced_precision(passage, doc):
    for config in (passage, doc):
        for name, run in config["runs"].items():
            if run["method"] in ("bm25", "hybrid"):
                continue
            assert train(config, name)["gpus"] >= 1, name
            assert train(config, name)["precision"] in ("fp16", "bf16") or run["method"] == "adore", name
            if "encode" in run["params"] and run["method"] != "colbert":
                assert run["params"]["encode"]["precision"] == "fp16", name


@pytest.mark.parametrize("path", [PASSAGE, DOC], ids=["passage", "doc"])
def test_every_raw_file_is_fetched_and_checked(path):
    config = load_config_files(path)
    dataset = config["datasets"][config["dataset"]]
    fetched, extracted = downloaded_files(config), extracted_files(config)
    assert set(dataset_input_files(dataset)) <= set(fetched) | set(extracted)
    for entry in fetched.values():
        assert entry["url"].startswith(OFFICIAL) and re.fullmatch(r"[0-9a-f]{32}", entry["md5"])
    assert all(entry["archive"] in fetched for entry in extracted.values())


def test_full_scale_resources(passage, doc):
    for config in (passage, doc):
        resources = config["resources"]
        assert resources["train_dense"]["runtime"] >= 2880 and resources["train_dense"]["mem_mb"] >= 64000
        assert resources["prepare_dataset"]["mem_mb"] >= 32000


# ------------------------------------------------------------------------------------------------ dry runs
def dry_run(workdir: Path, config: Path, *targets: str) -> tuple[dict, str]:
    """(job counts by rule, Snakemake's output) of ``snakemake -n`` in ``workdir``."""
    result = subprocess.run([SNAKEMAKE, "--snakefile", str(REPO / "Snakefile"), "--directory", str(workdir),
                             "-n", *targets, "--configfile", str(config)], capture_output=True, text=True)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-3000:]
    table = output.split("Job stats:")[1].split("total")[0]
    counts = {m.group(1): int(m.group(2)) for m in re.finditer(r"^(\w+)\s+(\d+)$", table, re.M)}
    return counts, output




@pytest.mark.slow
def test_passage_dry_run_builds_adore_star_from_the_downloads(tmp_path):
    counts, output = dry_run(tmp_path, PASSAGE, "results/adore_star/metrics.json")
    assert counts["download"] == 1 and counts["extract_member"] == 5 and counts["prepare_dataset"] == 1
    assert counts["train_dense"] == 3  # warmup, star, adore_star
    assert counts["encode_corpus_shard"] == 32  # 16 shards each of warmup and star
    assert "collectionandqueries.tar.gz" in output and "synthetic" not in output  # nothing of config/config.yaml
    assert not (tmp_path / "data").exists()  # a dry run fetches nothing
    star = job_resources(output, "train_dense", "run=star")
    assert "gpu=1" in star and "runtime=2880" in star and "mem_mb=64000" in star
    assert "gpu=1" in job_resources(output, "encode_corpus_shard", "run=star, shard=0")
    assert "mem_mb=32000" in job_resources(output, "prepare_dataset", "dataset=msmarco-passage")


@pytest.mark.slow
def test_passage_dry_run_of_the_tct_and_ance_chains(tmp_path):
    counts, output = dry_run(tmp_path, PASSAGE, "results/tct_hnp/metrics.json", "results/ance/metrics.json",
                             "results/colbert_teacher/metrics.json")
    assert counts["download"] == 1 and counts["extract_member"] == 5
    assert counts["train_episode"] == 10 and counts["assemble_episodes"] == 1
    assert counts["train_dense"] == 5  # warmup, colbert_teacher, tct, colbert_teacher_hn, tct_hnp
    assert counts["rerank"] == 1  # the teacher re-ranks BM25's dev top 1000 for its own metrics
    episode = job_resources(output, "train_episode", "run=ance/episodes/3")
    assert "gpu=4" in episode and "runtime=720" in episode
    assert "gpu=1" in job_resources(output, "rerank", "run=colbert_teacher, split=dev")


@pytest.mark.slow
def test_doc_dry_run_fetches_the_five_files_first(tmp_path):
    counts, output = dry_run(tmp_path, DOC, "results/doc_adore_star/metrics.json", "results/doc_ance/metrics.json")
    assert counts["download"] == 5 and "extract_member" not in counts and counts["prepare_dataset"] == 1
    assert counts["train_dense"] == 3 and counts["train_episode"] == 10
    assert "msmarco-docs.tsv.gz" in output and "synthetic" not in output
    assert "mem_mb=96000" in job_resources(output, "prepare_dataset", "dataset=msmarco-doc")
    assert not (tmp_path / "data").exists()


@pytest.mark.slow
def test_files_already_there_are_not_fetched_and_resource_names_are_checked(tmp_path):
    for name in ("collection.tsv", "queries.train.tsv", "qrels.train.tsv", "queries.dev.small.tsv",
                 "qrels.dev.small.tsv"):
        (tmp_path / "data" / "msmarco-passage").mkdir(parents=True, exist_ok=True)
        (tmp_path / "data" / "msmarco-passage" / name).touch()
    counts, _ = dry_run(tmp_path, PASSAGE, "results/bm25/metrics.json")
    assert "download" not in counts and "extract_member" not in counts and counts["prepare_dataset"] == 1
    config = yaml.safe_load(PASSAGE.read_text())
    config["resources"]["train_dens"] = {"runtime": 10}
    (tmp_path / "typo.yaml").write_text(yaml.safe_dump(config))
    result = subprocess.run([SNAKEMAKE, "--snakefile", str(REPO / "Snakefile"), "--directory", str(tmp_path), "-n",
                             "--configfile", str(tmp_path / "typo.yaml")], capture_output=True, text=True)
    assert result.returncode != 0 and "config key 'resources.train_dens'" in result.stdout + result.stderr
