"""MkDocs hook: the page reference/modules.md, generated from the package each time the site is built: every
package and module of ``hardneg``, layer by layer (pyproject.toml's import-linter layers, top down), with the
first sentence of its docstring. The architecture page's tree names the packages; this page cannot drift from
their modules. A module without a docstring stops the build."""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

from mkdocs.structure.files import File

PAGE = "reference/modules.md"
REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "src" / "hardneg"


def first_sentence(path: Path, shown: str) -> str:
    """The first sentence of a module's docstring, on one line (``shown``: the module's path in an error)."""
    docstring = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")))
    if not docstring:
        raise ValueError(f"{shown}: the module has no docstring")
    text = " ".join(docstring.split())
    text = re.sub(r":\w+:`~?([\w.]+)`", lambda m: f"`{m.group(1)}`", text).replace("``", "`")  # Sphinx roles
    found = re.match(r"(.+?[.:;])(\s|$)", text)
    return (found.group(1) if found else text).rstrip(".:;").replace("|", "\\|")


def modules(package: Path = PACKAGE) -> list[tuple[str, str]]:
    """(dotted name, first sentence) of every package and module under ``package``, sorted by name."""
    found = []
    for path in sorted(package.rglob("*.py")):
        dotted = ".".join(path.relative_to(package.parent).with_suffix("").parts)
        found.append((dotted.removesuffix(".__init__"), first_sentence(path, str(path.relative_to(package.parent)))))
    return sorted(found)


def layers(pyproject: Path = REPO / "pyproject.toml") -> list[list[str]]:
    """The top-level names of each import-linter layer, top down."""
    contracts = tomllib.loads(pyproject.read_text(encoding="utf-8"))["tool"]["importlinter"]["contracts"]
    layered = next(contract for contract in contracts if contract["type"] == "layers")
    return [[name.strip() for name in layer.split("|")] for layer in layered["layers"]]


def module_map() -> str:
    """The page's Markdown: one table per layer."""
    found = modules()
    lines = [
        "# Modules of the package",
        "",
        "Every package and module of `hardneg`, generated from the package while the site builds "
        "(docs/hooks/module_map.py), layer by layer from the top: a module may import only from the layers below "
        "its own ([Architecture](../architecture.md)).",
        "",
    ]
    placed = {"hardneg"}
    for layer in layers():
        lines += [f"## {' · '.join(layer)}", "", "| module | what it is |", "|---|---|"]
        for name, sentence in found:
            if name.split(".")[1:2] and name.split(".")[1] in layer:
                lines.append(f"| `{name}` | {sentence} |")
                placed.add(name)
        lines.append("")
    left = [name for name, _ in found if name not in placed]
    if left:
        raise ValueError(f"modules in no import-linter layer of pyproject.toml: {', '.join(left)}")
    return "\n".join(lines)


def on_files(files, config):
    """Add the generated page to the site's files."""
    files.append(File.generated(config, PAGE, content=module_map()))
    return files
