"""Every figure the workflow draws, by name: the papers' (:data:`hardneg.figures.FIGURES`) and then each
experiment's (:attr:`hardneg.experiments.declaration.Experiment.figures`). ``rules/figures.smk`` makes one rule
``figure_<name>`` of each, ``scripts/figure.py`` draws it, and the plan's figure targets and rule resources
iterate them."""

from __future__ import annotations

from hardneg.experiments import EXPERIMENTS
from hardneg.figures import FIGURES as PAPER_FIGURES
from hardneg.figures.declaration import Figure


def _figures() -> dict[str, Figure]:
    found = dict(PAPER_FIGURES)
    for experiment in EXPERIMENTS.values():
        for figure in experiment.figures:
            if figure.name in found:
                raise ValueError(f"experiment {experiment.name!r}: a figure named {figure.name!r} is declared already")
            found[figure.name] = figure
    return found


FIGURES: dict[str, Figure] = _figures()
"""name → declaration (the figure targets are listed in this order)."""
