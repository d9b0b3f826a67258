"""Reading validated config sections into plain values and dataclasses, and checking the run names and measures
that sections reading finished runs refer to."""

from __future__ import annotations

import copy
import dataclasses
import typing
from collections.abc import Iterable, Mapping

from hardneg.errors import ConfigError


def section_values(section: Mapping, names: Iterable[str], where: str) -> dict:
    """The values of ``names`` in ``section``; a ``ConfigError`` naming ``<where>.<key>`` for the first unknown
    key (a typo the schema would have rejected) or missing key (a section that was never validated)."""
    names = list(names)
    unknown = sorted(set(section) - set(names))
    if unknown:
        raise ConfigError(f"{where}.{unknown[0]}", f"unknown key; allowed keys: {', '.join(sorted(names))}")
    missing = [name for name in names if name not in section]
    if missing:
        raise ConfigError(
            f"{where}.{missing[0]}",
            "required key is missing (a section that was not validated "
            "against the schema: see validate_params, validate_dataset)",
        )
    return {name: section[name] for name in names}


def dataclass_from(cls, values: Mapping, where: str):
    """Build dataclass ``cls`` from a validated mapping; every field must be there and no other key may be.

    ``where`` is the dotted config key of the mapping, used in the :class:`ConfigError` raised otherwise."""
    values = section_values(values, [f.name for f in dataclasses.fields(cls)], where)
    hints = typing.get_type_hints(cls)
    return cls(
        **{
            name: dataclass_from(hints[name], value, f"{where}.{name}")
            if dataclasses.is_dataclass(hints.get(name))
            else copy.deepcopy(value)
            for name, value in values.items()
        }
    )


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
