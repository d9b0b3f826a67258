"""Training in episodes (ANCE): the episode runs the plan makes, the checkpoint each episode's negatives come from
(lag 0 and 1), and a training cut into episodes that equals one continuous training (the DAG Snakemake builds from
them: tests/workflow/test_episodes_dag.py)."""


import pyarrow.parquet as pq
import pytest
import torch
import yaml

from hardneg.dense.checkpoint import load_checkpoint
from hardneg.dense.data import ShuffledBatches, TrainQueries
from hardneg.dense.steps import ContrastiveMethod
from hardneg.dense.model_selection import ModelSelection
from hardneg.dense.tokenized import TokenizedTexts
from hardneg.dense.train_config import Window
from hardneg.dense.trainer_state import CHECKPOINT_FORMAT
from hardneg.errors import OutputPathError
from hardneg.io import artifacts
from hardneg.io.layout import Layout, parse_episode_run
from hardneg.io.train_log import read_kept, write_train_log
from hardneg.methods.registry import Episodes
from hardneg.pipeline.config import validate_config, validate_params
from hardneg.pipeline.episodes import assemble
from hardneg.pipeline.plan import Plan
from tests.support import REPO
from tests.support.dense import build_tiny


def _config(lag: int, count: int = 4, negatives: str | None = None) -> dict:
    raw = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    raw["runs"]["ance"]["params"]["ance"] = {"episodes": count, "steps_per_episode": 5, "lag": lag}
    if negatives:
        raw["runs"]["ance"]["inputs"]["negatives"] = negatives
    return validate_config(raw)


def _miner(plan: Plan, run: str) -> str:
    return plan.runs[run]["inputs"]["negatives"]


@pytest.mark.parametrize("lag, sources", [(0, ["warmup", "ance/episodes/0", "ance/episodes/1", "ance/episodes/2"]),
                                          (1, ["warmup", "warmup", "ance/episodes/0", "ance/episodes/1"]),
                                          (2, ["warmup", "warmup", "warmup", "ance/episodes/0"])])
def test_each_episode_mines_with_the_checkpoint_lag_episodes_before_the_previous(lag, sources):
    plan = Plan(_config(lag))
    names = plan.episodes.episode_runs("ance")
    assert names == [f"ance/episodes/{e}" for e in range(4)]
    assert [_miner(plan, name) for name in names] == sources
    assert [plan.init_run(name) for name in names] == ["warmup"] + names[:-1]
    for index, name in enumerate(names):
        source = sources[index]
        # the episode's list is mined from the source checkpoint's ranking of the training queries
        assert plan.mining.mining_inputs(name)["ranking"] == f"results/{source}/rankings/train.parquet"
        assert plan.mining.positive_scores_inputs(source, "train")["doc_emb"] == f"results/{source}/embeddings/corpus.npy"
        assert plan.mining.pool_path(name) == f"results/{source}/pools/train_top200_bm25-bm25.parquet"
        inputs = plan.train_inputs(name)
        assert inputs["hard_negatives"] == f"results/{name}/hardnegs.parquet"
        assert inputs["init"] == (f"results/{names[index - 1]}/model" if index else "results/warmup/model")
        assert inputs.get("state") == (f"results/{names[index - 1]}/trainer_state" if index else None)
        assert plan.training_slice(name)["episode"] == {"of": "ance", "index": index}


def test_the_first_negatives_may_come_from_another_miner():
    plan = Plan(_config(1, negatives="star"))
    assert [_miner(plan, name) for name in plan.episodes.episode_runs("ance")] == \
        ["star", "star", "ance/episodes/0", "ance/episodes/1"]


def test_the_episodic_run_is_assembled_not_trained():
    plan = Plan(_config(1))
    assert "ance" in plan.episodes.episodic_runs and "ance" not in plan.step_trained_runs
    assert not set(plan.episodes.episode_runs()) & set(plan.step_trained_runs)
    assert "ance" not in plan.mining.mining_runs and set(plan.episodes.episode_runs("ance")) <= set(plan.mining.mining_runs)
    assert set(plan.episodes.episode_runs("ance")) <= set(plan.encoded_runs)  # each episode's model is encoded and indexed
    assert plan.episodes.assemble_inputs("ance")["model"] == "results/ance/episodes/3/model"
    # the default targets and the summary are the config's runs, not its episodes
    assert not [t for t in plan.report.targets() if "/episodes/" in t]
    assert plan.reports("ance") == [f"results/ance/episodes/{e}/hardnegs_audit.md" for e in range(4)]
    # the refresh each checkpoint feeds: with lag 1 and 4 episodes, checkpoints 0 and 1 are encoded and searched
    costs = plan.episodes.refresh_benchmarks("ance")
    assert [entry["checkpoint"] for entry in costs] == [None, 0, 1, 2, 3]
    assert [bool(entry["encode"]) for entry in costs] == [False, True, True, False, False]
    assert [len(entry["mine"]) // 2 for entry in costs] == [2, 1, 1, 0, 0]
    assert costs[1]["search"] == ["results/ance/episodes/0/benchmarks/dense_search_train.tsv"]


def test_episode_names_and_their_folders():
    assert parse_episode_run("ance/episodes/12") == ("ance", 12)
    assert parse_episode_run("ance") is None and parse_episode_run("ance/episodes/01") is None
    layout = Layout("results")
    assert layout.model("ance/episodes/3") == "results/ance/episodes/3/model"
    assert layout.hard_negatives("ance/episodes/0") == "results/ance/episodes/0/hardnegs.parquet"
    with pytest.raises(OutputPathError):
        layout.model("ance/other/3")
    with pytest.raises(OutputPathError):
        layout.model("../episodes/3")


# ------------------------------------------------------------------------------- the trainer's windows
@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return build_tiny(tmp_path_factory.mktemp("episodes"))


def _trainer(tiny, tmp_path, window, name):
    """test_resume's in-batch trainer over a fresh model, the same every call, on a part of a 12-step schedule."""
    from tests.support.training import tiny_trainer as trainer

    return trainer(tiny, tmp_path / name, fingerprint=name, checkpoint_every=0, window=window)


def test_episodes_of_a_training_equal_the_continuous_training(tiny, tmp_path):
    """Steps 0-5 and 5-12 of a 12-step schedule, the second continuing the state the first wrote, end bit for bit
    where the 12 steps in one go end: weights, learning rates and log rows."""
    batches = ShuffledBatches(120, 16, 7).num_batches(0)
    assert batches < 12 < 2 * batches  # the schedule spans two epochs, the second cut short
    whole = _trainer(tiny, tmp_path, Window(12, 0, 12, None, tmp_path / "state_whole", "f"), "whole")
    whole_rows = whole.fit()
    assert [row["step"] for row in whole_rows] == list(range(1, 13))
    assert whole_rows[-1]["epoch"] == 1 and whole_rows[-1]["lr"] == 0.0  # the linear decay ends with the schedule

    first = _trainer(tiny, tmp_path, Window(12, 0, 5, None, tmp_path / "state_0", "f"), "first")
    first_rows = first.fit()
    assert [row["step"] for row in first_rows] == [1, 2, 3, 4, 5]
    state = load_checkpoint(tmp_path / "state_0", fingerprint="f", format=CHECKPOINT_FORMAT)
    assert state["step"] == 5
    assert load_checkpoint(tmp_path / "state_0", fingerprint="other", format=CHECKPOINT_FORMAT) is None
    second = _trainer(tiny, tmp_path, Window(12, 5, 12, state, tmp_path / "state_1", "f"), "second")
    second_rows = second.fit()
    assert [row["step"] for row in second_rows] == list(range(1, 13))  # the state's log, then its own steps
    assert second_rows == whole_rows
    for key, value in whole.model.state_dict().items():
        assert torch.equal(value, second.model.state_dict()[key]), key


def test_a_window_continues_only_the_state_of_its_start(tiny, tmp_path):
    first = _trainer(tiny, tmp_path, Window(12, 0, 4, None, tmp_path / "state_0", "f"), "first")
    first.fit()
    state = load_checkpoint(tmp_path / "state_0", fingerprint="f", format=CHECKPOINT_FORMAT)
    with pytest.raises(RuntimeError, match="at step 4, not at step 6"):
        _trainer(tiny, tmp_path, Window(12, 6, 12, state, tmp_path / "state_1", "f"), "second").fit()
    with pytest.raises(ValueError, match="continues a trainer state"):
        Window(12, 6, 12, None, tmp_path / "x", "f")


def test_every_episode_trains_the_ance_loss(tiny, monkeypatch):
    """ANCE's step: the NLL (softmax cross-entropy) of the positive against its own negatives sampled from the
    mined list, without the batch's other documents."""
    from hardneg import methods
    from hardneg.methods import ance

    method = methods.get("ance")
    assert method.episodes({"ance": {"episodes": 3, "steps_per_episode": 7, "lag": 1}}) == \
        Episodes(count=3, steps=7, lag=1)
    params = validate_params({}, method="ance")
    assert params["ance"] == {"episodes": 4, "steps_per_episode": 10000, "lag": 1}
    assert params["mining"]["depth"] == 200 and params["negatives"]["per_query"] == 1
    queries, corpus = TokenizedTexts(tiny["cache"], "queries_train"), TokenizedTexts(tiny["cache"], "corpus")
    qrels = artifacts.read_table(artifacts.QRELS, tiny["data"] / "qrels" / "train.parquet")
    sampled = object()
    monkeypatch.setattr(ance, "mined_negatives", lambda ctx: sampled)
    step = method.build_step(methods.StepContext(
        resolved={"method": "ance", "params": params}, train=TrainQueries(qrels, queries.row_ids, corpus.row_ids),
        query_texts=queries, doc_texts=corpus, inputs={}))
    assert isinstance(step, ContrastiveMethod)
    assert step.negatives is sampled and step.per_query == 1 and step.loss_name == "ce" and not step.in_batch


class _ScriptedDev:
    """Trainer event: a dev RR@10 of its table on each step (NaN elsewhere), before the model selection reads it."""

    def __init__(self, values):
        self.values = values

    def on_step_end(self, trainer, step, row):
        row["dev_rr10"] = self.values.get(step, float("nan"))


def test_the_best_step_of_an_earlier_episode_is_kept_at_the_last(tiny, tmp_path):
    """The model selection's state goes from one episode to the next with the trainer state: evaluated steps 2, 4,
    8 and 12, the best (step 4) in the first episode; the second episode, continuing, still holds step 4's weights
    and restores them, equal to the first episode's model at step 4."""
    values = {2: 0.2, 4: 0.6, 8: 0.5, 12: 0.6}  # step 12 equals step 4: the earlier step is kept
    weights = {}

    def remember(trainer, step):
        weights[step] = {k: v.clone() for k, v in trainer.model.state_dict().items()}

    first = _trainer(tiny, tmp_path, Window(12, 0, 5, None, tmp_path / "state_0", "f"), "first")
    first.callbacks = [_ScriptedDev(values), ModelSelection(), remember]
    first.fit()
    state = load_checkpoint(tmp_path / "state_0", fingerprint="f", format=CHECKPOINT_FORMAT)
    second = _trainer(tiny, tmp_path, Window(12, 5, 12, state, tmp_path / "state_1", "f"), "second")
    selection = ModelSelection()
    second.callbacks = [_ScriptedDev(values), selection]
    second.fit()
    assert (selection.best_step, selection.best_value, selection.last) == (4, 0.6, (12, 0.6))
    assert selection.restore(second.model)
    for key, value in weights[4].items():
        assert torch.equal(value, second.model.state_dict()[key]), key


def test_the_assembled_log_marks_the_step_the_last_episode_kept(tmp_path):
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "weights").write_text("w")
    kept = {"keep": "best", "step": 2, "steps": 4, "measure": "RR@10", "value": 0.5, "last_value": 0.4,
            "best_step": 2}
    write_train_log([{"step": 1, "loss": 1.0}, {"step": 2, "loss": 0.5}], tmp_path / "log0.parquet",
                    kept={"keep": "last", "step": 2, "steps": 2})
    write_train_log([{"step": 3, "loss": 0.4}, {"step": 4, "loss": 0.3}], tmp_path / "log1.parquet", kept=kept)
    for name in ("t0", "t1"):
        write_train_log([{"step": 1, "seconds": 0.1}], tmp_path / f"{name}.parquet")
    assemble(tmp_path / "model", [tmp_path / "log0.parquet", tmp_path / "log1.parquet"],
             [tmp_path / "t0.parquet", tmp_path / "t1.parquet"], model_dir=tmp_path / "out",
             log_path=tmp_path / "log.parquet", timings_path=tmp_path / "timings.parquet")
    log = pq.read_table(tmp_path / "log.parquet").to_pylist()
    assert [(row["episode"], row["step"], row["kept"]) for row in log] == [(0, 1, False), (0, 2, True),
                                                                           (1, 3, False), (1, 4, False)]
    assert read_kept(tmp_path / "log.parquet") == kept
