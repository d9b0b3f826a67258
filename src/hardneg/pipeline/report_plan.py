"""The run plan's targets and reports: what a plain ``snakemake`` builds, the summary and the cross-run tables,
the figures, the Markdown pages of the report, the ``report`` target (the report's runs and what it shows of
them) and the ``paper`` target."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from hardneg import methods
from hardneg.errors import ConfigError
from hardneg.evaluation.timing import REFRESH_PARTS
from hardneg.experiments import EXPERIMENTS
from hardneg.pipeline import replicates
from hardneg.pipeline.figures import FIGURES
from hardneg.schema.values import check_evaluated_measure, check_run

if TYPE_CHECKING:
    from hardneg.pipeline.plan import Plan


class ReportPlan:
    """The part of :class:`hardneg.pipeline.plan.Plan` that concerns the targets and what reports read."""

    def __init__(self, plan: Plan):
        self.plan = plan  # the whole plan: the runs, the layout and the other parts

    # ---------------------------------------------------------------------------------------- targets
    def targets(self) -> list[str]:
        """What a plain ``snakemake`` builds: ``targets`` of the config (run names → their metrics.json, and those
        of the run's replicates when it has ``seeds``; paths as given), by default every run's metrics.json."""
        targets = self.plan.config.get("targets")
        if targets is None:
            targets = list(self.plan.user_runs)
        return [
            target if "/" in target else self.plan.layout.metrics(run)
            for target in targets
            for run in ([target] if "/" in target else replicates.with_replicates(self.plan.config, [target]))
        ]

    # ----------------------------------------------------------------------------- summary and tables
    def targeted_runs(self) -> list[str]:
        """The runs whose metrics.json the config's ``targets`` name (every run when ``targets`` is null)."""
        targets = {os.path.normpath(target) for target in self.targets()}
        return [run for run in self.plan.user_runs if os.path.normpath(self.plan.layout.metrics(run)) in targets]

    def report_runs(self) -> list[str]:
        """The runs of the report: ``report.runs`` (else the runs whose metrics.json the config's ``targets``
        names) and every run they are built from, in config order. The config alone decides: which other runs
        happen to be evaluated on disk changes nothing. A name of ``report.runs`` that is no run of the config (one
        trimmed from a copy of it) is left out (:meth:`report_contents` says so)."""
        chosen = self.plan.config["report"]["runs"]
        base = [run for run in chosen if run in self.plan.user_runs] if chosen is not None else self.targeted_runs()
        wanted = set(base).union(*(self.plan.ancestors(run) for run in base))
        return [run for run in self.plan.user_runs if run in wanted]

    def summary_runs(self) -> list[str]:
        """The runs of the summary: ``summary.runs`` as given, else the report's runs (:meth:`report_runs`), in
        config order, so that the same config gives the same summary."""
        chosen = self.plan.config["summary"]["runs"]
        return list(chosen) if chosen is not None else self.report_runs()

    def summary_measures(self) -> list[str]:
        """The summary's measure columns: ``summary.measures``, else every measure of ``evaluation.measures``."""
        return list(self.plan.config["summary"]["measures"] or self.plan.config["evaluation"]["measures"])

    def summary_settings(self) -> dict:
        """The config's ``summary`` section with its measures resolved (:meth:`summary_measures`). A group's runs
        outside the summary mark nothing; its legend says so (:meth:`summary_groups_left_out` names them for the
        report's line)."""
        return {**self.plan.config["summary"], "measures": self.summary_measures()}

    def summary_groups_left_out(self) -> list[str]:
        """One phrase per baseline group naming runs outside the summary: those runs, and whether the group
        stays."""
        runs = set(self.summary_runs())
        phrases = []
        for group in self.plan.config["summary"]["groups"]:
            outside = [run for run in group["runs"] if run not in runs]
            if outside:
                kept = "kept without them" if len(outside) < len(group["runs"]) else "left out"
                phrases.append(
                    f"summary group {group['marker']} {group['label']}: {', '.join(outside)} not in the summary, {kept}"
                )
        return phrases

    def summary_inputs(self) -> dict:
        """``metrics`` and ``per_query`` of each run of the summary (aligned with :meth:`summary_runs`)."""
        runs = self.summary_runs()
        return {
            "metrics": [self.plan.layout.metrics(run) for run in runs],
            "per_query": [self.plan.layout.per_query(run) for run in runs],
        }

    def methods_of(self, runs: list[str]) -> dict:
        """run → its method's name."""
        return {run: self.plan.runs[run]["method"] for run in runs}

    def training_time_runs(self) -> list[str]:
        """The runs of the summary that train (the training-time table shows their training jobs)."""
        return [
            run
            for run in self.summary_runs()
            if self.plan.method(run).kind in methods.TRAINED and self.plan.method(run).trains
        ]

    @staticmethod
    def speed_reference() -> tuple[str, str] | None:
        """(method, label) of the method the training-time table measures speed-ups against: the first declaring
        ``Method.speed_reference``; None when none does."""
        return next(
            ((name, method.speed_reference) for name, method in methods.methods().items() if method.speed_reference),
            None,
        )

    def training_time_inputs(self) -> dict:
        """The training logs of :meth:`training_time_runs` (``train_log``)."""
        return {"train_log": [self.plan.layout.train_log(run) for run in self.training_time_runs()]}

    def training_benchmarks(self, runs: list[str]) -> list[str | list[str]]:
        """The benchmark record of each run's training job: Snakemake writes it beside the training log, and
        no rule can ask for it as an input (it is no rule's output). An episodic run's are those of all its
        episodes' jobs, training and refreshes (:meth:`refresh_benchmarks`)."""
        return [
            [
                path
                for checkpoint in self.plan.episodes.refresh_benchmarks(run)
                for part in REFRESH_PARTS
                for path in checkpoint[part]
            ]
            if run in self.plan.episodes.episodic_runs
            else self.plan.layout.benchmark(run, "train")
            for run in runs
        ]

    # ---------------------------------------------------------------------------------------------- figures
    def figure_inputs(self, name: str) -> dict:
        """What figure ``name`` (one of :data:`hardneg.pipeline.figures.FIGURES`) reads, from the config's
        ``figures.<name>`` (name → path, or list of paths): its declaration's ``inputs``. A :class:`ConfigError`
        names the key to set when the config cannot build the figure (a run it does not define, a run without dev
        evaluation, ...)."""
        if name not in FIGURES:
            raise ConfigError("figures", f"no figure named {name!r}; the figures are {', '.join(FIGURES)}")
        return FIGURES[name].inputs(self.plan, self.plan.config["figures"][name], f"figures.{name}")

    def figure_targets(self) -> list[str]:
        """The PNG of every figure the config can build (see :meth:`figure_inputs`)."""
        targets = []
        for name in FIGURES:
            try:
                self.figure_inputs(name)
            except ConfigError:
                continue
            targets.append(self.plan.layout.figure(name, "png"))
        return targets

    def check_run(self, run, key: str) -> str:
        """``run`` when the config defines it (an episode of an episodic run too); a :class:`ConfigError` naming
        ``key`` otherwise (for a section that reads finished runs, such as a figure's)."""
        return check_run(self.plan.config, run, key)

    def check_evaluated_measure(self, measure: str, key: str) -> str:
        """``measure`` when it is one of ``evaluation.measures``; a :class:`ConfigError` naming ``key`` otherwise."""
        return check_evaluated_measure(self.plan.config, measure, key)

    # ----------------------------------------------------------------------------------------- the report
    def markdown_pages(self) -> dict:
        """The Markdown reports shown as HTML pages in ``snakemake --report`` (its report shows HTML in place, and
        Markdown for download only): the HTML path without ``.html`` → ``markdown`` (its source), ``title``,
        ``category`` of the report, ``caption`` (a file of ``workflow/report/``) and ``figures`` (those that come
        with the page), and ``runs``, the runs it reads."""
        layout = self.plan.layout
        pages: dict[str, tuple[str, str, str, list[str]]] = {
            layout.summary("md"): ("Summary of the runs, with significance markers", "Summary", "summary.rst", []),
            layout.table("training_time", "md"): ("Training time of each run", "Summary", "training_time.rst", []),
        }
        runs = {
            layout.summary("md"): set(self.summary_runs()),
            layout.table("training_time", "md"): set(self.training_time_runs()),
        }
        for experiment in EXPERIMENTS.values():
            for markdown, page in experiment.report_pages(self.plan).items():
                pages[markdown] = page
                runs[markdown] = experiment.runs(self.plan)
        return {
            markdown[: -len(".md")]: {
                "markdown": markdown,
                "title": title,
                "category": category,
                "caption": caption,
                "figures": figures,
                "runs": runs[markdown],
            }
            for markdown, (title, category, caption, figures) in pages.items()
        }

    def paper_targets(self) -> list[str]:
        """Everything the papers' comparison shows for this config (the ``paper`` target): the config's targets,
        the summary and its tables as pages, every figure the config can build (the experiments' too) and the
        page of every comparison of the config's ``compare`` list."""
        return (
            self.targets()
            + [f"{page}.html" for page in self.markdown_pages()]
            + self.figure_targets()
            + [figure for experiment in EXPERIMENTS.values() for figure in experiment.figure_targets(self.plan)]
            + self.plan.compare.comparison_targets()
        )

    # ------------------------------------------------------------------------------------ the report target
    def runs_read(self, paths) -> set[str]:
        """The runs whose folders ``paths`` (a path, or nested lists and dicts of them) lie in."""
        if isinstance(paths, dict):
            return set().union(*(self.runs_read(value) for value in paths.values()))
        if isinstance(paths, (list, tuple)):
            return set().union(*(self.runs_read(value) for value in paths))
        path = os.path.normpath(str(paths))
        for experiment in EXPERIMENTS.values():  # a file of an experiment's folder: the experiment's runs
            if experiment.enabled(self.plan.config) and path.startswith(
                os.path.normpath(self.plan.layout.experiment(experiment.name, "x"))[:-1]
            ):
                return experiment.runs(self.plan)
        parts = path.split(os.sep)
        root = os.path.normpath(self.plan.layout.root).split(os.sep)
        folder = parts[len(root)] if parts[: len(root)] == root and len(parts) > len(root) else None
        return {folder} if folder is not None and folder in self.plan.user_runs else set()

    def page_runs(self, page: str) -> set[str]:
        """The runs a Markdown page of the report (a key of :meth:`markdown_pages`) reads."""
        return self.markdown_pages()[page]["runs"]

    def report_contents(self) -> tuple[list[str], list[str]]:
        """What the ``report`` target builds, and one phrase per item left out: the metrics of the report's runs
        (:meth:`report_runs`), the graph of the runs, the pages whose runs are all among them (the summary, the
        training-time table), the comparisons and figures whose runs are all among them (one naming other runs is
        left out; a figure the config cannot draw is in no target); the hard-negative viewers of its mining runs
        come with their metrics."""
        runs = self.report_runs()
        inside = set(runs)
        targets = [self.plan.layout.metrics(run) for run in runs] + [self.plan.layout.run_graph()]
        unknown = [run for run in self.plan.config["report"]["runs"] or [] if run not in self.plan.user_runs]
        left_out = [f"report.runs: {', '.join(unknown)} not a run of the config"] if unknown else []
        left_out += self.summary_groups_left_out()
        for page, info in self.markdown_pages().items():
            outside = sorted(self.page_runs(page) - inside)
            if outside:
                left_out.append(f"page '{info['title']}': {', '.join(outside)} not among the report's runs")
            else:
                targets += [f"{page}.html", *info["figures"]]
        for name, comparison in self.plan.compare.comparisons().items():
            outside = [run for run in comparison["runs"] if run not in inside]
            if outside:
                left_out.append(f"comparison {name}: {', '.join(outside)} not among the report's runs")
            else:
                targets.append(self.plan.compare.comparison_page(name))
        for name in FIGURES:
            try:
                read = self.runs_read(self.figure_inputs(name))
            except ConfigError:  # a figure this config cannot draw at all: in no target (see figure_targets)
                continue
            outside = sorted(read - inside)
            if outside:
                left_out.append(f"figure {name}: {', '.join(outside)} not among the report's runs")
            else:
                targets.append(self.plan.layout.figure(name, "png"))
        return targets, left_out

    def report_targets(self) -> list[str]:
        """The ``report`` target's inputs (:meth:`report_contents`)."""
        return self.report_contents()[0]

    def report_message(self) -> str:
        """The ``report`` target's one line: its runs, and what it leaves out and why."""
        targets, left_out = self.report_contents()
        line = f"the report of runs {', '.join(self.report_runs())}"
        if left_out:
            line += "; left out: " + "; ".join(left_out)
        return line.replace("{", "{{").replace("}", "}}")  # a message is a format string

    def run_graph_runs(self) -> dict:
        """run → ``{"method", "inputs": {role: [runs]}}`` of each run of the report: the graph's nodes and
        edges."""
        graph = {}
        for run in self.report_runs():
            inputs = {}
            for role, value in (self.plan.runs[run].get("inputs") or {}).items():
                values = value if isinstance(value, list) else [value]
                inputs[role] = [other for other in values if isinstance(other, str) and other in self.plan.user_runs]
            graph[run] = {"method": self.plan.runs[run]["method"], "inputs": {k: v for k, v in inputs.items() if v}}
        return graph
