"""The schema is the one place of the dense defaults: TrainConfig and ModelSpec have exactly its keys, no
default of their own that could drift from it, and they reject unknown and missing keys by name."""

from dataclasses import MISSING, fields

import pytest

from hardneg.dense.backbone import ModelSpec
from hardneg.dense.train_config import TrainConfig
from hardneg.errors import ConfigError
from hardneg.pipeline.config import load_schema, validate_params
from hardneg.pipeline.train import train_run


@pytest.fixture(scope="module")
def schema():
    return load_schema()


def _section(schema, name):
    return schema["$defs"]["dense_params"]["properties"][name]["properties"]


@pytest.mark.parametrize("cls, section, extra", [(TrainConfig, "train", {"seed"}), (ModelSpec, "model", set())])
def test_fields_are_the_schema_keys_and_defaults_agree(schema, cls, section, extra):
    properties = _section(schema, section)
    assert {f.name for f in fields(cls)} == set(properties) | extra
    filled = validate_params(schema=schema)[section]  # schema defaults, nested ones (model.builtin) included
    for f in fields(cls):
        if f.default is not MISSING:
            assert f.default == filled[f.name], f"{cls.__name__}.{f.name}"
        if f.default_factory is not MISSING:
            assert f.default_factory() == filled[f.name], f"{cls.__name__}.{f.name}"


def test_built_from_the_schema_defaults(schema):
    params = validate_params(schema=schema)
    config = TrainConfig.from_params(params["train"], seed=7)
    assert config.seed == 7 and config.temperature == params["train"]["temperature"]
    assert config.num_processes == 1 and config.dev_every == 0
    spec = ModelSpec.from_params(params["model"])
    assert spec.builtin == params["model"]["builtin"] and spec.doc_max_length == params["model"]["doc_max_length"]


@pytest.mark.parametrize("cls, section, build", [
    (TrainConfig, "train", lambda values: TrainConfig.from_params(values, seed=0)),
    (ModelSpec, "model", ModelSpec.from_params),
])
def test_unknown_and_missing_keys_are_named(schema, cls, section, build):
    values = validate_params(schema=schema)[section]
    with pytest.raises(ConfigError) as unknown:
        build({**values, "learning_rat": 0.1})
    assert unknown.value.key == f"params.{section}.learning_rat"
    first = next(iter(values))
    with pytest.raises(ConfigError) as missing:
        build({k: v for k, v in values.items() if k != first})
    assert missing.value.key == f"params.{section}.{first}"


def test_processes_follow_gpus_unless_given(schema):
    base = validate_params(schema=schema)["train"]
    assert TrainConfig.from_params({**base, "gpus": 4}, 0).num_processes == 4
    assert TrainConfig.from_params({**base, "gpus": 1}, 0).num_processes == 1
    assert TrainConfig.from_params({**base, "gpus": 4, "processes": 2}, 0).num_processes == 2


def test_train_run_rejects_an_unknown_key_before_any_work(tmp_path):
    params = validate_params()
    params["train"]["temprature"] = 0.1
    resolved = {"name": "x", "method": "inbatch", "seed": 0, "params": params}
    with pytest.raises(ConfigError, match="params.train.temprature"):
        train_run(resolved, cache_dir=tmp_path / "missing", qrels_path=tmp_path / "qrels.parquet",
                  model_dir=tmp_path / "model", log_path=tmp_path / "log.parquet", checkpoint_dir=tmp_path / "ckpt",
                  tokenizer_source=tmp_path / "tokenizer")


def test_validate_params_names_the_key_at_fault(schema):
    with pytest.raises(ConfigError) as error:
        validate_params({"train": {"epochs": -1}}, schema=schema)
    assert error.value.key == "params.train.epochs"
    assert "adore" in validate_params(method="adore", schema=schema)


def test_synthetic_spec_has_the_schema_keys_and_no_defaults(schema):
    from hardneg.datasets.synthetic import SyntheticSpec

    variant = next(v["then"] for v in schema["$defs"]["dataset"]["allOf"]
                   if v["if"]["properties"]["adapter"]["const"] == "synthetic")
    common = set(schema["$defs"]["dataset"]["properties"])  # adapter and the keys every adapter takes
    assert {f.name for f in fields(SyntheticSpec)} == set(variant["properties"]) - common
    assert all(f.default is MISSING and f.default_factory is MISSING for f in fields(SyntheticSpec))
    spec = SyntheticSpec.from_config({"adapter": "synthetic", "seed": 1})
    assert spec.concept_vocab == variant["properties"]["concept_vocab"]["default"]
    assert spec.doc_length == tuple(variant["properties"]["doc_length"]["default"])
    with pytest.raises(ConfigError, match=r"'dataset.num_doc': unknown key"):
        SyntheticSpec.from_config({"adapter": "synthetic", "seed": 1, "num_doc": 5})
    with pytest.raises(ConfigError, match=r"'dataset.seed': required key is missing"):
        SyntheticSpec.from_config({"adapter": "synthetic"})


def test_a_key_declared_by_reference_gets_its_definitions_default():
    """``tables.results: {$ref: "#/$defs/table_rows"}`` has no default beside it; the definition's ``default: []``
    is filled all the same, and a default beside the reference wins over the definition's."""
    from hardneg.schema.validation import validator_for

    schema = {"$defs": {"rows": {"type": "array", "default": []}, "flag": {"type": "boolean", "default": False}},
              "type": "object",
              "properties": {"rows": {"$ref": "#/$defs/rows"}, "flag": {"$ref": "#/$defs/flag", "default": True},
                             "nested": {"type": "object", "default": {},
                                        "properties": {"rows": {"$ref": "#/$defs/rows"}}}}}
    instance = {}
    assert list(validator_for(schema).iter_errors(instance)) == []
    assert instance == {"rows": [], "flag": True, "nested": {"rows": []}}
    assert "default" not in schema["properties"]["rows"]  # the schema itself is left as it was


def test_the_tables_of_a_config_without_them_are_filled_from_the_schema(tmp_path):
    from hardneg.pipeline.config import load_config_file

    path = tmp_path / "config.yaml"
    path.write_text("dataset: toy\ndatasets: {toy: {adapter: synthetic}}\nruns: {bm25: {method: bm25}}\n")
    tables = load_config_file(path)["tables"]
    assert tables == {"results": [], "distillation": [], "abs": {"rows": [], "pretraining": []}}
