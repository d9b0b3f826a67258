"""Hidden positives (a dataset's `hide_positives`): how many of a query's positives are hidden, that the draw is
seeded and each query's own, that they leave the split's qrels for hidden/<split>.parquet with nothing else
changed, and the checks of the option."""

import json

import pyarrow as pa
import pytest

from hardneg.datasets.adapters import load_dataset
from hardneg.datasets.hidden import hidden_count, hidden_rows
from hardneg.datasets.prepare import prepare_dataset
from hardneg.errors import ConfigError
from hardneg.io import artifacts
from hardneg.pipeline.config import validate_config
from hardneg.pipeline.plan import Plan
from tests.support.mining import pairs, qrels_table

# q1: 5 positives and a judged non-relevant document; q2: 2 positives; q3: 1 positive; q4: 3 positives, graded.
QRELS = qrels_table([("q1", f"a{i}", 1) for i in range(5)] + [("q1", "n", 0)]
                    + [("q2", "b0", 1), ("q2", "b1", 2), ("q3", "c0", 1)]
                    + [("q4", "d0", 2), ("q4", "d1", 1), ("q4", "d2", 1)])


def hidden_pairs(qrels, share=0.5, seed=0):
    return sorted(pairs(qrels.filter(pa.array(hidden_rows(qrels, share, seed)))))


def per_query(hidden):
    counts = {}
    for qid, _ in hidden:
        counts[qid] = counts.get(qid, 0) + 1
    return counts


@pytest.mark.parametrize("positives, share, hidden", [
    (0, 0.5, 0), (1, 0.5, 0), (1, 0.99, 0), (2, 0.5, 1), (2, 0.01, 1), (2, 0.99, 1), (3, 0.5, 2), (4, 0.5, 2),
    (5, 0.5, 3), (5, 0.1, 1), (5, 0.99, 4), (10, 0.3, 3)])
def test_a_share_of_the_positives_rounded_at_least_one_hidden_and_one_kept(positives, share, hidden):
    assert hidden_count(positives, share) == hidden


def test_the_positives_of_queries_with_several_are_hidden_in_their_counts():
    hidden = hidden_pairs(QRELS)
    assert per_query(hidden) == {"q1": 3, "q2": 1, "q4": 2}  # q3 keeps its one positive
    assert ("q1", "n") not in hidden  # a judged non-relevant document is never hidden
    assert set(hidden) <= set(pairs(QRELS))


def test_the_draw_is_seeded_and_each_query_s_own():
    hidden = hidden_pairs(QRELS)
    assert hidden_pairs(QRELS) == hidden
    assert hidden_pairs(QRELS.take(list(range(QRELS.num_rows))[::-1])) == hidden  # the order of the lines: no matter
    assert hidden_pairs(QRELS, seed=1) != hidden
    q1 = [pair for pair in hidden if pair[0] == "q1"]
    rows = [(row["qid"], row["docid"], row["relevance"]) for row in QRELS.to_pylist()]
    alone = qrels_table([row for row in rows if row[0] == "q1"])
    assert hidden_pairs(alone) == q1  # without the other queries, q1 hides the same positives
    more = qrels_table(rows + [(f"x{i}", f"y{j}", 1) for i in range(20) for j in range(3)])
    assert [pair for pair in hidden_pairs(more) if not pair[0].startswith("x")] == hidden
    draws = {tuple(pair for pair in hidden_pairs(QRELS, seed=seed) if pair[0] == "q1") for seed in range(20)}
    assert len(draws) > 5  # a draw, not always the same documents


SYNTHETIC = {"adapter": "synthetic", "seed": 3, "num_docs": 200, "docs_per_cluster": 30, "concept_vocab": 200,
             "multi_relevant_rate": 0.6, "num_queries": {"train": 40, "test": 20}}


def test_the_hidden_positives_leave_the_split_s_qrels_for_their_own_file(tmp_path):
    plain = load_dataset(SYNTHETIC)
    cfg = {**SYNTHETIC, "hide_positives": {"share": 0.5}}
    stats = prepare_dataset(cfg, tmp_path)
    visible = artifacts.read_table(artifacts.QRELS, tmp_path / "qrels" / "train.parquet")
    hidden = artifacts.read_table(artifacts.QRELS, tmp_path / "hidden" / "train.parquet")
    assert hidden.schema == artifacts.QRELS.schema and hidden.num_rows > 0
    assert sorted(pairs(visible) + pairs(hidden)) == sorted(pairs(plain.qrels["train"]))
    assert not set(pairs(visible)) & set(pairs(hidden))
    counts = per_query(pairs(plain.qrels["train"]))
    assert per_query(pairs(hidden)) == {q: hidden_count(n, 0.5) for q, n in counts.items() if n >= 2}
    assert set(per_query(pairs(visible))) == set(counts)  # every query keeps a positive
    test = artifacts.read_table(artifacts.QRELS, tmp_path / "qrels" / "test.parquet")
    assert test.equals(plain.qrels["test"].cast(artifacts.QRELS.schema))  # the other splits are untouched
    assert not (tmp_path / "hidden" / "test.parquet").exists()
    assert stats["hidden_positives"] == {"split": "train", "queries": len(per_query(pairs(hidden))),
                                         "judgements": hidden.num_rows, "share": 0.5, "seed": 0}
    assert json.loads((tmp_path / "stats.json").read_text())["hidden_positives"] == stats["hidden_positives"]
    assert stats["splits"]["train"]["num_qrels"] == visible.num_rows
    assert load_dataset(cfg).hidden["train"].equals(hidden)  # the same option hides the same positives
    assert not load_dataset({**cfg, "hide_positives": {"seed": 5}}).hidden["train"].equals(hidden)


def test_a_held_out_dev_split_is_taken_first_and_keeps_its_positives():
    cfg = {**SYNTHETIC, "num_queries": {"train": 40, "test": 20}, "dev_from_train": {"share": 0.25},
           "hide_positives": {}}
    dataset = load_dataset(cfg)
    assert set(dataset.hidden) == {"train"}
    dev = set(dataset.qrels["dev"]["qid"].to_pylist())
    assert dev and not dev & set(dataset.hidden["train"]["qid"].to_pylist())
    plain = load_dataset({key: value for key, value in cfg.items() if key != "hide_positives"})
    assert dataset.qrels["dev"].equals(plain.qrels["dev"])


def test_an_option_the_dataset_cannot_serve_is_refused():
    with pytest.raises(ConfigError) as error:
        load_dataset({**SYNTHETIC, "hide_positives": {"split": "dev"}})
    assert error.value.key == "dataset.hide_positives.split" and "no split 'dev'" in str(error.value)
    with pytest.raises(ConfigError) as error:
        load_dataset({**SYNTHETIC, "hide_positives": {"share": 1}})
    assert error.value.key == "dataset.hide_positives.share"
    config = {"dataset": "s", "datasets": {"s": {**SYNTHETIC, "hide_positives": {"split": "test"}}},
              "runs": {"bm25": {"method": "bm25"}}}
    with pytest.raises(ConfigError) as error:
        validate_config(config)
    assert error.value.key == "datasets.s.hide_positives.split" and "is evaluation.split" in str(error.value)
    config["datasets"]["s"]["hide_positives"] = {"split": "train"}
    extra = validate_config({**config, "evaluation": {"extra_splits": ["train"]}})
    assert Plan(extra).eval_splits("bm25") == ["test"]  # the split hidden from is not evaluated
    config["datasets"]["s"]["hide_positives"] = {"split": "nosuch"}
    with pytest.raises(ConfigError) as error:
        validate_config(config)
    assert error.value.key == "datasets.s.hide_positives.split"
    config["datasets"]["s"]["hide_positives"] = {}
    assert validate_config(config)["datasets"]["s"]["hide_positives"] == {"split": "train", "share": 0.5, "seed": 0}
