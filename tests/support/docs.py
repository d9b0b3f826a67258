"""What tests read from the documentation: README.md and the pages of docs/ (their shell commands, the "Adding a
method" walkthrough's code, the paths and config fragments they cite)."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from tests.support import REPO

DOCS = REPO / "docs"


def pages() -> list[Path]:
    """README.md and config/README.md, then every page of docs/ in the order of mkdocs.yml's nav (pages outside
    the nav last, sorted)."""
    nav = re.findall(r"^\s*- (?:[^:\n]+: )?([\w/.-]+\.md)\s*$", (REPO / "mkdocs.yml").read_text(), flags=re.M)
    found = sorted(path.relative_to(DOCS).as_posix() for path in DOCS.rglob("*.md"))
    ordered = [page for page in nav if page in found] + [page for page in found if page not in nav]
    return [REPO / "README.md", REPO / "config" / "README.md", *(DOCS / page for page in ordered)]


def name(page: Path) -> str:
    """A page's path relative to the repository (``README.md``, ``docs/methods/star.md``)."""
    return page.relative_to(REPO).as_posix()


def blocks(page: Path, language: str) -> list[tuple[str, str]]:
    """(section, body) of every fenced block of ``language`` in a page, in order; the section is the heading
    (of any level) the block sits under, "" before the first. Lines inside fences are never headings."""
    found, section, fence, body = [], "", None, []
    for line in page.read_text(encoding="utf-8").splitlines(keepends=True):
        if fence is None:
            if line.startswith("```"):
                fence, body = line[3:].strip(), []
            elif re.match(r"#{1,6} ", line):
                section = line.lstrip("#").strip()
        elif line.rstrip() == "```":
            if fence == language:
                found.append((section, "".join(body)))
            fence = None
        else:
            body.append(line)
    return found


def shell_commands(page: Path) -> list[tuple[str, str]]:
    """(section, command) of every bash block of a page, in order; a here-document is one command, comment lines
    and blank lines are left out."""
    commands = []
    for section, block in blocks(page, "bash"):
        lines = block.splitlines()
        while lines:
            line = lines.pop(0)
            if not line.strip() or line.strip().startswith("#"):
                continue
            heredoc = re.search(r"<<'?(\w+)'?", line)
            if heredoc:
                body = []
                while lines and lines[0].strip() != heredoc.group(1):
                    body.append(lines.pop(0))
                lines.pop(0)
                line = "\n".join([line, *body, heredoc.group(1)])
            commands.append((section, line))
    return commands


def yaml_blocks(page: Path) -> list[tuple[str, object]]:
    """(section, parsed value) of every yaml block of a page."""
    return [(section, yaml.safe_load(body)) for section, body in blocks(page, "yaml")]


def method_walkthrough() -> str:
    """The method package the "Adding a method" walkthrough of docs/architecture.md shows (its first Python
    block)."""
    section = (DOCS / "architecture.md").read_text(encoding="utf-8").split("\n## Adding a method\n", 1)[1]
    return section.split("```python\n", 1)[1].split("```", 1)[0]
