"""Shared by the benchmark scripts: print a record as one JSON line and keep it in benchmarks/out/<name>.json."""

from __future__ import annotations

import json
from pathlib import Path


def save(name: str, record: dict) -> None:
    print(json.dumps(record))
    out = Path(__file__).parent / "out" / f"{name}.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(record, indent=2) + "\n")
