"""Experiments: config sections that generate runs and compare them in tables of their own (the ADORE PQ matrix,
the false-negative experiment). Each is one module of this package declaring ``EXPERIMENT``
(:class:`hardneg.experiments.declaration.Experiment`); :data:`EXPERIMENTS` holds them by name, found in the
package, in the order of their names. The workflow (config expansion, targets, report, rules) iterates them; a new
experiment is a new module here and its rule file. :data:`RESERVED_NAMES`: the entries of the results folder no run
may take, the experiments' among them.
"""

from __future__ import annotations

import importlib
import pkgutil

from hardneg.experiments.declaration import Experiment
from hardneg.io import layout


def _declared() -> dict[str, Experiment]:
    found = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda info: info.name):
        if info.name == "declaration":
            continue
        experiment = getattr(importlib.import_module(f"{__name__}.{info.name}"), "EXPERIMENT", None)
        if isinstance(experiment, Experiment):
            found[experiment.name] = experiment
    return found


EXPERIMENTS: dict[str, Experiment] = _declared()


def _reserved(experiments: dict[str, Experiment]) -> dict[str, str]:
    names = dict(layout.RESERVED_NAMES)
    for experiment in experiments.values():
        for name, holds in experiment.reserved_names.items():
            if layout.reserved_entry(name, names) is not None:
                raise ValueError(f"experiment {experiment.name!r} reserves {name!r}, an entry reserved already")
            names[name] = holds
    return names


RESERVED_NAMES: dict[str, str] = _reserved(EXPERIMENTS)
"""Every entry of the results folder that is not a run's folder, with what it holds: the layout's own
(:data:`hardneg.io.layout.RESERVED_NAMES`) and those each experiment reserves (its folder). No run may take one:
the config's checks refuse such a run, and the commands that read runs such a name."""
