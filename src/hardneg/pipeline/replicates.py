"""Runs repeated over seeds: a run's ``seeds`` list makes one run per seed, so that a number reported for it carries
its spread (a single training's score moves with its seed as much as some differences between methods do).

The run keeps its name and trains with the first seed (its ``seed``); each other seed ``s`` makes a run of its own,
``<run>_seed<s>`` (:func:`replicate_name`), a copy of the entry with that seed and without ``seeds``. Each input
of a replicate is the replicate of the same seed where the input run has one (the seed among its own ``seeds``),
else the input run itself: ADORE over STAR, both with seeds ``[1, 2, 3]``, pairs ``adore_star_seed2`` with
``star_seed2``; over a STAR with one seed, every ADORE replicate continues that STAR.
:func:`expand_config` adds the replicates while the config is validated (before any rule sees it), so each is a
run of the DAG like any other, with its own folder under results/; :func:`replicates` tells the tables which runs
are one run's seeds.
"""

from __future__ import annotations

import copy

from hardneg.errors import ConfigError
from hardneg.schema.names import replicate_name, seed_runs


def _paired(value, seed: int, seeded: dict[str, list[int]]):
    """An input (a run name or a list of them) of a replicate of ``seed``: each run's replicate of that seed where
    it has one."""
    if isinstance(value, list):
        return [_paired(item, seed, seeded) for item in value]
    if isinstance(value, dict):  # an imported list: the same for every replicate
        return value
    seeds = seeded.get(value, [])
    return replicate_name(value, seed) if seed in seeds[1:] else value


def expand_config(config: dict) -> bool:
    """Add the replicates of every run with ``seeds`` to a validated config's ``runs`` (and set each such run's
    ``seed`` to its first seed). Returns whether any were added. A ConfigError names ``runs.<run>.seed`` when a run
    gives a ``seed`` that is not its first seed, and ``runs.<replicate>`` when a replicate's name is a run of the
    config already."""
    runs = config["runs"]
    seeded = {name: list(run["seeds"]) for name, run in runs.items() if run.get("seeds")}
    for name, seeds in seeded.items():
        if "seed" in runs[name] and runs[name]["seed"] != seeds[0]:
            raise ConfigError(
                f"runs.{name}.seed",
                f"{runs[name]['seed']} is not the first of its seeds "
                f"({', '.join(map(str, seeds))}): the run trains with that one; "
                f"leave `seed` out or make it the first seed",
            )
        runs[name]["seed"] = seeds[0]
    generated = {}  # replicate → (its run, its entry)
    for name, seeds in seeded.items():
        entry = {key: value for key, value in runs[name].items() if key != "seeds"}
        for seed in seeds[1:]:
            generated[replicate_name(name, seed)] = (
                name,
                copy.deepcopy(
                    {
                        **entry,
                        "seed": seed,
                        **(
                            {"inputs": {role: _paired(value, seed, seeded) for role, value in entry["inputs"].items()}}
                            if "inputs" in entry
                            else {}
                        ),
                    }
                ),
            )
    for replicate, (name, entry) in generated.items():  # a config validated before holds them, as generated
        if replicate in runs and runs[replicate] != entry:
            raise ConfigError(
                f"runs.{replicate}",
                f"the replicate of run {name!r} with seed {entry['seed']} takes "
                f"this name ({name}.seeds); rename this run",
            )
    for replicate, (_, entry) in generated.items():
        runs.setdefault(replicate, entry)
    return bool(seeded)


def replicates(config: dict) -> dict[str, list[str]]:
    """Each run with ``seeds`` → its runs, one per seed in the order of ``seeds`` (the run itself first)."""
    return {name: seed_runs(name, run) for name, run in config["runs"].items() if run.get("seeds")}


def with_replicates(config: dict, runs: list[str]) -> list[str]:
    """``runs``, each followed by its replicates."""
    groups = replicates(config)
    return [member for run in runs for member in groups.get(run, [run])]
