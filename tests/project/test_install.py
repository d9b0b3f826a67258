"""hardneg is a real package: a wheel built from the checkout, installed (not editable) into a fresh virtual
environment, gives a working ``hardneg`` command and library, and the workflow runs from the checkout with it."""

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import pytest
import yaml

from tests.support import REPO

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """A virtual environment holding only the wheel of hardneg; its dependencies are those of the environment
    running the tests, reached through a path file (whose own path files, hardneg's editable install among them,
    are not read)."""
    root = tmp_path_factory.mktemp("install")
    wheels, source = root / "wheels", root / "source"  # built from a copy: setuptools writes build/ beside it
    for name in ("pyproject.toml", "README.md"):
        source.mkdir(exist_ok=True)
        shutil.copy2(REPO / name, source / name)
    shutil.copytree(REPO / "src", source / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    build = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--quiet",
                            "--wheel-dir", str(wheels), str(source)], capture_output=True, text=True)
    assert build.returncode == 0, build.stderr[-3000:]
    wheel = next(wheels.glob("hardneg-*.whl"))
    env = root / "venv"
    venv.EnvBuilder(with_pip=False).create(env)
    python = env / "bin" / "python"
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    (Path(site) / "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    install = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps",
                              "--no-index", "--quiet", str(wheel)], capture_output=True, text=True)
    assert install.returncode == 0, install.stderr[-3000:]
    return env


def run(env, *args):
    clean = {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return subprocess.run([*args], cwd=REPO, capture_output=True, text=True, env=clean | {"PATH": f"{env}/bin:/usr/bin:/bin"})


def test_the_library_comes_from_the_wheel_with_its_schema(installed):
    code = ("import json, hardneg, hardneg.schema.validation as v; "
            "print(json.dumps([hardneg.__file__, sorted(v.read_schema()['properties'])]))")
    result = run(installed, str(installed / "bin" / "python"), "-c", code)
    assert result.returncode == 0, result.stderr[-3000:]
    path, keys = json.loads(result.stdout)
    assert Path(path).is_relative_to(installed) and "site-packages" in path
    schema = yaml.safe_load((REPO / "src" / "hardneg" / "schema" / "config.schema.yaml").read_text())
    assert keys == sorted(schema["properties"]) and "dataset" in keys


def test_check_config_from_the_installed_command(installed):
    result = run(installed, str(installed / "bin" / "hardneg"), "check-config", "config/config.yaml")
    assert result.returncode == 0, result.stderr[-3000:]
    assert "config/config.yaml: valid" in result.stdout and "run adore_star: method adore" in result.stdout


def test_the_workflow_plans_from_the_checkout_with_the_installed_package(installed):
    # --forceall: the whole chain is planned whatever the checkout's results/ holds (after `make run`, all of it)
    result = run(installed, str(installed / "bin" / "python"), "-m", "snakemake", "-n", "--forceall", "--cores", "1",
                 "results/adore_star/metrics.json")
    assert result.returncode == 0, result.stderr[-3000:]
    assert "train_dense" in result.stdout and "This was a dry-run" in result.stdout


def test_the_wheel_states_ranges_and_make_setup_installs_the_tested_versions(installed):
    """The wheel's Requires-Dist holds version ranges, not exact pins, for the heavy libraries (an environment of
    one's own can resolve); constraints.txt pins each of them exactly, and `make setup` installs with it."""
    from email.parser import Parser
    from importlib import metadata
    from zipfile import ZipFile

    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    wheel = next((installed.parent / "wheels").glob("hardneg-*.whl"))
    with ZipFile(wheel) as archive:
        info = next(name for name in archive.namelist() if name.endswith(".dist-info/METADATA"))
        fields = Parser().parsestr(archive.read(info).decode())
    requires = [Requirement(line) for line in fields.get_all("Requires-Dist")]
    stated = {canonicalize_name(req.name): req for req in requires if req.marker is None}
    pinned = {}
    for line in (REPO / "constraints.txt").read_text().splitlines():
        if line and not line.startswith("#"):
            req = Requirement(line)
            pinned[canonicalize_name(req.name)] = req
    for name in ("torch", "transformers", "faiss-cpu", "pyserini", "datasketch"):
        operators = {spec.operator for spec in stated[name].specifier}
        assert "==" not in operators and ">=" in operators and "<" in operators, stated[name]
        (exact,) = pinned[name].specifier
        assert exact.operator == "==" and exact.version in stated[name].specifier, (name, exact)
    # every library dependency is pinned, and this environment holds the pinned version
    for name in stated:
        assert name in pinned, name
        assert metadata.version(name) in pinned[name].specifier, (name, metadata.version(name), pinned[name])
    makefile = (REPO / "Makefile").read_text()
    assert "pip install --quiet -c constraints.txt -e '.[dev]'" in makefile
