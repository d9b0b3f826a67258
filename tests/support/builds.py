"""Tiny workflows built once per test session, whichever test file (and pytest-xdist worker) asks first; the
others wait for that build and reuse it. A test reads a build in place; a test that changes files in it, or runs
Snakemake on it, takes a copy of its own (``copy_build``), which Snakemake finds as up to date as the build.

A build is named by what makes it: ``Builds.workflow(config, *targets)`` is the same build for the same config and
targets wherever it is asked for; ``Builds.build(name, make)`` runs ``make(workdir)`` once (a build of several
steps), and keeps what ``make`` returns (JSON) for every test that asks."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path
from typing import Callable

from filelock import FileLock

from tests.support import REPO
from tests.support.configs import (DENSE_CONFIG, DENSE_TARGETS, FUSION_CONFIG, FUSION_TARGETS, MAIN_TARGET, STAR_CONFIG,
                                   STAR_TARGETS)
from tests.support.workflow import output_of, snakemake, write_config


def session_root(tmp_path_factory) -> Path:
    """The session's temporary folder that every pytest-xdist worker shares."""
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # each worker's basetemp is a folder of the session's
    return root


class Builds:
    """The builds of one test session, under ``root``."""

    def __init__(self, root: Path):
        self.root = root
        root.mkdir(parents=True, exist_ok=True)

    def build(self, name: str, make: Callable[[Path], dict | None]) -> tuple[Path, dict]:
        """The working directory ``name`` after ``make(workdir)``, and what ``make`` returned. Built once per session
        (under a lock); a build that failed fails every later request with its error, without building again."""
        workdir, record, failed = self.root / name, self.root / f"{name}.json", self.root / f"{name}.failed"
        with FileLock(str(self.root / f"{name}.lock")):
            if failed.exists():
                raise AssertionError(f"the build {name} failed earlier in this session:\n{failed.read_text()}")
            if not record.exists():
                if workdir.exists():
                    shutil.rmtree(workdir)
                workdir.mkdir()
                try:
                    made = make(workdir)
                except Exception as error:
                    failed.write_text(f"{type(error).__name__}: {error}"[-10000:])
                    raise
                record.write_text(json.dumps(made or {}))
        return workdir, json.loads(record.read_text())

    def workflow(self, config: dict, *targets: str, umask: int | None = None) -> Path:
        """A working directory with ``config`` where Snakemake built ``targets`` (under ``umask`` when given)."""
        return self.workflow_record(config, *targets, umask=umask)[0]

    def workflow_record(self, config: dict, *targets: str, umask: int | None = None) -> tuple[Path, dict]:
        """:meth:`workflow`, and ``{"output": what Snakemake printed}`` while it built."""
        key = hashlib.sha256(json.dumps([config, targets, umask], sort_keys=True).encode()).hexdigest()[:16]

        def make(workdir: Path) -> dict:
            write_config(workdir, config)
            previous = None if umask is None else os.umask(umask)  # inherited by Snakemake and its jobs
            try:
                result = snakemake(workdir, *targets)
            finally:
                if previous is not None:
                    os.umask(previous)
            assert result.returncode == 0, output_of(result)[-4000:]
            return {"output": output_of(result)}

        return self.build(f"workflow-{key}", make)

    def extended(self, base: Path, name: str, config: dict, *targets: str) -> tuple[Path, dict]:
        """A copy of the build ``base`` whose config is replaced by ``config``, after Snakemake built ``targets``
        there, and ``{"output": what Snakemake printed}``. The runs ``config`` shares with the base's config (the
        same dataset, seed and run entries) are up to date in the copy, so only what ``config`` adds is built."""
        def make(workdir: Path) -> dict:
            copy_build(base, workdir)
            write_config(workdir, config)
            result = snakemake(workdir, *targets)
            assert result.returncode == 0, output_of(result)[-4000:]
            return {"output": output_of(result)}

        return self.build(name, make)

    def star_chain(self) -> Path:
        """The tiny BM25 → warm-up → STAR → ADORE chain (``configs.STAR_CONFIG``), built from nothing."""
        return self.workflow(STAR_CONFIG, *STAR_TARGETS)

    def star_chain_output(self) -> str:
        """What Snakemake printed while it built :meth:`star_chain` (two jobs at a time, from nothing)."""
        return self.workflow_record(STAR_CONFIG, *STAR_TARGETS)[1]["output"]

    def dense_runs(self) -> Path:
        """The tiny dense runs (``configs.DENSE_CONFIG``: BM25, the warm-up, random and in-batch negatives, STAR),
        built from nothing under umask 002 (a group's shared project folder, which tests/workflow/
        test_workflow_dense.py checks every artifact keeps); the base that the comparison, summary and TCT-ColBERT
        tests extend (:meth:`extended`)."""
        return self.workflow(DENSE_CONFIG, *DENSE_TARGETS, umask=0o002)

    def fusion_chain(self) -> Path:
        """The tiny fusion chain (``configs.FUSION_CONFIG``): BM25, in-batch, and their hybrid, built from nothing."""
        def make(workdir: Path) -> None:
            write_config(workdir, FUSION_CONFIG)
            result = snakemake(workdir, *FUSION_TARGETS)
            assert result.returncode == 0, result.stderr[-4000:]
            # inbatch trained on the training split: tuning on it is warned about
            assert "alpha is tuned on queries of split 'train', which trained a model" in result.stderr

        return self.build("workflow_fusion", make)[0]

    def main_run(self) -> Path:
        """A checkout (the repository's files, linked, with the default config) after `make run`'s Snakemake
        command: the main target built from nothing."""
        def make(work: Path) -> None:
            for name in ("Snakefile", "rules", "scripts", "workflow", "profiles", "config", "benchmarks", "Makefile",
                         "pyproject.toml", "constraints.txt"):
                (work / name).symlink_to(REPO / name)
            result = snakemake(work, MAIN_TARGET, snakefile=None)  # `make run`: snakemake --cores N TARGET
            assert result.returncode == 0, result.stderr[-5000:]

        return self.build("main_run", make)[0]


def copy_build(workdir: Path, to: Path) -> Path:
    """A copy of a build for a test that changes it (or for a build that goes on from it, into its own empty
    folder ``to``): files with their times (``shutil.copy2``), folders with theirs, links as links (a checkout's),
    Snakemake's records (``.snakemake/``) too; so the copy needs no job the build did not need."""
    shutil.copytree(workdir, to, symlinks=True, dirs_exist_ok=True)
    return to
