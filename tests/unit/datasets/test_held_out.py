"""A dev split held out of the training split (a dataset's `dev_from_train`): which queries, that they leave the
training split with their judgements, the checks of the option, and a hybrid run tuning on it by default."""

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from hardneg.datasets.adapters import dataset_splits, load_dataset
from hardneg.datasets.prepare import prepare_dataset
from hardneg.datasets.splits import held_out_queries
from hardneg.errors import ConfigError, DataError
from hardneg.pipeline.config import validate_config
from tests.support.files import write_lines


def _qrels(rows):
    return pa.table({"qid": [r[0] for r in rows], "docid": [r[1] for r in rows],
                     "relevance": pa.array([r[2] for r in rows], pa.int32())})


def _beir(root, train: int = 40, test: int = 5):
    """A BEIR folder: one document per query, `train` training and `test` test queries (the first training query
    also judges a second document, and a last training query judges one as not relevant)."""
    queries = [f"t{i}" for i in range(train)] + [f"e{i}" for i in range(test)] + ["t_unjudged"]
    write_lines(root / "corpus.jsonl", [f'{{"_id": "d{q}", "text": "text of {q}"}}' for q in queries])
    write_lines(root / "queries.jsonl", [f'{{"_id": "{q}", "text": "query {q}"}}' for q in queries])
    write_lines(root / "qrels" / "train.tsv", ["query-id\tcorpus-id\tscore", "t0\tde0\t1"]
                + [f"t{i}\tdt{i}\t1" for i in range(train)] + ["t_unjudged\tdt0\t0"])
    write_lines(root / "qrels" / "test.tsv", ["query-id\tcorpus-id\tscore"] + [f"e{i}\tde{i}\t1" for i in range(test)])
    return root


def test_held_out_queries_are_a_seeded_share_of_the_judged_ones():
    rows = [(f"q{i}", f"d{i}", 1) for i in range(50)] + [("q_none", "d0", 0)]
    held = held_out_queries(_qrels(rows), 0.1, 0)
    assert len(held) == 5 and held == sorted(held) and "q_none" not in held
    assert held_out_queries(_qrels(rows[::-1]), 0.1, 0) == held  # the order of the lines does not matter
    assert held_out_queries(_qrels(rows), 0.1, 1) != held
    assert len(held_out_queries(_qrels(rows), 0.99, 0)) == 49  # never all of them
    assert len(held_out_queries(_qrels(rows), 0.001, 0)) == 1  # at least one
    assert held_out_queries(_qrels(rows[:1]), 0.5, 0) == []


def test_the_held_out_queries_leave_the_training_split(tmp_path):
    cfg = {"adapter": "beir", "path": str(_beir(tmp_path / "beir")), "splits": ["test", "train"],
           "dev_from_train": {"share": 0.25}}
    assert dataset_splits(cfg) == ["test", "train", "dev"]
    prepare_dataset(cfg, tmp_path / "out")
    split = {name: (pq.read_table(tmp_path / "out" / "queries" / f"{name}.parquet")["qid"].to_pylist(),
                    pq.read_table(tmp_path / "out" / "qrels" / f"{name}.parquet")["qid"].to_pylist())
             for name in ("train", "dev", "test")}
    dev_queries, dev_judged = split["dev"]
    assert len(dev_queries) == 10 and set(dev_judged) == set(dev_queries)  # 25% of the 40 judged queries
    assert not set(dev_queries) & (set(split["train"][0]) | set(split["train"][1]))
    assert len(split["train"][0]) == 31 and "t_unjudged" in split["train"][0]  # 30 judged + the unjudged one
    assert split["test"][0] == [f"e{i}" for i in range(5)]
    again = load_dataset(cfg)  # the same config holds out the same queries
    assert again.queries["dev"]["qid"].to_pylist() == dev_queries
    other_seed = load_dataset({**cfg, "dev_from_train": {"share": 0.25, "seed": 7}})
    assert other_seed.queries["dev"]["qid"].to_pylist() != dev_queries


def test_an_option_the_dataset_cannot_serve_is_refused(tmp_path):
    root = _beir(tmp_path / "beir")
    with pytest.raises(ConfigError) as error:
        load_dataset({"adapter": "beir", "path": str(root), "splits": ["test"], "dev_from_train": {}})
    assert error.value.key == "dataset.dev_from_train" and "split 'train'" in str(error.value)
    synthetic = {"adapter": "synthetic", "num_docs": 50, "num_queries": {"train": 10, "dev": 5, "test": 5},
                 "dev_from_train": {"share": 0.2}}
    config = {"dataset": "s", "datasets": {"s": synthetic}, "runs": {"bm25": {"method": "bm25"}}}
    with pytest.raises(ConfigError) as error:
        validate_config(config)
    assert error.value.key == "datasets.s.dev_from_train" and "has a split 'dev' already" in str(error.value)
    with pytest.raises(ConfigError) as error:
        load_dataset({"adapter": "beir", "path": str(root), "splits": ["train"], "dev_from_train": {"share": 1}})
    assert error.value.key == "dataset.dev_from_train.share"
    write_lines(root / "qrels" / "train.tsv", ["query-id\tcorpus-id\tscore", "t0\tdt0\t1"])
    with pytest.raises(DataError, match="fewer than two judged queries: none can be held out"):
        load_dataset({"adapter": "beir", "path": str(root), "splits": ["train"], "dev_from_train": {}})


@pytest.mark.parametrize("dev_from_train, tuned_on", [({"share": 0.2}, "dev"), (None, "train")])
def test_a_hybrid_tunes_alpha_on_the_held_out_split_by_default(dev_from_train, tuned_on):
    dataset = {"adapter": "synthetic", "num_docs": 50, "num_queries": {"train": 20, "test": 5}}
    if dev_from_train is not None:
        dataset["dev_from_train"] = dev_from_train
    runs = {"bm25": {"method": "bm25"}, "dense": {"method": "inbatch"},
            "hybrid": {"method": "hybrid", "inputs": {"runs": ["bm25", "dense"]}},
            "fixed": {"method": "hybrid", "inputs": {"runs": ["bm25", "dense"]}, "params": {"tune": {"split": "train"}}}}
    config = validate_config({"dataset": "s", "datasets": {"s": dataset}, "runs": runs})
    assert config["runs"]["hybrid"]["params"]["tune"]["split"] == tuned_on
    assert config["runs"]["fixed"]["params"]["tune"]["split"] == "train"  # a split written stays
