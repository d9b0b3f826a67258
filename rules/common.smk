# The run plan every rule reads (hardneg.pipeline.plan) and the few helpers rules share. Functions only, no rules.
import os
import re
import sys

from hardneg.datasets.adapters import dataset_input_files, dataset_splits
from hardneg.experiments import EXPERIMENTS
from hardneg.io.layout import BY_INDEX_PATTERN, BY_INDEX_WILDCARD, index_slug, refuse_old_rankings, split_file
from hardneg.pipeline.plan import Plan
from hardneg.pipeline import resources as _resources


# Jobs share the machine's cores, and each sizes its thread pools to its own `threads:`. OpenMP threads that spin
# while they wait (libgomp's default) burn the cores the other jobs need: two 2-thread trainings side by side on
# 2 cores take 1.87 times the CPU time per step (benchmarks/omp_wait.py). Waiting threads sleep instead (the jobs
# inherit this; set OMP_WAIT_POLICY yourself to choose otherwise). It changes no result, only how idle threads wait.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

# Every output is update(): Snakemake neither deletes it before its job runs again (a forced re-run, new inputs)
# nor after the job fails; it keeps a copy while the job runs and puts it back when the job fails or is killed.
# Each job writes its outputs beside them and renames them into place only once complete (hardneg.io.atomic), so
# an interrupted re-run leaves the previous artifacts whole and in place: Snakemake rebuilds a missing file only
# for a job that must run anyway, so a deleted ranking would otherwise stay missing behind an up-to-date
# metrics.json. Throwaway files (encoding shards) are temp() instead. tests/workflow/test_stage.py holds every
# rule to this.
PLAN = Plan(config)
LAYOUT = PLAN.layout
EVAL_SPLIT = PLAN.eval_split

# Rankings where an earlier version put them (results/<run>/rankings/, now rankings/): stop here with the way on, rather
# than plan them again with everything made from them (pools, lists, the runs trained on them).
refuse_old_rankings(LAYOUT.root)


def results_folder(path):
    """The results folder holding ``path``, a file directly inside one of its folders (a run's folder, tables/):
    taken from the job's own output, which Snakemake may have placed elsewhere (a storage plugin's local copy on a
    cluster without a shared filesystem), rather than from the config (`snakemake --lint` asks for this)."""
    return os.path.dirname(os.path.dirname(path))


def names_regex(names):
    """A wildcard constraint matching exactly these names (and nothing when there are none)."""
    return "|".join(re.escape(n) for n in names) or "(?!)"


RESOURCE_RULES = set()  # the rules that called rule_resources (the Snakefile checks the config's names against them)


def rule_resources(rule, **defaults):
    """A rule's mem_mb and runtime: ``defaults`` (sized for the synthetic default), or the config's
    ``resources.<rule>`` (hardneg.pipeline.resources). In a rule:
    ``**rule_resources("<rule>", mem_mb=..., runtime=...)``."""
    RESOURCE_RULES.add(rule)
    return _resources.rule_resources(config, rule, **defaults)


def split_file_of(folder, split):
    """A param: the file of a split in the job's input ``folder`` (``queries``, ``qrels`` or ``hidden``, a dataset's
    folder of splits: prepare_dataset's output, whose files Snakemake cannot depend on one by one), as the layout
    names it; None for a job not given that folder. ``split``: a split's name, or a function of the wildcards
    giving it. Taken from the job's input, which a storage plugin may have placed elsewhere. Snakemake records no
    param derived from the input (results built before it was given stay up to date), so the split must be
    recorded otherwise, for a job to run again when it changes: a wildcard, or a param of its own."""

    def path(wildcards, input):
        if folder not in input.keys():
            return None
        return split_file(getattr(input, folder), split(wildcards) if callable(split) else split)

    return path


def run_params(run, *keys):
    """A run's ``params``, or only the named keys (so a rule re-runs only when those change)."""
    params = PLAN.params(run)
    return {key: params[key] for key in keys} if keys else params


def qrels_dir(wildcards):
    return LAYOUT.qrels_dir(PLAN.dataset(wildcards.run))


def run_cache_dir(wildcards):
    return PLAN.cache_dir(wildcards.run)


def sweep_temporaries(workflow):
    """Remove the temporaries jobs killed outright left under results/ (hardneg.io.atomic), in the process that
    schedules the jobs, at a moment when none runs: before the first, after the last (Snakemake's lock keeps
    other runs out of the working directory)."""
    if not workflow.subprocess_exec and not workflow.remote_exec:
        from hardneg.io.atomic import remove_temporaries

        for stale in remove_temporaries(LAYOUT.root):
            print(f"removed {stale}, left by a job that was killed", file=sys.stderr)


def refuse_unwritable(workflow):
    """Stop before the first job when a folder a job would write in cannot be written (a read-only run folder):
    one line naming the folders, instead of Snakemake's own traceback when it first tries to replace a file
    there. Nothing has run then, and nothing is changed."""
    if workflow.subprocess_exec or workflow.remote_exec:
        return
    from hardneg.io.atomic import unwritable_folders

    paths = [path for job in workflow.dag.needrun_jobs()
             for path in (*job.output, *job.log, *([job.benchmark] if job.benchmark else []))]
    blocked = unwritable_folders(paths)
    if blocked:
        shown = ", ".join(blocked[:5]) + (f" and {len(blocked) - 5} more" if len(blocked) > 5 else "")
        print(f"hardneg error: the jobs to run write in folders that cannot be written: {shown}; make them "
              f"writable (chmod -R u+w FOLDER) or ask for targets that do not need them. Nothing was run.",
              file=sys.stderr)
        raise SystemExit(1)


def caption_text(name):
    """The text of a report caption of workflow/report/ (for a rule whose pages share one caption template), as
    one line: the report's pane of a result's params shows a line break as a literal \\n."""
    with open(f"{workflow.basedir}/workflow/report/{name}", encoding="utf-8") as handle:
        return " ".join(handle.read().split())
