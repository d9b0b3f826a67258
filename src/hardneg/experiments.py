"""Tables that compare runs: the ADORE PQ matrix (training index × evaluation index)."""

from __future__ import annotations

import json
import os

import pyarrow as pa
import pyarrow.parquet as pq

from hardneg.io.atomic import atomic_path, write_text


def write_pq_matrix(cells: dict, indexes: list[str], measures: list[str], table_path: str | os.PathLike,
                    markdown_path: str | os.PathLike) -> pa.Table:
    """``cells`` maps (training index, evaluation index) to a metrics.json; writes one row per cell and a
    Markdown matrix per measure (rows: the index ADORE trained with; columns: the index it is evaluated with)."""
    rows = []
    for (train_index, eval_index), path in cells.items():
        with open(path, encoding="utf-8") as handle:
            metrics = json.load(handle)["measures"]
        rows.append({"train_index": train_index, "eval_index": eval_index,
                     **{m: float(metrics[m]) for m in measures}})
    table = pa.Table.from_pylist(rows)
    with atomic_path(table_path) as tmp:
        pq.write_table(table, tmp)
    lookup = {(r["train_index"], r["eval_index"]): r for r in rows}
    lines = ["# ADORE: training index × evaluation index", ""]
    for measure in measures:
        lines += [f"## {measure}", "", "| trained with \\ evaluated with | " + " | ".join(indexes) + " |",
                  "|---|" + "---|" * len(indexes)]
        for a in indexes:
            lines.append(f"| {a} | " + " | ".join(f"{lookup[(a, b)][measure]:.4f}" for b in indexes) + " |")
        lines.append("")
    write_text(markdown_path, "\n".join(lines))
    return table
