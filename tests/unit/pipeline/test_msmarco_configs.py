"""config/msmarco-passage.yaml and config/msmarco-doc.yaml: valid on their own, with the papers' hyper-parameters,
every raw file fetched by the workflow (checked against its MD5) and full-scale resources per rule (their full DAGs,
from dry runs: tests/workflow/test_msmarco_dry_runs.py)."""

import re

import pytest

from hardneg.datasets.adapters import dataset_input_files
from hardneg.datasets.download import downloaded_files, extracted_files
from hardneg.pipeline.config import load_config_files
from tests.support.configs import DOC, PASSAGE

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
