"""Configuration: schema validation with defaults, cross-reference checks, and per-run resolution.

The schema lives in ``workflow/schemas/config.schema.yaml``. :func:`validate_config` fills defaults in
place and raises one :class:`ConfigError` naming the dotted key at fault, before any job starts.
:func:`resolve_run` returns the slice of config one run needs, which is what rules pass via ``params:``
and what each run records as its resolved config.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
from collections.abc import Iterable
from pathlib import Path

import yaml
from jsonschema import Draft202012Validator, validators
from jsonschema.exceptions import best_match

from hardneg.errors import ConfigError
from hardneg.layout import NAME_PATTERN, NAME_RULE

DEFAULT_SCHEMA = Path(__file__).resolve().parents[2] / "workflow" / "schemas" / "config.schema.yaml"


def _with_defaults(validator_class):
    check_properties = validator_class.VALIDATORS["properties"]

    def fill_defaults(validator, properties, instance, schema):
        if isinstance(instance, dict):
            for name, sub in properties.items():
                if isinstance(sub, dict) and "default" in sub and name not in instance:
                    instance[name] = copy.deepcopy(sub["default"])
        yield from check_properties(validator, properties, instance, schema)

    return validators.extend(validator_class, {"properties": fill_defaults})


_Validator = _with_defaults(Draft202012Validator)


def load_schema(path: str | os.PathLike = DEFAULT_SCHEMA) -> dict:
    """The configuration schema: the file's, with one run variant per registered method (see
    :func:`with_methods`)."""
    with open(path, encoding="utf-8") as handle:
        return with_methods(yaml.safe_load(handle))


def with_methods(schema: dict) -> dict:
    """Add the registered methods to a schema: the ``method`` enum of ``$defs/run``, and per method the input
    roles it accepts (and requires) and its parameters (the shared section of its kind plus its own keys)."""
    from hardneg import methods

    schema = copy.deepcopy(schema)
    defs = schema["$defs"]
    run = defs["run"]
    common = {key: value for key, value in run["properties"].items() if key != "method"}
    run["properties"]["method"] = {"enum": list(methods.names())}
    variants = []
    for name, method in methods.methods().items():
        params = copy.deepcopy(defs[f"{method.kind}_params"])
        params["properties"].update(copy.deepcopy(dict(method.schema)))
        roles = {role: ({"type": "array", "items": {"type": "string"}, "minItems": spec.min_count}
                        | ({"maxItems": spec.max_count} if spec.max_count else {}) if spec.many
                        else {"type": "string"}) | {"description": spec.description or methods.PROVIDES[spec.provides]}
                 for role, spec in method.roles.items()}
        inputs = {"type": "object", "default": {}, "additionalProperties": False, "properties": roles}
        required = [role for role, spec in method.roles.items() if spec.required]
        if required:
            inputs["required"] = required
        variants.append({"if": {"properties": {"method": {"const": name}}},
                         "then": {"additionalProperties": False,
                                  "properties": {"method": {"const": name}, **copy.deepcopy(common),
                                                 "inputs": inputs, "params": params}}})
    run["allOf"] = variants
    return schema


def _dotted(parts) -> str:
    return ".".join(str(p) for p in parts) or "<root>"


def _describe(error) -> ConfigError:
    path = list(error.absolute_path)
    validator, instance, schema = error.validator, error.instance, error.schema
    if "propertyNames" in error.absolute_schema_path or (validator == "pattern" and
                                                         error.validator_value == NAME_PATTERN):
        key = path + [instance] if "propertyNames" in error.absolute_schema_path else path
        if instance == "datasets":
            return ConfigError(_dotted(key), "invalid name: 'datasets' is reserved (results/datasets/ holds the "
                                             "prepared datasets)")
        return ConfigError(_dotted(key), f"invalid name {instance!r}: a name becomes a file name, so it may hold "
                                         f"only {NAME_RULE}")
    if validator == "additionalProperties" and isinstance(instance, dict):
        allowed = sorted(schema.get("properties", {}))
        extra = sorted(k for k in instance if k not in allowed)
        key = _dotted(path + extra[:1])
        hint = f"; allowed keys: {', '.join(allowed)}" if allowed else ""
        return ConfigError(key, f"unknown key{hint}")
    if validator == "required":
        missing = next((k for k in error.validator_value if k not in instance), "?")
        return ConfigError(_dotted(path + [missing]), "required key is missing")
    if validator == "type":
        return ConfigError(_dotted(path), f"expected {error.validator_value}, got {instance!r} "
                                          f"({type(instance).__name__})")
    if validator in ("minItems", "maxItems") and isinstance(instance, list) and "description" in schema:
        low, high = schema.get("minItems", 0), schema.get("maxItems")
        count = f"exactly {low}" if low == high else f"at least {low}" if high is None else f"{low} to {high}"
        return ConfigError(_dotted(path), f"expected {count} entries ({schema['description']}), got {len(instance)}")
    if validator in ("enum", "const"):
        allowed = error.validator_value if validator == "enum" else [error.validator_value]
        return ConfigError(_dotted(path), f"must be one of {', '.join(map(str, allowed))}; got {instance!r}")
    return ConfigError(_dotted(path), error.message)


def validate_config(config: dict, schema: dict | str | os.PathLike | None = None) -> dict:
    """Validate ``config`` against the schema, fill defaults in place and check cross-references.

    Returns the same dict. Raises :class:`ConfigError` naming the first offending key.
    """
    if not isinstance(config, dict):
        raise ConfigError("<root>", "the configuration must be a mapping")
    modules = config.get("method_modules", [])
    if not isinstance(modules, list) or not all(isinstance(m, str) for m in modules):
        raise ConfigError("method_modules", f"expected a list of module names or .py paths, got {modules!r}")
    from hardneg.methods import load_modules

    load_modules(modules)
    explicit = _explicit_model_keys(config)
    if schema is None or isinstance(schema, (str, os.PathLike)):
        schema = load_schema(schema or DEFAULT_SCHEMA)
    elif "allOf" not in schema.get("$defs", {}).get("run", {}):
        schema = with_methods(schema)
    validator = _Validator(schema)
    error = best_match(validator.iter_errors(config), key=lambda e: -len(e.absolute_path))
    if error is None and _expand_pq_matrix(config):
        explicit = {**_explicit_model_keys(config), **explicit}  # the generated runs' own keys
        error = best_match(validator.iter_errors(config), key=lambda e: -len(e.absolute_path))  # defaults of new runs
    if error is not None:
        raise _describe(error)
    _check_references(config)
    from hardneg.datasets.download import check_downloads

    check_downloads(config)
    _inherit_models(config, explicit)
    _check_targets(config)
    from hardneg.evaluation import parse_measures

    parse_measures(config["evaluation"]["measures"])  # an unknown measure stops the run now, not after training
    from hardneg.index.validate import check_index_factories

    check_index_factories(config)
    from hardneg.summary import check_summary_config

    check_summary_config(config)
    return config


# Keys of ``params.model`` a run continuing another run's model may set for itself; the others describe the
# loaded model (its architecture and tokenizer) and come from the run it continues.
CONTINUED_MODEL_KEYS = ("query_max_length", "doc_max_length")


def continued_run(runs: dict, name: str) -> tuple[str, str] | None:
    """(role, run) of the run whose model run ``name`` starts from: its input of a role providing ``model``,
    else of a role providing ``doc_index`` (ADORE's query encoder starts from its document run's model)."""
    from hardneg import methods

    method = methods.get(runs[name]["method"])
    for provides in ("model", "doc_index"):
        for role in method.roles_providing(provides):
            other = runs[name].get("inputs", {}).get(role)
            if other is not None:
                return role, other
    return None


def _explicit_model_keys(config: dict) -> dict:
    """run → the ``params.model`` keys the user wrote (read before the schema fills defaults)."""
    runs = config.get("runs") if isinstance(config.get("runs"), dict) else {}
    explicit = {}
    for name, run in runs.items():
        params = run.get("params") if isinstance(run, dict) else None
        model = params.get("model") if isinstance(params, dict) else None
        explicit[name] = set(model) if isinstance(model, dict) else set()
    return explicit


def _inherit_models(config: dict, explicit: dict) -> None:
    """Give every run that continues another run's model that run's ``params.model`` (recursively), so the
    resolved config records the model actually loaded; only :data:`CONTINUED_MODEL_KEYS` may differ, and only
    when the run sets them itself. A setting that contradicts the loaded model is an error naming its key."""
    runs = config["runs"]
    for run in runs.values():
        if "params" in run:
            run["params"] = copy.deepcopy(run["params"])  # YAML anchors share one mapping between runs
    done: set = set()

    def inherit(name: str) -> None:
        if name in done:
            return
        done.add(name)
        source = continued_run(runs, name)
        if source is None or "model" not in runs[name].get("params", {}):
            return
        role, parent = source
        inherit(parent)
        if "model" not in runs[parent].get("params", {}):
            return
        mine, theirs = runs[name]["params"]["model"], runs[parent]["params"]["model"]
        for key in sorted(explicit.get(name, ())):
            if key not in CONTINUED_MODEL_KEYS and key in theirs and mine[key] != theirs[key]:
                raise ConfigError(f"runs.{name}.params.model.{key}",
                                  f"run {name!r} continues the model of run {parent!r} (inputs.{role}), which has "
                                  f"{key}: {theirs[key]!r}; a continued run inherits its model settings (only "
                                  f"{' and '.join(CONTINUED_MODEL_KEYS)} may be set): remove the key or make it equal")
        inherited = copy.deepcopy(theirs)
        for key in CONTINUED_MODEL_KEYS:
            if key in explicit.get(name, ()):
                inherited[key] = mine[key]
        runs[name]["params"]["model"] = inherited

    for name in runs:
        inherit(name)


def _check_targets(config: dict) -> None:
    for position, target in enumerate(config.get("targets") or []):
        if "/" not in target and target not in config["runs"]:
            raise ConfigError(f"targets.{position}", f"no run named {target!r} (a target is a run name or a path "
                                                     f"under results/)")


def pq_matrix_run(factory: str) -> str:
    """Name of the generated ADORE run trained with index ``factory``."""
    from hardneg.index import slug

    return f"adore_pq_{slug(factory)}"


def _expand_pq_matrix(config: dict) -> bool:
    """Add one ADORE run per training index of ``pq_matrix`` (kept if the user already defined it)."""
    matrix = config.get("pq_matrix")
    if not matrix:
        return False
    for factory in matrix["indexes"]:
        params = copy.deepcopy(matrix.get("params", {}))
        params.setdefault("index", {})["factory"] = factory
        params.setdefault("adore", {})["index"] = factory
        config["runs"].setdefault(pq_matrix_run(factory), {"method": "adore", "inputs": {"docs": matrix["docs"]},
                                                             "params": params})
    return True


def _check_references(config: dict) -> None:
    from hardneg import methods
    from hardneg.datasets import check_split_files, dataset_splits

    for name, dataset in config["datasets"].items():
        check_split_files(dataset, f"datasets.{name}")
    datasets, runs = config["datasets"], config["runs"]
    for name in datasets:
        if datasets[name]["adapter"] == "synthetic":  # its sizes must fit together (the generator's own checks)
            from hardneg.datasets.synthetic import SyntheticSpec

            SyntheticSpec.from_config(dataset_config(config, name), where=f"datasets.{name}")
    if config["dataset"] not in datasets:
        raise ConfigError("dataset", f"no dataset named {config['dataset']!r} under 'datasets' "
                                     f"(defined: {', '.join(datasets)})")
    split = config["evaluation"]["split"]
    for name, run in runs.items():
        dataset = run.get("dataset", config["dataset"])
        if dataset not in datasets:
            raise ConfigError(f"runs.{name}.dataset", f"no dataset named {dataset!r} under 'datasets'")
        for extra in [split] + config["evaluation"]["extra_splits"]:
            if extra not in dataset_splits(datasets[dataset]):
                key = "evaluation.split" if extra == split else "evaluation.extra_splits"
                raise ConfigError(key, f"dataset {dataset!r} (used by run {name!r}) has no split {extra!r}; "
                                       f"it has {', '.join(dataset_splits(datasets[dataset]))}")
        roles = methods.get(run["method"]).roles
        if methods.get(run["method"]).check is not None:  # what only the method knows of its params and inputs
            methods.get(run["method"]).check(name, run)
        if methods.get(run["method"]).kind == methods.RERANK and run["params"]["train"]["dev_every"]:
            raise ConfigError(f"runs.{name}.params.train.dev_every",
                              "dev evaluation during training searches a dense run's index; a re-ranking run is "
                              "evaluated by its metrics.json (set 0)")
        for group in methods.get(run["method"]).exclusive_roles:
            given = [role for role in group if role in run.get("inputs", {})]
            if len(given) > 1:
                raise ConfigError(f"runs.{name}.inputs.{given[1]}",
                                  f"a {run['method']} run takes only one of inputs.{' and inputs.'.join(given)}")
        _check_tuning(config, name, dataset)
        for role, others in run.get("inputs", {}).items():
            provides = roles[role].provides
            for other in ([others] if isinstance(others, str) else others):
                if other not in runs:
                    raise ConfigError(f"runs.{name}.inputs.{role}", f"no run named {other!r}")
                if other == name:
                    raise ConfigError(f"runs.{name}.inputs.{role}", "a run cannot be its own input")
                kind = methods.get(runs[other]["method"]).kind
                if provides in methods.registry.DENSE_PROVIDES and kind != methods.DENSE:
                    raise ConfigError(f"runs.{name}.inputs.{role}",
                                      f"run {other!r} is a {runs[other]['method']} run; this input needs a dense run "
                                      f"({', '.join(methods.names(methods.DENSE))})")
                if provides in methods.registry.MODEL_PROVIDES and kind not in methods.TRAINED:
                    trained = sorted(n for k in methods.TRAINED for n in methods.names(k))
                    raise ConfigError(f"runs.{name}.inputs.{role}",
                                      f"run {other!r} is a {runs[other]['method']} run, which has no model; this input "
                                      f"needs a run of {', '.join(trained)}")
                if runs[other].get("dataset", config["dataset"]) != dataset:
                    raise ConfigError(f"runs.{name}.inputs.{role}", f"run {other!r} uses another dataset")
    for name in runs:
        _check_acyclic(runs, name)


def _check_tuning(config: dict, name: str, dataset: str) -> None:
    """A fusion run tuning its weight (hardneg.methods.Method.tuning_split) tunes it on a split of its dataset that
    is never evaluated, with a measure ir-measures knows."""
    from hardneg import methods
    from hardneg.datasets import dataset_splits
    from hardneg.evaluation import parse_measures

    run = config["runs"][name]
    split = methods.get(run["method"]).tuning_split(run["params"])
    if split is None:
        return
    evaluated = [config["evaluation"]["split"]] + config["evaluation"]["extra_splits"]
    splits = dataset_splits(config["datasets"][dataset])
    if split in evaluated:
        others = [s for s in splits if s not in evaluated]
        raise ConfigError(f"runs.{name}.params.tune.split",
                          f"split {split!r} is evaluated (evaluation.split, evaluation.extra_splits); alpha is tuned on "
                          f"queries that are never evaluated: name another split ({', '.join(others) or 'none left'}) "
                          f"or give a fixed runs.{name}.params.alpha")
    if split not in splits:
        raise ConfigError(f"runs.{name}.params.tune.split",
                          f"dataset {dataset!r} has no split {split!r}; it has {', '.join(splits)}")
    try:
        parse_measures([run["params"]["tune"]["measure"]])
    except ConfigError as exc:
        raise ConfigError(f"runs.{name}.params.tune.measure", exc.message) from None


def input_runs(run: dict) -> list[str]:
    """The names of every run that ``run`` (a run's config) takes as an input, in role order."""
    names = []
    for others in run.get("inputs", {}).values():
        names += [others] if isinstance(others, str) else list(others)
    return names


def _check_acyclic(runs: dict, name: str, trail: tuple = ()) -> None:
    if name in trail:
        cycle = " -> ".join(trail[trail.index(name):] + (name,))
        raise ConfigError(f"runs.{trail[0]}.inputs", f"runs depend on each other in a cycle: {cycle}")
    for other in input_runs(runs[name]):
        _check_acyclic(runs, other, trail + (name,))


def dataset_config(config: dict, name: str) -> dict:
    """A dataset's config with its seed resolved (its own, else the global seed)."""
    cfg = dict(config["datasets"][name])
    if cfg["adapter"] == "synthetic":
        cfg.setdefault("seed", config["seed"])
    return cfg


def resolve_run(config: dict, name: str) -> dict:
    """Everything run ``name`` depends on: method, params, seed, dataset (name and config), evaluation,
    and the resolved configs of its input runs (recursively). Its hash identifies the run's setup."""
    run = config["runs"][name]
    dataset = run.get("dataset", config["dataset"])
    return {
        "name": name,
        "method": run["method"],
        "seed": run.get("seed", config["seed"]),
        "params": copy.deepcopy(run.get("params", {})),
        "dataset": {"name": dataset, **dataset_config(config, dataset)},
        "evaluation": copy.deepcopy(config["evaluation"]),
        "inputs": {role: resolve_run(config, other) if isinstance(other, str) else
                   [resolve_run(config, o) for o in other] for role, other in run.get("inputs", {}).items()},
        **({"episode": copy.deepcopy(run["episode"])} if "episode" in run else {}),  # hardneg.episodes
    }


def config_hash(resolved: dict) -> str:
    """A stable SHA-256 of a resolved config (key order does not matter)."""
    canonical = json.dumps(resolved, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


class _UniqueKeyLoader(yaml.SafeLoader):
    """YAML's safe loader, but a key written twice in one mapping is an error (YAML would keep the last)."""

    def construct_mapping(self, node, deep=False):
        seen: dict = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue  # '<<: *anchor' keys may be overridden on purpose
            key = self.construct_object(key_node, deep=True)
            if isinstance(key, (str, int, float, bool)) and key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {key!r} (first on line {seen[key] + 1})", key_node.start_mark)
            seen.setdefault(key, key_node.start_mark.line)
        return super().construct_mapping(node, deep=deep)


def read_config_yaml(path: str | os.PathLike) -> dict:
    """A config file's mapping, unvalidated (an empty file gives ``{}``). Invalid YAML, a key written twice, a
    missing file or a top level that is not a mapping is a :class:`~hardneg.errors.ConfigFileError` (both a
    ``ConfigError`` and a ``DataError``) whose text names the file and line: ``my.yaml, line 3: ...``."""
    from hardneg.errors import ConfigFileError

    try:
        with open(path, encoding="utf-8") as handle:
            config = yaml.load(handle, Loader=_UniqueKeyLoader)
    except FileNotFoundError:
        raise ConfigFileError(path, None, "no such config file") from None
    except UnicodeDecodeError as exc:
        raise ConfigFileError(path, None, f"invalid UTF-8 ({exc.reason} at byte {exc.start})") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc)
        raise ConfigFileError(path, mark.line + 1 if mark else None, f"invalid YAML: {problem}") from None
    if config is None:
        return {}
    if not isinstance(config, dict):
        raise ConfigFileError(path, None, f"a config must be a mapping of keys, got a {type(config).__name__}")
    return config


def load_config_file(path: str | os.PathLike, schema: dict | str | os.PathLike | None = None) -> dict:
    """Read a YAML config file and validate it."""
    return validate_config(read_config_yaml(path), schema)


def load_config_files(paths, schema: dict | str | os.PathLike | None = None) -> dict:
    """Read config files, merge them in order as Snakemake merges several ``--configfile`` files (later keys
    win, mappings merge recursively) and validate the result: what the workflow runs with those files."""
    from snakemake.utils import update_config

    config: dict = {}
    for path in ([paths] if isinstance(paths, (str, os.PathLike)) else paths):
        update_config(config, read_config_yaml(path))
    return validate_config(config, schema)


def write_resolved(resolved: dict, path: str | os.PathLike, loaded_model: str | None = None) -> None:
    """Record a run's resolved config as YAML (atomically); ``loaded_model`` (what training loads: a model
    folder, a hub name or the built-in model) is recorded beside it, outside the hash."""
    from hardneg.atomic import write_text

    header = f"# resolved configuration of run '{resolved['name']}'; config_hash {config_hash(resolved)}\n"
    record = {**resolved, "loaded_model": loaded_model} if loaded_model else resolved
    write_text(path, header + yaml.safe_dump(record, sort_keys=False))


def read_resolved(path: str | os.PathLike) -> dict:
    with open(path, encoding="utf-8") as handle:
        return yaml.safe_load(handle)


# ------------------------------------------------------------------------------- one run's params, by hand
def check_run(config: dict, run, key: str) -> str:
    """``run`` when the config defines it; a :class:`ConfigError` naming ``key`` otherwise (a run named by a
    section that reads finished runs: the summary, the figures)."""
    if run not in config["runs"]:
        raise ConfigError(key, f"no run named {run!r}")
    return run


def check_evaluated_measure(config: dict, measure: str, key: str) -> str:
    """``measure`` when it is one of ``evaluation.measures`` (the per-query values a summary or figure reads
    exist only for those); a :class:`ConfigError` naming ``key`` otherwise."""
    evaluated = config["evaluation"]["measures"]
    if measure not in evaluated:
        raise ConfigError(key, f"{measure!r} is not one of evaluation.measures ({', '.join(evaluated)})")
    return measure


def section_values(section: dict, names: Iterable[str], where: str) -> dict:
    """The values of ``names`` in ``section``; a ``ConfigError`` naming ``<where>.<key>`` for the first unknown
    key (a typo the schema would have rejected) or missing key (a section that was never validated)."""
    names = list(names)
    unknown = sorted(set(section) - set(names))
    if unknown:
        raise ConfigError(f"{where}.{unknown[0]}", f"unknown key; allowed keys: {', '.join(sorted(names))}")
    missing = [name for name in names if name not in section]
    if missing:
        raise ConfigError(f"{where}.{missing[0]}", "required key is missing (a section that was not validated "
                                                   "against the schema: see validate_params, validate_dataset)")
    return {name: section[name] for name in names}


def params_schema(schema: dict, method: str | None = None) -> dict:
    """The JSON schema of a dense run's ``params``: that of runs of ``method`` (the shared dense sections plus
    the method's own keys, as :func:`load_schema` declares them), or with ``method=None`` the
    shared sections only (``$defs/dense_params``)."""
    if method is None:
        return schema["$defs"]["dense_params"]
    for variant in schema["$defs"]["run"].get("allOf", []):
        if variant.get("if", {}).get("properties", {}).get("method", {}).get("const") == method:
            return variant["then"]["properties"]["params"]
    raise ConfigError("method", f"no method named {method!r} in the schema")


def validate_params(params: dict | None = None, *, method: str | None = None, schema: dict | None = None) -> dict:
    """A copy of a dense run's ``params`` validated against the schema (see :func:`params_schema`), every
    missing key filled with its schema default (sections too: ``validate_params()`` is the full default params).

    The workflow validates whole configs with :func:`validate_config`; this is the same validation for one
    run's params, for code that builds a run by hand. Errors name ``params.<key>``.
    """
    schema = schema or load_schema()
    return _validate_fragment(params or {}, params_schema(schema, method), schema, "params")


def validate_dataset(dataset: dict, *, where: str = "dataset", schema: dict | None = None) -> dict:
    """A copy of one dataset's config (an entry of ``datasets``) validated against the schema, every missing key
    filled with its schema default. Errors name ``<where>.<key>``."""
    schema = schema or load_schema()
    return _validate_fragment(dataset, {"$ref": "#/$defs/dataset"}, schema, where)


def _validate_fragment(value: dict, fragment: dict, schema: dict, where: str) -> dict:
    value = copy.deepcopy(value)
    validator = _Validator({**fragment, "$defs": schema["$defs"]})
    found = best_match(validator.iter_errors(value), key=lambda e: -len(e.absolute_path))
    if found is not None:
        error = _describe(found)
        raise ConfigError(f"{where}.{error.key}" if error.key != "<root>" else where, error.message)
    return value
