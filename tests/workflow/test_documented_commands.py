"""README.md and the pages of docs/ against a fresh `make run`: the main target, built from nothing in a checkout
with the default config, gives the rows docs/benchmarks.md's seed-42 table shows for its runs (``hardneg table`` prints
them; within the tolerances of floating-point kernels that differ between processors), and then every command of
every bash block of README.md, config/README.md and docs/ runs, page by page, in the order shown.

Commands that only read what the main target built (``hardneg audit``, ``hardneg export``, ``cat`` of its files,
Python snippets over its results) run for real. Snakemake commands whose targets take longer than a test may (ANCE,
TCT-ColBERT, the ABS runs, MS MARCO, the SLURM profile, the report) run as dry runs: their DAGs must resolve from
this state, and the files a later command reads must be outputs of them. ``benchmarks/synthetic_results.py`` builds
those targets for real; a benchmark script runs with ``--help`` (they run for minutes to hours). ``make`` targets
run as ``make -n`` (the set-up commands are what sets up and runs this suite); ``pip`` commands, which change the
environment or need an index beyond PyPI, are parsed by pip's own parser, their requirements checked. The "Your
own data" commands run on a collection of their own in tests/workflow/test_own_data.py.
"""

import functools
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import REPO
from tests.support.builds import copy_build
from tests.support.docs import name, pages, shell_commands
from tests.support.workflow import SLURM_PLUGIN

pytestmark = pytest.mark.slow

BIN = Path(sys.executable).parent
OWN_DATA = {"README.md": "Your own data in three commands", "docs/own-data.md": None}  # test_own_data.py runs them


ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")


def _split(command: str) -> tuple[dict[str, str], list[str]]:
    """A command's leading ``NAME=value`` assignments (the environment a shell gives it) and its arguments."""
    words = shlex.split(command.split("\n", 1)[0], comments=True)
    env = {}
    while words and ASSIGNMENT.match(words[0]):
        key, _, value = words.pop(0).partition("=")
        env[key] = value
    return env, words


def _argv(command: str) -> list[str]:
    argv = _split(command)[1]
    if argv[0].startswith(".venv/bin/"):
        argv[0] = str(BIN / argv[0][len(".venv/bin/"):])
    elif argv[0] in ("snakemake", "hardneg"):
        argv[0] = str(BIN / argv[0])
    return argv


def run(argv, work, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(argv, cwd=work, capture_output=True, text=True, **kwargs)


def _run_in(environment: dict[str, str], argv, work, env=None, **kwargs) -> subprocess.CompletedProcess:
    """`run` with a command's own ``NAME=value`` assignments added to its environment."""
    if environment:
        env = {**(env or os.environ), **environment}
    return run(argv, work, env=env, **kwargs)


def test_leading_assignments_are_the_commands_environment():
    assert _split("CI=true A_1=x .venv/bin/python benchmarks/b.py --out /tmp/p") == (
        {"CI": "true", "A_1": "x"}, [".venv/bin/python", "benchmarks/b.py", "--out", "/tmp/p"])
    assert _split("hardneg audit star --where 'x=1'") == ({}, ["hardneg", "audit", "star", "--where", "x=1"])


@pytest.fixture(scope="module")
def made(main_run, tmp_path_factory):
    """The checkout after `make run` (tests/support/builds.py), where README's commands then run: a copy of the
    session's build, since they write beside it (exports/)."""
    return copy_build(main_run, tmp_path_factory.mktemp("made") / "checkout")


def test_the_fixture_builds_what_make_run_builds():
    from tests.support.configs import MAIN_TARGET

    makefile = (REPO / "Makefile").read_text()
    assert f"TARGET ?= {MAIN_TARGET}\n" in makefile and "$(BIN)/snakemake --cores $(CORES) $(TARGET)" in makefile


# README's numbers come from one machine. PyTorch and MKL choose their floating-point kernels by the processor's
# instruction set (AVX2, AVX-512, AMX), so another processor trains to slightly different weights: the measures may
# move in the third decimal and the mean pairwise errors by a fraction of one. On one machine they are exact.
MEASURE_TOLERANCE, ERRORS_TOLERANCE = 0.01, 0.02  # absolute on the measures; relative on the pairwise errors


def _cells(row: str) -> list[str]:
    return [cell.strip() for cell in row.strip().strip("|").split("|")]


def _agrees(fresh: str, shown: str) -> bool:
    """Whether a fresh row of ``hardneg table`` agrees with README's row of that run (same run, same columns, each
    number within the tolerances above; markers such as "(≥)" equal)."""
    fresh, shown = _cells(fresh), _cells(shown)
    if len(fresh) != len(shown) or fresh[0] != shown[0]:
        return False
    for column, (a, b) in enumerate(zip(fresh[1:], shown[1:]), start=1):
        (a, mark_a), (b, mark_b) = (cell.partition(" ")[::2] for cell in (a, b))
        if mark_a != mark_b:
            return False
        a, b = float(a), float(b)
        limit = MEASURE_TOLERANCE if column <= 3 else ERRORS_TOLERANCE * max(abs(b), 1.0)
        if abs(a - b) > limit + 1e-9:
            return False
    return True


def test_rows_agree_within_the_tolerances_and_no_further():
    shown = "| adore_star | 0.356 | 0.362 | 0.837 | 92.4 | 234.7 |"
    assert _agrees("| adore_star | 0.356 | 0.362 | 0.838 | 92.3 | 234.8 |", shown)
    assert _agrees("| adore_star | 0.366 | 0.352 | 0.837 | 94.2 | 230.1 |", shown)
    assert not _agrees("| adore_star | 0.368 | 0.362 | 0.837 | 92.4 | 234.7 |", shown)  # MRR@10 off by 0.012
    assert not _agrees("| adore_star | 0.356 | 0.362 | 0.837 | 95.0 | 234.7 |", shown)  # errors off by 2.8 %
    assert not _agrees("| adore_star | 0.356 | 0.362 | 0.837 | 92.4 | 234.7 (≥) |", shown)
    assert not _agrees("| star | 0.356 | 0.362 | 0.837 | 92.4 | 234.7 |", shown)


def test_the_published_seed_42_rows_are_what_a_fresh_main_run_gives(made):
    """The rows of the default config's own seed (docs/benchmarks.md, "Seed 42 alone"; README shows the means over
    seeds) against the main target built from nothing."""
    result = run([str(BIN / "hardneg"), "table"], made)
    assert result.returncode == 0, result.stderr
    header, rows = result.stdout.splitlines()[0], result.stdout.splitlines()[2:]
    assert [row.split(" | ")[0] for row in rows] == ["| adore_star"]  # the main target's run
    page = (REPO / "docs" / "benchmarks.md").read_text(encoding="utf-8")
    table = page.split("\n### Seed 42 alone\n", 1)[1].split("\n#", 1)[0]
    assert f"\n{header}\n" in table
    shown = {_cells(line)[0]: line for line in table.splitlines() if line.startswith("| ")}
    for row in rows:
        assert _agrees(row, shown[_cells(row)[0]]), \
            f"docs/benchmarks.md's row differs from the fresh run's beyond the tolerances:\n{shown[_cells(row)[0]]}\n{row}"


def _dry_run(argv: list[str], work, environment=None) -> subprocess.CompletedProcess:
    argv = [a for a in argv if a not in ("--cores", "all")]
    if "--report" in argv:  # the report of a target: the target's DAG
        at = argv.index("--report")
        del argv[at:at + 2]
    env = None
    if any("profiles/slurm" in a for a in argv):  # its executor is the SLURM plugin, beside the environment
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(SLURM_PLUGIN),
                                                                          os.environ.get("PYTHONPATH")]))}
    return _run_in(environment or {}, [*argv, "-n", "--quiet", "rules"], work, env=env)


def _own_data(page, section: str) -> bool:
    skipped = OWN_DATA.get(name(page), "")
    return skipped is None or skipped == section


def _pip(argv: list[str]) -> subprocess.CompletedProcess:
    """A pip command, parsed by pip's own parser and its requirements by packaging, without changing anything."""
    check = ("import sys; from pip._internal.commands import create_command; "
             "from packaging.requirements import Requirement; "
             "command = create_command(sys.argv[1]); options, args = command.parse_args(sys.argv[2:]); "
             "[Requirement(arg) for arg in args]; print(sys.argv[1], args)")
    return run([str(BIN / "python"), "-c", check, *argv[1:]], REPO)


def _command_result(command: str, work) -> subprocess.CompletedProcess:
    argv, environment = _argv(command), _split(command)[0]  # the environment a shell would give it
    run = functools.partial(_run_in, environment)
    tool = Path(argv[0]).name
    if tool == "snakemake":
        return _dry_run(argv, work, environment)
    if tool == "make":
        return run(["make", "-n", *argv[1:]], work)
    if tool == "pip":
        return _pip(argv)
    if tool == "python" and argv[1].startswith("benchmarks/"):
        return run([*argv[:2], "--help"], work)  # builds what the section shows; runs for hours
    if tool == "cat" and not (work / argv[1]).exists():
        return _dry_run([str(BIN / "snakemake"), argv[1]], work, environment)  # a file of a target built by dry run
    if "<<" in command:
        paths = re.findall(r"results/[\w./-]+", command)
        if all((work / p).exists() for p in paths):
            return run(argv, work, input=command.split("\n", 1)[1].rsplit("\n", 1)[0])
        return _dry_run([str(BIN / "snakemake"), *paths], work, environment)
    return run(argv, work)


def _page_ids() -> list[str]:
    return [name(page) for page in pages()]


@pytest.mark.parametrize("page", pages(), ids=_page_ids())
def test_every_documented_command_runs_after_make_run(made, page):
    done = []
    for section, command in shell_commands(page):
        if _own_data(page, section):
            continue
        result = _command_result(command, made)
        assert result.returncode == 0, \
            f"{name(page)} [{section}] {command}\n{result.stdout[-2000:]}\n{result.stderr[-4000:]}"
        done.append(command)
    if name(page) == "README.md":
        assert any("hardneg audit star" in c for c in done) and any(c.startswith("make ") for c in done), done


def test_the_pages_show_the_commands_users_need():
    commands = {name(page): [c for _, c in shell_commands(page)] for page in pages()}
    everything = [c for page in commands.values() for c in page]
    assert sum(len(c) for c in commands.values()) >= 60
    for expected in ("make run", "make test", "hardneg audit star", "hardneg export hardnegs", "hardneg export index",
                     "hardneg evaluate", "--workflow-profile profiles/slurm", "--report results/report.html",
                     "config/msmarco-passage.yaml", "pip install faiss-gpu-cu12"):
        assert any(expected in c for c in everything), expected
