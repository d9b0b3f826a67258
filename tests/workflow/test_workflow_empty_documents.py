"""The workflow on a BEIR dataset with two empty documents and long queries: Snakemake's output shows the console
messages of dataset preparation, tokenization and training, and under ``empty_documents: exclude`` (the default)
the empty documents are in no corpus embedding, dense ranking or hard-negative list."""

import json
import re

import numpy as np
import pyarrow.parquet as pq
import pytest

from tests.support.builds import copy_build
from tests.support.files import write_lines
from tests.support.user_data import EMPTY
from tests.support.user_data import corpus_lines as _corpus_lines
from tests.support.workflow import snakemake, write_config

pytestmark = pytest.mark.slow

TINY_DENSE = {
    "train": {"epochs": 1, "batch_size": 8, "learning_rate": 0.001, "rows": "judgement"},
    "encode": {"shards": 2, "batch_size": 16},
    "search": {"top_k": 50},
}
TARGETS = ["results/randneg/metrics.json", "results/star/hardnegs_audit.md"]


def _config(beir, **dataset) -> dict:
    return {
        "seed": 2, "dataset": "mini",
        "datasets": {"mini": {"adapter": "beir", "path": str(beir), "splits": ["train", "test"], **dataset}},
        "runs": {
            "randneg": {"method": "randneg", "params": {**TINY_DENSE, "model": {
                "vocab_size": 300, "doc_max_length": 32, "query_max_length": 4,
                "builtin": {"hidden_size": 32, "num_hidden_layers": 1, "num_attention_heads": 2,
                            "intermediate_size": 64}}}},
            "star": {"method": "star", "inputs": {"init": "randneg", "negatives": "randneg"},
                     "params": {**TINY_DENSE, "mining": {"depth": 50}}},
        },
        "targets": TARGETS,
    }


@pytest.fixture(scope="module")
def built(builds):
    def make(root):
        beir = root / "beir"
        write_lines(beir / "corpus.jsonl", _corpus_lines())
        write_lines(beir / "queries.jsonl", [json.dumps({"_id": f"q{i}", "text": f"what about number{i} and more"})
                                             for i in range(20)]
                    + [json.dumps({"_id": f"t{i}", "text": f"number{30 + i}"}) for i in range(6)])
        write_lines(beir / "qrels" / "train.tsv", ["query-id\tcorpus-id\tscore"] + [f"q{i}\td{i}\t1" for i in range(20)]
                    + ["q0\te1\t1", "q1\td21\t1"])
        write_lines(beir / "qrels" / "test.tsv", ["query-id\tcorpus-id\tscore"]
                    + [f"t{i}\td{30 + i}\t1" for i in range(6)] + ["t0\te2\t1"])
        workdir = root / "work"
        write_config(workdir, _config(beir))
        result = snakemake(workdir, *TARGETS)
        assert result.returncode == 0, result.stderr[-4000:]
        return {"output": result.stdout + result.stderr}

    root, made = builds.build("workflow_empty_documents", make)
    return root / "work", root / "beir", made["output"]


def test_console_messages_reach_snakemake_output(built):
    _, _, out = built
    assert ("hardneg warning: dataset mini: 2 of 42 documents are empty (no title, no text): e1, e2.\n"
            "  empty_documents: exclude leaves them out of dense runs") in out
    assert "2 relevance judgements (1 in train, 1 in test) name an empty document as relevant" in out
    assert re.search(r"\d+ of \d+ queries of dataset mini \(\d+\.\d%\) are longer than query_max_length 4 tokens "
                     r"and are cut \('train': (\d+) of \1\b", out), out[-3000:]  # every training query
    assert "run randneg: an epoch is 3 optimiser steps (21 training rows, one per (query, positive) judgement" in out
    assert "(log: results/datasets/mini/logs/prepare_dataset.log)" in out


def test_excluded_everywhere_dense(built):
    results = built[0] / "results"
    stats = json.loads((results / "datasets" / "mini" / "stats.json").read_text())
    assert stats["empty_documents"] == {"count": 2, "docids": EMPTY, "relevant_judgements": {"train": 1, "test": 1}}
    ids = pq.read_table(results / "randneg" / "embeddings" / "corpus.ids.parquet")["id"].to_pylist()
    assert len(ids) == 40 and not set(EMPTY) & set(ids)
    assert len(np.load(results / "randneg" / "embeddings" / "corpus.npy", mmap_mode="r")) == 40
    for ranking in ("randneg/rankings/test.parquet", "randneg/rankings/train.parquet", "star/hardnegs.parquet"):
        docids = set(pq.read_table(results / ranking)["docid"].to_pylist())
        assert docids and not set(EMPTY) & docids, ranking
    audit = pq.read_table(results / "star" / "hardnegs_audit.parquet")
    assert audit["empty_negatives"].to_pylist() == [0] * audit.num_rows
    assert "| negatives that are empty documents (no title, no text) | 0 |" in \
        (results / "star" / "hardnegs_audit.md").read_text()
    metrics = json.loads((results / "randneg" / "metrics.json").read_text())
    assert metrics["pairwise_errors"]["total_pairwise_errors"] > 0  # t0's relevant e2 ranks after all 40


def test_keeping_them_retokenizes(built, tmp_path):
    workdir, beir, _ = built
    workdir = copy_build(workdir, tmp_path / "work")
    write_config(workdir, _config(beir, empty_documents="keep"))
    try:
        result = snakemake(workdir, *TARGETS, "-n", "--quiet", "rules")
    finally:
        write_config(workdir, _config(beir))
    out = result.stdout + result.stderr
    assert result.returncode == 0, out
    assert "tokenize" in out and "prepare_dataset" in out and "select_hard_negatives" in out
