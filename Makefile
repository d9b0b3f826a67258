# The two entry points a newcomer needs: `make run` and `make test`.
# Both create .venv on first use and are safe to repeat.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
TARGET ?= results/adore_star/metrics.json
CORES ?= all

.PHONY: setup run test lint clean

setup: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

run: setup
	$(BIN)/snakemake --cores $(CORES) $(TARGET)

test: setup
	$(BIN)/python -m pytest tests

lint: setup
	$(BIN)/snakemake --lint

clean:
	rm -rf results .snakemake
