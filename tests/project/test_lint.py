"""The static checks, as `make lint` runs them: ruff's lint rules and its format check over src/ (pyproject.toml,
[tool.ruff]) and mypy's type check of the package ([tool.mypy]), a planted violation of each caught; Snakemake's
linter over the workflow."""

import shutil
import subprocess
import sys
from pathlib import Path

from tests.support import REPO

RUFF = str(Path(sys.executable).with_name("ruff"))
MYPY = str(Path(sys.executable).with_name("mypy"))


def ruff(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess:
    return subprocess.run([RUFF, *args], capture_output=True, text=True, cwd=cwd)


def mypy(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess:
    return subprocess.run([MYPY, *args], capture_output=True, text=True, cwd=cwd)


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


def test_the_package_passes_mypy(tmp_path):
    # the files of [tool.mypy]: the whole package, checked from a fresh cache (the libraries' stubs included)
    checked = mypy("--cache-dir", str(tmp_path / "cache"))
    assert checked.returncode == 0, checked.stdout[-3000:] + checked.stderr[-1000:]
    assert "Success: no issues found" in checked.stdout


def test_mypy_catches_a_planted_type_error(tmp_path):
    # one small module of the package, checked alone with the project's settings: a wrong return type, and a
    # `type: ignore` that ignores nothing (warn_unused_ignores)
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    module = tmp_path / "index_names.py"
    source = (REPO / "src" / "hardneg" / "io" / "index_names.py").read_text(encoding="utf-8")
    module.write_text(source, encoding="utf-8")
    clean = mypy("--cache-dir", str(tmp_path / "cache"), module.name, cwd=tmp_path)
    assert clean.returncode == 0, clean.stdout
    planted = "\n\ndef planted() -> int:\n    return slug('Flat')\n\n\nSIZE: int = 1  # type: ignore[assignment]\n"
    module.write_text(source + planted, encoding="utf-8")
    checked = mypy("--cache-dir", str(tmp_path / "cache"), module.name, cwd=tmp_path)
    assert checked.returncode == 1, checked.stdout
    assert 'Incompatible return value type (got "str", expected "int")  [return-value]' in checked.stdout
    assert 'Unused "type: ignore" comment  [unused-ignore]' in checked.stdout
