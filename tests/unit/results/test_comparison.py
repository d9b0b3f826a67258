"""Finished runs compared from their files (hardneg.results.comparison) and as terminal text: the numbers of the
hand-made results folder of tests/support/comparison.py, the queries that changed most with both rankings,
relevance and hard-negative marks, another split evaluated from the rankings, escaped texts, and one clear error
for each bad input."""

import json
import shutil

import pytest

from hardneg.errors import HardnegError, ResultsLayoutError
from hardneg.results.comparison import compare_results
from hardneg.results.comparison_text import comparison_text
from tests.support.comparison import HOSTILE_QUERY, write_results


@pytest.fixture
def results(tmp_path):
    return write_results(tmp_path / "results")


def test_the_numbers_of_the_hand_made_runs(results):
    report = compare_results(["base", "star", "adore"], results=results)
    comparison = report.comparison
    assert (report.dataset, report.split, comparison.measure, comparison.num_queries) == ("toy", "test", "RR@10", 4)
    star, adore = comparison.rows
    assert star.mean == pytest.approx((1 + 1 + 1 + 0.5) / 4) and star.reference_mean == pytest.approx(17 / 24)
    assert (star.wins, star.ties, star.losses) == (2, 1, 1) and (adore.wins, adore.ties, adore.losses) == (1, 3, 0)
    assert comparison.deltas()["star"].tolist() == pytest.approx([0.5, 0, 2 / 3, -0.5])
    assert adore.p_randomisation == 1.0  # one non-zero difference: every sign pattern is as extreme
    assert report.sources == {run: str(results / run / "per_query.parquet") for run in ("base", "star", "adore")}
    assert report.hard_negatives == {"base": None, "star": str(results / "star" / "hardnegs.parquet"), "adore": None}
    assert [query.qid for query in report.queries] == ["q3", "q1", "q4"]  # |2/3|, then |1/2| twice by query id


def test_the_changed_queries_show_both_rankings_with_their_marks(results):
    report = compare_results(["base", "star"], results=results, top=2, depth=2)
    q3, q1 = report.queries
    assert q3.text == HOSTILE_QUERY and q3.values == {"base": pytest.approx(1 / 3), "star": 1.0}
    assert q3.deltas == {"star": pytest.approx(2 / 3)}
    assert [d.docid for d in q3.rankings["base"]] == ["d6", "d7"] and [d.docid for d in q3.rankings["star"]] == \
        ["d3", "d6"]  # depth 2
    assert q3.rankings["star"][0].relevance == 1 and q3.rankings["base"][0].relevance is None
    assert [(d.docid, d.relevance, d.ranks) for d in q3.relevant] == [("d3", 1, {"base": 3, "star": 1})]
    # star trained on d1 as a hard negative of training queries t1 and t2, on d5 as one of t2; base on no list
    assert [(d.docid, d.hard_negative, d.other_queries) for d in q1.rankings["star"]] == \
        [("d1", False, 2), ("d5", False, 1)]
    assert [(d.docid, d.other_queries) for d in q1.rankings["base"]] == [("d5", 0), ("d1", 0)]


def test_another_split_is_evaluated_from_the_rankings(results):
    """On the training queries (not in per_query.parquet): t1's relevant d5 is ranked 2nd by base, 1st by star,
    3rd by adore; t2's d8 first by all. star trained on d1 as a hard negative of t1 and t2: on t1's ranking it is
    one of the query's own hard negatives, and one of another training query's (t2)."""
    report = compare_results(["base", "star", "adore"], results=results, split="train", measure="RR@10")
    values = report.comparison.values
    assert values.loc["t1"].tolist() == pytest.approx([0.5, 1.0, 1 / 3]) and values.loc["t2"].tolist() == [1, 1, 1]
    assert report.sources["star"] == str(results / "star" / "rankings" / "train.parquet")
    t1 = report.queries[0]
    assert t1.qid == "t1" and [(d.docid, d.hard_negative, d.other_queries) for d in t1.rankings["star"]] == \
        [("d5", False, 1), ("d1", True, 1)]  # d5: a hard negative of t2
    # any ir-measures measure on another split, since it is computed
    assert compare_results(["base", "star"], results=results, split="train", measure="P@1").comparison.rows[0].delta \
        == pytest.approx(0.5)
    # and on the evaluation split, where per_query.parquet lacks it (P@1: base 0, 1, 0, 1; star 1, 1, 1, 0)
    report = compare_results(["base", "star"], results=results, measure="P@1")
    assert report.split == "test" and report.comparison.rows[0].delta == pytest.approx(0.25)
    assert report.sources["star"] == str(results / "star" / "rankings" / "test.parquet")


def test_the_text_shows_the_data_escaped(results):
    text = comparison_text(compare_results(["base", "star", "adore"], results=results))
    lines = text.splitlines()
    assert lines[0] == "RR@10 on split test of dataset toy: 4 queries, each run against base"
    assert any(line.split()[:5] == ["star", "0.875", "+0.167", "2/1/1", "0.632"] for line in lines)
    assert "Holm's step-down correction over the 2 comparisons" in " ".join(lines)
    assert f"1. query q3: {HOSTILE_QUERY}" in lines
    assert "\x1b" not in text and "Wolves — wolves \\x1b[31mhow" in text  # an escape sequence shown as one
    assert "d1 [R1] [HN×2] Cats — cats purr" in text and "d6 [HN×1] " in text and "d3 [R1] Fish" in text
    assert "relevant d3 [R1], ranked base 3, star 1, adore 1: Fish — fish swim" in text
    assert all(line.isprintable() for line in lines)


def test_no_query_shown_with_top_zero(results):
    report = compare_results(["base", "star"], results=results, measure="nDCG@10", top=0)
    assert report.queries == [] and "queries that changed most" not in comparison_text(report)
    assert "No query changed" not in comparison_text(report)  # two did: not shown is not unchanged
    assert report.comparison.rows[0].wins == 2  # nDCG@10 moves as RR@10 does: q1 and q3 gain, q4 loses


@pytest.mark.parametrize("runs, kwargs, message", [
    (["base"], {}, "a comparison needs at least two runs"),
    (["base", "star", "base"], {}, "run base is named twice"),
    (["base", "nosuch"], {}, "run 'nosuch' has no results folder: {results}/nosuch does not exist (runs with "
                             "results: adore, base, star)"),
    (["base", "star"], {"measure": "RR@zero"}, "measure 'RR@zero': "),  # on the evaluation split too
    (["base", "star"], {"split": "dev"}, "run base has no ranking of split 'dev': {results}/base/rankings/dev.parquet "
                                         "is missing"),
    (["base", "star"], {"split": "train", "measure": "RR@zero"}, "measure 'RR@zero': "),
])
def test_bad_input_is_one_error_naming_the_cause(results, runs, kwargs, message):
    with pytest.raises(HardnegError) as error:
        compare_results(runs, results=results, **kwargs)
    assert message.format(results=results) in str(error.value)


def test_rankings_in_their_old_folder_are_refused_with_the_way_on(results):
    (results / "star" / "rankings").rename(results / "star" / "runs")
    with pytest.raises(ResultsLayoutError, match=r"a run's rankings are now in <run>/rankings/, not <run>/runs/ "
                                                 r"\(.*star/runs\)"):
        compare_results(["base", "star"], results=results)


def test_missing_files_are_named(results):
    (results / "star" / "per_query.parquet").unlink()
    with pytest.raises(HardnegError, match=r"run star has no per-query values: .*star/per_query.parquet is missing; "
                                           r"build it with snakemake --cores all .*star/metrics.json"):
        compare_results(["base", "star"], results=results)
    (results / "star" / "metrics.json").unlink()
    with pytest.raises(HardnegError, match=r"run star is not evaluated: .*star/metrics.json is missing"):
        compare_results(["base", "star"], results=results)


def test_runs_evaluated_on_different_splits(results):
    record = json.loads((results / "adore" / "metrics.json").read_text())
    (results / "adore" / "metrics.json").write_text(json.dumps({**record, "split": "train"}))
    with pytest.raises(HardnegError) as error:
        compare_results(["base", "adore"], results=results)
    assert str(error.value) == (f"the runs were evaluated on different splits: test ({results}/base/metrics.json), "
                                f"train ({results}/adore/metrics.json); compare them on one split they all ranked "
                                f"(--split)")
    # --split names the split: base's test values come from its per_query.parquet, adore's from its ranking
    report = compare_results(["base", "adore"], results=results, split="test")
    assert report.sources == {"base": str(results / "base" / "per_query.parquet"),
                              "adore": str(results / "adore" / "rankings" / "test.parquet")}
    assert report.comparison.deltas()["adore"].tolist() == pytest.approx([0, 0, 2 / 3, 0])


def test_identical_runs_change_no_query(results):
    shutil.copytree(results / "base", results / "same")
    report = compare_results(["base", "same"], results=results)
    row = report.comparison.rows[0]
    assert (row.wins, row.ties, row.losses) == (0, 4, 0) and row.p_randomisation == 1.0 and report.queries == []
    assert "No query changed: every run scores each query as base does." in comparison_text(report)


def test_runs_with_replicates_are_also_compared_over_their_seeds(results):
    from scipy.stats import ttest_ind

    assert compare_results(["base", "star"], results=results).seeds == []  # no replicate: no such section
    plain = compare_results(["base", "star", "adore"], results=results).comparison
    base, star, adore = plain.rows[0].reference_mean, plain.rows[0].mean, plain.rows[1].mean
    for source, replicate in (("star", "base_seed2"), ("adore", "star_seed2"), ("base", "star_seed10")):
        shutil.copytree(results / source, results / replicate)  # replicates scoring as those runs do
    shutil.copytree(results / "base", results / "star_seedling")  # not a replicate's name: ignored
    report = compare_results(["base", "star"], results=results)
    assert report.comparison.rows[0].mean == pytest.approx(star)  # the query-by-query part: the runs named
    spreads = {spread.run: spread for spread in report.seeds}
    assert spreads["base"].replicates == ["base", "base_seed2"] and spreads["base"].p_welch is None
    assert spreads["star"].replicates == ["star", "star_seed2", "star_seed10"]  # by seed, not by name
    assert spreads["star"].means == pytest.approx([star, adore, base])
    assert spreads["base"].mean == pytest.approx((base + star) / 2)
    assert spreads["star"].p_welch == pytest.approx(ttest_ind([star, adore, base], [base, star],
                                                              equal_var=False).pvalue)
    text = comparison_text(report)
    assert "Over seeds" in text and "star_seed10" in text
    over_seeds = text.split("\nrun ")[-1].splitlines()  # the second table: its header's "seeds" column
    assert over_seeds[0].split()[0] == "seeds"
    assert over_seeds[1].split() == ["base", "2", f"{spreads['base'].mean:.4f}", f"{spreads['base'].sd:.4f}", "–"]
    assert over_seeds[2].split() == ["star", "3", f"{spreads['star'].mean:.4f}", f"{spreads['star'].sd:.4f}",
                                     f"{spreads['star'].p_welch:.3g}"]


def test_an_episodic_runs_marks_come_from_its_last_episodes_list(results):
    # adore given episodes as ANCE has them: episode 1's list (star's), episode 2 with none of its own yet, and an
    # entry that is no episode; the marks are those of the last episode that has a list
    episodes = results / "adore" / "episodes"
    for name in ("0", "1", "2", "notes"):
        (episodes / name).mkdir(parents=True)
    shutil.copy(results / "star" / "hardnegs.parquet", episodes / "1" / "hardnegs.parquet")
    report = compare_results(["base", "adore"], results=results, top=1, depth=2)
    assert report.hard_negatives["adore"] == str(episodes / "1" / "hardnegs.parquet")
    lines = comparison_text(report).splitlines()
    assert str(episodes / "1" / "hardnegs.parquet") in lines or any(  # a path is never broken across lines
        line.endswith(f"adore: {episodes / '1' / 'hardnegs.parquet'}") for line in lines)
    text = " ".join(comparison_text(report).split())  # the note is wrapped at spaces only
    assert f"trained on: base: none (it trains on no mined list); adore: {episodes / '1' / 'hardnegs.parquet'}" in text
    shutil.copy(results / "star" / "hardnegs.parquet", episodes / "0" / "hardnegs.parquet")
    again = compare_results(["base", "adore"], results=results)
    assert again.hard_negatives["adore"] == str(episodes / "1" / "hardnegs.parquet")  # the last, not the first
