"""The method registry: each method is declared once, and the schema and the workflow read the declarations (a
method added in a module of its own, planned and trained by the workflow: tests/workflow/test_method_module.py)."""

import copy
import re
from dataclasses import dataclass

import pytest
import yaml

from hardneg import methods
from hardneg.errors import ConfigError
from hardneg.pipeline.config import load_schema, validate_config
from tests.support import REPO
from tests.support.docs import method_walkthrough

BUILTIN = ["abs", "adore", "ance", "bm25", "colbert", "condenser", "crossencoder", "hybrid", "inbatch", "randneg",
           "rrf", "star", "static_hn", "tct", "warmup", "zeroshot"]
METHODS = REPO / "src" / "hardneg" / "methods"


def builtin_names() -> list[str]:
    """The methods the registry finds in the package (not those of modules a test loads)."""
    return sorted(name for name, method in methods.methods().items() if method.module.startswith("hardneg.methods."))


def test_builtin_methods_are_found_in_their_packages():
    found = methods.methods()
    assert builtin_names() == BUILTIN
    assert sorted(path.name for path in METHODS.iterdir() if (path / "__init__.py").is_file()) == BUILTIN
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
    assert set(star["properties"]["inputs"]["properties"]) == {"init", "negatives", "bm25", "cross_encoder", "teacher"}
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
        methods.get("star").read_params({"mining": {"dept": 3}, "distill": {}})
    with pytest.raises(ConfigError, match=r"'params.adore.top_k': required key is missing"):
        methods.get("adore").read_params({"adore": {"cut": 3, "weighted": True, "index": None}})


def test_no_rule_or_script_branches_on_a_method_name():
    pattern = re.compile(r"method ?[=!]=|\[.method.\] ?(==|in)")
    offending = [f"{path.relative_to(REPO)}:{number}"
                 for folder in ("rules", "scripts") for path in sorted((REPO / folder).iterdir())
                 for number, line in enumerate(path.read_text().splitlines(), 1) if pattern.search(line)]
    assert offending == []


# The starter config `hardneg init` writes names the methods of the runs it puts in a config; a saved ColBERT
# model's JSON file records its model kind, "colbert" (hardneg.dense.maxsim).
NAMES_ALLOWED = {REPO / "src" / "hardneg" / "pipeline" / name for name in ("starter.py", "starter_fusion.py")} | {
    REPO / "src" / "hardneg" / "dense" / "maxsim.py"
}


def test_method_names_are_written_only_in_their_packages():
    """No library module, rule or script outside ``methods/`` writes a built-in method's name as a string: what
    code needs of a method is a declaration of the method (a field of ``Method``) or the config."""
    names = builtin_names()
    pattern = re.compile(r"""["'](%s)["']""" % "|".join(map(re.escape, names)))
    files = [path for folder in ("src/hardneg", "rules", "scripts") for path in sorted((REPO / folder).rglob("*"))
             if path.suffix in (".py", ".smk", ".yaml") and METHODS not in path.parents and path not in NAMES_ALLOWED]
    assert len(files) > 50
    offending = [f"{path.relative_to(REPO)}:{number}: {line.strip()}" for path in files
                 for number, line in enumerate(path.read_text().splitlines(), 1) if pattern.search(line)]
    assert offending == []


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
    assert plan.train_inputs("fuse")["runs"] == ["results/bm25/rankings/train.parquet", "results/warmup/rankings/train.parquet"]
    assert plan.upstream("fuse") == ["bm25", "warmup"]
    assert [r["name"] for r in plan.resolved("fuse")["inputs"]["runs"]] == ["bm25", "warmup"]
    for runs, message in (("bm25", "expected array"), (["bm25", "nowhere"], "no run named 'nowhere'"),
                          (["fuse"], "a run cannot be its own input")):
        raw["runs"]["fuse"]["inputs"]["runs"] = runs
        with pytest.raises(ConfigError, match=message) as info:
            validate_config(copy.deepcopy(raw))
        assert info.value.key == "runs.fuse.inputs.runs"


def test_the_walkthrough_method_declares_its_samples_from_the_band(tmp_path):
    """The walkthrough's step draws negatives only from ranks skip+1 .. depth of its ranking."""
    import importlib.util

    import numpy as np
    import pyarrow as pa

    path = tmp_path / "bandneg.py"
    path.write_text(method_walkthrough())
    spec = importlib.util.spec_from_file_location("walkthrough_bandneg", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    from hardneg.dense.data import TrainQueries
    from hardneg.io import artifacts

    ranking = pa.table({"qid": ["q1"] * 6, "docid": [f"d{i}" for i in range(1, 7)], "rank": list(range(1, 7)),
                        "score": [6.0, 5.0, 4.0, 3.0, 2.0, 1.0]}, schema=artifacts.RANKING.schema)
    artifacts.write_table(ranking, artifacts.RANKING, tmp_path / "run.parquet")

    class Texts:
        row_ids = [f"d{i}" for i in range(1, 9)]

    train = TrainQueries(pa.table({"qid": ["q1"], "docid": ["d7"], "relevance": [1]}), ["q1"], Texts.row_ids)
    params = {"band": {"skip": 2}, "negatives": {"per_query": 3, "depth": 5},
              "train": {"loss": None, "temperature": 1.0, "grad_cache_chunk": 0}}
    ctx = methods.StepContext(resolved={"method": "bandneg", "params": params}, train=train, query_texts=None,
                              doc_texts=Texts, inputs={"negatives": str(tmp_path / "run.parquet")})
    step = module.build_step(ctx)
    drawn = step.negatives.sample(np.array([0]), 50, np.random.default_rng(0))
    assert set(np.asarray(drawn).ravel().tolist()) == {2, 3, 4}  # rows of d3, d4, d5: ranks 3 to 5
