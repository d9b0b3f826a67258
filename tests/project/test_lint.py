"""The static checks, as `make lint` runs them: ruff's lint rules and its format check over src/ (pyproject.toml,
[tool.ruff]), a planted violation of each caught; Snakemake's linter over the workflow."""

import shutil
import subprocess
import sys
from pathlib import Path

from tests.support import REPO

RUFF = str(Path(sys.executable).with_name("ruff"))


def ruff(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess:
    return subprocess.run([RUFF, *args], capture_output=True, text=True, cwd=cwd)


def test_the_package_passes_ruff_lint_and_format_check():
    lint = ruff("check", "--no-cache", "src")
    assert lint.returncode == 0, lint.stdout[-3000:]
    formatted = ruff("format", "--check", "--no-cache", "src")
    assert formatted.returncode == 0, formatted.stdout[-3000:]


def test_ruff_catches_a_planted_violation(tmp_path):
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    module = tmp_path / "src" / "hardneg" / "planted.py"
    module.parent.mkdir(parents=True)
    module.write_text("import os\nimport sys\n\n\ndef f(x):\n    return sys.argv[x]\n")
    lint = ruff("check", "--no-cache", "src", cwd=tmp_path)
    assert lint.returncode == 1 and "F401" in lint.stdout and "`os` imported but unused" in lint.stdout
    module.write_text("def f(x):\n    return {'a':x}\n")
    formatted = ruff("format", "--check", "--no-cache", "src", cwd=tmp_path)
    assert formatted.returncode == 1 and "planted.py" in formatted.stdout


def test_snakemake_lint_finds_nothing_in_the_workflow():
    """Snakemake's own linter over the Snakefile and every rule file (exit 1 on any finding, e.g. a results path
    passed as a fixed param, which breaks where a cluster has no shared filesystem)."""
    lint = subprocess.run([str(Path(sys.executable).with_name("snakemake")), "--lint"], capture_output=True,
                          text=True, cwd=REPO)
    assert lint.returncode == 0, (lint.stdout + lint.stderr)[-3000:]
    assert "Congratulations, your workflow is in a good condition!" in lint.stdout + lint.stderr
