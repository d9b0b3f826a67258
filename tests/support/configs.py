"""The tiny configs that several test files run through the workflow (each test file keeps the configs only it
runs). A build of one of them, with the same targets, is the same build wherever it is asked for (see
``tests/support/builds.py``)."""

import copy

from tests.support import REPO

MAIN_TARGET = "results/adore_star/metrics.json"  # what `make run` builds (the Makefile's TARGET)
PASSAGE, DOC = REPO / "config" / "msmarco-passage.yaml", REPO / "config" / "msmarco-doc.yaml"

# BM25 on a synthetic dataset of 400 documents.
TINY = {
    "seed": 3,
    "dataset": "tiny",
    "evaluation": {"split": "test"},
    "datasets": {"tiny": {"adapter": "synthetic", "num_docs": 400, "docs_per_cluster": 20,
                          "num_queries": {"train": 40, "test": 30}}},
    "runs": {"bm25": {"method": "bm25", "params": {"top_k": 100}}},
}

# The dense part of the workflow: BM25, warm-up, the two baselines and STAR (tests/workflow/test_workflow_dense.py),
# built once a session (tests/support/builds.py, ``dense_runs``) and extended by the comparison, summary and
# TCT-ColBERT tests, which add their pages and runs to a copy; its model and dataset are those of the ABS, fusion
# and report tests too (and of tests/slurm/cluster.sh's pipeline).
TINY_DENSE = {
    "model": {"vocab_size": 6000, "doc_max_length": 64, "query_max_length": 16,
              "builtin": {"hidden_size": 32, "num_hidden_layers": 1, "num_attention_heads": 2, "intermediate_size": 64}},
    "train": {"epochs": 1, "batch_size": 16, "learning_rate": 0.001},
    "encode": {"shards": 1, "batch_size": 64},  # one job an encoding: the kill, ANCE, empty-document chains shard
    "search": {"top_k": 100},
}
# The synthetic dataset of the tiny dense chains (this file's, and those of the reproducibility and fusion tests).
SYNTHETIC_300 = {"adapter": "synthetic", "num_docs": 300, "docs_per_cluster": 30, "concept_vocab": 200,
                 "num_queries": {"train": 100, "test": 30}}
DENSE_CONFIG = {
    "seed": 4,
    "dataset": "tiny",
    "datasets": {"tiny": dict(SYNTHETIC_300)},
    "runs": {
        "bm25": {"method": "bm25", "params": {"top_k": 100}},
        "warmup": {"method": "warmup", "inputs": {"negatives": "bm25"}, "params": TINY_DENSE},
        "randneg": {"method": "randneg", "params": TINY_DENSE},
        "inbatch": {"method": "inbatch", "params": TINY_DENSE},
        "star": {"method": "star", "inputs": {"init": "warmup", "negatives": "warmup", "bm25": "bm25"},
                 "params": {**TINY_DENSE, "mining": {"depth": 50}}},
    },
}
DENSE_TARGETS = [f"results/{run}/metrics.json" for run in ("warmup", "randneg", "inbatch", "star")]

# The tiny fusion chain: BM25 and an in-batch dense run fused by a hybrid whose α is tuned on training queries
# (``Builds.fusion_chain``: tests/workflow/test_workflow_fusion.py reads it, and the full-disk test of
# tests/reliability/test_reliability_disk.py builds it again on a small disk).
FUSION_GRID = [0.0, 0.01, 0.1, 1.0]
FUSION_CONFIG = {
    "seed": 5,
    "dataset": "tiny",
    "datasets": {"tiny": dict(SYNTHETIC_300)},
    "runs": {
        "bm25": {"method": "bm25", "params": {"top_k": 100}},
        "inbatch": {"method": "inbatch", "params": TINY_DENSE},
        "hybrid": {"method": "hybrid", "inputs": {"runs": ["bm25", "inbatch"]},
                   "params": {"alpha_grid": FUSION_GRID, "depth": 50, "k": 60, "tune": {"queries": 40}}},
        "rrf": {"method": "rrf", "inputs": {"runs": ["bm25", "inbatch"]}, "params": {"depth": 50}},
        "fixed": {"method": "hybrid", "inputs": {"runs": ["bm25", "inbatch"]}, "params": {"alpha": 0.1}},
    },
}
FUSION_TARGETS = ["results/hybrid/metrics.json"]

# The tiny chain BM25 → warm-up → STAR → ADORE: built once per session (tests/support/builds.py, ``star_chain``), it
# is the uninterrupted reference of the kill tests (tests/reliability/test_reliability_kills.py, whose chain, killed
# at every stage and built again from nothing, must end with the same bytes), what the terminal showed while it ran
# (tests/workflow/test_progress.py), and the runs before ANCE's (tests/workflow/test_workflow_ance.py continues a
# copy) and the cross-encoder's.
STAR_DENSE = {
    "model": {"vocab_size": 2000, "doc_max_length": 32, "query_max_length": 12,
              "builtin": {"hidden_size": 32, "num_hidden_layers": 1, "num_attention_heads": 2,
                          "intermediate_size": 64}},
    "train": {"epochs": 1, "batch_size": 16, "learning_rate": 0.001, "checkpoint_every": 2, "log_every": 1},
    "encode": {"shards": 2, "batch_size": 64},
    "search": {"top_k": 50},
}
STAR_CONFIG = {
    "seed": 5,
    "dataset": "tiny",
    "evaluation": {"split": "test"},
    "datasets": {"tiny": {"adapter": "synthetic", "num_docs": 200, "docs_per_cluster": 20, "concept_vocab": 100,
                          "num_queries": {"train": 60, "test": 20}}},
    "runs": {
        "bm25": {"method": "bm25", "params": {"top_k": 50}},
        "warmup": {"method": "warmup", "inputs": {"negatives": "bm25"}, "params": STAR_DENSE},
        "star": {"method": "star", "inputs": {"init": "warmup", "negatives": "warmup", "bm25": "bm25"},
                 "params": {**STAR_DENSE, "mining": {"depth": 30}}},
        "adore_star": {"method": "adore", "inputs": {"docs": "star"},
                       "params": {"train": STAR_DENSE["train"], "adore": {"top_k": 30, "cut": 30},
                                  "search": {"top_k": 50}}},
    },
}
STAR_TARGETS = ["results/star/metrics.json", "results/adore_star/metrics.json"]

# The tiny chain with a cross-encoder re-ranking BM25's top 20 and scoring the pool of a STAR run (star_ce) whose
# policy drops the candidates it scores above the query's best positive (tests/workflow/test_workflow_crossencoder.py,
# tests/workflow/test_rule_scripts.py).
CROSS_ENCODER_DEPTH = 20
CROSS_ENCODER_RUN = {"method": "crossencoder", "inputs": {"candidates": "bm25", "negatives": "bm25"},
                     "params": {"model": STAR_DENSE["model"], "train": {**STAR_DENSE["train"], "epochs": 2},
                                "negatives": {"per_query": 1, "depth": 30}, "rerank": {"depth": CROSS_ENCODER_DEPTH},
                                "crossencoder": {"exact_match": True, "soft_match": 4}}}
CROSS_ENCODER_CONFIG = {**STAR_CONFIG, "runs": {
    **STAR_CONFIG["runs"], "crossencoder": CROSS_ENCODER_RUN,
    "star_ce": {**STAR_CONFIG["runs"]["star"],
                "inputs": {**STAR_CONFIG["runs"]["star"]["inputs"], "cross_encoder": "crossencoder"},
                "params": {**STAR_CONFIG["runs"]["star"]["params"],
                           "mining": {"depth": 30, "ce_margin": 0.0, "keep": 10}}}}}

# A user's chain of runs continuing a MiniLM-like model (tests/unit/pipeline/test_user_config.py,
# tests/workflow/test_configfile.py).
MINILM_LIKE = {"name": "/models/minilm", "pooling": "mean", "query_max_length": 48, "doc_max_length": 200}
DATASETS = {"tiny": {"adapter": "synthetic", "num_docs": 200, "docs_per_cluster": 20,
                     "num_queries": {"train": 20, "test": 10}}}


def chain(**star_model) -> dict:
    """BM25, a warm-up of the MiniLM-like model, STAR continuing it (``star_model``: its own model keys), ADORE."""
    return {"dataset": "tiny", "datasets": copy.deepcopy(DATASETS), "runs": {
        "bm25": {"method": "bm25"},
        "warmup": {"method": "warmup", "inputs": {"negatives": "bm25"}, "params": {"model": dict(MINILM_LIKE)}},
        "star": {"method": "star", "inputs": {"init": "warmup", "negatives": "warmup"},
                 "params": {"model": star_model} if star_model else {}},
        "adore": {"method": "adore", "inputs": {"docs": "star"}},
    }}

# The false-negative experiment on the tiny dense data with half the positives of each multi-positive training query
# hidden: an in-batch miner (no BM25 run to build), a plain top-k, a margin and a rank-window policy, no training
# (tests/workflow/test_workflow_false_negatives.py builds it; tests/workflow/test_rule_scripts.py plans it, and
# again with training).
FALSE_NEGATIVES_CONFIG = {
    "seed": 4,
    "dataset": "hidden",
    "datasets": {"hidden": {**SYNTHETIC_300, "hide_positives": {"share": 0.5}}},
    "policies": {"top": {"keep": 20}, "margin": {"margin": 0.01, "keep": 20},
                 "window": {"rank_range": [4, 50], "keep": 20}},
    "runs": {"inbatch": {"method": "inbatch", "params": TINY_DENSE}},
    "false_negatives": {"dataset": "hidden", "miner": "inbatch", "policies": ["top", "margin", "window"],
                        "depth": 50, "duplicates": False},
}
