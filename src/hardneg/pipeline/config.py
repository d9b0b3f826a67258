"""The configuration composed: the schema with the registered methods, every domain's checks, and per-run
resolution.

The schema file ships with the package (:mod:`hardneg.schema`). :func:`validate_config` fills defaults in
place, runs the checks each domain exports (datasets, downloads, measures, indexes, summary) and the workflow's
own (run names the results folder keeps, the rules ``resources`` may name, ``targets``), and raises one
:class:`ConfigError` naming the dotted key at fault, before any job starts. :func:`read_config_files` reads and
merges the files, for ``hardneg check-config`` and the Snakefile alike.
:func:`resolve_run` returns the slice of config one run needs, which is what rules pass via ``params:``
and what each run records as its resolved config.
"""

from __future__ import annotations

import copy
import functools
import os
import posixpath
import re
from pathlib import Path

from hardneg import methods
from hardneg.datasets.adapters import check_dataset, check_split_files, dataset_input_files, dataset_splits
from hardneg.datasets.download import check_downloads
from hardneg.datasets.hidden import hidden_split
from hardneg.errors import ConfigError, ConfigFileError
from hardneg.evaluation.metrics import parse_measures
from hardneg.evaluation.summary import check_summary_config
from hardneg.fusion import default_tune_split
from hardneg.io.layout import RESERVED_NAMES, RESULTS, reserved_entry
from hardneg.methods.adore import pq_matrix
from hardneg.mining.policies import POLICY_SCHEMA
from hardneg.pipeline import false_negatives, replicates
from hardneg.pipeline.compare_plan import check_compare_config
from hardneg.pipeline.index_factories import check_index_factories
from hardneg.pipeline.mining_plan import check_imported_scores, check_policies, check_pool_reach
from hardneg.pipeline.plan import Plan
from hardneg.pipeline.resolution import CONTINUED_MODEL_KEYS, continued_run, dataset_config, input_runs
from hardneg.pipeline.resources import check_resource_rules
from hardneg.schema.files import read_config_yaml
from hardneg.schema.names import NAME_PATTERN, NAME_RULE, quoted
from hardneg.schema.validation import (describe, first_error, first_error_of, read_schema, validate_fragment,
                                       validator_for)


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
        roles = {role: ({"type": "array", "items": {"type": "string"}, "minItems": spec.min_count}
                        | ({"maxItems": spec.max_count} if spec.max_count else {}) if spec.many
                        else _single_role(spec, defs))
                       | {"description": spec.description or methods.PROVIDES[spec.provides]}
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


def _single_role(spec, defs: dict) -> dict:
    """The schema of a role naming one run: its name; for a role providing a miner, also an imported list
    (``{imported: <folder>}``, ``$defs/imported_list``) in its place. One schema of two types rather than a choice
    of two, so that an error names the key at fault (an object's keys apply to an object only)."""
    if spec.provides == "miner":
        return {key: value for key, value in copy.deepcopy(defs["imported_list"]).items() if key != "description"} \
            | {"type": ["string", "object"]}
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
        false_negatives.check_config(config)  # before its runs are generated: errors name its own keys
        written = set(config["runs"])
        # the experiments' runs first: a generated run may have seeds (pq_matrix.seeds) for replicates to expand
        if any([pq_matrix.expand_config(config), false_negatives.expand_config(config),
                replicates.expand_config(config)]):
            explicit = {**_explicit_model_keys(config), **explicit}  # the generated runs' own keys
            explicit |= {member: explicit[run] for run, members in replicates.replicates(config).items()
                         for member in members[1:]}  # a replicate: what its run's entry wrote, not its defaults
            added = [run for run in config["runs"] if run not in written]
            error = _first_run_error(validator, config, added) if added else None
    if error is not None:
        raise describe(error)
    _check_results_folder(config)
    _check_reserved_names(config)
    check_resource_rules(config)
    _check_references(config)
    check_policies(config)
    check_downloads(config)
    _inherit_models(config, explicit)
    _check_model_folders(config)
    _check_targets(config)
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
                                  f"{key}: {quoted(theirs[key])}; a continued run inherits its model settings (only "
                                  f"{' and '.join(CONTINUED_MODEL_KEYS)} may be set): remove the key or make it equal")
        inherited = copy.deepcopy(theirs)
        for key in CONTINUED_MODEL_KEYS:
            if key in explicit.get(name, ()):
                inherited[key] = mine[key]
        runs[name]["params"]["model"] = inherited

    for name in runs:
        inherit(name)


def _check_model_folders(config: dict) -> None:
    """Every bi-encoder's model folder on this machine (a local or packaged sentence-transformers folder) read as
    training will read it, so that a folder hardneg cannot use (a module it does not hold, a pooling it has not,
    prompts with ColBERT markers) is reported now, naming ``runs.<run>.params.model``, and not by the job that
    loads it. Hub names are read by the jobs (the plan downloads nothing); re-rankers read their own folders."""
    from hardneg.dense import st_folder  # JSON only: no torch

    for name, run in config["runs"].items():
        model = run.get("params", {}).get("model")
        method = methods.get(run["method"]) if run.get("method") in methods.names() else None
        if not isinstance(model, dict) or method is None or method.rerank is not None:
            continue  # a re-ranker (a cross-encoder, the ColBERT teacher) reads its own kind of folder
        where = f"runs.{name}.params.model"
        st_folder.resolve_model(model, where=where, download=False)
        folder = st_folder.model_folder(model["name"], where=f"{where}.name", download=False)
        if folder is not None:
            folder.layers(where=f"{where}.name")


def _check_results_folder(config: dict) -> None:
    """``results`` is ``results`` or a folder inside it (``results/<name>``, several levels allowed), each part
    below ``results`` a plain name (:data:`~hardneg.schema.names.NAME_PATTERN`) that no entry of ``results/``
    other than a run's folder takes (:data:`~hardneg.io.layout.RESERVED_NAMES`) nor one of this config's runs; it is
    kept in its normal form (``results/x/`` and ``./results/x`` are ``results/x``)."""
    value = config["results"]
    example = f"{RESULTS}, or {RESULTS}/<name> for a folder of its own"
    plain = posixpath.normpath(value) if value else value
    parts = plain.split("/") if plain else []
    if not parts or posixpath.isabs(value) or parts[0] != RESULTS:
        raise ConfigError("results", f"{quoted(value)} is not the folder {RESULTS} or a folder inside it ({example})")
    for part in parts[1:]:
        if not re.match(NAME_PATTERN, part):
            raise ConfigError("results", f"{quoted(part)} in {quoted(value)} is not a plain name: a folder name "
                                         f"holds only {NAME_RULE}")
    if len(parts) > 1:
        entry = reserved_entry(parts[1])
        if entry is not None:
            raise ConfigError("results", f"{RESULTS}/{entry} holds {RESERVED_NAMES[entry]}; give this config's "
                                         f"results a folder of another name ({example})")
        if parts[1] in config["runs"]:
            raise ConfigError("results", f"{RESULTS}/{parts[1]} is the folder of this config's run {parts[1]!r}; "
                                         f"give this config's results a folder of another name")
    config["results"] = plain


def check_dataset_files(config: dict) -> None:
    """Every file a dataset of a validated config is prepared from exists, or is fetched by its ``downloads``
    (the workflow and ``hardneg check-config`` check it; :func:`validate_config` does not, so that a config can be
    checked where its data is not): a dataset redefined over files that are not there would otherwise leave its
    earlier preparation in place (Snakemake keeps an output whose job cannot run), and the runs on it would go on
    with the old data."""
    fetched = {os.path.normpath(path) for path in config.get("downloads", {})}
    for name in config["datasets"]:
        for path in dataset_input_files(dataset_config(config, name)):
            if not os.path.exists(path) and os.path.normpath(path) not in fetched:
                raise ConfigError(f"datasets.{name}", f"{path} does not exist (the dataset is prepared from it): "
                                                      f"correct the dataset's paths, or give the file a `downloads` "
                                                      f"entry")


def _check_reserved_names(config: dict) -> None:
    """No run takes the name of an entry of the results folder that is not a run's folder
    (:data:`hardneg.io.layout.RESERVED_NAMES`)."""
    for name in config["runs"]:
        entry = reserved_entry(name)
        if entry is not None:
            same = "" if entry == name else " (a file system that ignores case sees one name)"
            raise ConfigError(f"runs.{name}", f"the name {name!r} is reserved: {config['results']}/{entry} holds "
                                              f"{RESERVED_NAMES[entry]}{same}; name the run otherwise")


# What a target may hold: no whitespace or control character (no output of the workflow has one).
_UNPRINTABLE = re.compile(r"[\s\x00-\x1f\x7f-\x9f]")


def _check_targets(config: dict) -> None:
    """Each of ``targets`` is a run of ``runs`` (a name without '/'), or a relative path that lies inside the
    config's ``results`` folder once normalised (and is replaced by its normal form): what the schema documents.
    Anything else would have Snakemake look at a file outside the workflow's outputs (``/etc/passwd``, the results
    folder itself, another config's results) and report nothing to be done."""
    root = config["results"]
    example = f"e.g. {root}/<run>/metrics.json"
    for position, target in enumerate(config.get("targets") or []):
        key, shown = f"targets.{position}", quoted(target)
        if "/" not in target:
            if target not in config["runs"]:
                raise ConfigError(key, f"no run named {shown} (a target is a run name or a path under {root}/)")
            continue
        if posixpath.isabs(target):
            raise ConfigError(key, f"{shown} is an absolute path; a target is a run name or a path under "
                                   f"{root}/, relative to the working folder ({example})")
        if _UNPRINTABLE.search(target):
            raise ConfigError(key, f"{shown} holds a space or a control character; no output of the workflow does")
        plain = posixpath.normpath(target)
        if not plain.startswith(f"{root}/"):
            raise ConfigError(key, f"{shown} is not a path under {root}/ (this config's `results`); a target is a "
                                   f"run name or a path under {root}/ ({example})")
        config["targets"][position] = plain  # as Snakemake matches outputs (it refuses './results/...')


def _check_references(config: dict) -> None:
    for name, dataset in config["datasets"].items():
        check_split_files(dataset, f"datasets.{name}")
    datasets, runs = config["datasets"], config["runs"]
    for name in datasets:
        check_dataset(dataset_config(config, name), f"datasets.{name}")
        if hidden_split(datasets[name]) == config["evaluation"]["split"]:  # the hidden positives would be misses
            raise ConfigError(f"datasets.{name}.hide_positives.split",
                              f"split {hidden_split(datasets[name])!r} is evaluation.split; hide the positives of a "
                              f"training split (an extra split hidden from is not evaluated on that dataset)")
    if config["dataset"] not in datasets:
        raise ConfigError("dataset", f"no dataset named {quoted(config['dataset'])} under 'datasets' "
                                     f"(defined: {', '.join(datasets)})")
    split = config["evaluation"]["split"]
    for name, run in runs.items():
        dataset = run.get("dataset", config["dataset"])
        if dataset not in datasets:
            raise ConfigError(f"runs.{name}.dataset", f"no dataset named {quoted(dataset)} under 'datasets'")
        for extra in [split] + config["evaluation"]["extra_splits"]:
            if extra not in dataset_splits(datasets[dataset]):
                key = "evaluation.split" if extra == split else "evaluation.extra_splits"
                raise ConfigError(key, f"dataset {dataset!r} (used by run {name!r}) has no split {extra!r}; "
                                       f"it has {', '.join(dataset_splits(datasets[dataset]))}")
        roles = methods.get(run["method"]).roles
        if methods.get(run["method"]).check is not None:  # what only the method knows of its params and inputs
            methods.get(run["method"]).check(name, run)
        if run["params"].get("train", {}).get("grad_cache_chunk") and not methods.get(run["method"]).grad_cache:
            raise ConfigError(f"runs.{name}.params.train.grad_cache_chunk",
                              f"gradient caching applies to a loss over the batch's in-batch documents; method "
                              f"{run['method']!r} has none (set 0; the methods that have one: "
                              f"{', '.join(n for n, m in methods.methods().items() if m.grad_cache)})")
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
            if isinstance(others, dict):  # an imported list in place of a miner (the schema allows no other)
                if methods.get(run["method"]).episodes is not None:
                    raise ConfigError(f"runs.{name}.inputs.{role}", f"a {run['method']} run mines its episodes' "
                                                                     "negatives with its own checkpoints: name a "
                                                                     "miner run, not an imported list")
                scorers = [r for r in run.get("inputs", {}) if roles[r].provides == "scorer"]
                if scorers:  # its pool's scores: an imported list has no pool
                    raise ConfigError(f"runs.{name}.inputs.{scorers[0]}",
                                      f"a cross-encoder scores the pool a run's negatives are selected from, and run "
                                      f"{name} trains on an imported list, which has none: leave "
                                      f"inputs.{scorers[0]} out")
                continue
            for other in ([others] if isinstance(others, str) else others):
                if other not in runs:
                    raise ConfigError(f"runs.{name}.inputs.{role}", f"no run named {quoted(other)}")
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
                if provides == "scorer" and methods.get(runs[other]["method"]).score_pairs is None:
                    scorers = sorted(n for n, m in methods.methods().items() if m.score_pairs is not None)
                    raise ConfigError(f"runs.{name}.inputs.{role}",
                                      f"run {other!r} is a {runs[other]['method']} run, which scores no pairs; this "
                                      f"input needs a run of {', '.join(scorers) or 'a cross-encoder method'}")
                if provides == "pool_teacher" and methods.get(runs[other]["method"]).rerank is None:
                    raise ConfigError(f"runs.{name}.inputs.{role}",
                                      f"run {other!r} is a {runs[other]['method']} run, which re-ranks nothing; a "
                                      f"teacher scores the pool as it re-ranks: name a run of "
                                      f"{', '.join(methods.names(methods.RERANK))}")
                if runs[other].get("dataset", config["dataset"]) != dataset:
                    raise ConfigError(f"runs.{name}.inputs.{role}", f"run {other!r} uses another dataset")
    for name in runs:
        _check_acyclic(runs, name)
    for name, run in runs.items():  # once every reference holds: a run training on a split its dataset lacks
        dataset = run.get("dataset", config["dataset"])
        train_split = run["params"].get("train", {}).get("split")
        if methods.get(run["method"]).kind in methods.TRAINED and isinstance(train_split, str) \
                and train_split not in dataset_splits(datasets[dataset]):
            raise ConfigError(f"runs.{name}.params.train.split",
                              f"dataset {dataset!r} has no split {train_split!r} to train on; it has "
                              f"{', '.join(dataset_splits(datasets[dataset]))}")


def _check_tuning(config: dict, name: str, dataset: str) -> None:
    """A fusion run tuning its weight (hardneg.methods.Method.tuning_split) tunes it on a split of its dataset that
    is never evaluated, with a measure ir-measures knows."""
    run = config["runs"][name]
    if run["params"].get("tune", {}).get("split", "") is None:  # its default: resolved once, here
        run["params"]["tune"]["split"] = default_tune_split(config["datasets"][dataset])
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


def _check_acyclic(runs: dict, name: str, trail: tuple = ()) -> None:
    if name in trail:
        cycle = " -> ".join(trail[trail.index(name):] + (name,))
        raise ConfigError(f"runs.{trail[0]}.inputs", f"runs depend on each other in a cycle: {cycle}")
    for other in input_runs(runs[name]):
        _check_acyclic(runs, other, trail + (name,))


def load_config_file(path: str | os.PathLike, schema: dict | str | os.PathLike | None = None) -> dict:
    """Read a YAML config file and validate it."""
    return validate_config(read_config_yaml(path), schema)


# What the workflow writes and a config file never is: a path of this kind given as a config was meant as a target.
RESULT_SUFFIXES = frozenset({".parquet", ".trec", ".npy", ".faiss", ".html", ".png", ".md", ".tsv", ".safetensors"})


def _check_not_a_result(path) -> None:
    """Refuse a config file that is one of the workflow's results (under ``results/``, a ``metrics.json``, or a
    file of a kind the workflow writes): Snakemake's ``--configfile`` takes every path after it as a config file, so
    a target written after it arrives here, and would otherwise be reported as a config with unknown keys."""
    shown = os.path.relpath(path) if os.path.isabs(path) and Path(path).is_relative_to(os.getcwd()) else path
    parts = Path(os.path.normpath(shown)).parts
    if parts[:1] == (RESULTS,) or Path(path).name == "metrics.json" or Path(path).suffix in RESULT_SUFFIXES:
        raise ConfigFileError(shown, None, "a result of the workflow, read as a config file: --configfile takes "
                                           "every path after it as a config file, so write targets before it "
                                           f"(snakemake --cores all {shown} --configfile my.yaml)")


def read_config_files(paths, overrides: dict | None = None) -> dict:
    """Config files read with :func:`~hardneg.schema.files.read_config_yaml` and merged in order as Snakemake merges
    several ``--configfile`` files (later keys win, mappings merge recursively), then ``overrides`` (Snakemake's
    ``--config KEY=VALUE``) merged on top; unvalidated. The Snakefile reads its config with it, so the workflow and
    ``hardneg check-config`` refuse the same files."""
    from snakemake.utils import update_config  # Snakemake: imported only where the workflow is loaded

    config: dict = {}
    for path in ([paths] if isinstance(paths, (str, os.PathLike)) else paths):
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
