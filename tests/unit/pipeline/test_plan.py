"""The run plan: every run's inputs, indexes, reports and targets, from the config alone."""

import copy

import pytest
import yaml

from hardneg.io.layout import Layout
from hardneg.pipeline.config import validate_config
from hardneg.pipeline.compare_plan import ComparePlan
from hardneg.pipeline.episode_plan import EpisodePlan
from hardneg.pipeline.fusion_plan import FusionPlan
from hardneg.pipeline.mining_plan import MiningPlan
from hardneg.pipeline.plan import Plan
from hardneg.pipeline.report_plan import ReportPlan
from tests.support import REPO


@pytest.fixture(scope="module")
def raw():
    return yaml.safe_load((REPO / "config" / "config.yaml").read_text())


@pytest.fixture(scope="module")
def plan(raw):
    return Plan(validate_config(copy.deepcopy(raw)))


def test_the_plan_is_its_parts_by_name_not_a_stack_of_mixins(plan):
    assert Plan.__bases__ == (object,)
    parts = {"episodes": EpisodePlan, "fusion": FusionPlan, "mining": MiningPlan, "compare": ComparePlan,
             "report": ReportPlan}
    for name, part in parts.items():
        assert type(getattr(plan, name)) is part and part.__bases__ == (object,)
        assert getattr(plan, name).plan is plan  # each part reads the runs through the one plan
    # a part's input function is reached through its part only: the rules name the part
    assert not hasattr(plan, "pool_inputs") and plan.mining.pool_inputs
    assert plan.report.paper_targets()[:len(plan.report.targets())] == plan.report.targets()


ABS_RUNS = [f"{prefix}abs_{order}" for prefix in ("", "condenser_")
            for order in ("sequential", "random", "bm25", "encode", "beam")]


def test_runs_by_kind_and_role(plan):
    assert plan.lexical_runs == ["bm25", "hidden_bm25"]
    count = plan.params("ance")["ance"]["episodes"]
    episodes = [f"ance/episodes/{e}" for e in range(count)]  # each episode of ANCE is a run of its own
    fn_runs = [f"hidden_warmup_fn_{policy}" for policy in ("top8", "skip5", "margin05", "perc95")]  # generated
    assert plan.encoded_runs == ["warmup", "randneg", "inbatch", "hidden_warmup", "star", "star_percpos",
                                 "star_margin_mse", "star_kl", "ance", *episodes, "tct", "tct_hn", "tct_tct_hn",
                                 "tct_hnp", "warmup_inbatch", "warmup_randneg", "warmup_bm25neg", "static_hn", "randneg_warmup", *ABS_RUNS[:5],
                                 "condenser", *ABS_RUNS[5:], *fn_runs]
    assert plan.rerank_runs == ["colbert_teacher", "colbert_teacher_hn", "crossencoder"]
    first_tct = plan.dense_runs.index("tct")  # the ColBERT teacher runs sit among the dense runs in config order
    assert plan.trained_runs == plan.dense_runs[:first_tct] + ["colbert_teacher", "tct", "tct_hn", "tct_tct_hn",
                                                               "colbert_teacher_hn", "tct_hnp", "crossencoder"] \
        + plan.dense_runs[first_tct + 4:]
    # a run mines when it names a miner, not because its method could (ANCE's episodes mine, not ANCE)
    assert plan.mining.mining_runs == ["star", "star_percpos", "star_margin_mse", "star_kl", *episodes, "tct_hn", "tct_tct_hn", "colbert_teacher_hn",
                                "tct_hnp", "static_hn", *fn_runs]
    assert plan.doc_run("adore_star") == "star" and plan.doc_run("star") == "star"
    assert plan.init_run("star") == "warmup" and plan.init_run("adore_star") == "star"
    assert plan.init_run("warmup") is None
    assert plan.model_root("adore_star") == "warmup"  # adore_star → star → warmup
    # the ABS runs: BM25 scores adaptive batches; the condenser_ runs continue the Condenser pre-trained model
    assert plan.train_inputs("abs_encode")["bm25"] == "results/bm25/rankings/train.parquet"
    assert plan.init_run("abs_random") is None
    assert all(plan.init_run(run) == "condenser" for run in ABS_RUNS[5:])
    assert plan.model_params("condenser_abs_beam")["builtin"]["num_hidden_layers"] == 2  # the condenser's model


def test_training_inputs_follow_the_roles(plan):
    cache = plan.cache_dir("warmup")
    assert cache.startswith("results/datasets/synthetic/tokenized/wordpiece-32000-")
    assert plan.train_inputs("warmup") == {"cache": cache, "qrels": "results/datasets/synthetic/qrels",
                                           "negatives": "results/bm25/rankings/train.parquet"}
    assert plan.train_inputs("star") == {"cache": cache, "qrels": "results/datasets/synthetic/qrels",
                                         "init": "results/warmup/model",
                                         "hard_negatives": "results/star/hardnegs.parquet"}
    assert plan.train_inputs("adore_star") == {"cache": cache, "qrels": "results/datasets/synthetic/qrels",
                                               "init": "results/star/model",
                                               "doc_embeddings": "results/star/embeddings/corpus.npy",
                                               "train_index": "results/star/index/Flat.faiss"}
    assert plan.train_inputs("adore_pq_PQ16")["train_index"] == "results/star/index/PQ16.faiss"
    assert set(plan.train_inputs("randneg")) == {"cache", "qrels"}


def test_tct_runs_read_their_teacher_and_the_teacher_re_ranks(plan):
    cache, qrels = plan.cache_dir("warmup"), "results/datasets/synthetic/qrels"
    assert plan.cache_dir("colbert_teacher") == cache  # markers are inserted at encoding: one shared cache
    assert plan.train_inputs("colbert_teacher") == {"cache": cache, "qrels": qrels,
                                                    "negatives": "results/bm25/rankings/train.parquet"}
    assert plan.train_inputs("tct") == {"cache": cache, "qrels": qrels, "init": "results/colbert_teacher/model",
                                        "teacher": "results/colbert_teacher/model",
                                        "negatives": "results/bm25/rankings/train.parquet"}
    assert plan.train_inputs("tct_hnp") == {"cache": cache, "qrels": qrels, "init": "results/tct/model",
                                            "teacher": "results/colbert_teacher_hn/model",
                                            "hard_negatives": "results/tct_hnp/hardnegs.parquet"}
    assert plan.mining.miner("tct_hnp") == "tct" and plan.init_run("colbert_teacher_hn") == "colbert_teacher"
    assert plan.rerank_inputs("colbert_teacher", "test") == {
        "model": "results/colbert_teacher/model", "cache": cache, "candidates": "results/bm25/rankings/test.parquet"}
    assert "query_npy" not in plan.evaluate_inputs("colbert_teacher")  # a ranking only, as BM25's
    # a pair scorer also reads the raw texts (a pretrained cross-encoder forms its pairs from them)
    assert plan.rerank_inputs("crossencoder", "test") == {
        "model": "results/crossencoder/model", "cache": plan.cache_dir("crossencoder"),
        "candidates": "results/bm25/rankings/test.parquet", "queries": "results/datasets/synthetic/queries",
        "corpus": "results/datasets/synthetic/corpus.parquet"}
    # the student inherits the teacher's model section: ColBERT's input format, mean pooling, raw inner product
    model = plan.params("tct_hnp")["model"]
    assert model["markers"] and model["pooling"] == "mean" and not model["normalize"]


def test_training_depends_only_on_training_sections(plan):
    star, adore = plan.training_slice("star"), plan.training_slice("adore_star")
    assert set(star["params"]) == {"model", "train", "negatives", "distill"}  # distill: STAR's own section
    assert set(adore["params"]) == {"model", "train", "negatives", "adore", "index"}
    assert star["inputs"] == {"init": "warmup", "negatives": "warmup", "bm25": "bm25"} and star["seed"] == 42


def test_indexes_over_a_runs_documents(plan):
    assert plan.index_factories("star") == {"Flat": "Flat", "PQ32": "PQ32", "PQ16": "PQ16"}
    assert plan.index_factories("warmup") == {"Flat": "Flat"}
    assert plan.search_index("adore_pq_PQ16") == "results/star/index/PQ16.faiss"
    assert plan.search_inputs("adore_star", "PQ32")["index"] == "results/star/index/PQ32.faiss"


def test_mining_reads_the_miners_training_ranking_and_embeddings(plan):
    assert plan.mining.positive_scores_inputs("warmup", "train")["query_emb"] == "results/warmup/embeddings/queries_train.npy"
    assert plan.mining.mining_inputs("star")["ranking"] == "results/warmup/rankings/train.parquet"
    assert plan.mining.audit_inputs("star")["reference"] == ["results/bm25/rankings/train.parquet"]


def test_runs_asking_for_the_same_pool_share_it_under_the_miner(plan):
    """star and ANCE's first two episodes (lag 1) are all mined by warmup at depth 200 with BM25's ranks: one pool,
    built once; each selects its own list from it."""
    path = "results/warmup/pools/train_top200_bm25-bm25.parquet"
    sharing = [run for run in plan.mining.mining_runs if plan.mining.pool_path(run) == path]
    assert {"star", "ance/episodes/0", "ance/episodes/1"} <= set(sharing)
    assert plan.mining.selection_inputs("star") == {"pool": path}
    inputs = plan.mining.pool_inputs("warmup", "train_top200_bm25-bm25")
    assert inputs == {"ranking": "results/warmup/rankings/train.parquet", "qrels": "results/datasets/synthetic/qrels",
                      "positives": "results/warmup/pools/positives_train.parquet",
                      "bm25_ranking": "results/bm25/rankings/train.parquet",
                      "duplicates": "results/datasets/synthetic/duplicates.parquet"}



def test_evaluation_ranks_only_the_reported_splits(raw):
    plan = Plan(validate_config(copy.deepcopy(raw)))
    star = plan.evaluate_inputs("star")
    assert star["rankings"] == ["results/star/rankings/test.parquet"]
    assert star["reports"] == ["results/star/hardnegs_audit.md", "results/star/hardnegs_viewer.html",
                               "results/star/hardnegs_card.json"]
    assert star["query_npy"] == "results/star/embeddings/queries_test.npy"
    assert plan.evaluate_inputs("adore_star")["doc_npy"] == "results/star/embeddings/corpus.npy"
    assert set(plan.evaluate_inputs("bm25")) == {"rankings", "qrels", "config", "reports", "lineage"}
    extra = copy.deepcopy(raw)
    extra["evaluation"]["extra_splits"] = ["dev"]
    extra["runs"]["hybrid_adore_star"]["params"]["tune"]["split"] = "train"  # dev, now evaluated, cannot tune α
    assert Plan(validate_config(extra)).evaluate_inputs("bm25")["rankings"] == \
        ["results/bm25/rankings/test.parquet", "results/bm25/rankings/dev.parquet"]
    # with another index over its documents (the PQ experiment): that ranking of the evaluation split, only
    assert Plan(validate_config(extra)).evaluate_inputs("adore_star", "PQ16") == {
        "rankings": "results/adore_star/by_index/PQ16/rankings/test.parquet",
        "qrels": "results/datasets/synthetic/qrels", "config": "results/adore_star/config.yaml"}


def test_a_runs_metrics_come_with_the_configs_and_audits_of_the_runs_behind_it(plan):
    """`snakemake results/adore_star/metrics.json` also leaves what `hardneg audit star` and a look at each
    upstream run's resolved config need."""
    assert plan.ancestors("adore_star") == ["star", "warmup", "bm25"]
    assert plan.evaluate_inputs("adore_star")["lineage"] == [
        "results/star/config.yaml", "results/star/hardnegs_audit.md", "results/star/hardnegs_viewer.html",
        "results/star/hardnegs_card.json", "results/warmup/config.yaml", "results/bm25/config.yaml"]
    assert plan.evaluate_inputs("bm25")["lineage"] == []
    assert plan.ancestors("hybrid_adore_star") == ["bm25", "adore_star", "star", "warmup"]  # nearest first, once each
    assert "results/star/hardnegs_audit.md" in plan.lineage("hybrid_adore_star")


def test_targets_come_from_the_config(raw, plan):
    assert plan.report.targets() == [f"results/{run}/metrics.json"
                              for run in ("bm25", "warmup", "randneg", "inbatch", "star", "adore_star", "ance")]
    config = copy.deepcopy(raw)
    config["targets"] = ["star", "results/pq_matrix/matrix.md"]
    assert Plan(validate_config(config)).report.targets() == ["results/star/metrics.json", "results/pq_matrix/matrix.md"]
    del config["targets"]
    every = Plan(validate_config(config))
    assert every.report.targets() == [f"results/{run}/metrics.json" for run in every.user_runs]  # the episodes: no


def test_the_report_holds_its_runs_and_those_behind_them_and_says_what_it_leaves_out(raw, plan):
    assert plan.report.report_runs() == ["bm25", "warmup", "star", "adore_star"]  # report.runs: [adore_star]
    assert plan.report.summary_runs() == plan.report.report_runs()
    targets, left_out = plan.report.report_contents()
    assert [f"results/{run}/metrics.json" for run in plan.report.report_runs()] == targets[:4]
    assert "results/run_graph.html" in targets and "results/summary.html" in targets
    assert "results/figures/pairwise_errors.png" in targets  # bm25, warmup, star, adore_star
    assert "results/figures/training_curves.png" not in targets
    assert "figure training_curves: adore_warmup_curve, randneg_warmup, static_hn not among the report's runs" \
        in left_out
    assert "summary group ‡ dense baselines: randneg, inbatch not in the summary, kept without them" in left_out
    groups = plan.report.summary_settings()["groups"]  # as written: a run outside the summary marks nothing
    assert [(group["marker"], group["runs"]) for group in groups] == [("†", ["bm25"]),
                                                                        ("‡", ["warmup", "randneg", "inbatch"]),
                                                                        ("§", ["star"])]
    assert plan.report.report_message().startswith("the report of runs bm25, warmup, star, adore_star; left out: ")
    graph = plan.report.run_graph_runs()
    assert list(graph) == plan.report.report_runs()
    assert graph["adore_star"] == {"method": "adore", "inputs": {"docs": ["star"]}}
    assert graph["star"]["inputs"] == {"init": ["warmup"], "negatives": ["warmup"], "bm25": ["bm25"]}


def test_without_report_runs_the_report_holds_the_targets_and_unknown_runs_are_left_out(raw):
    config = copy.deepcopy(raw)
    config["report"] = {"runs": None}
    config["targets"] = ["adore_warmup"]
    assert Plan(validate_config(config)).report.report_runs() == ["bm25", "warmup", "adore_warmup"]
    config["report"] = {"runs": ["adore_star", "nosuch"]}  # a name trimmed from the config: left out, said so
    trimmed = Plan(validate_config(config))
    assert trimmed.report.report_runs() == ["bm25", "warmup", "star", "adore_star"]
    assert trimmed.report.report_contents()[1][0] == "report.runs: nosuch not a run of the config"


def test_the_layout_has_one_root(plan):
    layout = Layout("out")
    assert layout.metrics("star") == "out/star/metrics.json"
    assert layout.metrics("star", "PQ16") == "out/star/by_index/PQ16/metrics.json"
    assert layout.ranking("{run}", "{split}") == "out/{run}/rankings/{split}.parquet"
    assert Plan(plan.config, root="out").train_inputs("star")["init"] == "out/warmup/model"


def test_caches_cover_every_dense_run(plan):
    caches = plan.caches()
    assert [dataset for dataset, _ in caches] == ["synthetic", "synthetic_hidden"]  # one cache per dataset
    for (dataset, key), spec in caches.items():
        assert spec["splits"] == ["train", "dev", "test"]
        assert plan.builtin_tokenizers(dataset, key) == [f"results/datasets/{dataset}/tokenizers/wordpiece-32000"]


def test_fusion_runs_read_their_inputs_rankings_of_each_split(raw, plan):
    assert plan.fusion.fusion_runs == ["hybrid_adore_star", "rrf_adore_star"]
    assert plan.fusion.tuned_runs == ["hybrid_adore_star"] and plan.fusion.tuning_split("hybrid_adore_star") == "dev"
    assert plan.fusion.fused_runs("hybrid_adore_star") == ["bm25", "adore_star"]
    assert plan.fusion.fusion_inputs("hybrid_adore_star", "test") == {
        "rankings": ["results/bm25/rankings/test.parquet", "results/adore_star/rankings/test.parquet"],
        "tuning": "results/hybrid_adore_star/fusion_tuning.json"}
    assert plan.fusion.fusion_inputs("rrf_adore_star", "dev") == {
        "rankings": ["results/bm25/rankings/dev.parquet", "results/adore_star/rankings/dev.parquet"]}
    # the weight is tuned on the dev split's rankings (held out from training), never on the evaluated split
    assert plan.fusion.tuning_inputs("hybrid_adore_star") == {
        "rankings": ["results/bm25/rankings/dev.parquet", "results/adore_star/rankings/dev.parquet"],
        "qrels": "results/datasets/synthetic/qrels"}
    assert set(plan.evaluate_inputs("hybrid_adore_star")) == {"rankings", "qrels", "config", "reports", "lineage"}  # no embeddings
    assert plan.upstream("rrf_adore_star") == ["bm25", "adore_star"]
    assert plan.fusion.trained_splits("rrf_adore_star") == ["train"] and plan.fusion.trained_splits("bm25") == []
    fixed = copy.deepcopy(raw)
    fixed["runs"]["hybrid_adore_star"]["params"] = {"alpha": 0.02}
    fixed = Plan(validate_config(fixed))
    assert fixed.fusion.tuned_runs == [] and "tuning" not in fixed.fusion.fusion_inputs("hybrid_adore_star", "test")
