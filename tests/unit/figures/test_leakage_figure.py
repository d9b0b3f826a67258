"""The false-negative experiment's figure (hardneg.figures.leakage): one point per policy from the leakage table, a
PNG whatever the table holds (a policy without negatives, no hidden positive), the same bytes for the same table."""

import math

import pyarrow as pa

from hardneg.figures.leakage import draw_leakage, write_leakage_figure
from hardneg.io import artifacts
from hardneg.mining.leakage import LEAKAGE

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def table(rows):
    base = {name: None for name in LEAKAGE.schema.names}
    return pa.Table.from_pylist([{**base, **row} for row in rows], schema=LEAKAGE.schema)


ROWS = [
    {"policy": "top8", "reference": True, "hidden_positives": 30, "leakage": 0.4, "hardness_kept": 1.0},
    {"policy": "margin05", "reference": False, "hidden_positives": 30, "leakage": 0.1, "hardness_kept": 0.93},
    {"policy": "skip5", "reference": False, "hidden_positives": 30, "leakage": 0.2, "hardness_kept": 0.55},
    {"policy": "empty", "reference": False, "hidden_positives": 30, "leakage": 0.0, "hardness_kept": math.nan},
]


def test_the_figure_is_drawn_from_the_table_and_byte_stable(tmp_path):
    path = tmp_path / "leakage.parquet"
    artifacts.write_table(table(ROWS), LEAKAGE, path)
    write_leakage_figure(path, tmp_path / "a.png")
    write_leakage_figure(path, tmp_path / "b.png")
    assert (tmp_path / "a.png").read_bytes().startswith(PNG_SIGNATURE)
    assert (tmp_path / "a.png").read_bytes() == (tmp_path / "b.png").read_bytes()


def test_a_table_without_hidden_positives_still_draws(tmp_path):
    rows = [{**row, "hidden_positives": 0, "leakage": math.nan} for row in ROWS[:2]]
    draw_leakage(table(rows), tmp_path / "none.png")
    assert (tmp_path / "none.png").read_bytes().startswith(PNG_SIGNATURE)
