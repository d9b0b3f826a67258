"""The checks :func:`~hardneg.pipeline.config.validate_config` runs once the schema holds: what one key cannot say
alone (a run's inputs name runs of the right kind on its dataset, no cycle, splits that exist, tuning on a split
never evaluated), the results folder and the targets inside it, the names the results folder keeps, and the model
folders on this machine. Each raises one :class:`~hardneg.errors.ConfigError` naming the dotted key at fault.
:func:`check_dataset_files` is left to the workflow and ``hardneg check-config``: a config can be checked where
its data is not."""

from __future__ import annotations

import os
import posixpath
import re
from collections.abc import Mapping

from hardneg import methods
from hardneg.datasets.adapters import check_dataset, check_split_files, dataset_input_files, dataset_splits
from hardneg.datasets.hidden import hidden_split
from hardneg.dense import st_folder
from hardneg.errors import ConfigError
from hardneg.evaluation.metrics import parse_measures
from hardneg.fusion import default_tune_split
from hardneg.io.layout import RESULTS, reserved_entry
from hardneg.pipeline.resolution import dataset_config, input_runs
from hardneg.schema.names import NAME_PATTERN, NAME_RULE, quoted


def check_model_folders(config: dict) -> None:
    """Every bi-encoder's model folder on this machine (a local or packaged sentence-transformers folder) read as
    training will read it, so that a folder hardneg cannot use (a module it does not hold, a pooling it has not,
    prompts with ColBERT markers) is reported now, naming ``runs.<run>.params.model``, and not by the job that
    loads it. Hub names are read by the jobs (the plan downloads nothing); re-rankers read their own folders."""

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


def check_results_folder(config: dict, reserved: Mapping[str, str]) -> None:
    """``results`` is ``results`` or a folder inside it (``results/<name>``, several levels allowed), each part
    below ``results`` a plain name (:data:`~hardneg.schema.names.NAME_PATTERN`) that no entry of ``results/``
    other than a run's folder takes (``reserved``, with what each holds: :data:`hardneg.experiments.RESERVED_NAMES`)
    nor one of this config's runs; it is kept in its normal form (``results/x/`` and ``./results/x`` are
    ``results/x``)."""
    value = config["results"]
    example = f"{RESULTS}, or {RESULTS}/<name> for a folder of its own"
    plain = posixpath.normpath(value) if value else value
    parts = plain.split("/") if plain else []
    if not parts or posixpath.isabs(value) or parts[0] != RESULTS:
        raise ConfigError("results", f"{quoted(value)} is not the folder {RESULTS} or a folder inside it ({example})")
    for part in parts[1:]:
        if not re.match(NAME_PATTERN, part):
            raise ConfigError(
                "results",
                f"{quoted(part)} in {quoted(value)} is not a plain name: a folder name holds only {NAME_RULE}",
            )
    if len(parts) > 1:
        entry = reserved_entry(parts[1], reserved)
        if entry is not None:
            raise ConfigError(
                "results",
                f"{RESULTS}/{entry} holds {reserved[entry]}; give this config's "
                f"results a folder of another name ({example})",
            )
        if parts[1] in config["runs"]:
            raise ConfigError(
                "results",
                f"{RESULTS}/{parts[1]} is the folder of this config's run {parts[1]!r}; "
                f"give this config's results a folder of another name",
            )
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
                raise ConfigError(
                    f"datasets.{name}",
                    f"{path} does not exist (the dataset is prepared from it): "
                    f"correct the dataset's paths, or give the file a `downloads` "
                    f"entry",
                )


def check_reserved_names(config: dict, reserved: Mapping[str, str]) -> None:
    """No run takes the name of an entry of the results folder that is not a run's folder (``reserved``, with what
    each holds: :data:`hardneg.experiments.RESERVED_NAMES`)."""
    for name in config["runs"]:
        entry = reserved_entry(name, reserved)
        if entry is not None:
            same = "" if entry == name else " (a file system that ignores case sees one name)"
            raise ConfigError(
                f"runs.{name}",
                f"the name {name!r} is reserved: {config['results']}/{entry} holds "
                f"{reserved[entry]}{same}; name the run otherwise",
            )


# What a target may hold: no whitespace or control character (no output of the workflow has one).
_UNPRINTABLE = re.compile(r"[\s\x00-\x1f\x7f-\x9f]")


def check_targets(config: dict) -> None:
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
            raise ConfigError(
                key,
                f"{shown} is an absolute path; a target is a run name or a path under "
                f"{root}/, relative to the working folder ({example})",
            )
        if _UNPRINTABLE.search(target):
            raise ConfigError(key, f"{shown} holds a space or a control character; no output of the workflow does")
        plain = posixpath.normpath(target)
        if not plain.startswith(f"{root}/"):
            raise ConfigError(
                key,
                f"{shown} is not a path under {root}/ (this config's `results`); a target is a "
                f"run name or a path under {root}/ ({example})",
            )
        config["targets"][position] = plain  # as Snakemake matches outputs (it refuses './results/...')


def check_references(config: dict) -> None:
    for name, dataset in config["datasets"].items():
        check_split_files(dataset, f"datasets.{name}")
    datasets, runs = config["datasets"], config["runs"]
    for name in datasets:
        check_dataset(dataset_config(config, name), f"datasets.{name}")
        if hidden_split(datasets[name]) == config["evaluation"]["split"]:  # the hidden positives would be misses
            raise ConfigError(
                f"datasets.{name}.hide_positives.split",
                f"split {hidden_split(datasets[name])!r} is evaluation.split; hide the positives of a "
                f"training split (an extra split hidden from is not evaluated on that dataset)",
            )
    if config["dataset"] not in datasets:
        raise ConfigError(
            "dataset", f"no dataset named {quoted(config['dataset'])} under 'datasets' (defined: {', '.join(datasets)})"
        )
    split = config["evaluation"]["split"]
    for name, run in runs.items():
        dataset = run.get("dataset", config["dataset"])
        if dataset not in datasets:
            raise ConfigError(f"runs.{name}.dataset", f"no dataset named {quoted(dataset)} under 'datasets'")
        for extra in [split] + config["evaluation"]["extra_splits"]:
            if extra not in dataset_splits(datasets[dataset]):
                key = "evaluation.split" if extra == split else "evaluation.extra_splits"
                raise ConfigError(
                    key,
                    f"dataset {dataset!r} (used by run {name!r}) has no split {extra!r}; "
                    f"it has {', '.join(dataset_splits(datasets[dataset]))}",
                )
        roles = methods.get(run["method"]).roles
        check = methods.get(run["method"]).check
        if check is not None:  # what only the method knows of its params and inputs
            check(name, run)
        if run["params"].get("train", {}).get("grad_cache_chunk") and not methods.get(run["method"]).grad_cache:
            raise ConfigError(
                f"runs.{name}.params.train.grad_cache_chunk",
                f"gradient caching applies to a loss over the batch's in-batch documents; method "
                f"{run['method']!r} has none (set 0; the methods that have one: "
                f"{', '.join(n for n, m in methods.methods().items() if m.grad_cache)})",
            )
        if methods.get(run["method"]).kind == methods.RERANK and run["params"]["train"]["dev_every"]:
            raise ConfigError(
                f"runs.{name}.params.train.dev_every",
                "dev evaluation during training searches a dense run's index; a re-ranking run is "
                "evaluated by its metrics.json (set 0)",
            )
        train = run["params"].get("train", {})
        if train.get("keep") == "best" and not train.get("dev_every"):
            raise ConfigError(
                f"runs.{name}.params.train.keep",
                "keep: best keeps the checkpoint with the best dev measure, but the run evaluates no "
                "dev split (set params.train.dev_every, or keep: last)",
            )
        for group in methods.get(run["method"]).exclusive_roles:
            given = [role for role in group if role in run.get("inputs", {})]
            if len(given) > 1:
                raise ConfigError(
                    f"runs.{name}.inputs.{given[1]}",
                    f"a {run['method']} run takes only one of inputs.{' and inputs.'.join(given)}",
                )
        _check_tuning(config, name, dataset)
        for role, others in run.get("inputs", {}).items():
            provides = roles[role].provides
            if isinstance(others, dict):  # an imported list in place of a miner (the schema allows no other)
                if methods.get(run["method"]).episodes is not None:
                    raise ConfigError(
                        f"runs.{name}.inputs.{role}",
                        f"a {run['method']} run mines its episodes' "
                        "negatives with its own checkpoints: name a "
                        "miner run, not an imported list",
                    )
                scorers = [r for r in run.get("inputs", {}) if roles[r].provides == "scorer"]
                if scorers:  # its pool's scores: an imported list has no pool
                    raise ConfigError(
                        f"runs.{name}.inputs.{scorers[0]}",
                        f"a cross-encoder scores the pool a run's negatives are selected from, and run "
                        f"{name} trains on an imported list, which has none: leave "
                        f"inputs.{scorers[0]} out",
                    )
                continue
            for other in [others] if isinstance(others, str) else others:
                if other not in runs:
                    raise ConfigError(f"runs.{name}.inputs.{role}", f"no run named {quoted(other)}")
                if other == name:
                    raise ConfigError(f"runs.{name}.inputs.{role}", "a run cannot be its own input")
                kind = methods.get(runs[other]["method"]).kind
                if provides in methods.registry.DENSE_PROVIDES and kind != methods.DENSE:
                    raise ConfigError(
                        f"runs.{name}.inputs.{role}",
                        f"run {other!r} is a {runs[other]['method']} run; this input needs a dense run "
                        f"({', '.join(methods.names(methods.DENSE))})",
                    )
                if provides in methods.registry.MODEL_PROVIDES and kind not in methods.TRAINED:
                    trained = sorted(n for k in methods.TRAINED for n in methods.names(k))
                    raise ConfigError(
                        f"runs.{name}.inputs.{role}",
                        f"run {other!r} is a {runs[other]['method']} run, which has no model; this input "
                        f"needs a run of {', '.join(trained)}",
                    )
                if provides == "scorer" and methods.get(runs[other]["method"]).score_pairs is None:
                    scorers = sorted(n for n, m in methods.methods().items() if m.score_pairs is not None)
                    raise ConfigError(
                        f"runs.{name}.inputs.{role}",
                        f"run {other!r} is a {runs[other]['method']} run, which scores no pairs; this "
                        f"input needs a run of {', '.join(scorers) or 'a cross-encoder method'}",
                    )
                if provides == "pool_teacher" and methods.get(runs[other]["method"]).rerank is None:
                    raise ConfigError(
                        f"runs.{name}.inputs.{role}",
                        f"run {other!r} is a {runs[other]['method']} run, which re-ranks nothing; a "
                        f"teacher scores the pool as it re-ranks: name a run of "
                        f"{', '.join(methods.names(methods.RERANK))}",
                    )
                if runs[other].get("dataset", config["dataset"]) != dataset:
                    raise ConfigError(f"runs.{name}.inputs.{role}", f"run {other!r} uses another dataset")
    for name in runs:
        _check_acyclic(runs, name)
    for name, run in runs.items():  # once every reference holds: a run training on a split its dataset lacks
        dataset = run.get("dataset", config["dataset"])
        train_split = run["params"].get("train", {}).get("split")
        if (
            methods.get(run["method"]).kind in methods.TRAINED
            and isinstance(train_split, str)
            and train_split not in dataset_splits(datasets[dataset])
        ):
            raise ConfigError(
                f"runs.{name}.params.train.split",
                f"dataset {dataset!r} has no split {train_split!r} to train on; it has "
                f"{', '.join(dataset_splits(datasets[dataset]))}",
            )


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
        raise ConfigError(
            f"runs.{name}.params.tune.split",
            f"split {split!r} is evaluated (evaluation.split, evaluation.extra_splits); alpha is tuned on "
            f"queries that are never evaluated: name another split ({', '.join(others) or 'none left'}) "
            f"or give a fixed runs.{name}.params.alpha",
        )
    if split not in splits:
        raise ConfigError(
            f"runs.{name}.params.tune.split", f"dataset {dataset!r} has no split {split!r}; it has {', '.join(splits)}"
        )
    try:
        parse_measures([run["params"]["tune"]["measure"]])
    except ConfigError as exc:
        raise ConfigError(f"runs.{name}.params.tune.measure", exc.message) from None


def _check_acyclic(runs: dict, name: str, trail: tuple = ()) -> None:
    if name in trail:
        cycle = " -> ".join(trail[trail.index(name) :] + (name,))
        raise ConfigError(f"runs.{trail[0]}.inputs", f"runs depend on each other in a cycle: {cycle}")
    for other in input_runs(runs[name]):
        _check_acyclic(runs, other, trail + (name,))
