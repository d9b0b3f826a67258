# Helpers shared by every stage (config slices, path builders). Functions only, no rules.
import re

from hardneg.config import dataset_config, resolve_run
from hardneg.datasets import dataset_input_files, dataset_splits


RESULTS = "results"
DATASETS = config["datasets"]
RUNS = config["runs"]
EVAL_SPLIT = config["evaluation"]["split"]


def names_regex(names):
    """A wildcard constraint matching exactly these names (and nothing when there are none)."""
    return "|".join(re.escape(n) for n in names) or "(?!)"


def runs_with_method(*methods):
    return [name for name, run in RUNS.items() if run["method"] in methods]


def run_dataset(run):
    return RUNS[run].get("dataset", config["dataset"])


def dataset_dir(dataset):
    return f"{RESULTS}/datasets/{dataset}"


def run_dataset_dir(wildcards):
    return dataset_dir(run_dataset(wildcards.run))


def run_splits(run):
    return dataset_splits(DATASETS[run_dataset(run)])


def run_files(wildcards):
    """The run's ranking of every split of its dataset."""
    return [f"{RESULTS}/{wildcards.run}/runs/{split}.parquet" for split in run_splits(wildcards.run)]


def run_params(run, *keys):
    """The named keys of a run's ``params`` (so a rule re-runs only when those change)."""
    params = RUNS[run].get("params", {})
    return {key: params[key] for key in keys}

