"""The figures (hardneg.figures): each figure's data on tiny hand-made inputs with known answers, PNGs drawn
twice byte for byte, the plan's figure targets and their config errors; the static_hn method (each query
against its own documents only, its negatives its mined hard negatives); ADORE's dev evaluation against its
fixed documents."""

import json
import math

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch

from hardneg.errors import ConfigError, DataError
from hardneg.experiments import pq_matrix
from hardneg.figures import curves, epoch_curves, gradient_norms, hybrid_alpha, pairwise_errors, tsne
from hardneg.io import artifacts
from tests.support import REPO
from tests.support.dense import TINY_MODEL

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _write(table: pa.Table, path) -> str:
    pq.write_table(table, path)
    return str(path)


def _per_query(path, values: dict, measure="PairwiseErrors@200", other=None) -> str:
    rows = [{"qid": q, "measure": measure, "value": float(v)} for q, v in values.items()]
    rows += [{"qid": q, "measure": "RR@10", "value": 0.5} for q in values]  # another measure, ignored
    rows += [{"qid": q, "measure": "PairwiseErrors", "value": float(v)} for q, v in (other or {}).items()]
    return _write(pa.Table.from_pylist(rows, schema=artifacts.PER_QUERY_METRICS.schema), path)


def _drawn_twice(draw, table, tmp_path, **kwargs) -> bytes:
    """Draw ``table`` twice into two files; assert both are the same PNG bytes and hold no software stamp."""
    first, second = tmp_path / "first.png", tmp_path / "second.png"
    draw(table, first, **kwargs)
    draw(table, second, **kwargs)
    data = first.read_bytes()
    assert data.startswith(PNG_SIGNATURE) and len(data) > 5000
    assert data == second.read_bytes()
    assert b"Software" not in data and b"matplotlib" not in data.lower()
    return data


# -------------------------------------------------------------------------------------------- gradient_norms
def test_gradient_norms_are_every_step_s_and_their_mean_ratios(tmp_path):
    ance = _write(pa.table({"step": [2, 1, 3], "loss": [1.0] * 3, "grad_norm": [6.0, 2.0, 4.0]}), tmp_path / "a.parquet")
    inbatch = _write(pa.table({"step": [1, 2], "loss": [1.0] * 2, "grad_norm": [0.1, 0.3]}), tmp_path / "b.parquet")
    table = gradient_norms.norm_table({"ance": ance, "inbatch": inbatch}, {"ance": "ANCE negatives"})
    data = table.to_pandas()
    assert data["label"].tolist() == ["ANCE negatives"] * 3 + ["inbatch"] * 2
    assert data["step"].tolist() == [1, 2, 3, 1, 2] and data["grad_norm"].tolist() == [2.0, 6.0, 4.0, 0.1, 0.3]
    assert gradient_norms.mean_ratios(table, "ance") == pytest.approx({"ance": 1.0, "inbatch": 4.0 / 0.2})
    with pytest.raises(ValueError, match="not among"):
        gradient_norms.mean_ratios(table, "star")
    _drawn_twice(gradient_norms.draw_norms, table, tmp_path, reference="ance")
    empty = _write(pa.table({"step": pa.array([], pa.int64())}), tmp_path / "empty.parquet")
    with pytest.raises(DataError, match="no gradient norms") as error:
        gradient_norms.norm_table({"x": empty})
    assert error.value.path == empty


# ------------------------------------------------------------------------------------------- pairwise_errors
def test_pairwise_error_distribution_is_the_empirical_cdf(tmp_path):
    a = _per_query(tmp_path / "a.parquet", {"q4": 10, "q2": 3, "q1": 0, "q3": 3}, other={"q1": 5, "q2": 1})
    b = _per_query(tmp_path / "b.parquet", {"q1": 7, "q2": 7}, other={"q1": 9, "q2": 2})
    table = pairwise_errors.distribution_table({"run_a": a, "run_b": b}, ["PairwiseErrors@200", "PairwiseErrors"])
    data = table.to_pandas()
    top_a = data[(data.run == "run_a") & (data.measure == "PairwiseErrors@200")]
    assert top_a["qid"].tolist() == ["q1", "q2", "q3", "q4"]  # increasing value, ties by qid
    assert top_a["value"].tolist() == [0, 3, 3, 10]
    assert top_a["share"].tolist() == [0.25, 0.75, 0.75, 1.0]  # share of queries with at most this many errors
    total_a = data[(data.run == "run_a") & (data.measure == "PairwiseErrors")]
    assert total_a["qid"].tolist() == ["q2", "q1"] and total_a["share"].tolist() == [0.5, 1.0]
    top_b = data[(data.run == "run_b") & (data.measure == "PairwiseErrors@200")]
    assert top_b["share"].tolist() == [1.0, 1.0]
    assert list(dict.fromkeys(data["run"])) == ["run_a", "run_b"]
    assert table.schema.equals(artifacts.FIGURE_DISTRIBUTION.schema)


def test_a_missing_measure_names_the_file(tmp_path):
    path = _per_query(tmp_path / "a.parquet", {"q1": 1})
    with pytest.raises(DataError) as error:
        pairwise_errors.distribution_table({"a": path}, ["PairwiseErrors"])
    assert error.value.path == path and "PairwiseErrors@200" in error.value.message


def test_pairwise_errors_png_and_data(tmp_path):
    a = _per_query(tmp_path / "a.parquet", {f"q{i}": i * i for i in range(30)})
    b = _per_query(tmp_path / "b.parquet", {f"q{i}": 2 * i for i in range(30)})
    table = pairwise_errors.write_pairwise_errors({"a": a, "b": b}, ["PairwiseErrors@200"], tmp_path / "d.parquet",
                                                  tmp_path / "f.png")
    assert artifacts.read_table(artifacts.FIGURE_DISTRIBUTION, tmp_path / "d.parquet").equals(table)
    assert (tmp_path / "f.png").read_bytes() == _drawn_twice(pairwise_errors.draw_pairwise_errors, table, tmp_path)
    assert pairwise_errors.axis_label("PairwiseErrors@200") == "pairwise errors per query (top 200)"


# -------------------------------------------------------------------------------------------- epoch curves
def test_epoch_points_are_each_epoch_s_mean_loss_and_last_dev_mrr100(tmp_path):
    nan = math.nan
    a = _write(pa.table({"step": [1, 2, 3, 4], "epoch": [0, 0, 1, 1], "loss": [2.0, 1.0, 0.8, 0.6],
                         "dev_rr100": [nan, 0.3, nan, 0.4]}), tmp_path / "a.parquet")
    b = _write(pa.table({"step": [2, 1], "epoch": [0, 0], "loss": [1.0, 3.0], "dev_rr100": [0.2, nan]}),
               tmp_path / "b.parquet")
    table = epoch_curves.epoch_table({"abs": a, "random": b}, {"abs": "ABS-Encode"})
    data = table.to_pandas()
    assert data["run"].tolist() == ["abs", "abs", "random"] and data["label"].tolist()[0] == "ABS-Encode"
    assert data["epoch"].tolist() == [1, 2, 1]
    assert data["loss"].tolist() == pytest.approx([1.5, 0.7, 2.0])
    assert data["dev_rr100"].tolist() == [0.3, 0.4, 0.2]  # the value of each epoch's last step
    _drawn_twice(epoch_curves.draw_epochs, table, tmp_path)
    unevaluated = _write(pa.table({"step": [1, 2], "epoch": [0, 1], "loss": [1.0, 0.9], "dev_rr100": [nan, 0.1]}),
                         tmp_path / "c.parquet")
    for path in (unevaluated, _write(pa.table({"step": [1], "epoch": [0], "loss": [1.0]}), tmp_path / "d.parquet")):
        with pytest.raises(DataError) as error:
            epoch_curves.epoch_table({"x": path})
        assert error.value.path == path and "dev_every: epoch" in error.value.message


# ---------------------------------------------------------------------------------------------- dev curves
def _train_log(path, evaluated: dict, steps: int = 10) -> str:
    values = [evaluated.get(step, math.nan) for step in range(1, steps + 1)]
    return _write(pa.table({"step": list(range(1, steps + 1)), "loss": [1.0] * steps, "dev_rr10": values}), path)


def test_curve_points_are_the_evaluated_steps(tmp_path):
    a = _train_log(tmp_path / "a.parquet", {3: 0.2, 6: 0.25, 10: 0.3})
    b = _train_log(tmp_path / "b.parquet", {5: 0.1, 10: 0.4})
    table = curves.curve_table({"static": a, "adore": b}, {"adore": "ADORE"})
    data = table.to_pandas()
    assert data["run"].tolist() == ["static"] * 3 + ["adore"] * 2
    assert data["label"].tolist() == ["static"] * 3 + ["ADORE"] * 2  # a run without a label is named
    assert data["step"].tolist() == [3, 6, 10, 5, 10]
    assert data["dev_rr10"].tolist() == [0.2, 0.25, 0.3, 0.1, 0.4]
    _drawn_twice(curves.draw_curves, table, tmp_path, title=curves.TITLES["training_curves"])


def test_a_log_without_dev_evaluation_names_the_file(tmp_path):
    plain = _write(pa.table({"step": [1, 2], "loss": [1.0, 0.9]}), tmp_path / "plain.parquet")
    for path in (plain, _train_log(tmp_path / "nan.parquet", {})):
        with pytest.raises(DataError) as error:
            curves.curve_table({"run": path})
        assert error.value.path == path and "dev_every" in error.value.message


# ---------------------------------------------------------------------------------------------------- t-SNE
def _tsne_inputs(tmp_path):
    """Four queries, 14 documents in 6 dimensions; the 'after' query vectors move q1 toward its relevant d0."""
    rng = np.random.default_rng(0)
    docs = rng.normal(size=(14, 6)).astype(np.float32)
    docids = [f"d{i}" for i in range(14)]
    qids = ["q1", "q2", "q3", "q4"]
    docs[0] *= 4  # a long vector: first for a query along it, last against it
    before = rng.normal(size=(4, 6)).astype(np.float32)
    before[0] = -docs[0]
    after = before.copy()
    after[0] = docs[0]  # q1: d0 goes from rank 14 to rank 1
    relevant = {"q1": ["d0", "d1"], "q2": ["d5"], "q3": ["d7"], "q4": ["d9"]}
    paths = {}
    for side, vectors in (("before", before), ("after", after)):
        np.save(tmp_path / f"q_{side}.npy", vectors)
        paths[f"query_{side}"] = str(tmp_path / f"q_{side}.npy")
        paths[f"query_ids_{side}"] = _write(pa.table({"id": qids}), tmp_path / f"q_{side}.ids.parquet")
        rows = []
        for qid, vector in zip(qids, vectors):
            order = np.argsort(-(docs @ vector), kind="stable")
            rows += [{"qid": qid, "docid": docids[d], "rank": r, "score": float(docs[d] @ vector)}
                     for r, d in enumerate(order, 1)]
        paths[f"ranking_{side}"] = _write(pa.Table.from_pylist(rows, schema=artifacts.RANKING.schema),
                                          tmp_path / f"run_{side}.parquet")
    np.save(tmp_path / "corpus.npy", docs)
    paths["doc_embeddings"] = str(tmp_path / "corpus.npy")
    paths["doc_ids"] = _write(pa.table({"id": docids}), tmp_path / "corpus.ids.parquet")
    qrels = [{"qid": q, "docid": d, "relevance": 1} for q, ds in relevant.items() for d in ds]
    (tmp_path / "qrels").mkdir()
    _write(pa.Table.from_pylist(qrels, schema=artifacts.QRELS.schema), tmp_path / "qrels" / "test.parquet")
    paths["qrels"] = str(tmp_path / "qrels")
    return paths, docs, before, after, relevant


def test_tsne_points_kinds_and_ranks(tmp_path):
    paths, docs, before, after, relevant = _tsne_inputs(tmp_path)
    ranking = {side: pd.read_parquet(paths[f"ranking_{side}"]) for side in ("before", "after")}
    first = {side: {q: min(r.loc[(r.qid == q) & r.docid.isin(ds), "rank"]) for q, ds in relevant.items()}
             for side, r in ranking.items()}
    assert first["after"]["q1"] == 1 and first["before"]["q1"] > 1  # only q1 moved
    assert all(first["after"][q] == first["before"][q] for q in ("q2", "q3", "q4"))
    rr = tsne.first_relevant_reciprocal(ranking["after"], {q: set(d) for q, d in relevant.items()})
    assert rr.to_dict() == {q: 1 / first["after"][q] for q in relevant}
    assert tsne.choose_query(ranking["before"], ranking["after"], {q: set(d) for q, d in relevant.items()}) == "q1"
    assert tsne.choose_query(ranking["before"], ranking["before"], {q: set(d) for q, d in relevant.items()}) == "q1"
    table = tsne.tsne_table(paths, "test", negatives=3, perplexity=3.0, seed=1)
    data = table.to_pandas()
    assert set(data["qid"]) == {"q1"}
    assert data["kind"].tolist()[:2] == ["query_before", "query_after"] and data["point"].tolist()[:2] == ["q1", "q1"]
    assert data.loc[data.kind == "relevant", "point"].tolist() == ["d0", "d1"]
    top = {side: [d for d in ranking[side].query("qid == 'q1'").sort_values("rank")["docid"]
                  if d not in ("d0", "d1")][:3] for side in ranking}
    negatives = data[data["kind"].str.startswith("negative")]
    for _, row in negatives.iterrows():
        in_before, in_after = row["point"] in top["before"], row["point"] in top["after"]
        assert row["kind"] == {(True, True): "negative_both", (True, False): "negative_before",
                               (False, True): "negative_after"}[(in_before, in_after)]
    assert set(negatives["point"]) == set(top["before"]) | set(top["after"])
    for side in ("before", "after"):
        ranks = dict(zip(ranking[side].query("qid == 'q1'")["docid"], ranking[side].query("qid == 'q1'")["rank"]))
        docs_rows = data[~data["kind"].isin(tsne.QUERY_KINDS)]
        assert docs_rows[f"rank_{side}"].tolist() == [ranks[d] for d in docs_rows["point"]]
    assert data.loc[data.point == "d0", "rank_after"].item() == 1
    assert np.isfinite(data[["x", "y"]].to_numpy()).all() and data[["x", "y"]].std().min() > 0
    assert tsne.tsne_table(paths, "test", negatives=3, perplexity=3.0, seed=1).equals(table)  # deterministic
    _drawn_twice(tsne.draw_tsne, table, tmp_path, before="star", after="adore_star")


def test_tsne_of_a_chosen_query_and_its_config_errors(tmp_path):
    paths, *_ = _tsne_inputs(tmp_path)
    table = tsne.tsne_table(paths, "test", qid="q3", negatives=2, perplexity=2.0, seed=1)
    assert set(table["qid"].to_pylist()) == {"q3"}
    assert table.filter(pa.compute.equal(table["kind"], "relevant"))["point"].to_pylist() == ["d7"]
    with pytest.raises(ConfigError) as error:
        tsne.tsne_table(paths, "test", qid="q9", negatives=2)
    assert error.value.key == "figures.tsne.qid"
    with pytest.raises(ConfigError) as error:  # 2 queries + 1 relevant + at most 4 negatives = at most 7 points
        tsne.tsne_table(paths, "test", qid="q3", negatives=2, perplexity=7.0)
    assert error.value.key == "figures.tsne.perplexity"


# ----------------------------------------------------------------------------------------------- PQ matrix
def test_pq_matrix_heat_map_data(tmp_path):
    cells = [("Flat", "Flat", 0.36), ("Flat", "PQ16", 0.27), ("PQ16", "Flat", 0.35), ("PQ16", "PQ16", 0.28)]
    matrix = _write(pa.table({"train_index": [c[0] for c in cells], "eval_index": [c[1] for c in cells],
                              "RR@10": [c[2] for c in cells], "nDCG@10": [0.0] * 4}), tmp_path / "matrix.parquet")
    table = pq_matrix.write_pq_matrix_figure(matrix, "RR@10", tmp_path / "d.parquet", tmp_path / "f.png")
    assert [(r["train_index"], r["eval_index"], r["value"]) for r in table.to_pylist()] == cells
    assert set(table["measure"].to_pylist()) == {"RR@10"}
    assert (tmp_path / "f.png").read_bytes() == _drawn_twice(pq_matrix.draw_pq_matrix, table, tmp_path)
    with pytest.raises(DataError) as error:
        pq_matrix.matrix_table(matrix, "AP@1000")
    assert error.value.path == matrix and "AP@1000" in error.value.message


# -------------------------------------------------------------------------------------------- hybrid alpha
def _tuning(tmp_path, chosen_alpha=0.4, summary_alpha=0.4):
    alphas = [0.8, 0.0, 0.4, 0.2, 0.6]
    values = [0.30, 0.25, 0.36, 0.33, 0.35]
    tuning = _write(pa.table({"alpha": alphas, "value": values, "chosen": [a == chosen_alpha for a in alphas]}),
                    tmp_path / "fusion_tuning.parquet")
    summary = tmp_path / "fusion_tuning.json"
    summary.write_text(json.dumps({"measure": "RR@10", "split": "dev", "alpha": summary_alpha}))
    return tuning, str(summary)


def test_hybrid_alpha_data_in_alpha_order(tmp_path):
    tuning, summary = _tuning(tmp_path)
    table = hybrid_alpha.write_hybrid_alpha("hybrid", tuning, summary, tmp_path / "d.parquet", tmp_path / "f.png")
    assert table["alpha"].to_pylist() == [0.0, 0.2, 0.4, 0.6, 0.8]
    assert table["value"].to_pylist() == [0.25, 0.33, 0.36, 0.35, 0.30]
    assert table["chosen"].to_pylist() == [False, False, True, False, False]
    assert set(table["measure"].to_pylist()) == {"RR@10"} and set(table["split"].to_pylist()) == {"dev"}
    assert (tmp_path / "f.png").read_bytes() == _drawn_twice(hybrid_alpha.draw_hybrid_alpha, table, tmp_path,
                                                             run="hybrid")


def test_hybrid_alpha_summary_must_agree_with_the_table(tmp_path):
    tuning, summary = _tuning(tmp_path, summary_alpha=0.6)
    with pytest.raises(DataError) as error:
        hybrid_alpha.alpha_table(tuning, summary)
    assert error.value.path == summary
    _write(pa.table({"alpha": [0.1], "value": [0.2]}), tmp_path / "bad.parquet")
    with pytest.raises(DataError, match="chosen"):
        hybrid_alpha.alpha_table(tmp_path / "bad.parquet", summary)


# ----------------------------------------------------------------------------------------- plan and config
@pytest.fixture(scope="module")
def default_config():
    from hardneg.pipeline.config import load_config_file

    return load_config_file("config/config.yaml")


def _plan(config, **figures):
    import copy

    from hardneg.pipeline.plan import Plan

    config = copy.deepcopy(config)
    for name, spec in figures.items():
        config["figures"][name].update(spec)
    return Plan(config)


def test_default_config_figure_targets(default_config):
    from hardneg.pipeline.figures import FIGURES

    plan = _plan(default_config)
    # the papers' figures of runs, then the experiments' (the PQ matrix's heat map)
    assert plan.report.figure_targets() == [
        f"results/figures/{name}.png" for name in ("pairwise_errors", "training_curves", "adore_vs_adore_l", "tsne",
                                                   "hybrid_alpha", "gradient_norms", "epoch_curves", "pq_matrix")]
    assert FIGURES["pq_matrix"] is pq_matrix.FIGURE and pq_matrix.EXPERIMENT.figures == (pq_matrix.FIGURE,)
    # the ABS report's curves: the ten runs, each evaluated on dev at the end of every epoch
    assert len(plan.report.figure_inputs("epoch_curves")["train_logs"]) == 10
    for run in default_config["figures"]["epoch_curves"]["runs"]:
        assert plan.params(run)["train"]["dev_every"] == "epoch" and plan.method(run).name == "abs"
    # the gradient-norm figure: ANCE against runs continuing the same warm-up on the same batches
    assert plan.report.figure_inputs("gradient_norms")["train_logs"][0] == "results/ance/train_log.parquet"
    assert FIGURES["gradient_norms"].params(default_config["figures"]["gradient_norms"], plan)["reference"] == "ance"
    for run in default_config["figures"]["gradient_norms"]["runs"]:
        assert plan.init_run(run) == "warmup"
        assert plan.params(run)["train"]["learning_rate"] == plan.params("ance")["train"]["learning_rate"]
    inputs = plan.report.figure_inputs("tsne")
    assert inputs["query_before"] == "results/star/embeddings/queries_test.npy"
    assert inputs["query_after"] == "results/adore_star/embeddings/queries_test.npy"
    assert inputs["doc_embeddings"] == "results/star/embeddings/corpus.npy"
    assert set(inputs) == set(tsne.INPUTS)
    assert plan.report.figure_inputs("training_curves")["train_logs"] == [
        "results/randneg_warmup/train_log.parquet", "results/static_hn/train_log.parquet",
        "results/adore_warmup_curve/train_log.parquet"]
    for run in default_config["figures"]["training_curves"]["runs"]:  # the curves' runs continue the warm-up
        assert plan.init_run(run) == "warmup" and plan.params(run)["train"]["dev_every"] > 0
    assert default_config["runs"]["adore_l_warmup_curve"]["params"]["adore"]["weighted"] is False


def test_hybrid_alpha_is_a_target_only_with_a_run(default_config):
    import copy

    for run, message in ((None, "no hybrid run is named"), ("bm25", "tunes no fusion weight")):
        with pytest.raises(ConfigError, match=message) as error:
            _plan(default_config, hybrid_alpha={"run": run}).report.figure_inputs("hybrid_alpha")
        assert error.value.key == "figures.hybrid_alpha.run"
        assert "results/figures/hybrid_alpha.png" not in _plan(default_config, hybrid_alpha={"run": run}).report.figure_targets()
    config = copy.deepcopy(default_config)
    config["runs"]["hybrid"] = config["runs"]["hybrid_adore_star"]
    plan = _plan(config, hybrid_alpha={"run": "hybrid"})
    assert "results/figures/hybrid_alpha.png" in plan.report.figure_targets()
    assert plan.report.figure_inputs("hybrid_alpha") == {"tuning": "results/hybrid/fusion_tuning.parquet",
                                                  "summary": "results/hybrid/fusion_tuning.json"}


@pytest.mark.parametrize("name, spec, key", [
    ("pairwise_errors", {"runs": ["bm25", "nope"]}, "figures.pairwise_errors.runs.1"),
    ("training_curves", {"runs": ["star"]}, "runs.star.params.train.dev_every"),
    ("training_curves", {"runs": ["static_hn", "bm25"]}, "figures.training_curves.runs.1"),
    ("training_curves", {"runs": []}, "figures.training_curves.runs"),
    ("adore_vs_adore_l", {"labels": {"star": "x"}}, "figures.adore_vs_adore_l.labels.star"),
    ("tsne", {"run": "star"}, "figures.tsne.run"),
    ("pq_matrix", {"measure": "P@5"}, "figures.pq_matrix.measure"),
    ("gradient_norms", {"runs": ["ance", "bm25"]}, "figures.gradient_norms.runs.1"),
    ("gradient_norms", {"reference": "star"}, "figures.gradient_norms.reference"),
    ("epoch_curves", {"runs": ["abs_random", "star"]}, "runs.star.params.train.dev_every"),
    ("epoch_curves", {"runs": ["abs_random", "bm25"]}, "figures.epoch_curves.runs.1"),
])
def test_figure_config_errors_name_the_key(default_config, name, spec, key):
    plan = _plan(default_config, **{name: spec})
    with pytest.raises(ConfigError) as error:
        plan.report.figure_inputs(name)
    assert error.value.key == key
    assert f"results/figures/{name}.png" not in plan.report.figure_targets()


def test_unknown_figure_keys_are_config_errors(default_config):
    import copy

    from hardneg.pipeline.config import validate_config

    config = copy.deepcopy(default_config)
    config["figures"]["tsne"]["perplexty"] = 3
    with pytest.raises(ConfigError) as error:
        validate_config(config)
    assert error.value.key == "figures.tsne.perplexty"


def test_rules_figures_smk_makes_the_rules_of_the_declarations_in_at_most_50_lines():
    rules = (REPO / "rules" / "figures.smk").read_text().splitlines()
    assert len(rules) <= 50
    assert sum(line.strip() == "rule:" for line in rules) == 1  # one loop, no figure written out by hand
    assert not list((REPO / "scripts").glob("figure_*.py"))  # one script, scripts/figure.py, draws them all


def test_the_declarations_know_nothing_of_the_plan_or_the_workflow():
    """Importing the registry (as the Snakefile does) loads neither the plan, nor the config's composition, nor
    torch: a declaration takes what it needs from the plan it is given."""
    import subprocess
    import sys

    code = ("import sys, hardneg.figures; print(sorted({'hardneg.pipeline.plan', 'hardneg.pipeline.config', 'hardneg.methods', 'torch', "
            "'snakemake'} & set(sys.modules)))")
    result = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    assert result.stdout.strip() == "[]"


# ------------------------------------------------------------------------------------------------ static_hn
class _Negatives:
    def sample(self, queries, per_query, rng):
        raise AssertionError("not sampled here")


def test_static_hn_scores_each_query_against_its_own_documents_only():
    from hardneg.dense.steps import Batch, ContrastiveMethod

    rows, per_query = 4, 2
    columns = rows + rows * per_query
    relevant = np.zeros((rows, columns), dtype=bool)
    relevant[np.arange(rows), np.arange(rows)] = True
    relevant[1, 3] = True  # row 3's positive is also relevant to query 1
    relevant[2, rows + 2 * per_query] = True  # and its own first "negative" is relevant to query 2
    batch = Batch(queries=np.arange(rows), query_rows=np.arange(rows), doc_rows=np.arange(columns),
                  positive=np.arange(rows), relevant=relevant)
    method = ContrastiveMethod(None, None, None, negatives=_Negatives(), per_query=per_query, loss="ranknet",
                               in_batch=False)
    scores = torch.randn(rows, columns, generator=torch.Generator().manual_seed(3), requires_grad=True)
    loss, stats = method.contrastive_loss(scores, batch, "cpu")
    scores_now = scores.detach()
    pairs = []
    for i in range(rows):
        own = [rows + i * per_query + k for k in range(per_query)]
        pairs += [torch.nn.functional.softplus(scores_now[i, j] - scores_now[i, i]) for j in own if not relevant[i, j]]
    assert len(pairs) == rows * per_query - 1
    assert float(loss.detach()) == pytest.approx(float(torch.stack(pairs).mean()), rel=1e-6)
    loss.backward()
    own = method.own_documents(batch)
    assert (scores.grad[~own] == 0).all() and (scores.grad[own & ~relevant] != 0).all()
    in_batch = ContrastiveMethod(None, None, None, negatives=_Negatives(), per_query=per_query, loss="ranknet")
    assert float(in_batch.contrastive_loss(scores_now, batch, "cpu")[0]) != pytest.approx(float(loss.detach()))
    best = [max(float(scores_now[i, j]) for j in range(columns) if own[i, j] and not relevant[i, j])
            for i in range(rows)]
    accuracy = np.mean([float(scores_now[i, i]) > best[i] for i in range(rows)])
    assert stats["batch_accuracy"] == pytest.approx(accuracy)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    from tests.support.dense import build_tiny

    return build_tiny(tmp_path_factory.mktemp("figures"))


def test_static_hn_method_is_stars_without_reuse(tiny, tmp_path):
    from hardneg import methods
    from hardneg.dense.steps import ContrastiveMethod
    from hardneg.dense.tokenized import TokenizedTexts
    from hardneg.pipeline.config import validate_params
    from hardneg.pipeline.train import build_method, load_training_data, train_config

    static, star = methods.get("static_hn"), methods.get("star")
    assert static.roles == star.roles and static.schema == star.schema and static.kind == star.kind
    qrels_path = tiny["data"] / "qrels" / "train.parquet"
    resolved = {"name": "s", "method": "static_hn", "seed": 1,
                "params": validate_params({"negatives": {"per_query": 2}}, method="static_hn")}
    query_texts, doc_texts, train = load_training_data(tiny["cache"], qrels_path, train_config(resolved))
    corpus = TokenizedTexts(tiny["cache"], "corpus").row_ids
    rng = np.random.default_rng(0)
    mined = []  # five non-relevant documents per training query
    for qid, relevant in zip(train.qids, train.relevant):
        others = [d for d in rng.permutation(len(corpus)) if d not in set(relevant)][:5]
        mined += [{"qid": qid, "docid": corpus[d], "rank": r, "score": 1.0} for r, d in enumerate(others, 1)]
    pq.write_table(pa.Table.from_pylist(mined, schema=artifacts.HARDNEGS.schema), tmp_path / "hardnegs.parquet")
    method = build_method(resolved, train, query_texts, doc_texts,
                          {"hard_negatives": str(tmp_path / "hardnegs.parquet")})
    assert isinstance(method, ContrastiveMethod) and method.in_batch is False and method.loss_name == "ranknet"
    batch = method.make_batch(np.arange(8), np.random.default_rng(1))
    by_query = {}
    for row in mined:
        by_query.setdefault(row["qid"], set()).add(row["docid"])
    negatives = batch.doc_rows[8:].reshape(8, 2)
    for i in range(8):
        assert {corpus[d] for d in negatives[i]} <= by_query[train.qids[i]]


# ------------------------------------------------------------------------- ADORE's dev evaluation, fixed docs
def test_adore_dev_evaluation_searches_the_fixed_documents(tiny, tmp_path):
    from hardneg.dense.backbone import ModelSpec
    from hardneg.dense.encode import encode_rows
    from hardneg.dense.model import BiEncoder
    from hardneg.dense.tokenized import TokenizedTexts
    from hardneg.dense.tokenizer import load_tokenizer
    from hardneg.evaluation import metrics as evaluation
    from hardneg.index import build_index, save_index
    from hardneg.pipeline.config import validate_params
    from hardneg.pipeline.train import train_run

    tokenizer = load_tokenizer(tiny["tokenizer"])
    spec = ModelSpec.from_params(validate_params({"model": {"builtin": TINY_MODEL}})["model"])
    docs_model = BiEncoder.create(spec, vocab_size=len(tokenizer), pad_token_id=tokenizer.pad_token_id,
                                  max_length=64, seed=2)
    docs_model.save(tmp_path / "docs_model", tokenizer)
    corpus = TokenizedTexts(tiny["cache"], "corpus")
    fixed = encode_rows(docs_model, corpus, np.arange(len(corpus)), "doc")
    np.save(tmp_path / "corpus.npy", fixed)
    save_index(build_index(fixed, "Flat"), tmp_path / "Flat.faiss")
    resolved = {"name": "adore", "method": "adore", "seed": 3, "params": validate_params({
        "model": {"doc_max_length": 64, "query_max_length": 16},
        "train": {"epochs": 1, "batch_size": 16, "learning_rate": 0.01, "checkpoint_every": 0, "log_every": 1,
                  "dev_every": 100, "dev_split": "test"},
        "adore": {"top_k": 20, "cut": 20}}, method="adore")}
    rows = train_run(resolved, cache_dir=tiny["cache"], qrels_path=tiny["data"] / "qrels" / "train.parquet",
                     model_dir=tmp_path / "model", log_path=tmp_path / "log.parquet", checkpoint_dir=tmp_path / "ckpt",
                     tokenizer_source=tiny["tokenizer"],
                     inputs={"init": tmp_path / "docs_model", "doc_embeddings": tmp_path / "corpus.npy",
                             "train_index": tmp_path / "Flat.faiss"})
    logged = rows[-1]["dev_rr10"]  # evaluated at the last step only
    assert [math.isnan(r["dev_rr10"]) for r in rows] == [True] * (len(rows) - 1) + [False]
    trained = BiEncoder.load(tmp_path / "model")
    queries = TokenizedTexts(tiny["cache"], "queries_test")
    q = encode_rows(trained, queries, np.arange(len(queries)), "query")
    qrels = artifacts.read_table(artifacts.QRELS, tiny["data"] / "qrels" / "test.parquet")

    def rr10(doc_vectors):
        top = np.argsort(-(q @ doc_vectors.T), axis=1, kind="stable")[:, :10]
        run = pa.table({"qid": np.repeat(queries.row_ids, 10), "docid": [corpus.row_ids[d] for d in top.ravel()],
                        "rank": np.tile(np.arange(1, 11), len(q)).astype(np.int32),
                        "score": np.take_along_axis(q @ doc_vectors.T, top, 1).ravel()})
        return evaluation.evaluate(run, qrels, ["RR@10"])[0]["RR@10"]

    assert logged == pytest.approx(rr10(fixed), abs=1e-9)
    reencoded = encode_rows(trained, corpus, np.arange(len(corpus)), "doc")
    assert np.abs(reencoded - fixed).max() > 1e-3  # the shared encoder moved: re-encoding would be another corpus
