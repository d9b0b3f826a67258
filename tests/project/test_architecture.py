"""The library's layers (pyproject.toml, [tool.importlinter]) hold, and a new cycle breaks them."""

import shutil
import subprocess
import sys
from pathlib import Path

from tests.support import REPO

LINT_IMPORTS = str(Path(sys.executable).with_name("lint-imports"))


def lint_imports(source: Path, config: Path):
    """lint-imports over the package ``hardneg`` found under ``source`` (a src folder), with ``config``."""
    env = {"PYTHONPATH": str(source), "PATH": "/usr/bin:/bin"}
    return subprocess.run([LINT_IMPORTS, "--config", str(config), "--no-cache"], capture_output=True, text=True,
                          env=env, cwd=source)


def test_the_layer_contracts_are_kept():
    result = lint_imports(REPO / "src", REPO / "pyproject.toml")
    assert result.returncode == 0, result.stdout[-3000:]
    assert "Contracts: 2 kept, 0 broken." in result.stdout


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
