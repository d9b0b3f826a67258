"""A user's own config: `hardneg check-config` checks what Snakemake runs (same hash), `hardneg init` writes a valid
starting point, and a run continuing another run's model inherits that run's model section (the config under
--configfile in Snakemake: tests/workflow/test_configfile.py)."""

import pytest
import yaml

from hardneg.cli import main
from hardneg.errors import ConfigError
from hardneg.pipeline.config import validate_config
from hardneg.pipeline.resolution import resolve_run
from hardneg.schema.files import config_hash
from tests.support import REPO
from tests.support.configs import chain


def test_continued_runs_inherit_the_model_section():
    config = validate_config(chain())
    for run in ("star", "adore"):
        model = config["runs"][run]["params"]["model"]
        assert model["name"] == "/models/minilm" and model["query_max_length"] == 48, run
        assert model == config["runs"]["warmup"]["params"]["model"]
    assert resolve_run(config, "adore")["params"]["model"]["name"] == "/models/minilm"


def test_a_continued_run_may_set_its_own_lengths_only():
    config = validate_config(chain(doc_max_length=256))
    assert config["runs"]["star"]["params"]["model"]["doc_max_length"] == 256
    assert config["runs"]["star"]["params"]["model"]["name"] == "/models/minilm"
    assert config["runs"]["adore"]["params"]["model"]["doc_max_length"] == 256  # from star, its parent
    with pytest.raises(ConfigError) as error:
        validate_config(chain(pooling="cls"))
    assert error.value.key == "runs.star.params.model.pooling"
    assert "continues the model of run 'warmup'" in str(error.value)
    validate_config(chain(pooling="mean"))  # equal to the inherited value: allowed


def test_yaml_anchors_do_not_leak_between_runs():
    text = """
dataset: tiny
datasets: {tiny: {adapter: synthetic, num_docs: 200, num_queries: {train: 20, test: 10}}}
runs:
  bm25: {method: bm25}
  a: {method: warmup, inputs: {negatives: bm25}, params: {model: {query_max_length: 20}}}
  b: {method: inbatch, params: {model: {query_max_length: 40}}}
  adore_a: {method: adore, inputs: {docs: a}, params: &p {train: {epochs: 1}}}
  adore_b: {method: adore, inputs: {docs: b}, params: *p}
"""
    config = validate_config(yaml.safe_load(text))
    assert config["runs"]["adore_a"]["params"]["model"]["query_max_length"] == 20
    assert config["runs"]["adore_b"]["params"]["model"]["query_max_length"] == 40


def test_check_config_merges_files_like_snakemake(tmp_path, capsys):
    base, extra = tmp_path / "base.yaml", tmp_path / "extra.yaml"
    base.write_text(yaml.safe_dump(chain()))
    extra.write_text(yaml.safe_dump({"seed": 7}))
    assert main(["check-config", str(base), str(extra)]) == 0
    merged = chain()
    merged["seed"] = 7
    expected = config_hash(resolve_run(validate_config(merged), "star"))[:12]
    assert f"run star: method star, dataset tiny, config_hash {expected}" in capsys.readouterr().out


def test_invalid_yaml_names_file_and_line(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("seed: 1\nruns: [a, b\nx: 1\n")
    assert main(["check-config", str(bad)]) == 2
    assert f"{bad}, line 3: invalid YAML" in capsys.readouterr().err


def test_init_writes_a_valid_standalone_config(beir_folder, tmp_path, capsys):
    folder = beir_folder(split="train")
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq2\td2\t1\n")
    out = tmp_path / "mine.yaml"
    assert main(["init", "--beir", str(folder), "--output", str(out)]) == 0
    assert f"snakemake --cores all --configfile {out}" in capsys.readouterr().out
    config = yaml.safe_load(out.read_text())
    # two training queries: too few to hold some out as a dev split (hardneg.pipeline.starter.HOLD_OUT_FROM)
    assert config["datasets"]["mydata"] == {"adapter": "beir", "path": str(folder), "splits": ["test", "train"]}
    assert config["evaluation"]["split"] == "test"
    runs = ["bm25", "warmup", "star", "adore_star", "rrf"]  # no dev split to tune a hybrid's weight on
    assert list(config["runs"]) == runs == config["targets"] and config["results"] == "results/mydata"
    validate_config(config)
    assert main(["init", "--beir", str(tmp_path / "nowhere"), "--output", str(out)]) == 2
    assert "corpus.jsonl is missing" in capsys.readouterr().err


@pytest.mark.parametrize("name", sorted(p.name for p in (REPO / "config").glob("*.yaml")))
def test_every_shipped_config_stands_alone(name, capsys):
    """Each file of config/ is complete on its own, as --configfile reads it (nothing merged from another)."""
    assert main(["check-config", str(REPO / "config" / name)]) == 0, capsys.readouterr().err


def test_msmarco_runs_score_as_the_papers_models():
    """config/msmarco-passage.yaml trains STAR and ADORE with the papers' head: CLS → linear → LayerNorm (768), the raw
    dot product (no normalisation, temperature 1), the RankNet loss, and ADORE's loss as the authors computed it."""
    from hardneg.pipeline.config import load_config_files

    config = load_config_files(REPO / "config" / "msmarco-passage.yaml")
    for name in ("warmup", "star", "adore_star"):
        params = config["runs"][name]["params"]
        model = params["model"]
        assert (model["pooling"], model["projection_dim"], model["normalize"]) == ("cls", 768, False), name
        assert params["train"]["temperature"] == 1.0, name
    for name in ("warmup", "star"):
        assert config["runs"][name]["params"]["train"]["loss"] == "ranknet"
    adore = config["runs"]["adore_star"]["params"]["adore"]
    assert (adore["normalize"], adore["append_missing"], adore["cut"]) == ("pairs", "when_none", 200)
