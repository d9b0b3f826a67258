"""Run one stage of the workflow by hand, outside Snakemake, for debugging.

    python -m hardneg.stage train_dense --run star
    python -m hardneg.stage dense_search --run star --split test --config config/config.yaml --console

The stage is a rule of the workflow. Its inputs, outputs, params, threads, resources and log are those Snakemake
would give the job with these wildcards (the workflow is loaded with its own machinery, the DAG is not built),
and the rule's thin script runs in this process, so a debugger or profiler sees the library code directly.
Its inputs must exist (build them with ``snakemake <path>``); its outputs are written where the workflow writes
them. ``--console`` logs to the terminal instead of the rule's log file.
"""

from __future__ import annotations

import argparse
import os
import runpy
import sys
from pathlib import Path

from hardneg.errors import HardnegError
from hardneg.io.layout import by_index

WILDCARDS = ("run", "split", "shard", "index", "dataset", "cache", "vocab")


def load_workflow(snakefile: str | os.PathLike, configfiles: list | None = None):
    """The workflow in ``snakefile`` (and the given config files, which replace the Snakefile's ``configfile:``),
    loaded in the current directory: its rules, with no DAG built."""
    from snakemake.api import Workflow  # Snakemake: imported only where the workflow is loaded
    from snakemake.logging import LoggerManager, logger
    from snakemake.settings.types import (
        ConfigSettings,
        DAGSettings,
        DeploymentSettings,
        OutputSettings,
        ResourceSettings,
        StorageSettings,
        WorkflowSettings,
    )

    workflow = Workflow(
        config_settings=ConfigSettings(configfiles=[Path(f) for f in configfiles or []]),
        resource_settings=ResourceSettings(),
        workflow_settings=WorkflowSettings(),
        logger_manager=LoggerManager(logger, OutputSettings()),
        storage_settings=StorageSettings(),
        dag_settings=DAGSettings(rerun_triggers=[]),
        deployment_settings=DeploymentSettings(),
        storage_provider_settings={},
    )
    workflow.include(Path(snakefile).resolve(), overwrite_default_target=True)
    workflow.global_resources = {}
    return workflow


def load_job(rule_name: str, wildcards: dict, *, snakefile: str | os.PathLike, configfiles: list | None = None):
    """The Snakemake job of rule ``rule_name`` with ``wildcards``, from the workflow in ``snakefile`` (and the
    given config files, which replace the Snakefile's ``configfile:``) loaded in the current directory."""
    workflow = load_workflow(snakefile, configfiles)
    # Snakemake: imported only where the workflow is loaded, after snakemake.api (or its modules import in a cycle)
    from snakemake.dag import DAG
    from snakemake.jobs import Job

    names = sorted(rule.name for rule in workflow.rules if rule.script)
    if rule_name not in names:
        raise HardnegError(f"no stage {rule_name!r}; stages: {', '.join(names)}")
    rule = workflow.get_rule(rule_name)
    if "by_index" in rule.wildcard_names:  # a search or evaluation with the run's own index (no --index) or another
        slug = wildcards.get("index")
        wildcards = {**{k: v for k, v in wildcards.items() if k != "index"}, "by_index": by_index(slug)}
    missing = sorted(set(rule.wildcard_names) - set(wildcards))
    if missing:
        raise HardnegError(f"stage {rule_name} needs --{' --'.join(missing)}")
    extra = sorted(set(wildcards) - set(rule.wildcard_names))
    if extra:
        raise HardnegError(
            f"stage {rule_name} takes no --{' --'.join(extra)} (its wildcards: "
            f"{', '.join(sorted(rule.wildcard_names)) or 'none'})"
        )
    job = Job(rule, DAG(workflow, rules=[rule]), wildcards)
    return workflow, rule, job


def run_stage(
    rule_name: str,
    wildcards: dict,
    *,
    snakefile: str | os.PathLike = "Snakefile",
    configfiles: list | None = None,
    console: bool = False,
    threads: int | None = None,
) -> None:
    """Run one job of the workflow in this process (see the module docstring)."""
    from snakemake.iocontainers import Snakemake  # Snakemake: imported only where the workflow is loaded

    workflow, rule, job = load_job(rule_name, wildcards, snakefile=snakefile, configfiles=configfiles)
    absent = [f"{name}: {path}" for name, path in _named(job.input) if not os.path.exists(path)]
    if absent:
        raise HardnegError(
            f"stage {rule_name} {_describe(wildcards)} lacks inputs (build them with snakemake "
            f"first): {'; '.join(absent)}"
        )
    for path in list(job.output) + list(job.log):
        os.makedirs(os.path.dirname(os.path.abspath(path)) or ".", exist_ok=True)
    smk = Snakemake(
        job.input,
        job.output,
        job.params,
        job.wildcards,
        threads or job.threads,
        job.resources,
        job.log,
        workflow.config,
        rule.name,
        None,
        scriptdir=str(rule.basedir),
    )
    if console:
        smk.log = [None]
    script = Path(str(rule.basedir)) / rule.script
    runpy.run_path(str(script), init_globals={"snakemake": smk}, run_name="__main__")


def _named(io) -> list[tuple[str, str]]:
    names = {index: name for name, (index, _) in getattr(io, "_names", {}).items()}
    return [(names.get(i, str(i)), str(path)) for i, path in enumerate(io)]


def _describe(wildcards: dict) -> str:
    return " ".join(f"{k}={v}" for k, v in wildcards.items())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m hardneg.stage", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("stage", help="the rule to run, e.g. train_dense, encode_corpus_shard, dense_search")
    parser.add_argument(
        "--config", action="append", default=None, help="config file (default: the Snakefile's config/config.yaml)"
    )
    parser.add_argument(
        "--snakefile",
        default=None,
        help="the workflow (default: the Snakefile in --directory, else in the current directory)",
    )
    parser.add_argument("--directory", default=".", help="working directory holding results/ (default: .)")
    parser.add_argument("--threads", type=int, default=None, help="threads (default: the rule's)")
    parser.add_argument("--console", action="store_true", help="log to the terminal, not the rule's log file")
    for name in WILDCARDS:
        parser.add_argument(f"--{name}", default=None, help=f"the {name} wildcard")
    args = parser.parse_args(argv)
    wildcards = {name: getattr(args, name) for name in WILDCARDS if getattr(args, name) is not None}
    configs = [os.path.abspath(c) for c in args.config] if args.config else None
    snakefile = args.snakefile or next(
        (path for path in (os.path.join(args.directory, "Snakefile"), "Snakefile") if os.path.exists(path)), "Snakefile"
    )
    snakefile = os.path.abspath(snakefile)
    os.chdir(args.directory)
    try:
        run_stage(
            args.stage, wildcards, snakefile=snakefile, configfiles=configs, console=args.console, threads=args.threads
        )
    except HardnegError as exc:
        print(f"hardneg.stage: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
