"""Every job's script reads only the inputs, outputs, params, wildcards and resources its rule gives it: a script
asking for ``snakemake.input.rankings`` of a rule whose input is named otherwise fails only when that job runs,
which may be hours into a workflow (and in no tiny test build, for a rule that only a large config plans).

The jobs are those of dry runs of the default config (every run, the paper target, the PQ matrix), of the MS
MARCO passage config (its downloads) and of the tiny false-negative experiment (with and without training); each
job is made as Snakemake makes it (input functions called with its wildcards), so the names checked are the ones
the script will get."""

import re
import shutil
from pathlib import Path

import pytest
import yaml

from hardneg.datasets.adapters import dataset_splits
from hardneg.stage import load_workflow
from tests.support import REPO
from tests.support.configs import CROSS_ENCODER_CONFIG, FALSE_NEGATIVES_CONFIG
from tests.support.workflow import dry_run, output_of, write_config

SECTIONS = ("input", "output", "params", "wildcards", "resources")
ATTRIBUTE = re.compile(r"snakemake\.(%s)\.([A-Za-z_]\w*)" % "|".join(SECTIONS))
NAMESPACE_METHODS = {"get", "keys", "items", "values"}  # snakemake.input.get("tuning"): a name that may be absent


def names_read(script: Path) -> set[tuple[str, str]]:
    """(section, name) for each ``snakemake.<section>.<name>`` the script reads."""
    return {(section, name) for section, name in ATTRIBUTE.findall(script.read_text(encoding="utf-8"))
            if name not in NAMESPACE_METHODS}


def planned_jobs(jobs: list[dict]) -> list[tuple[str, dict]]:
    """(rule, wildcards) of each job a dry run plans, once each."""
    planned = []
    for job in jobs:
        if (job["rule"], job["wildcards"]) not in planned:
            planned.append((job["rule"], job["wildcards"]))
    return planned


def job_names(job, section: str) -> set[str]:
    if section == "wildcards":
        return set(job.wildcards.keys())
    if section == "resources":
        return set(job.rule.resources)
    return set(getattr(job, section).keys())


def undeclared(workflow, jobs: list[tuple[str, dict]]) -> list[str]:
    """'rule: section.name' for each name a job's script reads that the job does not have."""
    from snakemake.dag import DAG  # Snakemake: the jobs are made as a run makes them
    from snakemake.jobs import Job

    missing = set()
    for name, wildcards in jobs:
        rule = workflow.get_rule(name)
        if not rule.script:
            continue
        job = Job(rule, DAG(workflow, rules=[rule]), wildcards)
        script = Path(rule.basedir.get_path_or_uri(secret_free=True)) / rule.script  # relative to the rule file
        missing |= {f"{name}: {section}.{key}" for section, key in names_read(script)
                    if key not in job_names(job, section)}
    return sorted(missing)


def dry_run_jobs(workdir: Path, config: Path, *targets: str) -> tuple[object, list[tuple[str, dict]]]:
    (workdir / "config").mkdir(parents=True)
    shutil.copy(config, workdir / "config" / "config.yaml")
    result, jobs = dry_run(workdir, *targets)
    assert result.returncode == 0, output_of(result)[-3000:]
    return load_workflow(REPO / "Snakefile"), planned_jobs(jobs)


@pytest.fixture
def default_jobs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    runs = yaml.safe_load((REPO / "config" / "config.yaml").read_text())["runs"]
    return dry_run_jobs(tmp_path, REPO / "config" / "config.yaml", "paper", "report", "results/pq_matrix/matrix.md",
                        *[f"results/{run}/metrics.json" for run in runs])


def test_every_script_reads_only_what_its_job_is_given(default_jobs, tmp_path, monkeypatch):
    workflow, jobs = default_jobs
    planned = {rule for rule, _ in jobs}
    assert {"evaluate", "fuse", "tune_fusion", "rerank", "train_dense", "train_episode", "pq_matrix",
            "figure_tsne"} <= planned
    # a run's own search and evaluation, and those with another index (the PQ matrix's), each checked
    assert {(rule, bool(wildcards["by_index"])) for rule, wildcards in jobs if "by_index" in wildcards} == \
        {("dense_search", False), ("dense_search", True), ("evaluate", False), ("evaluate", True)}
    assert undeclared(workflow, jobs) == []

    passage = tmp_path / "passage"
    passage.mkdir()
    monkeypatch.chdir(passage)
    workflow, jobs = dry_run_jobs(passage, REPO / "config" / "msmarco-passage.yaml",
                                  "results/msmarco-passage/adore_star/metrics.json")
    assert {"download", "extract_member", "prepare_dataset"} <= {rule for rule, _ in jobs}
    assert undeclared(workflow, jobs) == []
    planned |= {rule for rule, _ in jobs}

    for train in (False, True):  # the false-negative experiment selects itself, or its runs do and are compared
        experiment = tmp_path / f"false_negatives_{train}"
        write_config(experiment, {**FALSE_NEGATIVES_CONFIG,
                                  "false_negatives": {**FALSE_NEGATIVES_CONFIG["false_negatives"], "train": train}})
        monkeypatch.chdir(experiment)
        result, found = dry_run(experiment, "false_negatives")
        assert result.returncode == 0, output_of(result)[-3000:]
        workflow, jobs = load_workflow(REPO / "Snakefile"), planned_jobs(found)
        assert undeclared(workflow, jobs) == []
        planned |= {rule for rule, _ in jobs}
    assert {"prepare_dataset_hiding", "false_negatives_select", "leakage_table", "leakage_figure",
            "false_negatives_effectiveness"} <= planned
    denoised = tmp_path / "denoised"  # a pool a cross-encoder scores, and a run distilling from a teacher's scores
    star = CROSS_ENCODER_CONFIG["runs"]["star"]
    write_config(denoised, {**CROSS_ENCODER_CONFIG, "runs": {**CROSS_ENCODER_CONFIG["runs"], "star_taught": {
        **star, "inputs": {**star["inputs"], "teacher": "crossencoder"},
        "params": {**star["params"], "distill": {"loss": "margin_mse"}}}}})
    monkeypatch.chdir(denoised)
    result, found = dry_run(denoised, "results/star_ce/metrics.json", "results/star_taught/metrics.json")
    assert result.returncode == 0, output_of(result)[-3000:]
    workflow, jobs = load_workflow(REPO / "Snakefile"), planned_jobs(found)
    assert {"score_pool", "teacher_pool_scores"} <= {rule for rule, _ in jobs}
    assert undeclared(workflow, jobs) == []
    planned |= {rule for rule, _ in jobs}
    imported = tmp_path / "imported"  # a run trained on an imported list (hardneg import's folder: no rule makes it)
    for name in ("hardnegs.parquet", "positives.parquet", "hardnegs_card.json"):
        (imported / "imports" / "list").mkdir(parents=True, exist_ok=True)
        (imported / "imports" / "list" / name).write_text("")
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    config["runs"]["star_imported"] = {"method": "star", "inputs": {"init": "warmup",
                                                                    "negatives": {"imported": "imports/list"}}}
    write_config(imported, config)
    monkeypatch.chdir(imported)
    result, found = dry_run(imported, "results/star_imported/metrics.json")
    assert result.returncode == 0, output_of(result)[-3000:]
    workflow, jobs = load_workflow(REPO / "Snakefile"), planned_jobs(found)
    assert {"import_hard_negatives", "audit_hard_negatives"} <= {rule for rule, _ in jobs}
    assert undeclared(workflow, jobs) == []
    planned |= {rule for rule, _ in jobs}
    scripted = {rule.name for rule in workflow.rules if rule.script}
    assert scripted - planned == set()  # every rule with a script was checked


def test_the_check_finds_an_input_the_job_is_not_given(default_jobs, tmp_path):
    workflow, jobs = default_jobs
    script = tmp_path / "reads_runs.py"
    script.write_text("paths = snakemake.input.runs\nsplit = snakemake.params.split\n"
                      "tuning = snakemake.input.get('tuning')\n")
    workflow.get_rule("evaluate").script = str(script)
    assert [line for line in undeclared(workflow, jobs) if line.startswith("evaluate:")] == ["evaluate: input.runs"]


def own_splits(job, default: str) -> set[str]:
    """The splits a job reads: its split wildcard, else its param ``split`` or ``train_split``, else those its
    params ``card`` or ``cache`` name; ``{default}`` for a job naming none."""
    if "split" in job.wildcards.keys():
        return {job.wildcards.split}
    params = dict(job.params.items())
    for key in ("split", "train_split"):
        if key in params:
            return {params[key]}
    for key in ("card", "cache"):
        if key in params:
            return set(params[key]["splits"]) if "splits" in params[key] else {params[key]["split"]}
    return {default}


def test_each_split_file_a_job_is_given_is_that_splits_file_of_its_input_folder(default_jobs):
    """A script reads a split's file of a dataset's folder (queries, qrels, hidden) from a param
    ``<folder>_file`` (or ``_files``) that its rule derives from the folder it depends on (split_file_of,
    rules/common.smk): a file of that folder, named by a split of the dataset (the job's own split, if it has one)."""
    from snakemake.dag import DAG  # Snakemake: the jobs are made as a run makes them
    from snakemake.jobs import Job

    workflow, jobs = default_jobs
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    given = set()
    for name, wildcards in jobs:
        rule = workflow.get_rule(name)
        job = Job(rule, DAG(workflow, rules=[rule]), wildcards)
        for key, value in job.params.items():
            folder, _, kind = key.rpartition("_")
            if kind not in ("file", "files") or value is None:
                continue
            paths = [value] if kind == "file" else list(dict(value).values() if isinstance(value, dict) else value)
            for path in map(Path, paths):
                dataset = config["datasets"][path.parent.parent.name]
                assert str(path.parent) == job.input[folder] and path.suffix == ".parquet", (name, key, path)
                assert path.stem in set(dataset_splits(dataset)) & own_splits(job, path.stem), (name, key, path)
                given.add((name, key))
    assert {("bm25_search", "queries_file"), ("tokenize", "queries_files"), ("train_tokenizer", "queries_files"),
            ("train_dense", "qrels_file"), ("positive_scores", "qrels_file"), ("candidate_pool", "qrels_file"),
            ("audit_hard_negatives", "qrels_file"), ("hardneg_viewer", "queries_file"), ("mining_card", "qrels_file"),
            ("tune_fusion", "qrels_file")} <= given


def test_every_output_is_kept_while_its_job_runs_again(default_jobs):
    """Every output of every rule is update() (kept while its job runs again, put back when the job fails:
    rules/common.smk) or a temp() file that no one reads once its consumer ran."""
    from snakemake.io import is_flagged  # Snakemake: how the workflow's own files are flagged

    workflow, _ = default_jobs
    unkept = [f"{rule.name}: {output}" for rule in workflow.rules for output in rule.output
              if not (is_flagged(output, "update") or is_flagged(output, "temp"))]
    assert unkept == []
    assert sum(1 for rule in workflow.rules if rule.output) > 30
