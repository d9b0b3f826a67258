# The run plan every rule reads (hardneg.pipeline.plan) and the few helpers rules share. Functions only, no rules.
import os
import re

from hardneg.datasets.adapters import dataset_input_files
from hardneg.methods.adore import pq_matrix as PQ_MATRIX
from hardneg.pipeline.plan import Plan
from hardneg.pipeline import resources as _resources


# Jobs share the machine's cores, and each sizes its thread pools to its own `threads:`. OpenMP threads that spin
# while they wait (libgomp's default) burn the cores the other jobs need: two 2-thread trainings side by side on
# 2 cores take 1.87 times the CPU time per step (benchmarks/omp_wait.py). Waiting threads sleep instead (the jobs
# inherit this; set OMP_WAIT_POLICY yourself to choose otherwise). It changes no result, only how idle threads wait.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

PLAN = Plan(config)
LAYOUT = PLAN.layout
EVAL_SPLIT = PLAN.eval_split


def names_regex(names):
    """A wildcard constraint matching exactly these names (and nothing when there are none)."""
    return "|".join(re.escape(n) for n in names) or "(?!)"


RESOURCE_RULES = set()  # the rules that called rule_resources (the Snakefile checks the config's names against them)


def rule_resources(rule, **defaults):
    """A rule's mem_mb and runtime: ``defaults`` (sized for the synthetic default), or the config's
    ``resources.<rule>`` (hardneg.pipeline.resources). In a rule: ``**rule_resources("<rule>", mem_mb=..., runtime=...)``."""
    RESOURCE_RULES.add(rule)
    return _resources.rule_resources(config, rule, **defaults)


def run_params(run, *keys):
    """A run's ``params``, or only the named keys (so a rule re-runs only when those change)."""
    params = PLAN.params(run)
    return {key: params[key] for key in keys} if keys else params


def qrels_dir(wildcards):
    return LAYOUT.qrels_dir(PLAN.dataset(wildcards.run))


def run_cache_dir(wildcards):
    return PLAN.cache_dir(wildcards.run)


def caption_text(name):
    """The text of a report caption of workflow/report/ (for a rule whose pages share one caption template)."""
    with open(f"{workflow.basedir}/workflow/report/{name}", encoding="utf-8") as handle:
        return handle.read()
