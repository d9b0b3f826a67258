"""Distillation in the plan: a run that distils reads the scores its teacher run or its cross-encoder gave its pool,
or those of the imported list it trains on, and the config check refuses distillation without a scored source
(an imported list whose card counts no scores among them), naming the key."""

import json

import copy

import pytest
import yaml

from hardneg.errors import ConfigError
from hardneg.pipeline.config import validate_config
from hardneg.pipeline.plan import Plan
from tests.support import REPO


@pytest.fixture(scope="module")
def raw():
    return yaml.safe_load((REPO / "config" / "config.yaml").read_text())


def _distilling(raw, *, inputs=None, **params):
    config = copy.deepcopy(raw)
    run = copy.deepcopy(config["runs"]["star"])
    run["inputs"] = {**run["inputs"], "cross_encoder": "crossencoder", **(inputs or {})}
    run["params"] = {**run["params"], "distill": {"loss": "kl", "weight": 0.7}, **params}
    config["runs"]["star_kd"] = run
    return config


def test_a_distilling_run_reads_its_pools_cross_encoder_scores(raw):
    plan = Plan(validate_config(_distilling(raw)))
    pool = "results/warmup/pools/train_top200_bm25-bm25_ce-crossencoder"
    inputs = plan.train_inputs("star_kd")
    assert inputs["teacher_probabilities"] == f"{pool}.ce_candidates.parquet"  # read as logits
    assert inputs["teacher_positive_probabilities"] == f"{pool}.ce_positives.parquet"
    assert "teacher_scores" not in inputs
    assert inputs["hard_negatives"] == "results/star_kd/hardnegs.parquet"
    assert plan.training_slice("star_kd")["params"]["distill"] == {
        "loss": "kl", "weight": 0.7, "teacher_temperature": 1.0, "student_temperature": 1.0}
    assert not any("teacher" in name for name in plan.train_inputs("star"))  # no scorer, no scores


@pytest.mark.parametrize("change, key, message", [
    (lambda run: run["inputs"].pop("cross_encoder"), "runs.star_kd.params.distill.loss",
     "runs.star_kd.inputs.teacher (the ColBERT teacher) or a cross-encoder in runs.star_kd.inputs.cross_encoder"),
    (lambda run: run["params"].update(negatives={"per_query": 0}), "runs.star_kd.params.distill.loss",
     "per_query to 1 at least"),
    (lambda run: run["params"]["distill"].update(loss="mse"), "runs.star_kd.params.distill.loss", "mse"),
    (lambda run: run["params"]["distill"].update(weight=2), "runs.star_kd.params.distill.weight", "2"),
])
def test_distillation_without_what_it_needs_is_refused_naming_the_key(raw, change, key, message):
    config = _distilling(raw)
    change(config["runs"]["star_kd"])
    with pytest.raises(ConfigError) as info:
        validate_config(config)
    assert info.value.key == key and message in info.value.message


def test_static_hn_distills_too_and_a_warmup_has_no_distill_section(raw):
    config = _distilling(raw)
    config["runs"]["star_kd"]["method"] = "static_hn"
    inputs = Plan(validate_config(config)).train_inputs("star_kd")
    assert inputs["teacher_probabilities"].endswith(".ce_candidates.parquet")
    config = copy.deepcopy(raw)
    config["runs"]["warmup"]["params"]["distill"] = {"loss": "kl"}
    with pytest.raises(ConfigError) as info:
        validate_config(config)
    assert info.value.key == "runs.warmup.params.distill" and "unknown key" in info.value.message


def test_a_teacher_run_scores_the_pool_and_the_run_distils_from_its_scores(raw):
    config = _distilling(raw, inputs={"teacher": "colbert_teacher"})
    plan = Plan(validate_config(config))
    pool = "results/warmup/pools/train_top200_bm25-bm25_ce-crossencoder"
    inputs = plan.train_inputs("star_kd")  # the teacher first; the cross-encoder only filters the pool then
    assert inputs["teacher_scores"] == f"{pool}.teacher-colbert_teacher_candidates.parquet"
    assert inputs["teacher_positive_scores"] == f"{pool}.teacher-colbert_teacher_positives.parquet"
    assert "teacher_probabilities" not in inputs
    key = ("warmup", "train_top200_bm25-bm25_ce-crossencoder", "colbert_teacher")
    assert list(plan.mining.teacher_pools) == [key] and plan.mining.teacher_pools[key].depth == 200
    assert plan.mining.teacher_scoring_inputs(*key) == {
        "model": "results/colbert_teacher/model", "cache": plan.cache_dir("colbert_teacher"),
        "ranking": "results/warmup/rankings/train.parquet", "qrels": "results/datasets/synthetic/qrels"}
    assert "colbert_teacher" in plan.ancestors("star_kd")
    # a cross-encoder teacher forms its pairs from the texts: its scoring reads them too
    config = _distilling(raw, inputs={"teacher": "crossencoder"})
    config["runs"]["star_kd"]["inputs"].pop("cross_encoder")
    plan = Plan(validate_config(config))
    scoring = plan.mining.teacher_scoring_inputs("warmup", "train_top200_bm25-bm25", "crossencoder")
    assert scoring["model"] == "results/crossencoder/model" and scoring["corpus"].endswith("corpus.parquet")


def test_an_imported_list_gives_its_own_scores(raw, tmp_path):
    folder = tmp_path / "imports" / "x"
    config = _distilling(raw, inputs={"negatives": {"imported": str(folder)}})
    config["runs"]["star_kd"]["inputs"].pop("cross_encoder")
    inputs = Plan(validate_config(copy.deepcopy(config))).train_inputs("star_kd")  # no card yet: training checks
    assert inputs["teacher_scores"] == inputs["hard_negatives"] == "results/star_kd/hardnegs.parquet"
    assert inputs["teacher_positive_scores"] == "results/star_kd/hardnegs_positives.parquet"
    folder.mkdir(parents=True)
    card = {"card_version": 1, "kind": "import", "inputs": {},
            "import": {"mapping": {"negatives": 12, "negatives_scored": 12, "positives": 3, "positives_scored": 3}}}
    (folder / "hardnegs_card.json").write_text(json.dumps(card))
    validate_config(copy.deepcopy(config))
    card["import"]["mapping"]["positives_scored"] = 0
    (folder / "hardnegs_card.json").write_text(json.dumps(card))
    with pytest.raises(ConfigError) as info:
        validate_config(copy.deepcopy(config))
    assert info.value.key == "runs.star_kd.params.distill.loss"
    assert "carried none of its positives" in info.value.message and "0 of 3 scored" in info.value.message
    config["runs"]["star_kd"]["params"]["distill"]["loss"] = None  # a run that does not distil reads no card
    assert not any("teacher" in name for name in Plan(validate_config(config)).train_inputs("star_kd"))


@pytest.mark.parametrize("inputs, key, message", [
    ({"teacher": "warmup"}, "runs.star_kd.inputs.teacher", "re-ranks nothing"),
    ({"teacher": "colbert_teacher", "negatives": {"imported": "imports/x"}}, "runs.star_kd.inputs.teacher",
     "has no pool for a teacher to score"),
    ({"negatives": {"imported": "imports/x"}}, "runs.star_kd.inputs.cross_encoder", "trains on an imported list"),
])
def test_a_teacher_or_cross_encoder_without_a_pool_to_score_is_refused(raw, inputs, key, message):
    with pytest.raises(ConfigError) as info:
        validate_config(_distilling(raw, inputs=inputs))
    assert info.value.key == key and message in info.value.message


def test_a_teacher_on_a_run_that_does_not_distil_is_refused(raw):
    config = _distilling(raw, inputs={"teacher": "colbert_teacher"})
    config["runs"]["star_kd"]["params"]["distill"]["loss"] = None
    with pytest.raises(ConfigError) as info:
        validate_config(config)
    assert info.value.key == "runs.star_kd.inputs.teacher" and "does not distil" in info.value.message
