"""The figure of a leakage table (:data:`hardneg.mining.leakage.LEAKAGE`): each selection policy's leakage of hidden
positives against the hardness it keeps, one labelled point per policy. It is not declared among the papers' figures
(:data:`FIGURES`): the experiment that writes the table draws it with a rule of its own (its declaration's
``figure_targets``)."""

from __future__ import annotations

import math
import os

import pyarrow as pa

from hardneg.figures.plot import PALETTE, new_figure, save_png
from hardneg.io import artifacts
from hardneg.mining.leakage import LEAKAGE

GOAL_HARDNESS = 0.9  # the goal: a policy keeping at least this share of the reference's hardness ...
GOAL_CUT = 0.5  # ... while cutting its leakage by at least this share
_LABEL_OFFSETS = ((7, 6, "left"), (7, -13, "left"), (-7, 6, "right"), (-7, -13, "right"))  # points, alignment


def _value(number) -> float:
    """A table's float, NaN for null."""
    return math.nan if number is None else float(number)


def draw_leakage(table: pa.Table, path: str | os.PathLike) -> None:
    """Draw ``table`` (a LEAKAGE table): x the hardness kept (the reference's mean rank / the policy's; the
    reference at 1), y the leakage (% of the hidden positives selected as negatives), one labelled point per policy
    (a policy whose hardness kept is NaN, with no negative, is left out); dotted lines mark the goal (hardness kept
    0.9, leakage half the reference's). PNG at ``path``."""
    rows = [row for row in table.to_pylist() if not math.isnan(_value(row["hardness_kept"]))]
    figure, (ax,) = new_figure(6.4, 4.4)
    reference = next((row for row in table.to_pylist() if row["reference"]), None)
    for i, row in enumerate(rows):
        leakage = 100 * _value(row["leakage"]) if not math.isnan(_value(row["leakage"])) else 0.0  # none hidden
        label = f"{row['policy']} (reference)" if row["reference"] else row["policy"]
        ax.scatter(
            [row["hardness_kept"]],
            [leakage],
            s=60,
            color=PALETTE[i % len(PALETTE)],
            marker="s" if row["reference"] else "o",
            zorder=3,
            label=f"{label}: {row['settings']}",
        )
        dx, dy, align = _LABEL_OFFSETS[i % len(_LABEL_OFFSETS)]  # staggered: policies often lie close together
        ax.annotate(
            row["policy"],
            (row["hardness_kept"], leakage),
            textcoords="offset points",
            xytext=(dx, dy),
            ha=align,
            fontsize="small",
        )
    ax.axvline(GOAL_HARDNESS, color="grey", linestyle=":", linewidth=1)
    if reference is not None and not math.isnan(_value(reference["leakage"])):
        ax.axhline(100 * GOAL_CUT * reference["leakage"], color="grey", linestyle=":", linewidth=1)
        ax.text(
            GOAL_HARDNESS,
            100 * GOAL_CUT * reference["leakage"],
            " goal: below, right",
            fontsize="x-small",
            color="grey",
            va="bottom",
        )
    ax.set_xlabel("hardness kept (reference mean rank / policy mean rank)")
    ax.set_ylabel("leakage (% of hidden positives selected as negatives)")
    kept = [row["hardness_kept"] for row in rows] or [1.0]
    ax.set_xlim(min(GOAL_HARDNESS, *kept) - 0.05, max(1.0, *kept) + 0.08)  # room for the goal line and labels
    ax.set_ylim(bottom=0)
    hidden = table["hidden_positives"][0].as_py() if table.num_rows else 0
    ax.set_title(f"Hidden positives selected as hard negatives ({hidden} hidden)", fontsize="medium")
    ax.grid(True, alpha=0.3)
    if rows:
        ax.legend(fontsize="x-small", loc="center left")
    save_png(figure, path)


def write_leakage_figure(table_path: str | os.PathLike, png_path: str | os.PathLike) -> pa.Table:
    """Stage function: read the leakage table (Parquet, LEAKAGE) and draw it to ``png_path``. Returns the table."""
    table = artifacts.read_table(LEAKAGE, table_path)
    draw_leakage(table, png_path)
    return table
