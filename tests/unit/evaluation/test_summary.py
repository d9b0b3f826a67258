"""The summary and its significance markers: a constructed case with a known answer (raw and Holm-corrected),
agreement with scipy.stats.ttest_rel run directly and with Holm's sequentially rejective procedure, fewer pairwise
errors being better, lower bounds, the legend and its table of p-values, the config's summary section, which runs
the plan summarises, and the training-time tables."""

import copy
import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from scipy.stats import ttest_rel

from hardneg.errors import ConfigError, DataError
from hardneg.evaluation.summary import write_summary
from hardneg.evaluation.timing import benchmark_seconds, write_training_time_table
from hardneg.io import artifacts
from hardneg.experiments import pq_matrix
from hardneg.pipeline.config import load_config_file, validate_config
from hardneg.pipeline.plan import Plan
from hardneg.pipeline.report_plan import ReportPlan
from tests.support import REPO

MEASURES = ["RR@10", "R@100"]
ALL = MEASURES + ["PairwiseErrors@200", "PairwiseErrors"]


def settings(groups, p_value=0.05, measures=MEASURES, correction="holm"):
    return {"runs": None, "measures": measures, "p_value": p_value, "correction": correction,
            "groups": [{"marker": m, "label": label, "runs": runs} for m, label, runs in groups]}


def write_ranking(root, run, values: dict, lower_bound=False, order=None):
    """metrics.json and per_query.parquet of ``run``: ``values`` maps each measure of ALL to per-query values
    (queries q0, q1, ...); ``order`` permutes the rows of the per-query file."""
    folder = root / run
    folder.mkdir(parents=True)
    n = len(next(iter(values.values())))
    rows = [(f"q{i}", m, float(values[m][i])) for m in ALL for i in range(n)]
    if order is not None:
        rows = [rows[i] for i in order]
    table = pa.table({"qid": [r[0] for r in rows], "measure": [r[1] for r in rows], "value": [r[2] for r in rows]})
    artifacts.write_table(table, artifacts.PER_QUERY_METRICS, folder / "per_query.parquet")
    means = {m: float(np.mean(values[m])) for m in ALL}
    record = {"run": run, "dataset": "tiny", "split": "test", "num_queries": n,
              "measures": {m: means[m] for m in MEASURES},
              "pairwise_errors": {"top200_pairwise_errors": means["PairwiseErrors@200"],
                                  "total_pairwise_errors": means["PairwiseErrors"],
                                  "total_is_lower_bound": lower_bound}}
    (folder / "metrics.json").write_text(json.dumps(record))
    return str(folder / "metrics.json"), str(folder / "per_query.parquet")


def summarise(root, runs, config, methods=None):
    paths = [(root / run / "metrics.json", root / run / "per_query.parquet") for run in runs]
    write_summary(runs, methods or {run: "m" for run in runs}, [str(m) for m, _ in paths],
                  [str(p) for _, p in paths], config, root / "summary.md", root / "summary.parquet",
                  root / "summary_tests.parquet")
    table = pq.read_table(root / "summary.parquet").to_pandas().set_index("run")
    tests = pq.read_table(root / "summary_tests.parquet").to_pandas()
    return table, tests, (root / "summary.md").read_text()


def same(values):
    """The same per-query values for every measure; pairwise errors of 100 times them."""
    return {**{m: values for m in MEASURES}, "PairwiseErrors@200": values * 100, "PairwiseErrors": values * 100}


BASE = np.array([0.1, 0.2, 0.3, 0.4, 0.5])
STEP = np.array([0.01, 0.02, 0.03, 0.04, 0.05])  # differences 1..5 (scaled): t = 3 / (sqrt(2.5) / sqrt(5))
NOISE = np.array([0.1, -0.1, 0.1, -0.1, 0.0])  # mean difference 0


@pytest.fixture
def known(tmp_path):
    write_ranking(tmp_path, "base", same(BASE))
    write_ranking(tmp_path, "better", {**same(BASE + STEP), "PairwiseErrors@200": (BASE - STEP) * 100})
    write_ranking(tmp_path, "noisy", same(BASE + NOISE))
    return tmp_path


def test_known_answer(known):
    """better - base = 0.01 * (1, 2, 3, 4, 5): t = 3 / sqrt(2.5 / 5) = 4.2426, two-sided p (4 degrees of freedom)
    = 0.01324; better - noisy changes sign across queries, so ‡ (base and noisy) is not earned. Uncorrected (the
    paper's markers)."""
    table, tests, markdown = summarise(known, ["base", "better", "noisy"],
                                       settings([("†", "base", ["base"]), ("‡", "both", ["base", "noisy"])],
                                                correction="none"))
    row = tests[(tests.run == "better") & (tests.baseline == "base") & (tests.measure == "RR@10")].iloc[0]
    assert row.t == pytest.approx(3 / np.sqrt(0.5), rel=1e-9) and row.p == pytest.approx(0.013236, abs=1e-6)
    assert row.mean_difference == pytest.approx(0.03) and row.num_queries == 5
    assert table.loc["better", "RR@10 markers"] == "†" and table.loc["better", "R@100 markers"] == "†"
    # Pairwise errors: fewer is better. The top-200 count falls on every query (marked), the total rises on every
    # query (as significant a change, but worse: not marked).
    assert table.loc["better", "PairwiseErrors@200 markers"] == "†"
    assert table.loc["better", "PairwiseErrors markers"] == ""
    worse = tests[(tests.run == "better") & (tests.baseline == "base") & (tests.measure == "PairwiseErrors")].iloc[0]
    assert worse.p < 0.05 and not worse.better and not worse.significant
    assert (table.loc["base", [f"{m} markers" for m in ALL]] == "").all()  # no group beside itself to beat
    assert (table.loc["noisy", [f"{m} markers" for m in ALL]] == "").all()
    assert "| better | m | 0.330† | 0.330† | 27.0† | 33.0 |" in markdown
    assert "- ‡ both (base, noisy)" in markdown and "below 0.05" in markdown
    assert "below 0.05, uncorrected, and" in markdown and (tests.p_corrected == tests.p).all()
    # The same case under 0.01: 0.0132 is not below it, so no marker at all.
    table, _, markdown = summarise(known, ["base", "better", "noisy"],
                                   settings([("†", "base", ["base"])], p_value=0.01, correction="none"))
    assert table.loc["better", "RR@10 markers"] == "" and "below 0.01" in markdown


def test_known_answer_holm(known):
    """The same case with Holm's correction (the default). Per measure, four (run, baseline) pairs are tested:
    better-base (p 0.01324), better-noisy, noisy-base and base-noisy (both p 1: mean difference 0); the smallest p
    is multiplied by 4, 0.05294, above 0.05: the † of the uncorrected test is not earned. With only base as a
    baseline, two pairs: 2 x 0.01324 = 0.02647, and † is earned."""
    table, tests, markdown = summarise(known, ["base", "better", "noisy"],
                                       settings([("†", "base", ["base"]), ("‡", "both", ["base", "noisy"])]))
    rr = tests[tests.measure == "RR@10"]
    assert len(rr[["run", "baseline"]].drop_duplicates()) == 4
    row = rr[(rr.run == "better") & (rr.baseline == "base")].iloc[0]
    assert row.p == pytest.approx(0.013236, abs=1e-6) and row.p_corrected == pytest.approx(4 * row.p, rel=1e-12)
    assert (rr[rr.run == "noisy"].p_corrected == 1.0).all()
    assert table.loc["better", "RR@10 markers"] == ""
    assert "corrected with Holm's step-down method over the 4 tests of each measure" in markdown
    # RR@10: the difference found, +0.03, and the smallest these 5 queries detect at p < 0.05 with 80% power:
    # (t(0.975, 4) + t(0.8, 4)) × sd/√5 = (2.7764 + 0.9410) × 0.03 / (3/√0.5) = 0.0263
    assert "| better | base | 0.053 (+0.030; ≥ 0.026) | 0.053 (" in markdown
    assert row.detectable == pytest.approx(3.7174097 * 0.03 * np.sqrt(0.5) / 3, rel=1e-6)
    assert "the smallest difference these 5 queries could detect (p < 0.05, 80% power" in markdown
    table, tests, markdown = summarise(known, ["base", "better", "noisy"], settings([("†", "base", ["base"])]))
    row = tests[(tests.run == "better") & (tests.measure == "RR@10")].iloc[0]
    assert row.p_corrected == pytest.approx(2 * 0.013236, abs=2e-6) and row.significant
    assert table.loc["better", "RR@10 markers"] == "†" and "| better | base | 0.026 (+0.030; ≥ 0.026) |" in markdown
    table, tests, _ = summarise(known, ["base", "better", "noisy"],
                                settings([("†", "base", ["base"])], correction="bonferroni"))
    assert (tests.p_corrected == np.minimum(1, 2 * tests.p)).all()


def holm_rejects(p_values: dict, alpha: float) -> set:
    """Holm's sequentially rejective procedure as Holm (1979) states it: order the m p-values increasingly;
    reject the i-th (from 1) while it is below alpha / (m - i + 1); stop at the first that is not."""
    rejected = set()
    ordered = sorted(p_values, key=p_values.get)
    for i, key in enumerate(ordered, start=1):
        if not p_values[key] < alpha / (len(ordered) - i + 1):
            break
        rejected.add(key)
    return rejected


def test_markers_agree_with_scipy_run_directly(tmp_path):
    rng = np.random.default_rng(7)
    n, runs = 40, ["r0", "r1", "r2", "r3", "r4"]
    shift = {"r0": 0.0, "r1": 0.01, "r2": 0.05, "r3": 0.12, "r4": -0.04}
    common = rng.random(n)
    values = {}
    for run in runs:
        values[run] = {m: np.clip(common + shift[run] + rng.normal(0, 0.08, n), 0, 1) for m in MEASURES}
        values[run]["PairwiseErrors@200"] = 100 * (1 - values[run]["RR@10"]) + rng.normal(0, 3, n)
        values[run]["PairwiseErrors"] = 400 * (1 - values[run]["R@100"]) + rng.normal(0, 9, n)
        write_ranking(tmp_path, run, values[run], order=rng.permutation(n * len(ALL)))  # pairing is by query id
    groups = [("†", "g1", ["r0"]), ("‡", "g2", ["r0", "r1"]), ("§", "g3", ["r2", "r4"])]
    table, tests, _ = summarise(tmp_path, runs, settings(groups))
    pairs = {(run, baseline) for run in runs for _, _, members in groups for baseline in members if baseline != run}
    rejected = {measure: holm_rejects({pair: ttest_rel(values[pair[0]][measure], values[pair[1]][measure]).pvalue
                                       for pair in pairs}, 0.05) for measure in ALL}
    markers_seen = set()
    for run in runs:
        for measure in ALL:
            expected = ""
            for marker, _, members in groups:
                verdicts = []
                for baseline in (b for b in members if b != run):
                    result = ttest_rel(values[run][measure], values[baseline][measure])
                    diff = np.mean(values[run][measure]) - np.mean(values[baseline][measure])
                    better = diff < 0 if measure.startswith("PairwiseErrors") else diff > 0
                    verdicts.append(better and (run, baseline) in rejected[measure])
                    row = tests[(tests.run == run) & (tests.baseline == baseline) & (tests.measure == measure)
                                & (tests.marker == marker)].iloc[0]
                    assert row.t == pytest.approx(result.statistic, rel=1e-9)
                    assert row.p == pytest.approx(result.pvalue, rel=1e-9, abs=1e-300)
                if verdicts and all(verdicts):
                    expected += marker
            assert table.loc[run, f"{measure} markers"] == expected, (run, measure)
            markers_seen |= set(expected)
    assert markers_seen == {"†", "‡", "§"}  # the case exercises every group, marked and unmarked


def test_a_lower_bound_is_never_marked_and_is_shown(tmp_path):
    write_ranking(tmp_path, "bm25", same(BASE))
    write_ranking(tmp_path, "cut", {**same(BASE - STEP), **{m: BASE + STEP for m in MEASURES}}, lower_bound=True)
    table, tests, markdown = summarise(tmp_path, ["bm25", "cut"], settings([("†", "BM25", ["bm25"])]))
    assert table.loc["cut", "PairwiseErrors@200 markers"] == "†"
    assert table.loc["cut", "PairwiseErrors markers"] == "" and bool(table.loc["cut", "total_is_lower_bound"])
    row = tests[(tests.run == "cut") & (tests.measure == "PairwiseErrors")].iloc[0]
    assert row.better and row.p < 0.05 and not row.significant
    assert "| ≥ 27.0 |" in markdown


def test_a_group_without_runs_in_the_summary_marks_nothing(known):
    table, tests, markdown = summarise(known, ["better", "noisy"],
                                       settings([("†", "BM25", ["base"]), ("‡", "noisy", ["noisy"])]))
    assert "- † BM25 (base): no run of this group is in the summary; it marks nothing" in markdown
    assert set(tests.marker) == {"‡"}
    assert not any("†" in table.loc[run, f"{m} markers"] for run in table.index for m in ALL)
    _, _, markdown = summarise(known, ["better", "noisy"], settings([("‡", "", ["noisy", "base"])]))
    assert "- ‡ noisy; base not in the summary" in markdown
    _, tests, markdown = summarise(known, ["better"], settings([]))
    assert tests.empty and "no significance markers" in markdown


def test_runs_on_other_queries_cannot_be_paired(tmp_path):
    write_ranking(tmp_path, "a", same(BASE))
    write_ranking(tmp_path, "b", same(np.array([0.1, 0.2, 0.3, 0.4])))
    with pytest.raises(DataError, match="other queries than run 'a'"):
        summarise(tmp_path, ["a", "b"], settings([("†", "a", ["a"])]))


# ------------------------------------------------------------------------------------------------ config
@pytest.fixture(scope="module")
def raw():
    with open(REPO / "config" / "config.yaml", encoding="utf-8") as handle:
        import yaml

        return yaml.safe_load(handle)


@pytest.mark.parametrize("change, key", [
    ({"runs": ["bm25", "nope"]}, "summary.runs.1"),
    ({"runs": ["bm25", "bm25"]}, "summary.runs.1"),
    ({"measures": ["RR@10", "P@5"]}, "summary.measures.1"),
    ({"p_value": 1.5}, "summary.p_value"),
    ({"p_value": 0}, "summary.p_value"),
    ({"correction": "sidak"}, "summary.correction"),
    ({"colour": "red"}, "summary.colour"),
    ({"groups": [{"marker": "†", "runs": ["bm25"]}, {"marker": "†", "runs": ["star"]}]}, "summary.groups.1.marker"),
    ({"groups": [{"marker": "a|b", "runs": ["bm25"]}]}, "summary.groups.0.marker"),
    ({"groups": [{"label": "no marker", "runs": ["bm25"]}]}, "summary.groups.0.marker"),
])
def test_config_errors_name_the_key(raw, change, key):
    config = copy.deepcopy(raw)
    config["summary"] = {**config["summary"], **change}
    with pytest.raises(ConfigError) as error:
        validate_config(config)
    assert error.value.key == key


def test_reserved_run_name(raw):
    config = copy.deepcopy(raw)
    config["runs"]["tables"] = config["runs"]["bm25"]
    with pytest.raises(ConfigError) as error:
        validate_config(config)
    assert error.value.key == "runs.tables"


def test_defaults_come_from_the_schema(raw):
    config = copy.deepcopy(raw)
    del config["summary"]
    config["evaluation"]["measures"] = ["RR@10", "R@100", "nDCG@10"]  # a config that evaluates fewer measures
    config = validate_config(config)
    assert config["summary"] == {"runs": None, "measures": None, "p_value": 0.05, "correction": "holm",
                                 "groups": []}
    plan = Plan(config)
    assert plan.report.summary_measures() == ["RR@10", "R@100", "nDCG@10"]  # null: every evaluated measure
    assert plan.report.summary_settings()["measures"] == ["RR@10", "R@100", "nDCG@10"]
    assert Plan(validate_config(copy.deepcopy(raw))).report.summary_measures() == ["RR@10", "RR@100", "R@100", "R@1000",
                                                                           "nDCG@10"]


def test_the_plan_summarises_the_runs_the_config_names(raw, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the workflow's working directory, where results/ lies
    config = copy.deepcopy(raw)
    config["targets"] = ["bm25", "./results/star/metrics.json", "results/pq_matrix/matrix.md", "randneg"]
    config["report"] = {"runs": None}  # the report's runs: those of the targets and the runs behind them
    plan = Plan(validate_config(config))
    assert plan.report.summary_runs() == ["bm25", "warmup", "randneg", "star"]  # in config order; warmup: star's init
    (tmp_path / "results" / "inbatch").mkdir(parents=True)
    (tmp_path / "results" / "inbatch" / "metrics.json").write_text("{}")
    assert plan.report.summary_runs() == ["bm25", "warmup", "randneg", "star"]  # evaluated, but not named: out
    assert plan.report.summary_inputs()["per_query"][2] == "results/randneg/per_query.parquet"
    assert plan.report.training_time_runs() == ["warmup", "randneg", "star"]  # bm25 does not train
    assert plan.report.training_benchmarks(["star"]) == ["results/star/benchmarks/train.tsv"]
    config["summary"] = {"runs": ["adore_star", "bm25"]}
    assert Plan(validate_config(config)).report.summary_runs() == ["adore_star", "bm25"]
    every = copy.deepcopy(raw)
    del every["targets"]
    every["report"] = {"runs": None}
    assert Plan(validate_config(every)).report.summary_runs() == list(validate_config(every)["runs"])


def test_the_adore_index_table_reads_the_pq_runs(raw):
    plan = Plan(validate_config(copy.deepcopy(raw)))
    assert pq_matrix.index_runs(plan) == [("Flat", "adore_pq_Flat"), ("PQ32", "adore_pq_PQ32"),
                                          ("PQ16", "adore_pq_PQ16")]
    assert pq_matrix.index_table_inputs(plan)["metrics"] == [f"results/adore_pq_{s}/metrics.json"
                                                             for s in ("Flat", "PQ32", "PQ16")]
    config = copy.deepcopy(raw)
    del config["pq_matrix"]
    with pytest.raises(ConfigError) as error:
        pq_matrix.index_table_inputs(Plan(validate_config(config)))
    assert error.value.key == "pq_matrix"


def test_the_shipped_config_has_the_paper_groups():
    config = load_config_file(REPO / "config" / "config.yaml")
    assert [g["marker"] for g in config["summary"]["groups"]] == ["†", "‡", "§"]


# ------------------------------------------------------------------------------------------------ timing
BENCHMARK_HEADER = "s\th:m:s\tmax_rss\tmax_vms\tmax_uss\tmax_pss\tio_in\tio_out\tmean_load\tcpu_time\n"


def write_training(root, run, seconds, steps):
    folder = root / run
    (folder / "benchmarks").mkdir(parents=True)
    pq.write_table(pa.table({"step": list(range(1, steps + 1)), "loss": [1.0] * steps}), folder / "train_log.parquet")
    if seconds is not None:
        record = f"{seconds}\t0:00:00\t1\t1\t1\t1\t0\t0\t0\t0\n"
        (folder / "benchmarks" / "train.tsv").write_text(BENCHMARK_HEADER + record)
    return str(folder / "train_log.parquet"), str(folder / "benchmarks" / "train.tsv")


def test_training_time_table(tmp_path):
    runs = {"star": (100.0, 50), "ance": (1500.0, 300), "adore": (None, 20)}
    paths = {run: write_training(tmp_path, run, *spec) for run, spec in runs.items()}
    methods = {"star": "star", "ance": "ance", "adore": "adore"}
    reference = ReportPlan.speed_reference()  # declared by the method: ANCE, as in Table 4 of the STAR/ADORE paper
    assert reference == ("ance", "ANCE")
    table = write_training_time_table(["star", "adore"], methods, [paths["star"][0], paths["adore"][0]],
                                      [paths["star"][1], paths["adore"][1]], tmp_path / "t.md", tmp_path / "t.parquet",
                                      reference)
    assert table["seconds_per_step"].iloc[0] == pytest.approx(2.0) and table["speedup_vs_ance"].isna().all()
    markdown = (tmp_path / "t.md").read_text()
    assert "| star | star | 100.0 | 50 | 2.000 |" in markdown and "No run of method `ance`" in markdown
    assert "| adore | adore | — | 20 | — |" in markdown and "No benchmark record" in markdown
    write_training_time_table(["star", "ance"], methods, [paths["star"][0], paths["ance"][0]],
                              [paths["star"][1], paths["ance"][1]], tmp_path / "t.md", tmp_path / "t.parquet", reference)
    stored = pq.read_table(tmp_path / "t.parquet")
    assert stored.schema == artifacts.TRAINING_TIME.schema
    assert stored["speedup_vs_ance"].to_pylist() == [15.0, 1.0]
    assert "| star | star | 100.0 | 50 | 2.000 | 15.0× |" in (tmp_path / "t.md").read_text()


def test_a_bad_benchmark_record_names_its_line(tmp_path):
    path = tmp_path / "train.tsv"
    path.write_text(BENCHMARK_HEADER + "12.5\t0\t1\t1\t1\t1\t0\t0\t0\t0\n" + "NA?\t0\t1\t1\t1\t1\t0\t0\t0\t0\n")
    with pytest.raises(DataError) as error:
        benchmark_seconds(path)
    assert error.value.line == 3 and error.value.path == str(path)
    path.write_text(BENCHMARK_HEADER + "12.5\t0\t1\t1\t1\t1\t0\t0\t0\t0\n" + "13.5\t0\t1\t1\t1\t1\t0\t0\t0\t0\n")
    assert benchmark_seconds(path) == 13.0  # a repeated benchmark: the mean
    assert benchmark_seconds(tmp_path / "none.tsv") is None


def test_adore_index_table(tmp_path):
    logs, benches, metrics = [], [], []
    for index, (seconds, value) in {"Flat": (40.0, 0.35), "PQ16": (30.0, 0.27)}.items():
        log, bench = write_training(tmp_path, f"adore_pq_{index}", seconds, 10)
        path = tmp_path / f"adore_pq_{index}" / "metrics.json"
        path.write_text(json.dumps({"measures": {"RR@10": value, "R@100": 0.8}}))
        logs.append(log), benches.append(bench), metrics.append(str(path))
    table = pq_matrix.write_index_table(["Flat", "PQ16"], ["adore_pq_Flat", "adore_pq_PQ16"], metrics, logs, benches,
                                        ["RR@10"], "star", tmp_path / "a.md", tmp_path / "a.parquet")
    assert table["RR@10"].tolist() == [0.35, 0.27] and table["seconds"].tolist() == [40.0, 30.0]
    assert "| PQ16 | adore_pq_PQ16 | 0.270 | 30.0 | 10 | 3.000 |" in (tmp_path / "a.md").read_text()
    assert pq.read_table(tmp_path / "a.parquet").schema == artifacts.adore_indexes_kind(["RR@10"]).schema
