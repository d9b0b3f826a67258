"""The fusion stages: a fusion run's ranking of a split, and the tuning of its weight, each with the ``fuse``
function its method declares (the algorithms: :mod:`hardneg.fusion`)."""

from __future__ import annotations

import json
import logging
import os

import pyarrow as pa
import pyarrow.compute as pc

from hardneg import methods
from hardneg.errors import DataError
from hardneg.fusion import chosen_alpha, sample_queries, tune_weight
from hardneg.io import artifacts
from hardneg.io.atomic import write_text
from hardneg.io.logs import console
from hardneg.io.rankings import read_run, write_run

log = logging.getLogger(__name__)

def _method(method: str, method_modules):
    methods.load_modules(list(method_modules))
    return methods.get(method)


def _no_constant(name: str):
    raise ValueError(f"{name} is not a JSON number")


def read_tuned_alpha(path: str | os.PathLike) -> float:
    """The α chosen by a run's tuning (results/<run>/fusion_tuning.json). A file that does not hold a finite,
    non-negative ``alpha`` is a :class:`~hardneg.errors.DataError` naming it."""
    try:
        with open(path, encoding="utf-8") as handle:
            alpha = json.load(handle, parse_constant=_no_constant)["alpha"]
    except (ValueError, KeyError, TypeError) as exc:  # JSONDecodeError is a ValueError
        raise DataError(path, None, f"not a fusion tuning record with a finite alpha ({exc})") from None
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not 0 <= alpha < float("inf"):
        raise DataError(path, None, f"alpha {alpha!r} is not a finite non-negative number")
    return float(alpha)


def fuse_split(method: str, params: dict, ranking_paths: list, run_path, trec_path, *, tag: str,
               tuning_path=None, method_modules=()) -> pa.Table:
    """Stage function: the input runs' rankings of one split (RUN files, in the order of the method's role of many
    runs) → the fusion run's ranking of that split, as Parquet and TREC. ``params`` are the run's; with
    ``tuning_path`` (its fusion_tuning.json) the tuned α replaces ``params.alpha``. ``method_modules``: the module
    declaring ``method`` when it is not one of :mod:`hardneg.methods`."""
    fuse = _method(method, method_modules).fuse
    if tuning_path is not None:
        params = {**params, "alpha": read_tuned_alpha(tuning_path)}
    fused = fuse([read_run(path) for path in ranking_paths], params)
    log.info("fused %d rankings: %d rows, %d queries", len(ranking_paths), fused.num_rows,
             len(pc.unique(fused["qid"])))
    write_run(fused, run_path, trec_path, tag)
    return fused


def tune_fusion(method: str, params: dict, seed: int, ranking_paths: list, qrels_path, json_path, parquet_path, *,
                trained_on=(), method_modules=()) -> dict:
    """Stage function: tune a fusion run's α on ``params.tune``: its input runs' rankings of ``tune.split`` (RUN
    files, in role order) and that split's QRELS file → the grid's values (``parquet_path``, FUSION_TUNING) and a
    record of the tuning with the chosen α (``json_path``). ``tune.queries`` judged queries are sampled with
    ``seed``; only their rows of the rankings are read. ``trained_on``: the splits that trained a model behind
    the input runs; tuning on one of them is warned about on the console."""
    fuse = _method(method, method_modules).fuse
    tune = params["tune"]
    if tune["split"] in trained_on:
        # a model that has seen these queries ranks them better than unseen ones: α then favours that input
        console("alpha is tuned on queries of split %r, which trained a model behind the input runs: their values "
                "on these queries are optimistic and alpha may favour that run; a split held out from training "
                "(params.tune.split) gives an unbiased choice", tune["split"])
    qrels = artifacts.read_table(artifacts.QRELS, qrels_path)
    sample = sample_queries(qrels, tune["queries"], seed)
    if not sample:
        raise DataError(qrels_path, None, f"no judged query in split {tune['split']!r} to tune alpha on")
    keep = [("qid", "in", sample)]
    rankings = [read_run(path, filters=keep) for path in ranking_paths]
    qrels = qrels.filter(pc.is_in(qrels["qid"], value_set=pa.array(sample, pa.string())))
    grid = tune_weight(lambda alpha: fuse(rankings, {**params, "alpha": alpha}), qrels, params["alpha_grid"],
                       tune["measure"])
    record = {"split": tune["split"], "queries": len(sample), "seed": seed, "measure": tune["measure"],
              "grid": [{"alpha": row["alpha"], "value": row["value"]} for row in grid.to_pylist()],
              "alpha": chosen_alpha(grid)}
    text = json.dumps(record, indent=2, allow_nan=False) + "\n"  # JSON has no NaN: refused before anything is written
    artifacts.write_table(grid, artifacts.FUSION_TUNING, parquet_path)
    write_text(json_path, text)
    log.info("chosen alpha %g (%s %.4f on %d queries of %s)", record["alpha"], tune["measure"],
             max(grid["value"].to_pylist()), len(sample), tune["split"])
    return record
