"""The configuration reference (hardneg.pipeline.config_reference): every key of the schema and of every registered
method is described, a key without a description stops the page, the page lists every key, and the same schema
gives the same page."""

import copy
import re

import pytest
import yaml

from hardneg import methods
from hardneg.errors import ConfigError
from hardneg.pipeline.config_reference import config_reference, key_paths, missing_descriptions
from hardneg.schema.validation import read_schema
from tests.support import REPO

SCHEMA_FILE = REPO / "src" / "hardneg" / "schema" / "config.schema.yaml"
# How the page writes an entry of a mapping keyed by name, by top-level key.
PLACEHOLDERS = {"runs": "<run>", "datasets": "<name>", "downloads": "<path>", "resources": "<rule>"}
PARAMS = "runs.<run>.params"


def schema_keys(node, path: str, defs: dict, out: list) -> list:
    """(dotted path, schema) of every key under ``node``, found by walking the schema as the file writes it:
    each entry of a ``properties`` mapping is a key; ``items`` adds ``[]``, an entry of a mapping keyed by name its
    placeholder; ``$ref``, ``allOf``, ``if``/``then``/``else`` keep the path. A variant's restatement of a key of its
    parent (``empty_documents: true``, ``adapter: {const: ...}``) is not a key of its own."""
    if not isinstance(node, dict):
        return out
    if "$ref" in node:
        schema_keys(defs[node["$ref"].rsplit("/", 1)[1]], path, defs, out)
    for name, sub in node.get("properties", {}).items():
        if sub is True or (isinstance(sub, dict) and set(sub) == {"const"}):
            continue
        key = f"{path}.{name}" if path else name
        out.append((key, sub))
        schema_keys(sub, key, defs, out)
    if isinstance(node.get("items"), dict):
        schema_keys(node["items"], f"{path}[]", defs, out)
    if isinstance(node.get("additionalProperties"), dict):
        schema_keys(node["additionalProperties"], f"{path}.{PLACEHOLDERS.get(path, '<name>')}", defs, out)
    for part in node.get("allOf", []):
        schema_keys(part, path, defs, out)
    for branch in ("then", "else"):
        schema_keys(node.get(branch), path, defs, out)
    return out


def file_keys() -> list:
    """Every key of the schema file: the top-level keys and all below them, and the parameters each kind of run
    shares ($defs/<kind>_params)."""
    schema = yaml.safe_load(SCHEMA_FILE.read_text())
    keys = schema_keys(schema, "", schema["$defs"], [])
    for name, node in schema["$defs"].items():
        if name.endswith("_params"):
            keys += schema_keys(node, PARAMS, schema["$defs"], [])
    return keys


def method_keys() -> list:
    """(method, dotted path, schema) of every registered method's own parameter keys."""
    defs = read_schema()["$defs"]
    return [(name, path, sub) for name, method in methods.methods().items()
            for path, sub in schema_keys({"properties": dict(method.schema)}, PARAMS, defs, [])]


def documented_paths(page: str) -> set:
    """The keys the page lists: the dotted path that opens each entry (a definition term)."""
    return set(re.findall(r"^`([^`\n]+)`\n:   ", page, flags=re.MULTILINE))


# ------------------------------------------------------------------------------------------------ descriptions
def test_every_key_of_the_schema_file_has_a_description():
    keys = file_keys()
    assert len(keys) > 150
    missing = sorted({path for path, node in keys if not str(node.get("description", "")).strip()})
    assert missing == [], f"{SCHEMA_FILE.name}: keys without a description: {', '.join(missing)}"


def test_every_registered_methods_own_key_has_a_description():
    keys = method_keys()
    assert {name for name, _, _ in keys} >= {"abs", "adore", "ance", "bm25", "colbert", "condenser", "hybrid", "rrf"}
    missing = sorted(f"{path} (method {name})" for name, path, node in keys
                     if not str(node.get("description", "")).strip())
    assert missing == [], f"method parameters without a description: {', '.join(missing)}"


def test_the_generator_finds_no_key_without_a_description():
    assert missing_descriptions() == []


def test_a_key_without_a_description_stops_the_page():
    schema = copy.deepcopy(read_schema())
    del schema["$defs"]["dense_params"]["properties"]["train"]["properties"]["learning_rate"]["description"]
    synthetic = schema["$defs"]["dataset"]["allOf"][0]["then"]["properties"]
    del synthetic["num_docs"]["description"]
    assert missing_descriptions(schema) == [
        "datasets.<name>.num_docs (`datasets.<name>` with `adapter: synthetic`)",
        "runs.<run>.params.train.learning_rate (dense runs)",
        "runs.<run>.params.train.learning_rate (re-ranking runs)"]  # one section of both kinds (a YAML anchor)
    with pytest.raises(ConfigError) as info:
        config_reference(schema)
    assert info.value.key == "datasets.<name>.num_docs"
    assert "3 key(s) of the configuration schema have no description" in str(info.value)
    assert "runs.<run>.params.train.learning_rate (dense runs)" in str(info.value)
    config_reference(read_schema())  # the copy only


def test_a_method_key_without_a_description_stops_the_page(monkeypatch):
    from hardneg.methods import registry

    methods.methods()  # the built-in methods registered first
    toy = methods.Method(name="toydoc", kind=methods.LEXICAL, summary="a method with an undescribed key",
                         schema={"depth": {"type": "integer", "minimum": 1, "default": 10},
                                 "section": {"type": "object", "default": {}, "description": "described",
                                             "properties": {"inner": {"type": "boolean", "default": False}}}})
    monkeypatch.setitem(registry._METHODS, "toydoc", toy)
    assert missing_descriptions() == ["runs.<run>.params.depth (method toydoc)",
                                      "runs.<run>.params.section.inner (method toydoc)"]
    with pytest.raises(ConfigError, match=r"runs\.<run>\.params\.depth \(method toydoc\)"):
        config_reference()


# ------------------------------------------------------------------------------------------------------ the page
def test_the_page_lists_every_key_of_the_schema_and_of_every_method():
    page = config_reference()
    documented = documented_paths(page)
    expected = {path for path, _ in file_keys()} | {path for _, path, _ in method_keys()}
    assert sorted(expected - documented) == []
    roles = {f"runs.<run>.inputs.{role}" for method in methods.methods().values() for role in method.roles}
    assert sorted(documented - expected - roles) == []  # every entry is a key of the schema
    assert set(key_paths()) == documented
    for path in ("evaluation.measures", "runs.<run>.params.train.learning_rate", "datasets.<name>.num_docs",
                 "downloads.<path>.url", "resources.<rule>.mem_mb", "summary.groups[].marker",
                 "runs.<run>.params.mining.depth", "runs.<run>.params.tune.split", "runs.<run>.inputs.docs"):
        assert path in documented, path


def test_an_entry_gives_type_default_bounds_and_description():
    page = config_reference()
    assert ("`runs.<run>.params.train.learning_rate`\n:   number > 0 · default `0.0003`\n\n"
            "    the peak learning rate") in page
    assert "`datasets.<name>.adapter`\n:   one of `synthetic`, `beir`," in page
    assert ("`runs.<run>.params.model.pooling`\n:   one of `auto`, `cls`, `mean`, `max`, `lasttoken`, `weightedmean`, "
            "`mean_sqrt_len_tokens` · default `auto`") in page
    assert "`summary.p_value`\n:   number in (0, 1) · default `0.05`" in page
    assert "`runs.<run>.inputs.docs`\n:   name of a dense run · **required**" in page
    assert "### `datasets.<name>` with `adapter: synthetic` { #datasets-name-with-adapter-synthetic }" in page
    for method in methods.methods():
        assert f"### `{method}` {{ #method-{method} }}" in page


def test_the_page_is_plain_markdown():
    """Outside code spans no ``<`` opens an HTML tag and no ``*`` or word-edge ``_`` starts emphasis; a table
    cell holds no bare ``|``."""
    page = config_reference()
    prose = re.sub(r"(`+).+?\1", "", page.partition("\n## ")[2])  # the generated part, after the introduction
    assert "<" not in prose
    assert re.findall(r"(?<!\\)\*", prose.replace("**required**", "")) == []
    assert re.findall(r"(?<![\w\\])_|(?<!\\)_(?!\w)", prose) == []
    for row in (line for line in page.splitlines() if line.startswith("| [")):
        assert len(re.findall(r"(?<!\\)\|", re.sub(r"(`+).+?\1", "", row))) == 4, row
