"""Snakemake through the repository's Snakefile, in a working directory of the test's own: the one runner every
test uses (``snakemake``), the command line it runs (``command``, for tests that start Snakemake and stop it),
``write_config``, the jobs of a run or a dry run (``snakemake_jobs``, ``dry_run``) and what is read back from
Snakemake's output."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

import yaml

from tests.support import REPO

BIN = Path(sys.executable).parent  # the environment's executables: snakemake, hardneg, lint-imports
SNAKEMAKE = str(BIN / "snakemake")
FAULTS = REPO / "tests" / "faults"  # sitecustomize.py: pauses a stage just before (or after) a rename
SNAKEFILE = REPO / "Snakefile"
# snakemake_logger_plugin_jobs: every job as a JSON line (a job with a message shows only that on the terminal)
PLUGINS = REPO / "tests" / "support" / "plugins"
# The SLURM executor plugin, installed beside the environment rather than in it (the Makefile's SLURM_PREFIX): the
# runs that submit to SLURM, or plan to, put it on PYTHONPATH (``paths``); no other run loads it.
SLURM_PLUGIN = Path(sysconfig.get_path("purelib", vars={"base": str(BIN.parent / "slurm"),
                                                        "platbase": str(BIN.parent / "slurm")}))


def command(workdir: Path, *args: str, cores: int | None = 2, snakefile: Path | None = SNAKEFILE) -> list[str]:
    """Snakemake's command line: the Snakefile (``snakefile``) on ``workdir`` with ``cores`` cores (None: no
    ``--cores``, as a dry run needs none). ``snakefile=None`` is `make run`'s command, run in ``workdir``."""
    where = [] if snakefile is None else ["--snakefile", str(snakefile), "--directory", str(workdir)]
    return [SNAKEMAKE, *where, *([] if cores is None else ["--cores", str(cores)]), *args]


def job_env(**extra: str) -> dict:
    """The environment of a Snakemake run (and of its jobs); with fault injection on when ``extra`` sets it."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("HARDNEG_PAUSE")}
    if extra:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(FAULTS), env.get("PYTHONPATH")]))
        env.update(extra)
    return env


def snakemake(workdir: Path, *args: str, cores: int | None = 2, snakefile: Path | None = SNAKEFILE,
              cwd: Path | None = None, timeout: float | None = None) -> subprocess.CompletedProcess:
    """Run Snakemake to the end (see ``command``); ``stdout`` and ``stderr`` are both kept. ``cwd``: the folder it
    starts in (``workdir`` when ``snakefile`` is None); ``timeout``: seconds after which a run that hangs fails."""
    if cwd is None and snakefile is None:
        cwd = workdir
    return subprocess.run(command(workdir, *args, cores=cores, snakefile=snakefile), capture_output=True, text=True,
                          env=job_env(), cwd=cwd, timeout=timeout)


def output_of(result: subprocess.CompletedProcess) -> str:
    return (result.stdout or "") + (result.stderr or "")


def write_config(workdir: Path, config: dict | str) -> Path:
    """Write ``workdir/config/config.yaml`` from a dict (keys in their order), or verbatim from a string."""
    path = workdir / "config" / "config.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(config if isinstance(config, str) else yaml.safe_dump(config, sort_keys=False))
    return path


def dry_run(workdir: Path, *args: str, cwd: Path | None = None, snakefile: Path | None = SNAKEFILE,
            paths: tuple[Path, ...] = ()) -> tuple[subprocess.CompletedProcess, list[dict]]:
    """``snakemake -n`` (see :func:`snakemake`) and the jobs it plans, each ``{"rule", "wildcards", "resources",
    "message", "input", "output", "log", "benchmark"}`` as Snakemake's logger receives it (``resources`` as text:
    ``{"mem_mb": "4000", ...}``; files as printed: ``["results/x.parquet (update)", ...]``). ``paths``: folders
    put on PYTHONPATH (:data:`SLURM_PLUGIN`)."""
    return snakemake_jobs(workdir, "-n", *args, cores=None, cwd=cwd, snakefile=snakefile, paths=paths)


def snakemake_jobs(workdir: Path, *args: str, cores: int | None = 2, cwd: Path | None = None,
                   snakefile: Path | None = SNAKEFILE, timeout: float | None = None,
                   paths: tuple[Path, ...] = ()) -> tuple[subprocess.CompletedProcess, list[dict]]:
    """:func:`snakemake`, and the jobs it planned or ran (as :func:`dry_run` gives them)."""
    if cwd is None:
        cwd = workdir
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "jobs.jsonl"
        env = job_env()
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(PLUGINS), *map(str, paths), env.get("PYTHONPATH")]))
        result = subprocess.run(command(workdir, *args, "--logger", "jobs", "--logger-jobs-path", str(path),
                                        cores=cores, snakefile=snakefile), capture_output=True, text=True, env=env,
                                cwd=cwd, timeout=timeout)
        lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
    return result, [json.loads(line) for line in lines]


def job_resources(jobs: list[dict], rule: str, wildcards: str) -> str:
    """The resources of the dry run's job of ``rule`` with these wildcards (``"run=star, shard=0"``; an empty one,
    such as the by_index of a run's own search, need not be given), as ``mem_mb=4000, runtime=30, ...``."""
    wanted = dict(item.split("=", 1) for item in wildcards.split(", "))
    for job in jobs:
        if job["rule"] == rule and {name: value for name, value in job["wildcards"].items() if value} == wanted:
            return ", ".join(f"{key}={value}" for key, value in job["resources"].items())
    raise AssertionError(f"no job of {rule} with {wildcards}")
