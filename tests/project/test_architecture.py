"""The library's layers (pyproject.toml, [tool.importlinter]) hold, and a new cycle breaks them; what Snakemake
loads to build its DAG, and what the command line loads to start, leave the heavy libraries out (torch,
transformers, Faiss, pandas, the JVM bridge): every Snakemake run and every ``hardneg`` command pays for what they import."""

import json
import tomllib
import re
import shutil
import subprocess
import sys
from pathlib import Path

from tests.support import REPO
from tests.support.configs import DENSE_CONFIG

LINT_IMPORTS = str(Path(sys.executable).with_name("lint-imports"))


def lint_imports(source: Path, config: Path):
    """lint-imports over the package ``hardneg`` found under ``source`` (a src folder), with ``config``."""
    env = {"PYTHONPATH": str(source), "PATH": "/usr/bin:/bin"}
    return subprocess.run([LINT_IMPORTS, "--config", str(config), "--no-cache"], capture_output=True, text=True,
                          env=env, cwd=source)


def test_the_layer_contracts_are_kept():
    result = lint_imports(REPO / "src", REPO / "pyproject.toml")
    assert result.returncode == 0, result.stdout[-3000:]
    assert "Contracts: 4 kept, 0 broken." in result.stdout


def test_a_function_local_import_reaching_up_breaks_the_layers(tmp_path):
    source = tmp_path / "src"
    shutil.copytree(REPO / "src" / "hardneg", source / "hardneg", ignore=shutil.ignore_patterns("__pycache__"))
    atomic = source / "hardneg" / "io" / "atomic.py"
    atomic.write_text(atomic.read_text() + "\n\ndef _plan(config):\n    from hardneg.pipeline.plan import Plan\n\n"
                                            "    return Plan(config)\n")
    result = lint_imports(source, REPO / "pyproject.toml")
    assert result.returncode == 1, result.stdout[-3000:]
    assert "hardneg.io.atomic -> hardneg.pipeline.plan" in result.stdout


def test_a_cycle_inside_one_layer_breaks_the_contracts(tmp_path):
    source = tmp_path / "src"
    shutil.copytree(REPO / "src" / "hardneg", source / "hardneg", ignore=shutil.ignore_patterns("__pycache__"))
    checkpoint = source / "hardneg" / "dense" / "checkpoint.py"  # the trainer imports it; it now imports the trainer
    checkpoint.write_text(checkpoint.read_text() + "\n\ndef _trainer():\n    from hardneg.dense import trainer\n\n"
                                                    "    return trainer\n")
    result = lint_imports(source, REPO / "pyproject.toml")
    assert result.returncode == 1, result.stdout[-3000:]
    assert "No cycles are allowed in hardneg.dense" in result.stdout


HEAVY = ("torch", "transformers", "faiss", "jnius", "sentence_transformers", "pandas")


def loaded_after(statements: str) -> list[str]:
    """The heavy libraries in ``sys.modules`` after running ``statements`` in a fresh interpreter."""
    probe = f"import json, sys\n{statements}\nprint(json.dumps(sorted(set({HEAVY!r}) & set(sys.modules))))"
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=REPO)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.splitlines()[-1])


def workflow_imports() -> list[str]:
    """The hardneg modules the Snakefile and the rule files import when Snakemake parses them."""
    modules = set()
    for path in [REPO / "Snakefile", *sorted((REPO / "rules").glob("*.smk"))]:
        for line in path.read_text(encoding="utf-8").splitlines():
            found = re.match(r"\s*from (hardneg[\w.]*) import ([\w, ]+)|\s*import (hardneg[\w.]*)", line)
            if found and found.group(1):
                modules.add(f"from {found.group(1)} import {found.group(2).strip()}")
            elif found:
                modules.add(f"import {found.group(3)}")
    return sorted(modules)


def test_building_the_dag_loads_no_heavy_library(tmp_path):
    imports = workflow_imports()
    assert "from hardneg.pipeline.config import read_config_files, validate_config" in imports
    assert "from hardneg.pipeline.config_checks import check_dataset_files" in imports
    assert len(imports) >= 8  # every rule file's imports, not only the Snakefile's
    assert loaded_after("\n".join(imports)) == []
    # A config read and checked as the Snakefile does: with exact indexes only, Faiss is not needed to check them
    path = tmp_path / "config.yaml"
    path.write_text(json.dumps(DENSE_CONFIG))
    assert loaded_after("\n".join([*imports, f"validate_config(read_config_files([{str(path)!r}], {{}}))"])) == []


def test_the_command_line_starts_without_a_heavy_library():
    assert loaded_after("import hardneg.cli") == []
    assert loaded_after("from hardneg.cli import main\ntry:\n    main(['--help'])\nexcept SystemExit:\n    pass") == []


def test_the_probe_sees_a_heavy_import():
    assert loaded_after("import hardneg.pipeline.config\nimport hardneg.index.faiss_index") == ["faiss"]


def method_contracts() -> dict[str, dict]:
    contracts = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    return {contract["type"]: contract for contract in contracts if contract["type"] in ("independence", "forbidden")}


def test_the_method_contracts_name_every_method_package():
    packages = sorted(f"hardneg.methods.{path.name}" for path in (REPO / "src" / "hardneg" / "methods").iterdir()
                      if (path / "__init__.py").is_file())
    assert len(packages) >= 15
    contracts = method_contracts()
    assert sorted(contracts["independence"]["modules"]) == packages
    assert sorted(contracts["forbidden"]["forbidden_modules"]) == packages
    assert {"hardneg.pipeline", "hardneg.cli", "hardneg.stage"} <= set(contracts["forbidden"]["source_modules"])


def test_a_method_importing_another_or_the_workflow_importing_a_method_breaks_the_contracts(tmp_path):
    source = tmp_path / "src"
    shutil.copytree(REPO / "src" / "hardneg", source / "hardneg", ignore=shutil.ignore_patterns("__pycache__"))
    warmup = source / "hardneg" / "methods" / "warmup" / "__init__.py"
    warmup.write_text(warmup.read_text() + "\n\ndef _star():\n    from hardneg.methods import star\n\n    return star\n")
    fuse = source / "hardneg" / "pipeline" / "fuse.py"
    fuse.write_text(fuse.read_text() + "\n\ndef _rrf():\n    from hardneg.methods import rrf\n\n    return rrf\n")
    result = lint_imports(source, REPO / "pyproject.toml")
    assert result.returncode == 1, result.stdout[-3000:]
    assert "methods independent of each other BROKEN" in result.stdout
    assert "hardneg.methods.warmup -> hardneg.methods.star" in result.stdout
    assert "the workflow layer reaches methods only through the registry BROKEN" in result.stdout
    assert "hardneg.pipeline.fuse -> hardneg.methods.rrf" in result.stdout


def test_nothing_outside_an_experiment_names_it():
    """An experiment is declared once (hardneg.experiments): the workflow layer, the command line, the Snakefile
    and the rule files iterate the declarations, and the layers below know none (the results folder's names it
    reserves, its figures: its declaration has them); only an experiment's own module and rule file name it."""
    from hardneg.experiments import EXPERIMENTS

    assert set(EXPERIMENTS) == {"pq_matrix", "false_negatives"}
    pattern = re.compile(r"\b(%s)\b" % "|".join(map(re.escape, EXPERIMENTS)))
    own = {REPO / "rules" / experiment.rule_file for experiment in EXPERIMENTS.values()}
    package = REPO / "src" / "hardneg"
    files = [*(path for path in sorted(package.rglob("*.py")) if (package / "experiments") not in path.parents),
             REPO / "Snakefile", *(path for path in sorted((REPO / "rules").glob("*.smk")) if path not in own)]
    assert package / "io" / "layout.py" in files and package / "pipeline" / "config.py" in files
    named = [f"{path.relative_to(REPO)}:{number}: {line.strip()}" for path in files
             for number, line in enumerate(path.read_text().splitlines(), 1) if pattern.search(line)]
    assert named == []
