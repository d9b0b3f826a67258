"""The dataset adapters are registered once, and the schema knows exactly their names."""

import pytest

from hardneg.datasets.adapters import ADAPTERS, adapter_of, check_dataset, dataset_input_files, dataset_splits
from hardneg.errors import ConfigError
from hardneg.pipeline.resolution import dataset_config
from hardneg.schema.validation import read_schema, validate_dataset


def test_the_schema_admits_the_registered_adapters():
    dataset = read_schema()["$defs"]["dataset"]
    assert dataset["properties"]["adapter"]["enum"] == list(ADAPTERS)
    variants = [v["if"]["properties"]["adapter"]["const"] for v in dataset["allOf"]]
    assert sorted(variants) == sorted(ADAPTERS)


def test_each_adapter_reads_its_entry():
    beir = validate_dataset({"adapter": "beir", "path": "data/sf", "splits": ["train", "test"]})
    assert dataset_splits(beir) == ["train", "test"]
    assert dataset_input_files(beir) == ["data/sf/corpus.jsonl", "data/sf/queries.jsonl", "data/sf/qrels/train.tsv",
                                         "data/sf/qrels/test.tsv"]
    trec = {"adapter": "trec", "corpus": "c.tsv", "topics": {"dl": "t.txt"}, "qrels": {"dl": "q.txt"}}
    assert dataset_splits(trec) == ["dl"] and dataset_input_files(trec) == ["c.tsv", "t.txt", "q.txt"]
    assert adapter_of(trec).query_files == "topics" and adapter_of(beir).num_docs(beir) is None


def test_a_seeded_adapter_takes_the_global_seed_and_checks_its_sizes():
    config = {"seed": 7, "datasets": {"s": {"adapter": "synthetic", "num_docs": 50}, "b": {"adapter": "beir"}}}
    assert dataset_config(config, "s")["seed"] == 7 and "seed" not in dataset_config(config, "b")
    assert adapter_of(config["datasets"]["s"]).num_docs(config["datasets"]["s"]) == 50
    too_narrow = validate_dataset({"adapter": "synthetic", "seed": 1, "concept_vocab": 10, "topic_words": 8})
    with pytest.raises(ConfigError) as error:
        check_dataset(too_narrow, "datasets.s")
    assert error.value.key == "datasets.s.concept_vocab"
