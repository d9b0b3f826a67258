"""The false-negative experiment in the plan (hardneg.experiments.false_negatives): the checks of its section, the
STAR run it generates per policy with `train`, its pool among the plan's (one pool, whoever selects from it),
where each policy's negatives come from, its targets and report pages, and the effectiveness table."""

import copy

import pandas as pd
import pyarrow as pa
import pytest

from hardneg.errors import ConfigError
from hardneg.io import artifacts
from hardneg.experiments import false_negatives as fn
from hardneg.experiments import false_negatives_effectiveness as effectiveness
from hardneg.pipeline.config import validate_config
from hardneg.pipeline.plan import Plan
from tests.support.configs import FALSE_NEGATIVES_CONFIG, TINY_DENSE


def config(train=False, **section):
    out = copy.deepcopy(FALSE_NEGATIVES_CONFIG)
    out["false_negatives"].update(train=train, **section)
    return out


def plan(raw) -> Plan:
    return Plan(validate_config(raw))


def _other_dataset(raw):
    raw["datasets"]["plain"] = {"adapter": "synthetic", "num_docs": 50, "num_queries": {"train": 10, "test": 5}}
    raw["runs"]["elsewhere"] = {"method": "inbatch", "dataset": "plain", "params": TINY_DENSE}
    raw["false_negatives"]["miner"] = "elsewhere"


@pytest.mark.parametrize("change, key, message", [
    (lambda c: c["false_negatives"].update(dataset="nosuch"), "false_negatives.dataset", "no dataset named 'nosuch'"),
    (lambda c: c["datasets"]["hidden"].pop("hide_positives"), "false_negatives.dataset", "hides no positives"),
    (lambda c: c["false_negatives"].update(miner="nosuch"), "false_negatives.miner", "no run named 'nosuch'"),
    (_other_dataset, "false_negatives.miner", "uses dataset 'plain', not the experiment's 'hidden'"),
    (lambda c: (c["runs"].update(bm25={"method": "bm25"}), c["false_negatives"].update(miner="bm25")),
     "false_negatives.miner", "the miner is a dense run"),
    (lambda c: c["false_negatives"].update(bm25="nosuch"), "false_negatives.bm25", "no run named 'nosuch'"),
    (lambda c: c["false_negatives"].update(policies=["top", "nosuch"]), "false_negatives.policies.1",
     "no policy 'nosuch'"),
    (lambda c: c["false_negatives"].update(policies=["top", "top"]), "false_negatives.policies.1", "listed twice"),
    (lambda c: c["false_negatives"].update(policies=["margin", "top"]), "false_negatives.policies.0",
     r"plain top-k \(keep only\); 'margin' sets margin"),
    (lambda c: c["policies"]["top"].update(max_score=0.5), "false_negatives.policies.0",
     r"plain top-k \(keep only\); 'top' sets max_score"),
    (lambda c: c["policies"]["window"].update(depth=80), "policies.window.depth", "deeper than the pool"),
    (lambda c: c["policies"]["margin"].update(ce_threshold=0.5), "false_negatives.cross_encoder",
     r"filters on a cross-encoder's scores \(ce_threshold\)"),
    (lambda c: c["false_negatives"].update(train=True, measures=["RR@10", "P@3"]), "false_negatives.measures.1",
     "'P@3' is not one of evaluation.measures"),
    (lambda c: c["false_negatives"].update(train=True, params={"mining": {"depth": 10}}),
     "false_negatives.params.mining", "sets the generated runs' mining section"),
    (lambda c: c["false_negatives"].pop("miner"), "false_negatives.miner", "required key is missing"),
])
def test_a_section_the_experiment_cannot_run_names_the_key(change, key, message):
    raw = config()
    change(raw)
    with pytest.raises(ConfigError, match=message) as error:
        validate_config(raw)
    assert error.value.key == key


def test_the_experiment_folder_is_no_run_name():
    raw = config()
    raw["runs"]["false_negatives"] = raw["runs"]["inbatch"]
    with pytest.raises(ConfigError, match="false-negative experiment") as error:
        validate_config(raw)
    assert error.value.key == "runs.false_negatives"


def test_without_training_the_experiment_selects_from_the_miner_s_pool_itself():
    checked = validate_config(config())
    assert checked["false_negatives"] == {**FALSE_NEGATIVES_CONFIG["false_negatives"], "bm25": None,
                                          "cross_encoder": None, "train": False, "params": {},
                                          "measures": ["RR@10", "nDCG@10"], "correction": "holm"}
    assert list(checked["runs"]) == ["inbatch"]  # no run generated
    experiment = Plan(checked)
    pool = fn.pool(experiment)
    assert (pool.miner, pool.split, pool.depth, pool.bm25, pool.duplicates) == ("inbatch", "train", 50, None, False)
    assert experiment.mining.pools == {("inbatch", "train_top50_nodup"): pool}  # built by rules/mine.smk like any pool
    assert fn.selected_policies(experiment) == ["top", "margin", "window"]
    assert fn.leakage_inputs(experiment) == {
        "pool": "results/inbatch/pools/train_top50_nodup.parquet", "hidden": "results/datasets/hidden/hidden",
        "selections": [f"results/false_negatives/selections/{p}.parquet" for p in ("top", "margin", "window")]}
    params = fn.leakage_params(experiment)
    assert params["settings"] == {"top": "keep 20", "margin": "margin 0.01, keep 20",
                                  "window": "rank_range 4-50, keep 20"}
    assert (params["split"], params["depth"], params["miner"]) == ("train", 50, "inbatch")
    assert fn.policy_params(experiment, "window")["rank_range"] == [4, 50]  # plain YAML for the job
    assert fn.targets(experiment) == ["results/false_negatives/leakage.md", "results/false_negatives/leakage.png",
                                      "results/false_negatives/leakage.html"]
    with pytest.raises(ConfigError, match="set train: true") as error:
        fn.effectiveness_inputs(experiment)
    assert error.value.key == "false_negatives.train"


def test_with_training_each_policy_has_a_star_run_whose_own_job_selects_from_the_same_pool():
    raw = config(train=True, params={"train": {"epochs": 1, "batch_size": 16}})
    raw["runs"]["bm25"] = {"method": "bm25", "params": {"top_k": 100}}
    raw["false_negatives"]["bm25"] = "bm25"
    checked = validate_config(raw)
    generated = [run for run in checked["runs"] if run.startswith("inbatch_fn_")]
    assert generated == ["inbatch_fn_top", "inbatch_fn_margin", "inbatch_fn_window"]
    run = checked["runs"]["inbatch_fn_margin"]
    assert run["dataset"] == "hidden"
    assert run["inputs"] == {"init": "inbatch", "negatives": "inbatch", "bm25": "bm25"}
    assert run["params"]["mining"]["policy"] == "margin" and run["params"]["mining"]["depth"] == 50
    assert run["params"]["mining"]["duplicates"] is False and run["params"]["train"]["split"] == "train"
    assert run["params"]["train"]["epochs"] == 1 and run["params"]["model"] == checked["runs"]["inbatch"]["params"][
        "model"]  # it continues the miner's model
    experiment = Plan(checked)
    assert list(experiment.mining.pools) == [("inbatch", "train_top50_bm25-bm25_nodup")]  # one pool for runs and experiment
    assert experiment.mining.pool_path("inbatch_fn_top") == fn.pool_path(experiment)
    assert fn.selected_policies(experiment) == []  # each run's select_hard_negatives job makes its list
    assert fn.leakage_inputs(experiment)["selections"] == [f"results/inbatch_fn_{p}/hardnegs.parquet"
                                                           for p in ("top", "margin", "window")]
    assert fn.effectiveness_inputs(experiment) == {"per_query": [f"results/inbatch_fn_{p}/per_query.parquet"
                                                                 for p in ("top", "margin", "window")]}
    assert fn.targets(experiment)[:3] == ["results/false_negatives/leakage.md", "results/false_negatives/leakage.png",
                                          "results/false_negatives/effectiveness.md"]
    pages = experiment.report.markdown_pages()
    assert pages["results/false_negatives/leakage"]["category"] == "Experiments"
    assert "results/false_negatives/effectiveness" in pages
    assert experiment.report.page_runs("results/false_negatives/effectiveness") == {
        "inbatch", "bm25", "inbatch_fn_top", "inbatch_fn_margin", "inbatch_fn_window"}
    paper = experiment.report.paper_targets()
    assert "results/false_negatives/leakage.html" in paper and "results/false_negatives/leakage.png" in paper
    mine = copy.deepcopy(raw)  # a run of that name the config defines itself is kept, its params its own
    mine["runs"]["inbatch_fn_top"] = copy.deepcopy(checked["runs"]["inbatch_fn_top"])
    mine["runs"]["inbatch_fn_top"]["params"]["train"]["epochs"] = 3
    assert validate_config(mine)["runs"]["inbatch_fn_top"]["params"]["train"]["epochs"] == 3
    mine["runs"]["inbatch_fn_top"] = {"method": "inbatch", "dataset": "hidden", "params": TINY_DENSE}
    with pytest.raises(ConfigError, match="the false_negatives experiment trains a run of this name") as error:
        validate_config(mine)  # another run under its name: the experiment would find no STAR run there
    assert error.value.key == "runs.inbatch_fn_top"


def test_a_config_without_the_experiment_has_nothing_of_it():
    raw = config()
    del raw["false_negatives"]
    plain = plan(raw)
    assert plain.mining.experiment_pools() == [] and plain.mining.pools == {}
    assert fn.report_pages(plain) == {} and fn.figure_targets(plain) == [] and fn.selected_policies(plain) == []
    with pytest.raises(ConfigError, match="no false_negatives section") as error:
        fn.targets(plain)
    assert error.value.key == "false_negatives"


def _per_query(path, values):
    rows = [(qid, measure, value) for measure, by_query in values.items() for qid, value in by_query.items()]
    table = pa.table({"qid": [r[0] for r in rows], "measure": [r[1] for r in rows], "value": [r[2] for r in rows]},
                     schema=artifacts.PER_QUERY_METRICS.schema)
    artifacts.write_table(table, artifacts.PER_QUERY_METRICS, path)
    return path


def test_the_effectiveness_table_tests_each_policy_s_run_against_the_reference_s(tmp_path):
    queries = [f"q{i}" for i in range(8)]
    reference = {"RR@10": dict(zip(queries, [1, 0.5, 0.5, 0, 1, 0.25, 1, 0])),
                 "nDCG@10": dict(zip(queries, [0.9, 0.4, 0.5, 0.1, 0.8, 0.3, 0.7, 0.0]))}
    better = {m: {q: min(1.0, v + 0.2) for q, v in by_query.items()} for m, by_query in reference.items()}
    paths = [_per_query(tmp_path / f"{name}.parquet", values)
             for name, values in (("a", reference), ("b", better), ("c", reference))]
    table = effectiveness.write_effectiveness(["top", "margin", "same"], ["run_top", "run_margin", "run_same"], paths,
                                   ["RR@10", "nDCG@10"], "test", tmp_path / "e.parquet", tmp_path / "e.md")
    written = artifacts.read_table(effectiveness.EFFECTIVENESS, tmp_path / "e.parquet")
    pd.testing.assert_frame_equal(written.to_pandas(), table.to_pandas())  # NaN p-values: no test (all ties)
    rows = {(row["policy"], row["measure"]): row for row in table.to_pylist()}
    assert len(rows) == 6 and rows[("top", "RR@10")]["delta"] == 0 and rows[("top", "RR@10")]["p_t"] is None
    margin = rows[("margin", "RR@10")]
    assert margin["delta"] == pytest.approx(sum(better["RR@10"].values()) / 8 - sum(reference["RR@10"].values()) / 8)
    assert margin["wins"] > 0 and margin["losses"] == 0 and margin["num_queries"] == 8
    assert 0 < margin["p_t"] <= margin["p_t_corrected"] <= 1
    assert rows[("same", "nDCG@10")]["delta"] == 0 and rows[("same", "nDCG@10")]["ties"] == 8
    page = (tmp_path / "e.md").read_text()
    assert "split `test`" in page and "| **top** (reference) | run_top | 0.531 |" in page
    assert "| margin | run_margin |" in page and "Holm's step-down correction" in page
    alone = effectiveness.effectiveness_table(["top"], ["run_top"], paths[:1], ["RR@10"])  # the reference alone: no test
    assert alone.num_rows == 1 and alone["mean"].to_pylist() == [pytest.approx(0.53125)]
