"""The run plan's fusion runs: the runs each combines, what its ranking of a split reads, and what tuning its
weight reads."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hardneg import methods

if TYPE_CHECKING:
    from hardneg.pipeline.plan import Plan


class FusionPlan:
    """The part of :class:`hardneg.pipeline.plan.Plan` that concerns fusion runs."""

    def __init__(self, plan: Plan):
        self.plan = plan  # the whole plan: the runs, the layout and the other parts

    @property
    def fusion_runs(self) -> list[str]:
        return self.plan.runs_of_kind(methods.FUSION)

    def tuning_split(self, run: str) -> str | None:
        """The split whose queries a fusion run's weight is tuned on; None when the run tunes nothing."""
        return self.plan.method(run).tuning_split(self.plan.params(run))

    @property
    def tuned_runs(self) -> list[str]:
        """Fusion runs that tune their weight (results/<run>/fusion_tuning.json)."""
        return [run for run in self.fusion_runs if self.tuning_split(run) is not None]

    def fused_runs(self, run: str) -> list[str]:
        """The runs a fusion run combines, in the order of its role of many runs."""
        return list(self.plan.role_run(run, "runs"))

    def fusion_inputs(self, run: str, split: str) -> dict:
        """What a fusion run's ranking of ``split`` reads: its input runs' rankings of that split (``rankings``) and,
        when it tunes its weight, its tuning (``tuning``)."""
        inputs = {"rankings": [self.plan.layout.ranking(other, split) for other in self.fused_runs(run)]}
        if run in self.tuned_runs:
            inputs["tuning"] = self.plan.layout.fusion_tuning(run, "json")
        return inputs

    def trained_splits(self, run: str) -> list[str]:
        """The splits whose queries trained a model behind ``run``: the training split of every trained run among
        ``run`` and the runs it depends on, recursively."""
        splits, seen, todo = set(), set(), [run]
        while todo:
            current = todo.pop()
            if current not in seen:
                seen.add(current)
                if self.plan.method(current).kind in methods.TRAINED:
                    splits.add(self.plan.train_split(current))
                todo += self.plan.upstream(current)
        return sorted(splits)

    def tuning_inputs(self, run: str) -> dict:
        """What tuning a fusion run's weight reads: its input runs' rankings of the tuning split and the qrels folder
        (the tuning split's file is read)."""
        split = self.tuning_split(run)
        return {
            "rankings": [self.plan.layout.ranking(other, split) for other in self.fused_runs(run)],
            "qrels": self.plan.layout.qrels_dir(self.plan.dataset(run)),
        }
