# The two entry points a newcomer needs: `make run` and `make test` (`make test-fast`: the unit tests only).
# Both create .venv on first use and are safe to repeat.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
SLURM_STAMP := $(VENV)/.installed-slurm
# The SLURM plugin (the `slurm` extra) is installed under a prefix of its own (.venv/slurm), not into the
# environment: Snakemake loads every executor plugin it finds at start (this one imports pandas), which would cost
# each of the test suite's hundreds of Snakemake runs a third of a second. tests/slurm/cluster.sh and
# tests/workflow/test_slurm_profile.py put it on PYTHONPATH; a user's cluster install is `pip install -e '.[slurm]'`.
SLURM_PREFIX := $(VENV)/slurm
TARGET ?= results/adore_star/metrics.json
CORES ?= all

.PHONY: setup browser run report test test-fast docs slurm-test lint clean

setup: $(STAMP)

# compileall: the bytecode of the package and of the test helpers that Snakemake runs load, written once (pip
# compiles no editable install); where PYTHONDONTWRITEBYTECODE is set, as in many containers, every Snakemake run,
# job and hardneg command would otherwise compile anew the modules it imports (a quarter of a second for the
# workflow's planning alone).
# constraints.txt: the exact versions the project is tested with, within pyproject.toml's ranges.
$(STAMP): pyproject.toml constraints.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[dev]'
	$(BIN)/python -m compileall -q src tests
	touch $(STAMP)

run: setup
	$(BIN)/snakemake --cores $(CORES) $(TARGET)

# The report of the config's `report` runs (by default `make run`'s run and the runs behind it): after `make run`
# it makes only pages and figures, then the one self-contained file results/report.html.
report: setup
	$(BIN)/snakemake --cores $(CORES) report
	$(BIN)/snakemake report --report results/report.html

# Test files run in parallel (pytest-xdist, one file per worker at a time: module fixtures are built once, tiny
# workflows once per session, tests/support/builds.py); the integration tests' Snakemake jobs leave cores idle while
# one Python process imports or one JVM starts. The tiers: tests/unit (the library's packages, one folder each),
# tests/integration (the JVM, several processes, killed training processes), tests/workflow (runs of the Snakefile),
# tests/reliability (kills, faults and bad inputs through it); code they share in tests/support.
TEST_WORKERS ?= 2
# pytest rewrites the asserts of each test module and keeps the result beside it (__pycache__/*-pytest-*.pyc),
# but not where PYTHONDONTWRITEBYTECODE is set: then every run and every worker rewrites all modules again (five
# seconds of the unit tier's collection). The tests run with it unset.
PYTEST := env -u PYTHONDONTWRITEBYTECODE $(BIN)/python -m pytest

test: setup browser $(SLURM_STAMP)
	$(PYTEST) tests -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder --durations=40

# The unit tier alone: no workflow run, no Snakemake, no JVM.
test-fast: setup
	$(PYTEST) tests/unit -n $(TEST_WORKERS)

# The documentation site (mkdocs.yml, docs/) into site/, offline; --strict turns every warning (a broken link, a page
# outside the nav, a docstring mkdocstrings cannot read) into a failure. The configuration reference is generated
# from the schema while it builds (docs/hooks/config_reference.py). tests/project/test_docs.py builds it the same way.
docs: setup
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

# The workflow on a real SLURM cluster: tests/slurm/cluster.sh brings up a single-node cluster of its own (as root;
# Debian's slurm-wlm, slurmdbd, munge and mariadb-server installed when missing), runs the tiny pipeline through
# profiles/slurm and checks SLURM's accounting; it stops its daemons and removes its state when done.
slurm-test: $(SLURM_STAMP)
	tests/slurm/cluster.sh

$(SLURM_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet -c constraints.txt --prefix $(SLURM_PREFIX) \
		$$($(BIN)/python -c "import tomllib; print(' '.join(tomllib.load(open('pyproject.toml', 'rb'))['project']['optional-dependencies']['slurm']))")
	touch $(SLURM_STAMP)

# tests/workflow/test_report.py opens the Snakemake report in Debian's chromium, headless. As root (CI) it is
# installed here when missing; anyone else is told how, and that test is skipped without it (outside CI).
browser:
	@if command -v chromium >/dev/null 2>&1; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
		apt-get update && apt-get install -y --no-install-recommends chromium; \
	else echo "chromium is missing: 'sudo apt-get install chromium' lets tests/workflow/test_report.py open the report"; fi

# The static checks tests/project/test_lint.py holds: ruff (lint, format) and mypy over the package, Snakemake's
# linter.
lint: setup
	$(BIN)/ruff check src
	$(BIN)/ruff format --check src
	$(BIN)/mypy
	$(BIN)/snakemake --lint

clean:
	rm -rf results .snakemake site
