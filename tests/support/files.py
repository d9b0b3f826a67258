"""Small input files written line by line."""

from __future__ import annotations

from pathlib import Path


def write_lines(path: Path, lines: list[str] | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(lines, bytes):
        path.write_bytes(lines)
    else:
        path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path
