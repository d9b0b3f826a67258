"""Function-local imports are there for a reason and say it (tests/support/imports.py reads the package
statically): each defers a library slow to import that its module does not load already, or keeps a module of
hardneg out of what the command line's start or Snakemake's DAG build loads (both measured here, in fresh
interpreters). tests/project/test_architecture.py holds the heavy libraries out of both."""

import json
import subprocess
import sys

import pytest

from tests.support import REPO
from tests.support.imports import DEFERRED, Imports

DAG_BUILD = """from hardneg.pipeline.config import read_config_files, validate_config
from hardneg.pipeline.plan import Plan
from hardneg import methods
methods.methods()"""


def hardneg_modules_after(statements: str) -> set[str]:
    probe = f"import json, sys\n{statements}\nprint(json.dumps(sorted(m for m in sys.modules if m.startswith('hardneg'))))"
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=REPO)
    assert result.returncode == 0, result.stderr[-3000:]
    return set(json.loads(result.stdout.splitlines()[-1]))


@pytest.fixture(scope="module")
def starts():
    """The package's modules loaded by the command line's start and by the DAG's build (the Snakefile's imports
    and the method registry)."""
    return {"the command line's start": hardneg_modules_after("import hardneg.cli"),
            "the DAG's build": hardneg_modules_after(DAG_BUILD)}


def reasons(graph: Imports, local, starts: dict) -> list[str]:
    found = [f"defers {name} ({DEFERRED[name]})" for name in sorted(graph.deferred(local))]
    for what, loaded in starts.items():
        kept_out = [target for target in local.targets if target.startswith("hardneg") and target not in loaded]
        if local.module in loaded and kept_out:
            found.append(f"keeps {kept_out[0]} out of {what}")
    return found


def test_every_function_local_import_defers_something_and_says_why(starts):
    graph = Imports()
    locals_ = graph.local_imports()
    assert len(locals_) > 100
    pointless = [f"{graph.files[local.module].relative_to(REPO)}:{local.line} ({', '.join(local.targets)})"
                 for local in locals_ if not reasons(graph, local, starts)]
    assert pointless == [], "function-local imports that defer nothing; import them at the top:\n" + "\n".join(pointless)
    silent = [f"{graph.files[local.module].relative_to(REPO)}:{local.line}" for local in locals_ if not local.commented]
    assert silent == [], "function-local imports without a comment saying why:\n" + "\n".join(silent)


def test_a_pointless_local_import_is_found(tmp_path, starts):
    (tmp_path / "hardneg" / "io").mkdir(parents=True)
    (tmp_path / "hardneg" / "__init__.py").write_text('"""p."""\n')
    (tmp_path / "hardneg" / "io" / "__init__.py").write_text('"""p."""\n')
    (tmp_path / "hardneg" / "io" / "light.py").write_text('"""A light module."""\nimport json\n')
    (tmp_path / "hardneg" / "io" / "user.py").write_text(
        '"""Uses both."""\nimport numpy\n\n\ndef f():\n    from hardneg.io import light\n\n    return light\n\n\n'
        'def g():\n    import torch  # torch: slow\n\n    return torch\n\n\ndef h():\n    import numpy as np\n\n    return np\n')
    graph = Imports(tmp_path)
    found = {local.line: (graph.deferred(local), local.commented) for local in graph.local_imports()}
    assert found == {6: (set(), False), 12: ({"torch"}, True), 18: (set(), False)}  # numpy: loaded already
