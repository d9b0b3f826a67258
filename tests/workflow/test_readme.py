"""README.md against a fresh `make run`: the main target, built from nothing in a checkout with the default config,
gives exactly the rows README.md's results table shows for its runs (``hardneg table`` prints them), and then every
command README.md shows runs, in the order shown.

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


def test_readme_results_rows_are_what_a_fresh_main_run_gives(made):
    result = run([str(BIN / "hardneg"), "table"], made)
    assert result.returncode == 0, result.stderr
    rows = result.stdout.splitlines()[2:]
    assert [row.split(" | ")[0] for row in rows] == ["| adore_star"]  # the main target's run
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    table = readme.split("\n## Results on the synthetic default\n", 1)[1].split("\n## ", 1)[0]
    for row in rows:
        assert f"\n{row}\n" in table, f"README.md's row differs from the fresh run's:\n{row}"


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
