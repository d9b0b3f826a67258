"""A figure, declared once (:class:`Figure`): what it reads, the settings it is drawn with, what its job needs and
how it is drawn. ``rules/figures.smk`` makes one rule ``figure_<name>`` of each figure of
:data:`hardneg.figures.FIGURES`, and ``scripts/figure.py`` calls its :attr:`Figure.build`.

A declaration takes what it needs from the plan it is given (:class:`hardneg.pipeline.plan.Plan`, duck-typed: its
``layout``, ``config``, ``method``, ``params``, ``check_run``, ...): the figures know nothing of how the plan is
composed, nor of the workflow.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from hardneg.errors import ConfigError


@dataclass(frozen=True)
class Figure:
    """One figure: ``results/figures/<name>.png`` and the data it draws, ``results/figures/<name>.parquet``.

    * ``caption``: its caption in the report, a file of ``workflow/report/``;
    * ``inputs(plan, spec, key)``: what it reads (input name → path, or list of paths), from its config section
      ``spec`` (``figures.<name>``, whose key ``key`` a :class:`ConfigError` names when the config cannot build it);
    * ``params(spec, plan)``: the settings its rule passes to :attr:`build` (only this figure's config keys, so that
      changing another figure re-draws nothing); a value may be a function of the job's wildcards, evaluated for
      the job only;
    * ``build(inputs, params, data_path, png_path)``: computes the data, writes it and draws the PNG, from the
      job's inputs and params (name → value: a named input of one file is a path, of several a list of paths);
    * ``mem_mb`` and ``runtime``: its job's resources unless the config's ``resources.figure_<name>`` sets them.
    """

    name: str
    caption: str
    inputs: Callable[[Any, dict, str], dict]
    params: Callable[[dict, Any], dict]
    build: Callable[[Mapping, Mapping, str | os.PathLike, str | os.PathLike], Any]
    mem_mb: int = 1000
    runtime: int = 5

    @property
    def resources(self) -> dict:
        """The job's default resources (``mem_mb``, ``runtime`` in minutes)."""
        return {"mem_mb": self.mem_mb, "runtime": self.runtime}


def paths(value: str | os.PathLike | list) -> list:
    """A named input as a list of paths (a named input of one file arrives as a path, of several as a list)."""
    return [value] if isinstance(value, (str, os.PathLike)) else list(value)


def figure_runs(plan, names: list[str], key: str) -> list[str]:
    """The runs a figure draws (``names``, the config's ``key``), each one the config defines."""
    if not names:
        raise ConfigError(key, "no runs are named: list the runs this figure draws")
    for position, run in enumerate(names):
        plan.report.check_run(run, f"{key}.{position}")
    return names


def check_labels(spec: dict, runs: list[str], key: str) -> None:
    """Every run ``spec["labels"]`` names a legend text for is one of the figure's ``runs``."""
    for run in spec["labels"]:
        if run not in runs:
            raise ConfigError(f"{key}.labels.{run}", f"run {run!r} is not one of {key}.runs")


def runs_and_labels(spec: dict, plan) -> dict:
    """The params of a figure of runs with legend texts: its ``runs`` and ``labels``."""
    return {"runs": spec["runs"], "labels": spec["labels"]}


def evaluated_train_logs(plan, spec: dict, key: str, evaluated: Callable[[Any], bool], why: str) -> dict:
    """The training logs of a figure's runs, each a trained dense run whose ``params.train.dev_every`` gives
    the dev evaluation the figure draws (``evaluated(dev_every)`` is true; ``why`` says what to set, in
    words); its labels name its runs."""
    runs = figure_runs(plan, spec["runs"], f"{key}.runs")
    dense = set(plan.dense_runs)
    for position, run in enumerate(runs):
        if not plan.method(run).trains or run not in dense:
            raise ConfigError(
                f"{key}.runs.{position}", f"run {run!r} trains no dense model, so it has no dev evaluation"
            )
        if not evaluated(plan.params(run)["train"]["dev_every"]):
            raise ConfigError(f"runs.{run}.params.train.dev_every", f"{key} {why}")
    check_labels(spec, runs, key)
    return {"train_logs": [plan.layout.train_log(run) for run in runs]}


def run_logs(inputs: Mapping, params: Mapping) -> dict:
    """run → its training log, of a figure whose input ``train_logs`` lists the logs of its ``runs``."""
    return dict(zip(params["runs"], paths(inputs["train_logs"])))
