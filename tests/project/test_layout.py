"""The layout of tests/: test files live in the tiers (unit/<package>/, integration/, workflow/, reliability/,
project/), each folder of unit/ is a package (or module) of the library, and no test module imports another: what
tests share is in tests/support/ (or a conftest.py), imported from there."""

import ast
from pathlib import Path

from tests.support import REPO

TIERS = ("unit", "integration", "workflow", "reliability", "project")


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(path: Path, root: Path, known: set[str]) -> set[str]:
    """The modules the imports of ``path`` name, wherever they are (in functions too), relative imports resolved:
    ``from X import y`` names X.y when that is a module of ``known``, X otherwise."""
    package = module_name(path, root).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = package[:len(package) - node.level + 1] if node.level else []
            module = ".".join(base + ([node.module] if node.module else []))
            found |= {f"{module}.{alias.name}" if f"{module}.{alias.name}" in known else module for alias in node.names}
    return found


def imports_of_test_modules(tests: Path, root: Path) -> list[str]:
    """'file: module' for each import, in a file under ``tests``, of a test module (test_*.py) or of any other module
    of ``tests`` but those of tests/support/ and conftest.py files."""
    files = sorted(tests.rglob("*.py"))
    known = {module_name(path, root) for path in files}
    wrong = []
    for path in files:
        for module in sorted(imported_modules(path, root, known)):
            parts = module.split(".")
            shared = parts[0] != tests.name or parts[1:2] == ["support"] or "conftest" in parts or parts == [tests.name]
            if not shared or (module in known and parts[-1].startswith("test_")):
                wrong.append(f"{path.relative_to(root)}: {module}")
    return wrong


def test_no_test_module_imports_another():
    assert imports_of_test_modules(REPO / "tests", REPO) == []


def test_the_check_finds_an_import_of_a_test_module(tmp_path):
    tests = tmp_path / "tests"
    for name, text in {"workflow/test_a.py": "from tests.workflow.test_b import CONFIG\n",
                       "workflow/test_b.py": "CONFIG = {}\n",
                       "unit/io/test_c.py": "def test_c():\n    from ..dense import test_d\n",
                       "unit/dense/test_d.py": "from tests.conftest import REPO\nfrom tests.support import configs\n",
                       "unit/dense/test_e.py": "from tests.workflow import helpers\n"}.items():
        (tests / name).parent.mkdir(parents=True, exist_ok=True)
        (tests / name).write_text(text)
    assert imports_of_test_modules(tests, tmp_path) == ["tests/unit/dense/test_e.py: tests.workflow",
                                                        "tests/unit/io/test_c.py: tests.unit.dense.test_d",
                                                        "tests/workflow/test_a.py: tests.workflow.test_b"]


def test_test_files_are_in_the_tiers_and_unit_folders_are_library_packages():
    tests, library = REPO / "tests", REPO / "src" / "hardneg"
    outside = [str(path.relative_to(tests)) for path in tests.rglob("test_*.py")
               if path.relative_to(tests).parts[0] not in TIERS]
    assert outside == []
    folders = [folder.name for folder in (tests / "unit").iterdir() if folder.is_dir() and folder.name != "__pycache__"]
    assert folders and [name for name in folders if not (library / name / "__init__.py").is_file()
                        and not (library / f"{name}.py").is_file()] == []
