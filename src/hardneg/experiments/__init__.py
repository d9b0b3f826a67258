"""Experiments: config sections that generate runs and compare them in tables of their own (the ADORE PQ matrix,
the false-negative experiment). Each is one module of this package declaring ``EXPERIMENT``
(:class:`hardneg.experiments.declaration.Experiment`); :data:`EXPERIMENTS` holds them by name, found in the
package, in the order of their names. The workflow (config expansion, targets, report, rules) iterates them; a new
experiment is a new module here and its rule file.
"""

from __future__ import annotations

import importlib
import pkgutil

from hardneg.experiments.declaration import Experiment


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
