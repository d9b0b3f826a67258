"""The run plan's comparisons (the config's ``compare`` list): each comparison's settings with their defaults
resolved, its page and what the page reads; and the checks of the section's cross-references."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hardneg.errors import ConfigError
from hardneg.schema.values import check_evaluated_measure, check_run

if TYPE_CHECKING:
    from hardneg.pipeline.plan import Plan

PAGE_PREFIX = "compare_"  # a comparison's page: results/tables/compare_<name>.html


def _dataset_of(config: dict, run: str) -> str:
    return config["runs"][run].get("dataset", config["dataset"])


def check_compare_config(config: dict) -> None:
    """Cross-references of a validated config's ``compare`` list: names differ, the runs of a comparison are
    named once and share a dataset, the measure is evaluated and the split is evaluated (``evaluation.split`` or
    one of ``evaluation.extra_splits``), every run named is a run of the config (as for the summary and the
    figures: a page no rule could build is refused here, not met later as Snakemake's "No rule to produce").
    Raises a :class:`ConfigError` naming the key, e.g. ``compare.0.runs.1``."""
    names: dict = {}
    splits = [config["evaluation"]["split"], *config["evaluation"]["extra_splits"]]
    for i, comparison in enumerate(config["compare"]):
        if comparison["name"] in names:
            raise ConfigError(
                f"compare.{i}.name",
                f"comparison {comparison['name']!r} is already the name of compare.{names[comparison['name']]}",
            )
        names[comparison["name"]] = i
        runs = comparison["runs"]
        for j, run in enumerate(runs):
            check_run(config, run, f"compare.{i}.runs.{j}")
            if run in runs[:j]:
                raise ConfigError(f"compare.{i}.runs.{j}", f"run {run!r} is listed twice")
            if _dataset_of(config, run) != _dataset_of(config, runs[0]):
                raise ConfigError(
                    f"compare.{i}.runs.{j}",
                    f"run {run!r} ranks dataset {_dataset_of(config, run)!r}, run {runs[0]!r} dataset "
                    f"{_dataset_of(config, runs[0])!r}: compared runs rank the same queries",
                )
        if comparison["measure"] is not None:
            check_evaluated_measure(config, comparison["measure"], f"compare.{i}.measure")
        if comparison["split"] is not None and comparison["split"] not in splits:
            raise ConfigError(
                f"compare.{i}.split",
                f"{comparison['split']!r} is not an evaluated split (every run "
                f"ranks evaluation.split and evaluation.extra_splits: "
                f"{', '.join(splits)})",
            )


class ComparePlan:
    """The part of :class:`hardneg.pipeline.plan.Plan` that concerns the comparisons of runs."""

    def __init__(self, plan: Plan):
        self.plan = plan  # the whole plan: the runs, the layout and the other parts

    def comparisons(self) -> dict[str, dict]:
        """name → the comparison's settings (``runs``, ``measure``, ``split``, ``top``, ``depth``, ``correction``),
        a null measure or split resolved: the first of ``evaluation.measures``, ``evaluation.split``. Only the
        comparisons of the config (:func:`check_compare_config` refused one naming a run it lacks)."""
        evaluation = self.plan.config["evaluation"]
        return {
            item["name"]: {
                **{key: value for key, value in item.items() if key != "name"},
                "runs": list(item["runs"]),
                "measure": item["measure"] or evaluation["measures"][0],
                "split": item["split"] or evaluation["split"],
            }
            for item in self.plan.config["compare"]
        }

    def comparison_page(self, name: str) -> str:
        """The page of comparison ``name`` (``name`` may be a wildcard pattern)."""
        return self.plan.layout.table(f"{PAGE_PREFIX}{name}", "html")

    def comparison_targets(self) -> list[str]:
        """The page of every comparison of the config."""
        return [self.comparison_page(name) for name in self.comparisons()]

    def comparison_inputs(self, name: str) -> dict:
        """What the page of comparison ``name`` reads: each run's resolved config, metrics.json, per-query values
        and ranking of the split, the hard negatives of the runs that train on a mined list, and the dataset's
        queries, qrels and corpus."""
        settings, layout = self.comparisons()[name], self.plan.layout
        runs, split = settings["runs"], settings["split"]
        dataset = self.plan.dataset(runs[0])
        return {
            "config": [layout.config(run) for run in runs],
            "metrics": [layout.metrics(run) for run in runs],
            "per_query": [layout.per_query(run) for run in runs],
            "rankings": [layout.ranking(run, split) for run in runs],
            "hardnegs": [layout.hard_negatives(run) for run in runs if run in self.plan.mining.mining_runs],
            "queries": layout.queries_dir(dataset),
            "qrels": layout.qrels_dir(dataset),
            "corpus": layout.corpus(dataset),
        }
