"""The cross-encoder through the workflow on a tiny config, continuing a copy of the session's tiny chain (its BM25
index, BM25's training-split ranking and the tokenized cache, found up to date): it trains on BM25 negatives and
re-ranks BM25's top 20 of the test split (a ranking of its own, evaluated like BM25's); then it denoises a STAR
run's negatives (RocketQA): it scores the warm-up's pool, a policy drops what it deems relevant, and `hardneg
verify` scores the pool again and re-mines the same list. A pretrained cross-encoder (a tiny sentence-transformers
CrossEncoder folder built here) scores such a pool as it is, with `train.epochs: 0`, as `CrossEncoder.predict`
scores the pairs; the export carries its scores and `hardneg verify` scores the pool again; and a STAR run distils
from the pool's scores."""

import json

import numpy as np

import pyarrow.parquet as pq
import pytest
from transformers import AutoModel

from hardneg.cli import main
from tests.support.builds import copy_build
from tests.support.configs import CROSS_ENCODER_CONFIG, CROSS_ENCODER_DEPTH as DEPTH, CROSS_ENCODER_RUN, STAR_CONFIG
from tests.support.workflow import output_of, snakemake_jobs, write_config

pytestmark = pytest.mark.slow

CONFIG = {**STAR_CONFIG, "runs": {"bm25": STAR_CONFIG["runs"]["bm25"], "crossencoder": CROSS_ENCODER_RUN}}


@pytest.fixture(scope="module")
def built(builds):
    """The cross-encoder trained and evaluated in a copy of the tiny chain: nothing of the chain is made again (the
    chain ranked BM25's training split only, so its test split is searched now)."""
    def make(workdir):
        copy_build(builds.star_chain(), workdir)
        write_config(workdir, CONFIG)
        result, jobs = snakemake_jobs(workdir, "results/crossencoder/metrics.json", timeout=900)
        assert result.returncode == 0, output_of(result)[-4000:]
        ran = sorted((job["rule"], job["wildcards"].get("run"), job["wildcards"].get("split")) for job in jobs)
        assert ran == [("bm25_search", "bm25", "test"), ("evaluate", "crossencoder", None),
                       ("rerank", "crossencoder", "test"), ("run_config", "crossencoder", None),
                       ("train_dense", "crossencoder", None)], ran

    return builds.build("workflow_crossencoder", make)[0]


def test_the_cross_encoder_re_ranks_bm25s_top_k(built):
    results = built / "results"
    run = pq.read_table(results / "crossencoder" / "rankings" / "test.parquet").to_pandas()
    bm25 = pq.read_table(results / "bm25" / "rankings" / "test.parquet").to_pandas()
    reordered = 0
    for qid, ranked in run.groupby("qid"):
        ranked = ranked.sort_values("rank")
        top = bm25[(bm25.qid == qid) & (bm25["rank"] <= DEPTH)].sort_values("rank")
        assert set(ranked.docid) == set(top.docid)  # exactly BM25's top 20 ...
        assert ranked["rank"].tolist() == list(range(1, len(top) + 1))
        assert ranked.score.is_monotonic_decreasing
        reordered += ranked.docid.tolist() != top.docid.tolist()  # ... in the model's order
    assert reordered >= len(run.qid.unique()) // 2
    metrics = json.loads((results / "crossencoder" / "metrics.json").read_text())
    assert metrics["num_queries"] == 20 and {"RR@10", "nDCG@10"} <= set(metrics["measures"])
    assert metrics["pairwise_errors"]["total_is_lower_bound"]  # a top-20 ranking holds only some relevant documents


def test_the_model_folder_and_training_log(built):
    results = built / "results" / "crossencoder"
    assert json.loads((results / "model" / "crossencoder.json").read_text()) == {
        "model": "crossencoder", "query_max_length": 12, "doc_max_length": 32, "exact_match": True, "soft_match": 4}
    assert AutoModel.from_pretrained(results / "model").config.hidden_size == 32  # the encoder loads on its own
    from safetensors.torch import load_file

    marks = load_file(str(results / "model" / "head.safetensors"))["match.weight"]
    assert marks.shape[0] == 2 + 4 and marks.abs().sum() > 0  # none, exact, four soft bins; learnt
    log = pq.read_table(results / "train_log.parquet").to_pandas()
    assert log.step.tolist() == list(range(1, len(log) + 1)) and sorted(set(log.epoch)) == [0, 1]
    assert {"loss", "batch_accuracy", "pair_accuracy"} <= set(log.columns) and (log.loss > 0).all()


@pytest.fixture(scope="module")
def denoised(built, tmp_path_factory):
    """The hard negatives of STAR with the cross-encoder as its pool's scorer, in a copy of the build above."""
    workdir = tmp_path_factory.mktemp("denoised")
    copy_build(built, workdir)
    write_config(workdir, CROSS_ENCODER_CONFIG)
    result, jobs = snakemake_jobs(workdir, "results/star_ce/hardnegs_card.json", timeout=900)
    assert result.returncode == 0, output_of(result)[-4000:]
    return workdir / "results", jobs


def test_the_cross_encoder_scores_the_pool_once_and_the_policy_drops_what_it_deems_relevant(denoised):
    results, jobs = denoised
    pool_name = "train_top30_bm25-bm25_ce-crossencoder"
    ran = sorted((job["rule"], job["wildcards"].get("pool")) for job in jobs
                 if job["rule"] not in ("run_config", "mining_card"))
    assert ("score_pool", pool_name) in ran and ("candidate_pool", pool_name) in ran
    assert not {"train_dense", "rerank", "dense_search", "encode_corpus_shard"} & {rule for rule, _ in ran}
    pool = pq.read_table(results / "warmup" / "pools" / f"{pool_name}.parquet").to_pandas()
    scores = pq.read_table(results / "warmup" / "pools" / f"{pool_name}.ce_candidates.parquet").to_pandas()
    assert pool.ce_score.notna().all() and pool.ce_score.between(0, 1).all()
    joined = pool.merge(scores, on=["qid", "docid"], suffixes=("", "_file"))
    assert len(joined) == len(pool) and np.allclose(joined.ce_score, joined.score_file)
    assert pool.best_positive_ce_score.notna().all()  # every training query's positives were scored
    negatives = pq.read_table(results / "star_ce" / "hardnegs.parquet").to_pandas()
    chosen = negatives.merge(pool, on=["qid", "docid"])
    assert len(chosen) == len(negatives) and (chosen.ce_score <= chosen.best_positive_ce_score).all()
    selection = json.loads((results / "star_ce" / "hardnegs_selection.json").read_text())
    above = int((pool.ce_score > pool.best_positive_ce_score).sum())  # scored above the query's best positive
    assert selection["removed"]["ce_margin"] == above and 0 < above < len(pool)


def test_verify_scores_the_pool_again_and_re_mines_the_list(denoised, capsys):
    results, _ = denoised
    assert main(["verify", "star_ce", "--results", str(results), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["changed"] == [] and report["reproduced"] is True
    assert report["overlap"]["mean"] == 1.0 and report["overlap"]["below_one"] == 0
    assert any("recomputed with the model of crossencoder" in note for note in report["notes"])


# A pretrained cross-encoder used as it is (train.epochs: 0): a tiny sentence-transformers CrossEncoder folder built
# here, over a vocabulary of single characters (every word of the synthetic dataset is read), whose head is shifted
# so that about half of the pairs score above 1/2; its probabilities denoise a STAR run's pool (ce_threshold 0.5).
PRETRAINED_POOL = "train_top30_bm25-bm25_ce-reranker"


@pytest.fixture(scope="module")
def pretrained(builds, tmp_path_factory):
    """A copy of the tiny chain with the pretrained cross-encoder ``reranker`` scoring the pool of ``star_pt``,
    built up to that run's mining card and resolved config (no dense model trains); the folder and the jobs that
    ran."""
    import torch

    from hardneg.io import artifacts
    from hardneg.methods.crossencoder.pretrained import PretrainedCrossEncoder
    from hardneg.methods.crossencoder.scoring import text_pair_logits
    from tests.support.crossencoders import PIECES, tiny_cross_encoder

    workdir = tmp_path_factory.mktemp("pretrained")
    copy_build(builds.star_chain(), workdir)
    folders = tiny_cross_encoder(workdir / "models" / "tiny", PIECES, max_length=128)
    data = workdir / "results" / "datasets" / "tiny"
    corpus = artifacts.read_table(artifacts.CORPUS, data / "corpus.parquet").slice(0, 40)
    queries = artifacts.read_table(artifacts.QUERIES, data / "queries" / "train.parquet").slice(0, 40)
    model = PretrainedCrossEncoder.load(folders["hf"])
    logits = text_pair_logits(model, queries["text"].to_pylist(),
                              list(zip(corpus["title"].to_pylist(), corpus["text"].to_pylist())))
    with torch.no_grad():  # the median pair at 1/2: the threshold drops some candidates and keeps others
        model.model.classifier.bias -= float(np.median(logits))
    model.save(workdir / "models" / "reranker")  # a CrossEncoder folder, as sentence-transformers saves one
    (workdir / "models" / "reranker" / "crossencoder.json").unlink()  # ... without hardneg's own file
    star = STAR_CONFIG["runs"]["star"]
    config = {**STAR_CONFIG, "runs": {
        **STAR_CONFIG["runs"],
        "reranker": {"method": "crossencoder", "inputs": {"candidates": "bm25"},
                     "params": {"model": {"name": str(workdir / "models" / "reranker")}, "train": {"epochs": 0}}},
        "star_pt": {**star, "inputs": {**star["inputs"], "cross_encoder": "reranker"},
                    "params": {**star["params"], "mining": {"depth": 30, "ce_threshold": 0.5, "keep": 10}}}}}
    write_config(workdir, config)
    result, jobs = snakemake_jobs(workdir, "results/star_pt/hardnegs_card.json", "results/star_pt/config.yaml",
                                  timeout=900)
    assert result.returncode == 0, output_of(result)[-4000:]
    return workdir, jobs


def test_a_pretrained_cross_encoder_scores_a_pool_as_it_is(pretrained, tmp_path, capsys):
    from sentence_transformers import CrossEncoder

    workdir, jobs = pretrained
    results = workdir / "results"
    ran = {(job["rule"], job["wildcards"].get("run")) for job in jobs}
    assert {("train_dense", "reranker"), ("score_pool", "warmup"), ("select_hard_negatives", "star_pt")} <= ran
    assert not {rule for rule, _ in ran} & {"dense_search", "encode_corpus_shard", "rerank"}
    assert ("train_dense", "star_pt") not in ran
    # the run's model is the folder's, untrained, and sentence-transformers loads it as a CrossEncoder
    assert json.loads((results / "reranker" / "model" / "crossencoder.json").read_text())["head"] == "pretrained"
    assert pq.read_table(results / "reranker" / "train_log.parquet").num_rows == 0
    source = CrossEncoder(str(workdir / "models" / "reranker"))
    saved = CrossEncoder(str(results / "reranker" / "model"))
    # the pool's probabilities are predict's of the query and the document as "title [SEP] text"
    pool = pq.read_table(results / "warmup" / "pools" / f"{PRETRAINED_POOL}.parquet").to_pandas()
    corpus = pq.read_table(results / "datasets" / "tiny" / "corpus.parquet").to_pandas().set_index("docid")
    queries = pq.read_table(results / "datasets" / "tiny" / "queries" / "train.parquet").to_pandas().set_index("qid")
    sample = pool.iloc[::7]
    pairs = [(queries.text[q], f"{corpus.title[d]} [SEP] {corpus.text[d]}" if corpus.title[d] else corpus.text[d])
             for q, d in zip(sample.qid, sample.docid)]
    assert np.abs(source.predict(pairs) - sample.ce_score.to_numpy()).max() < 1e-5
    assert np.abs(saved.predict(pairs) - sample.ce_score.to_numpy()).max() < 1e-5
    # the threshold drops what it deems relevant
    negatives = pq.read_table(results / "star_pt" / "hardnegs.parquet").to_pandas().merge(pool, on=["qid", "docid"])
    selection = json.loads((results / "star_pt" / "hardnegs_selection.json").read_text())
    assert len(negatives) and (negatives.ce_score < 0.5).all()
    assert 0 < selection["removed"]["ce_threshold"] < len(pool)
    # the exported teacher scores are those probabilities, of the exported texts
    out = tmp_path / "st"
    assert main(["export", "hardnegs", "star_pt", "--results", str(results), "--format", "sentence-transformers",
                 "--output", str(out), "--scores", "cross-encoder"]) == 0
    from datasets import load_from_disk

    rows = load_from_disk(str(out)).to_list()
    scores = np.array([row["scores"] for row in rows])
    assert np.abs(source.predict([(r["query"], r["positive"]) for r in rows]) - scores[:, 0]).max() < 1e-5
    assert np.abs(source.predict([(r["query"], r["negative"]) for r in rows]) - scores[:, 1]).max() < 1e-5
    # hardneg verify scores the pool again from the raw texts its card records, and mines the same list
    capsys.readouterr()
    assert main(["verify", "star_pt", "--results", str(results), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["reproduced"] is True and report["overlap"]["mean"] == 1.0
    assert any("recomputed with the model of reranker" in note for note in report["notes"])
def test_a_star_run_distils_from_the_scores_of_its_pool(denoised, tmp_path):
    """A STAR run on star_ce's pool learning from the cross-encoder's scores alone (distill.weight 1): the pool and
    its scores are read as they are, only the run's selection and training run, and its loss is the distillation's."""
    results, _ = denoised
    workdir = copy_build(results.parent, tmp_path / "distilled")
    star_kd = {**CROSS_ENCODER_CONFIG["runs"]["star_ce"],
               "params": {**STAR_CONFIG["runs"]["star"]["params"], "distill": {"loss": "margin_mse", "weight": 1.0}}}
    write_config(workdir, {**CROSS_ENCODER_CONFIG, "runs": {**CROSS_ENCODER_CONFIG["runs"], "star_kd": star_kd}})
    result, jobs = snakemake_jobs(workdir, "results/star_kd/train_log.parquet", timeout=900)
    assert result.returncode == 0, output_of(result)[-4000:]
    assert sorted(job["rule"] for job in jobs) == ["select_hard_negatives", "train_dense"]
    log = pq.read_table(workdir / "results" / "star_kd" / "train_log.parquet").to_pandas()
    assert (log.distill_loss > 0).all() and np.allclose(log.loss, log.distill_loss)
