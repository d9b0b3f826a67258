"""The dev candidates in the plan: a run evaluating dev by re-ranking candidates reads the dev and training
splits' rankings of the dataset's BM25 run and of the run it starts from (an episode: its episodic run's), and
nothing when it searches the corpus or another run's fixed documents."""

import copy

import pytest
import yaml

from hardneg.pipeline.config import validate_config
from hardneg.pipeline.plan import Plan
from tests.support import REPO


@pytest.fixture(scope="module")
def plan():
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    runs = config["runs"]
    for name in ("warmup", "star", "ance", "adore_star"):
        runs[name]["params"]["train"] = {**runs[name]["params"]["train"], "dev_every": 10}
    runs["star_corpus"] = copy.deepcopy(runs["star"])
    runs["star_corpus"]["params"]["train"]["dev_search"] = "corpus"
    runs["condenser_abs_candidates"] = copy.deepcopy(runs["condenser_abs_random"])
    runs["condenser_abs_candidates"]["params"]["train"]["dev_search"] = "candidates"
    return Plan(validate_config(config))


def _rankings(run, split):
    return f"results/{run}/rankings/{split}.parquet"


def test_a_continued_run_reads_bm25_and_its_starting_runs_rankings(plan):
    inputs = plan.train_inputs("star")
    assert {key: inputs[key] for key in ("dev_lexical", "dev_init", "train_lexical", "train_init")} == {
        "dev_lexical": _rankings("bm25", "dev"), "dev_init": _rankings("warmup", "dev"),
        "train_lexical": _rankings("bm25", "train"), "train_init": _rankings("warmup", "train")}


def test_a_run_from_scratch_reads_bm25_only(plan):
    inputs = plan.dev_candidate_inputs("warmup")
    assert inputs == {"dev_lexical": _rankings("bm25", "dev"), "train_lexical": _rankings("bm25", "train")}


def test_every_episode_reads_its_episodic_runs_start(plan):
    for episode in plan.episodes.episode_runs("ance"):
        assert plan.dev_candidate_inputs(episode)["dev_init"] == _rankings("warmup", "dev")


def test_runs_searching_the_corpus_or_fixed_documents_read_none(plan):
    assert plan.dev_candidate_inputs("star_corpus") == {}
    assert plan.dev_candidate_inputs("adore_star") == {}  # its dev search encodes no document
    assert plan.dev_candidate_inputs("randneg") == {}  # no dev evaluation


def test_a_pre_trained_backbone_gives_no_candidates(plan):
    """A Condenser ranks nothing before it is fine-tuned: a run continuing it takes BM25's candidates only."""
    assert plan.dev_candidate_inputs("condenser_abs_candidates") == {
        "dev_lexical": _rankings("bm25", "dev"), "train_lexical": _rankings("bm25", "train")}
