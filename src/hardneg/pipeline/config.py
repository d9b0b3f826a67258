"""The configuration composed: the schema with the registered methods, every domain's checks, and per-run
resolution.

The schema file ships with the package (:mod:`hardneg.schema`). :func:`validate_config` fills defaults in
place, runs the checks each domain exports (datasets, downloads, measures, indexes, summary) and the workflow's
own (:mod:`hardneg.pipeline.config_checks`: references between runs, run names the results folder keeps,
``targets``, model folders; the rules ``resources`` may name), and raises one
:class:`ConfigError` naming the dotted key at fault, before any job starts. :func:`read_config_files` reads and
merges the files, for ``hardneg check-config`` and the Snakefile alike.
:func:`resolve_run` returns the slice of config one run needs, which is what rules pass via ``params:``
and what each run records as its resolved config.
"""

from __future__ import annotations

import copy
import functools
import os
from pathlib import Path

from hardneg import methods
from hardneg.datasets.download import check_downloads
from hardneg.errors import ConfigError, ConfigFileError
from hardneg.evaluation.metrics import parse_measures
from hardneg.evaluation.summary import check_summary_config
from hardneg.experiments import EXPERIMENTS, RESERVED_NAMES
from hardneg.io.layout import RESULTS
from hardneg.mining.policies import POLICY_SCHEMA
from hardneg.pipeline import replicates
from hardneg.pipeline.compare_plan import check_compare_config
from hardneg.pipeline.config_checks import (
    check_model_folders,
    check_references,
    check_reserved_names,
    check_results_folder,
    check_targets,
)
from hardneg.pipeline.index_factories import check_index_factories
from hardneg.pipeline.mining_plan import check_imported_scores, check_policies, check_pool_reach
from hardneg.pipeline.plan import Plan
from hardneg.pipeline.resolution import CONTINUED_MODEL_KEYS, continued_run
from hardneg.pipeline.resources import check_resource_rules
from hardneg.schema.files import read_config_yaml
from hardneg.schema.names import quoted
from hardneg.schema.validation import (
    describe,
    first_error,
    first_error_of,
    read_schema,
    validate_fragment,
    validator_for,
)


def load_schema(path: str | os.PathLike | None = None) -> dict:
    """The configuration schema (the package's, or the file at ``path``) with one run variant per registered
    method (see :func:`with_methods`) and the keys of a selection policy (:func:`with_policies`)."""
    return with_policies(with_methods(read_schema(path)))


def with_policies(schema: dict) -> dict:
    """Add the keys of a named selection policy (``policies.<name>``:
    :data:`hardneg.mining.policies.POLICY_SCHEMA`) to a schema."""
    schema = copy.deepcopy(schema)
    schema["properties"]["policies"]["additionalProperties"] = copy.deepcopy(POLICY_SCHEMA)
    return schema


def with_methods(schema: dict) -> dict:
    """Add the registered methods to a schema: the ``method`` enum of ``$defs/run``, and per method the input
    roles it accepts (and requires) and its parameters (the shared section of its kind plus its own keys)."""
    schema = copy.deepcopy(schema)
    defs = schema["$defs"]
    run = defs["run"]
    common = {key: value for key, value in run["properties"].items() if key != "method"}
    written = {key: value for key, value in run["properties"]["method"].items() if key != "type"}
    run["properties"]["method"] = written | {"enum": list(methods.names())}
    variants = []
    for name, method in methods.methods().items():
        params = copy.deepcopy(defs[f"{method.kind}_params"])
        params["properties"].update(copy.deepcopy(dict(method.schema)))
        roles = {
            role: (
                {"type": "array", "items": {"type": "string"}, "minItems": spec.min_count}
                | ({"maxItems": spec.max_count} if spec.max_count else {})
                if spec.many
                else _single_role(spec, defs)
            )
            | {"description": spec.description or methods.PROVIDES[spec.provides]}
            for role, spec in method.roles.items()
        }
        inputs = {"type": "object", "default": {}, "additionalProperties": False, "properties": roles}
        required = [role for role, spec in method.roles.items() if spec.required]
        if required:
            inputs["required"] = required
        variants.append(
            {
                "if": {"properties": {"method": {"const": name}}},
                "then": {
                    "additionalProperties": False,
                    "properties": {
                        "method": {"const": name},
                        **copy.deepcopy(common),
                        "inputs": inputs,
                        "params": params,
                    },
                },
            }
        )
    run["allOf"] = variants
    return schema


def _single_role(spec, defs: dict) -> dict:
    """The schema of a role naming one run: its name; for a role providing a miner, also an imported list
    (``{imported: <folder>}``, ``$defs/imported_list``) in its place. One schema of two types rather than a choice
    of two, so that an error names the key at fault (an object's keys apply to an object only)."""
    if spec.provides == "miner":
        return {key: value for key, value in copy.deepcopy(defs["imported_list"]).items() if key != "description"} | {
            "type": ["string", "object"]
        }
    return {"type": "string"}


def validate_config(config: dict, schema: dict | str | os.PathLike | None = None) -> dict:
    """Validate ``config`` against the schema, fill defaults in place and check cross-references.

    Returns the same dict. Raises :class:`ConfigError` naming the first offending key.
    """
    if not isinstance(config, dict):
        raise ConfigError("<root>", "the configuration must be a mapping")
    modules = config.get("method_modules", [])
    if not isinstance(modules, list) or not all(isinstance(m, str) for m in modules):
        raise ConfigError("method_modules", f"expected a list of module names or .py paths, got {quoted(modules)}")
    methods.load_modules(modules)
    explicit = _explicit_model_keys(config)
    if schema is None or isinstance(schema, (str, os.PathLike)):
        validator = _validator(None if schema is None else os.fspath(schema), _registry_key())
    else:
        if "allOf" not in schema.get("$defs", {}).get("run", {}):
            schema = with_policies(with_methods(schema))
        validator = validator_for(schema)
    error = first_error(validator, config)
    if error is None:
        for experiment in EXPERIMENTS.values():  # before their runs are generated: errors name their own keys
            experiment.check_config(config)
        written = set(config["runs"])
        # the experiments' runs first: a generated run may have seeds of its own for replicates to expand
        expanded = [experiment.expand_config(config) for experiment in EXPERIMENTS.values()]
        if any([*expanded, replicates.expand_config(config)]):
            explicit = {**_explicit_model_keys(config), **explicit}  # the generated runs' own keys
            explicit |= {
                member: explicit[run]
                for run, members in replicates.replicates(config).items()
                for member in members[1:]
            }  # a replicate: what its run's entry wrote, not its defaults
            added = [run for run in config["runs"] if run not in written]
            error = _first_run_error(validator, config, added) if added else None
    if error is not None:
        raise describe(error)
    check_results_folder(config, RESERVED_NAMES)
    check_reserved_names(config, RESERVED_NAMES)
    check_resource_rules(config)
    check_references(config)
    check_policies(config)
    check_downloads(config)
    _inherit_models(config, explicit)
    check_model_folders(config)
    check_targets(config)
    parse_measures(config["evaluation"]["measures"])  # an unknown measure stops the run now, not after training
    check_index_factories(config)
    plan = Plan(config)
    check_pool_reach(plan)
    check_imported_scores(plan)
    check_summary_config(config)
    check_compare_config(config)
    return config


def _registry_key() -> tuple:
    """What the composed schema depends on besides its file: the registered methods (a config's
    ``method_modules`` may add some)."""
    return tuple((name, id(method)) for name, method in methods.methods().items())


@functools.lru_cache(maxsize=8)
def _validator(path: str | None, registry: tuple):
    """The validator of the composed schema (:func:`load_schema` of ``path``) for the methods registered as
    ``registry`` says: composed once per process, as Snakemake and the test suite validate configs many times."""
    return validator_for(load_schema(path))


def _first_run_error(validator, config: dict, runs: list[str]):
    """:func:`first_error` of ``runs`` (runs generated after the config was validated, their defaults filled in
    place) against the schema of ``runs``, with the errors' paths as in the whole config."""
    return first_error_of(validator, {run: config["runs"][run] for run in runs}, "runs")


def _explicit_model_keys(config: dict) -> dict:
    """run → the ``params.model`` keys the user wrote (read before the schema fills defaults)."""
    runs = config.get("runs")
    runs = runs if isinstance(runs, dict) else {}
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
                raise ConfigError(
                    f"runs.{name}.params.model.{key}",
                    f"run {name!r} continues the model of run {parent!r} (inputs.{role}), which has "
                    f"{key}: {quoted(theirs[key])}; a continued run inherits its model settings (only "
                    f"{' and '.join(CONTINUED_MODEL_KEYS)} may be set): remove the key or make it equal",
                )
        inherited = copy.deepcopy(theirs)
        for key in CONTINUED_MODEL_KEYS:
            if key in explicit.get(name, ()):
                inherited[key] = mine[key]
        runs[name]["params"]["model"] = inherited

    for name in runs:
        inherit(name)


def load_config_file(path: str | os.PathLike, schema: dict | str | os.PathLike | None = None) -> dict:
    """Read a YAML config file and validate it."""
    return validate_config(read_config_yaml(path), schema)


# What the workflow writes and a config file never is: a path of this kind given as a config was meant as a target.
RESULT_SUFFIXES = frozenset({".parquet", ".trec", ".npy", ".faiss", ".html", ".png", ".md", ".tsv", ".safetensors"})


def _check_not_a_result(path) -> None:
    """Refuse a config file that is one of the workflow's results (under ``results/``, a ``metrics.json``, or a
    file of a kind the workflow writes): Snakemake's ``--configfile`` takes every path after it as a config file, so
    a target written after it arrives here, and would otherwise be reported as a config with unknown keys. (A
    target not built yet never arrives: Snakemake's own reader stops on the missing file first.)"""
    shown = os.path.relpath(path) if os.path.isabs(path) and Path(path).is_relative_to(os.getcwd()) else path
    parts = Path(os.path.normpath(shown)).parts
    if parts[:1] == (RESULTS,) or Path(path).name == "metrics.json" or Path(path).suffix in RESULT_SUFFIXES:
        raise ConfigFileError(
            shown,
            None,
            "a result of the workflow, read as a config file: --configfile takes "
            "every path after it as a config file, so write targets before it "
            f"(snakemake --cores all {shown} --configfile my.yaml) or join the file to it with = "
            f"(snakemake --cores all --configfile=my.yaml {shown})",
        )


def read_config_files(paths, overrides: dict | None = None) -> dict:
    """Config files read with :func:`~hardneg.schema.files.read_config_yaml` and merged in order as Snakemake merges
    several ``--configfile`` files (later keys win, mappings merge recursively), then ``overrides`` (Snakemake's
    ``--config KEY=VALUE``) merged on top; unvalidated. The Snakefile reads its config with it, so the workflow and
    ``hardneg check-config`` refuse the same files."""
    from snakemake.utils import update_config  # Snakemake: imported only where the workflow is loaded

    config: dict = {}
    for path in [paths] if isinstance(paths, (str, os.PathLike)) else paths:
        _check_not_a_result(path)
        update_config(config, read_config_yaml(path))
    if overrides:
        update_config(config, dict(overrides))
    return config


def load_config_files(paths, schema: dict | str | os.PathLike | None = None) -> dict:
    """Read config files, merge them in order (:func:`read_config_files`) and validate the result: what the
    workflow runs with those files."""
    return validate_config(read_config_files(paths), schema)


# ------------------------------------------------------------------------------- one run's params, by hand
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
    return validate_fragment(params or {}, params_schema(schema, method), schema, "params")
