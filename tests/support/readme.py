"""What tests read from README.md: the "Adding a method" walkthrough's code."""

from __future__ import annotations

from tests.support import REPO


def readme_method() -> str:
    """The method package README.md's "Adding a method" walkthrough shows (its first Python block)."""
    section = (REPO / "README.md").read_text(encoding="utf-8").split("**Adding a method**", 1)[1]
    return section.split("```python\n", 1)[1].split("```", 1)[0]
