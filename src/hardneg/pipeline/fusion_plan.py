"""The run plan's fusion runs: the runs each combines, what its ranking of a split reads, and what tuning its
weight reads."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hardneg import methods

if TYPE_CHECKING:
    from hardneg.io.layout import Layout


class FusionPlan:
    """The part of :class:`hardneg.pipeline.plan.Plan` that concerns fusion runs."""

    if TYPE_CHECKING:  # what this part reads from the rest of the plan, for the type checker
        layout: Layout

        def method(self, run: str) -> methods.Method: ...
        def params(self, run: str) -> dict: ...
        def dataset(self, run: str) -> str: ...
        def runs_of_kind(self, kind: str) -> list[str]: ...
        def role_run(self, run: str, provides: str) -> Any: ...
        def train_split(self, run: str) -> str: ...
        def upstream(self, run: str) -> list[str]: ...

    @property
    def fusion_runs(self) -> list[str]:
        return self.runs_of_kind(methods.FUSION)

    def tuning_split(self, run: str) -> str | None:
        """The split whose queries a fusion run's weight is tuned on; None when the run tunes nothing."""
        return self.method(run).tuning_split(self.params(run))

    @property
    def tuned_runs(self) -> list[str]:
        """Fusion runs that tune their weight (results/<run>/fusion_tuning.json)."""
        return [run for run in self.fusion_runs if self.tuning_split(run) is not None]

    def fused_runs(self, run: str) -> list[str]:
        """The runs a fusion run combines, in the order of its role of many runs."""
        return list(self.role_run(run, "runs"))

    def fusion_inputs(self, run: str, split: str) -> dict:
        """What a fusion run's ranking of ``split`` reads: its input runs' rankings of that split (``rankings``) and,
        when it tunes its weight, its tuning (``tuning``)."""
        inputs = {"rankings": [self.layout.ranking(other, split) for other in self.fused_runs(run)]}
        if run in self.tuned_runs:
            inputs["tuning"] = self.layout.fusion_tuning(run, "json")
        return inputs

    def trained_splits(self, run: str) -> list[str]:
        """The splits whose queries trained a model behind ``run``: the training split of every trained run among
        ``run`` and the runs it depends on, recursively."""
        splits, seen, todo = set(), set(), [run]
        while todo:
            current = todo.pop()
            if current not in seen:
                seen.add(current)
                if self.method(current).kind in methods.TRAINED:
                    splits.add(self.train_split(current))
                todo += self.upstream(current)
        return sorted(splits)

    def tuning_inputs(self, run: str) -> dict:
        """What tuning a fusion run's weight reads: its input runs' rankings of the tuning split and the qrels folder
        (the tuning split's file is read)."""
        split = self.tuning_split(run)
        return {
            "rankings": [self.layout.ranking(other, split) for other in self.fused_runs(run)],
            "qrels": self.layout.qrels_dir(self.dataset(run)),
        }
