"""README.md against a fresh `make run`: the main target, built from nothing in a checkout with the default config,
gives the rows README.md's results table shows for its runs (``hardneg table`` prints them; within the tolerances
of floating-point kernels that differ between processors), and then every command README.md shows runs, in the
order shown.

Commands that only read what the main target built (``hardneg audit``, ``hardneg export``, ``cat`` of its files,
Python snippets over its results) run for real. Snakemake commands whose targets take longer than a test may (ANCE,
TCT-ColBERT, the ABS runs, MS MARCO, the SLURM profile, the report) run as dry runs: their DAGs must resolve from
this state, and the files a later command reads must be outputs of them. ``benchmarks/synthetic_results.py`` builds
those targets for real. The "Your own data" section is run command for command by tests/workflow/test_own_data.py,
and the two set-up commands are the ones that set up and run this suite.
"""

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import REPO
from tests.support.builds import copy_build

pytestmark = pytest.mark.slow

BIN = Path(sys.executable).parent
SKIPPED_SECTIONS = {"", "Your own data"}  # the set-up commands; tests/workflow/test_own_data.py


def readme_commands() -> list[tuple[str, str]]:
    """(section, command) of every bash block of README.md, in order; a here-document is one command."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    commands, section = [], ""
    for chunk in re.split(r"(^## .*$)", text, flags=re.M):
        if chunk.startswith("## "):
            section = chunk[3:].strip()
            continue
        for block in re.findall(r"```bash\n(.*?)```", chunk, flags=re.S):
            lines = block.splitlines()
            while lines:
                line = lines.pop(0)
                if not line.strip() or line.strip().startswith("#"):
                    continue
                heredoc = re.search(r"<<'?(\w+)'?", line)
                if heredoc:
                    body = []
                    while lines and lines[0].strip() != heredoc.group(1):
                        body.append(lines.pop(0))
                    lines.pop(0)
                    line = "\n".join([line, *body, heredoc.group(1)])
                commands.append((section, line))
    return commands


def _argv(command: str) -> list[str]:
    argv = shlex.split(command.split("\n", 1)[0], comments=True)
    if argv[0].startswith(".venv/bin/"):
        argv[0] = str(BIN / argv[0][len(".venv/bin/"):])
    elif argv[0] in ("snakemake", "hardneg"):
        argv[0] = str(BIN / argv[0])
    return argv


def run(argv, work, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(argv, cwd=work, capture_output=True, text=True, **kwargs)


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


def test_readme_results_rows_are_what_a_fresh_main_run_gives(made):
    result = run([str(BIN / "hardneg"), "table"], made)
    assert result.returncode == 0, result.stderr
    header, rows = result.stdout.splitlines()[0], result.stdout.splitlines()[2:]
    assert [row.split(" | ")[0] for row in rows] == ["| adore_star"]  # the main target's run
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    table = readme.split("\n## Results on the synthetic default\n", 1)[1].split("\n## ", 1)[0]
    assert f"\n{header}\n" in table
    shown = {_cells(line)[0]: line for line in table.splitlines() if line.startswith("| ")}
    for row in rows:
        assert _agrees(row, shown[_cells(row)[0]]), \
            f"README.md's row differs from the fresh run's beyond the tolerances:\n{shown[_cells(row)[0]]}\n{row}"


def _dry_run(argv: list[str], work) -> subprocess.CompletedProcess:
    argv = [a for a in argv if a not in ("--cores", "all")]
    if "--report" in argv:  # the report of a target: the target's DAG
        at = argv.index("--report")
        del argv[at:at + 2]
    return run([*argv, "-n", "--quiet", "rules"], work)


def test_every_readme_command_runs_after_make_run(made):
    done = []
    for section, command in readme_commands():
        if section in SKIPPED_SECTIONS:
            continue
        argv = _argv(command)
        tool = Path(argv[0]).name
        if tool == "snakemake":
            result = _dry_run(argv, made)
        elif tool == "python" and argv[1].startswith("benchmarks/"):
            result = run([*argv[:2], "--help"], made)  # builds what the section shows; runs for hours
        elif tool == "cat" and not (made / argv[1]).exists():
            result = _dry_run([str(BIN / "snakemake"), argv[1]], made)  # a file of a target built by dry run
        elif "<<" in command:
            paths = re.findall(r"results/[\w./-]+", command)
            if all((made / p).exists() for p in paths):
                result = run(argv, made, input=command.split("\n", 1)[1].rsplit("\n", 1)[0])
            else:
                result = _dry_run([str(BIN / "snakemake"), *paths], made)
        else:
            result = run(argv, made)
        assert result.returncode == 0, f"[{section}] {command}\n{result.stdout[-2000:]}\n{result.stderr[-4000:]}"
        done.append(command)
    assert any("hardneg audit star" in c for c in done) and len(done) >= 15, done
