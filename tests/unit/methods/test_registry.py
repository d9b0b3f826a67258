"""The method registry: each method is declared once, the schema and the workflow read the declarations, and a
method added in a module of its own is planned by the workflow with no other file changed."""

import copy
import re
import subprocess
import textwrap
from dataclasses import dataclass

import pytest
import yaml

from hardneg import methods
from hardneg.errors import ConfigError
from hardneg.pipeline.config import load_schema, validate_config
from tests.support import REPO
from tests.support.workflow import SNAKEMAKE

BUILTIN = ["abs", "adore", "bm25", "condenser", "hybrid", "inbatch", "randneg", "rrf", "star", "warmup", "zeroshot"]


def test_builtin_methods_are_found_in_their_modules():
    found = methods.methods()
    assert sorted(found)[:len(BUILTIN)] == BUILTIN or set(BUILTIN) <= set(found)
    for name in BUILTIN:
        assert found[name].module == f"hardneg.methods.{name}"
    assert methods.get("star").role_providing("miner") == "negatives"
    assert methods.get("adore").role_providing("doc_index") == "docs"
    assert methods.get("zeroshot").trains is False and methods.get("star").trains is True
    assert methods.get("bm25").kind == methods.LEXICAL and methods.get("adore").kind == methods.DENSE


def test_schema_is_built_from_the_declarations():
    schema = load_schema()
    run = schema["$defs"]["run"]
    assert set(BUILTIN) <= set(run["properties"]["method"]["enum"])
    by_method = {v["if"]["properties"]["method"]["const"]: v["then"] for v in run["allOf"]}
    star = by_method["star"]
    assert set(star["properties"]["inputs"]["properties"]) == {"init", "negatives", "bm25"}
    assert star["properties"]["inputs"]["required"] == ["init", "negatives"]
    assert "mining" in star["properties"]["params"]["properties"]
    assert "mining" not in by_method["warmup"]["properties"]["params"]["properties"]
    assert set(by_method["bm25"]["properties"]["params"]["properties"]) == \
        {"k1", "b", "top_k", "fields", "title_weight", "stemmer"}


@pytest.mark.parametrize("name", BUILTIN)
def test_declared_parameters_match_the_schema_and_read_back(name):
    """A method's dataclass has exactly its schema's keys and no defaults of its own: the values come from the
    validated config, whose defaults come from the schema."""
    import dataclasses

    method = methods.get(name)
    if method.params is None:
        assert not method.schema
        return
    fields = dataclasses.fields(method.params)
    assert {f.name for f in fields} == set(method.schema)
    for f in fields:
        assert f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    config = validate_config(yaml.safe_load((REPO / "config" / "config.yaml").read_text()))
    run = next(r for r in config["runs"].values() if r["method"] == name) if any(
        r["method"] == name for r in config["runs"].values()) else None
    if run is not None:
        values = method.read_params(run["params"])
        assert isinstance(values, method.params)


def test_a_declaration_whose_dataclass_and_schema_disagree_is_refused():
    @dataclass(frozen=True)
    class Params:
        alpha: float

    with pytest.raises(ValueError, match="differ from its schema keys"):
        methods.Method(name="bad", kind=methods.DENSE, summary="", params=Params,
                       schema={"beta": {"type": "number", "default": 1.0}})
    with pytest.raises(ValueError, match="unknown role kind"):
        methods.Role("documents")


def test_fusion_declarations():
    hybrid, rrf = methods.get("hybrid"), methods.get("rrf")
    assert hybrid.kind == rrf.kind == methods.FUSION and not hybrid.trains
    assert (hybrid.roles["runs"].min_count, hybrid.roles["runs"].max_count) == (2, 2)
    assert (rrf.roles["runs"].min_count, rrf.roles["runs"].max_count) == (2, None)
    params = {"alpha": None, "tune": {"split": "train"}}
    assert hybrid.tuning_split(params) == "train" and hybrid.tuning_split({**params, "alpha": 0.1}) is None
    assert rrf.tuning_split({}) is None
    with pytest.raises(ValueError, match="needs `fuse` and a 'runs' role of many runs"):
        methods.Method(name="bad", kind=methods.FUSION, summary="", roles={"runs": methods.Role("runs", many=True)})
    with pytest.raises(ValueError, match="needs `fuse` and a 'runs' role of many runs"):
        methods.Method(name="bad", kind=methods.FUSION, summary="", roles={"runs": methods.Role("runs")},
                       fuse=lambda rankings, params: None)
    with pytest.raises(ValueError, match="a 'tune' section tunes a fusion method's 'alpha'"):
        methods.Method(name="bad", kind=methods.FUSION, summary="", roles={"runs": methods.Role("runs", many=True)},
                       fuse=lambda rankings, params: None, schema={"tune": {"type": "object"}})
    with pytest.raises(ValueError, match="for a role of many runs"):
        methods.Role("runs", min_count=2)
    with pytest.raises(ValueError, match="min_count"):
        methods.Role("runs", many=True, min_count=3, max_count=2)


def test_reading_parameters_names_an_unknown_or_missing_key():
    with pytest.raises(ConfigError, match=r"'params.mining.dept': unknown key"):
        methods.get("star").read_params({"mining": {"dept": 3}})
    with pytest.raises(ConfigError, match=r"'params.adore.top_k': required key is missing"):
        methods.get("adore").read_params({"adore": {"cut": 3, "weighted": True, "index": None}})


def test_no_rule_or_script_branches_on_a_method_name():
    pattern = re.compile(r"method ?[=!]=|\[.method.\] ?(==|in)")
    offending = [f"{path.relative_to(REPO)}:{number}"
                 for folder in ("rules", "scripts") for path in sorted((REPO / folder).iterdir())
                 for number, line in enumerate(path.read_text().splitlines(), 1) if pattern.search(line)]
    assert offending == []


TOY_METHOD = '''
"""A toy method for the test: in-batch negatives with a margin of its own."""
from dataclasses import dataclass

from hardneg.methods import DENSE, Method, Role


@dataclass(frozen=True)
class ToyParams:
    toy: dict


def build_step(ctx):
    from hardneg.dense.methods import ContrastiveMethod

    return ContrastiveMethod(ctx.train, ctx.query_texts, ctx.doc_texts, negatives=None, per_query=0, loss="ce",
                             temperature=ctx.params["train"]["temperature"] * ctx.params["toy"]["scale"])


METHOD = Method(name="toy", kind=DENSE, summary="a test method",
                roles={"init": Role("model", required=False), "negatives": Role("ranking", required=False)},
                schema={"toy": {"type": "object", "default": {}, "additionalProperties": False,
                                "properties": {"scale": {"type": "number", "default": 1.0}}}},
                params=ToyParams, training_sections=("model", "train", "toy"), build_step=build_step)
'''


def test_a_method_in_its_own_module_is_planned_with_no_other_file_changed(tmp_path):
    (tmp_path / "extra").mkdir()
    (tmp_path / "extra" / "toy_method.py").write_text(textwrap.dedent(TOY_METHOD))
    config = {
        "dataset": "tiny", "method_modules": ["extra/toy_method.py"],
        "datasets": {"tiny": {"adapter": "synthetic", "num_docs": 300, "num_queries": {"train": 50, "test": 20}}},
        "runs": {"bm25": {"method": "bm25"},
                 "toy": {"method": "toy", "inputs": {"negatives": "bm25"}, "params": {"toy": {"scale": 2.0}}}},
        "targets": ["toy"],
    }
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "config.yaml").write_text(yaml.safe_dump(config))
    result = subprocess.run([SNAKEMAKE, "--snakefile", str(REPO / "Snakefile"), "--directory", str(tmp_path),
                             "-n", "--quiet", "rules"], capture_output=True, text=True)
    out = result.stdout + result.stderr
    assert result.returncode == 0, out[-3000:]
    jobs = {line.split()[0]: int(line.split()[1]) for line in out.splitlines()
            if len(line.split()) == 2 and line.split()[1].isdigit()}
    for rule in ("train_dense", "encode_corpus_shard", "gather_embeddings", "build_faiss_index", "dense_search",
                 "evaluate", "tokenize", "bm25_search"):
        assert jobs.get(rule, 0) >= 1, (rule, out)
    assert jobs["dense_search"] == 1 and jobs["bm25_search"] == 1  # the toy test split; bm25's train split

    # an unknown parameter of the toy method is refused with its key, before any job
    config["runs"]["toy"]["params"]["toy"]["scael"] = 1
    (tmp_path / "config" / "config.yaml").write_text(yaml.safe_dump(config))
    result = subprocess.run([SNAKEMAKE, "--snakefile", str(REPO / "Snakefile"), "--directory", str(tmp_path), "-n"],
                            capture_output=True, text=True)
    assert result.returncode != 0 and "config key 'runs.toy.params.toy.scael': unknown key" in \
        result.stdout + result.stderr


@pytest.mark.slow
def test_a_method_of_its_own_module_trains_and_is_evaluated(tmp_path):
    """The training job is a process of its own: it imports the run's method module again."""
    (tmp_path / "extra").mkdir()
    (tmp_path / "extra" / "toy_method.py").write_text(textwrap.dedent(TOY_METHOD))
    tiny = {"model": {"vocab_size": 3000, "doc_max_length": 32, "query_max_length": 16,
                      "builtin": {"hidden_size": 32, "num_hidden_layers": 1, "num_attention_heads": 2,
                                  "intermediate_size": 64}},
            "train": {"epochs": 1, "batch_size": 16}, "encode": {"shards": 1}, "search": {"top_k": 50}}
    config = {
        "dataset": "tiny", "method_modules": ["extra/toy_method.py"], "targets": ["toy"],
        "datasets": {"tiny": {"adapter": "synthetic", "num_docs": 200, "docs_per_cluster": 20,
                              "num_queries": {"train": 48, "test": 20}}},
        "runs": {"toy": {"method": "toy", "params": {**tiny, "toy": {"scale": 2.0}}}},
    }
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "config.yaml").write_text(yaml.safe_dump(config))
    result = subprocess.run([SNAKEMAKE, "--snakefile", str(REPO / "Snakefile"), "--directory", str(tmp_path),
                             "--cores", "2"], capture_output=True, text=True)
    assert result.returncode == 0, (result.stdout + result.stderr)[-3000:]
    import json

    import pyarrow.parquet as pq

    metrics = json.loads((tmp_path / "results" / "toy" / "metrics.json").read_text())
    assert metrics["num_queries"] == 20 and 0.0 <= metrics["measures"]["RR@10"] <= 1.0
    assert pq.read_table(tmp_path / "results" / "toy" / "train_log.parquet").num_rows == 3  # 48 queries / 16
    resolved = yaml.safe_load((tmp_path / "results" / "toy" / "config.yaml").read_text())
    assert resolved["params"]["toy"] == {"scale": 2.0}


def test_a_role_of_many_runs(monkeypatch):
    from hardneg.methods import registry
    from hardneg.pipeline.plan import Plan

    fusion = methods.Method(name="toyfusion", kind=methods.DENSE, summary="a role of many runs",
                            roles={"runs": methods.Role("runs", many=True)}, training_sections=("model", "train"),
                            build_step=lambda ctx: None)
    monkeypatch.setitem(registry._METHODS, "toyfusion", fusion)
    raw = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    raw["runs"]["fuse"] = {"method": "toyfusion", "inputs": {"runs": ["bm25", "warmup"]}}
    plan = Plan(validate_config(copy.deepcopy(raw)))
    assert plan.train_inputs("fuse")["runs"] == ["results/bm25/runs/train.parquet", "results/warmup/runs/train.parquet"]
    assert plan.upstream("fuse") == ["bm25", "warmup"]
    assert [r["name"] for r in plan.resolved("fuse")["inputs"]["runs"]] == ["bm25", "warmup"]
    for runs, message in (("bm25", "expected array"), (["bm25", "nowhere"], "no run named 'nowhere'"),
                          (["fuse"], "a run cannot be its own input")):
        raw["runs"]["fuse"]["inputs"]["runs"] = runs
        with pytest.raises(ConfigError, match=message) as info:
            validate_config(copy.deepcopy(raw))
        assert info.value.key == "runs.fuse.inputs.runs"
