"""A run of the configuration resolved: the slice of config it depends on (:func:`resolve_run`), which rules
pass through ``params:`` and each run records as its resolved config, and how runs refer to each other."""

from __future__ import annotations

import copy

from hardneg import methods
from hardneg.datasets.adapters import adapter_of

# Keys of ``params.model`` a run continuing another run's model may set for itself; the others describe the
# loaded model (its architecture and tokenizer) and come from the run it continues.
CONTINUED_MODEL_KEYS = ("query_max_length", "doc_max_length")


def continued_run(runs: dict, name: str) -> tuple[str, str] | None:
    """(role, run) of the run whose model run ``name`` starts from: its input of a role providing ``model``,
    else of a role providing ``doc_index`` (ADORE's query encoder starts from its document run's model)."""
    method = methods.get(runs[name]["method"])
    for provides in ("model", "doc_index"):
        for role in method.roles_providing(provides):
            other = runs[name].get("inputs", {}).get(role)
            if other is not None:
                return role, other
    return None


def input_runs(run: dict) -> list[str]:
    """The names of every run that ``run`` (a run's config) takes as an input, in role order (an imported list,
    ``{imported: <folder>}``, is no run)."""
    names = []
    for others in run.get("inputs", {}).values():
        names += [others] if isinstance(others, str) else [] if isinstance(others, dict) else list(others)
    return names


def dataset_config(config: dict, name: str) -> dict:
    """A dataset's config with its seed resolved (its own, else the global seed) when its adapter generates data
    from a seed."""
    cfg = dict(config["datasets"][name])
    if adapter_of(cfg).seeded:
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
        "inputs": {
            role: resolve_run(config, other)
            if isinstance(other, str)
            else dict(other)
            if isinstance(other, dict)
            else [resolve_run(config, o) for o in other]
            for role, other in run.get("inputs", {}).items()
        },  # an imported list as it is given
        **({"episode": copy.deepcopy(run["episode"])} if "episode" in run else {}),  # hardneg.pipeline.episodes
    }
