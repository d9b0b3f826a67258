"""An experiment, declared once (:class:`Experiment`): a config section that generates runs of its own, the rules
that build its tables, its target and its pages in the report. The workflow iterates the declarations of
:data:`hardneg.experiments.EXPERIMENTS`; nothing outside an experiment's module names it.

A declaration takes what it needs from the plan it is given (:class:`hardneg.pipeline.plan.Plan`, duck-typed: its
``layout``, ``config``, ``params``, ...), as figures do (:mod:`hardneg.figures.declaration`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from hardneg.figures.declaration import Figure


def _nothing(*_args) -> list:
    return []


def _no_check(_config: dict) -> None:
    return None


@dataclass(frozen=True)
class Experiment:
    """One experiment:

    * ``name``: its config section, its folder under ``results/`` and its target (``snakemake <name>``);
    * ``rule_file``: its rules, a file of ``rules/`` the Snakefile includes; ``rules``: their names (each job's
      resources may be set under the config's ``resources.<rule>``);
    * ``reserved_names``: the entries of ``results/`` it writes besides the runs' folders (its own folder,
      ``results/<name>``), each with what it holds, in words: no run may take one of them
      (:data:`hardneg.experiments.RESERVED_NAMES`);
    * ``check_config(config)``: checks of its section before its runs are generated (a :class:`ConfigError`
      naming its own key), after the schema holds;
    * ``expand_config(config)``: adds its generated runs to ``config["runs"]``; False when the config has no
      such section;
    * ``runs(plan)``: the runs its tables and pages read (a report holds its pages only with all of them);
    * ``report_pages(plan)``: its Markdown pages in the report: path → (title, category, caption file of
      ``workflow/report/``, the figures that come with the page);
    * ``figure_targets(plan)``: the figures its own rules draw (built by the ``paper`` target);
    * ``figures``: its figures drawn as the papers' are (:class:`hardneg.figures.declaration.Figure`: each set
      under the config's ``figures.<name>``, drawn by a rule ``figure_<name>``), beside
      :data:`hardneg.figures.FIGURES` in :data:`hardneg.pipeline.figures.FIGURES`;
    * ``pools(plan)``: candidate pools it selects from besides the mining runs' (:class:`hardneg.mining.pool.Pool`);
    * ``factory_uses(config)``: (dotted key, index factory, run whose documents it indexes) of each index it
      builds, checked with the runs' own.
    """

    name: str
    summary: str
    rule_file: str
    rules: tuple[str, ...]
    reserved_names: Mapping[str, str]
    expand_config: Callable[[dict], bool]
    runs: Callable[[Any], set[str]]
    report_pages: Callable[[Any], dict]
    check_config: Callable[[dict], None] = _no_check
    figure_targets: Callable[[Any], list[str]] = _nothing
    figures: tuple[Figure, ...] = ()
    pools: Callable[[Any], list] = _nothing
    factory_uses: Callable[[dict], list[tuple[str, str, str]]] = _nothing

    def enabled(self, config: dict) -> bool:
        """Whether the config has this experiment's section."""
        return bool(config.get(self.name))
