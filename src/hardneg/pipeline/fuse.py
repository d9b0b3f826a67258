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
from hardneg.io.rankings import read_ranking, write_ranking

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


def fuse_split(
    method: str,
    params: dict,
    ranking_paths: list,
    ranking_path,
    trec_path,
    *,
    tag: str,
    tuning_path=None,
    method_modules=(),
) -> pa.Table:
    """Stage function: fuse the input runs' rankings of one split with the method's ``fuse`` and write the result.

    :param method: the fusion method's name, e.g. ``hybrid`` or ``rrf``.
    :param params: the fusion run's params (e.g. ``alpha``, ``depth``, ``k`` of ``hybrid``; ``rrf_k``, ``depth``,
        ``k`` of ``rrf``).
    :param ranking_paths: the input runs' RANKING Parquet files of the split, in the order of the method's role of many
        runs (``hybrid``: the sparse run, then the dense one).
    :param ranking_path: the RANKING Parquet file to write.
    :type ranking_path: str | os.PathLike
    :param trec_path: the ranking in TREC format to write, or None for none.
    :type trec_path: str | os.PathLike | None
    :param tag: the TREC file's tag (the workflow gives the run's name).
    :param tuning_path: the run's ``fusion_tuning.json`` (``tune_fusion``): its α replaces ``params["alpha"]``;
        None: ``params["alpha"]`` is used as it is.
    :type tuning_path: str | os.PathLike | None
    :param method_modules: the modules declaring ``method`` when it is not built in.
    :type method_modules: list[str] | tuple[str, ...]
    :returns: the fused RANKING table written.
    :raises ConfigError: an unknown ``method``, or a method module that cannot be loaded.
    :raises DataError: an input ranking that is missing, does not match the RANKING schema or holds a score that is
        not finite, or a ``tuning_path`` without a finite non-negative ``alpha``.
    :raises HardnegError: a qid, docid or ``tag`` holding whitespace or a control character, which a TREC line
        cannot hold.
    """
    fuse = _method(method, method_modules).fuse
    if tuning_path is not None:
        params = {**params, "alpha": read_tuned_alpha(tuning_path)}
    fused = fuse([read_ranking(path) for path in ranking_paths], params)
    log.info("fused %d rankings: %d rows, %d queries", len(ranking_paths), fused.num_rows, len(pc.unique(fused["qid"])))
    write_ranking(fused, ranking_path, trec_path, tag)
    return fused


def few_tuning_queries_warning(run: str, queries: int, split: str, min_queries: int, grid=None) -> str | None:
    """The warning for a weight tuned on ``queries`` judged queries of ``split``, fewer than ``min_queries``
    (``tune.min_queries``); None when there are enough. ``grid``: the tuning's FUSION_TUNING table, whose spread of
    values the warning shows."""
    if queries >= min_queries:
        return None
    spread = ""
    if grid is not None and grid.num_rows:
        values = grid["value"].to_pylist()
        spread = f" (across the grid of α the tuned measure goes from {min(values):.3f} to {max(values):.3f})"
    return (
        f"run {run}: alpha is tuned on {queries} judged quer{'y' if queries == 1 else 'ies'} of split "
        f"{split!r}, fewer than params.tune.min_queries ({min_queries}){spread}: on so few queries the chosen "
        f"value may be chance. Reciprocal rank fusion (method rrf) tunes no weight; more held-out queries "
        f"(a larger dev_from_train share) make the choice firmer."
    )


def tune_fusion(
    method: str,
    params: dict,
    seed: int,
    ranking_paths: list,
    qrels_path,
    json_path,
    parquet_path,
    *,
    trained_on=(),
    method_modules=(),
    run: str = "the fusion run",
) -> dict:
    """Stage function: tune a fusion run's weight α on queries of ``params["tune"]["split"]`` and write the result.

    ``tune.queries`` judged queries of the split are sampled with ``seed`` (all when there are fewer); only their
    rows of the rankings are read. Every α of ``params["alpha_grid"]`` fuses them and is evaluated with
    ``tune.measure`` (``hardneg.fusion.tune_weight``).

    :param method: the fusion method's name, e.g. ``hybrid``.
    :param params: the fusion run's params, with ``alpha_grid`` and ``tune`` (``split``, ``queries``,
        ``measure``).
    :param seed: the seed of the query sample (the run's seed).
    :param ranking_paths: the input runs' RANKING Parquet files of the tuning split, in the order of the method's
        role.
    :param qrels_path: the tuning split's QRELS Parquet file.
    :type qrels_path: str | os.PathLike
    :param json_path: the tuning record to write (``fusion_tuning.json``): ``split``, ``queries`` (the number
        sampled), ``seed``, ``measure``, ``grid`` (``alpha`` and ``value`` of each α) and the chosen ``alpha``.
    :type json_path: str | os.PathLike
    :param parquet_path: the FUSION_TUNING Parquet file to write (``alpha``, ``value``, ``chosen``).
    :type parquet_path: str | os.PathLike
    :param trained_on: the splits that trained a model behind the input runs; tuning on one of them is warned
        about on the console (its values are optimistic).
    :type trained_on: list[str] | tuple[str, ...]
    :param method_modules: the modules declaring ``method`` when it is not built in.
    :type method_modules: list[str] | tuple[str, ...]
    :param run: the run's name, in the console warning of a weight tuned on fewer than ``tune.min_queries``
        queries (:func:`few_tuning_queries_warning`).
    :returns: the record written to ``json_path``.
    :raises ConfigError: an unknown ``method``, a method module that cannot be loaded, or a ``tune.measure``
        ir-measures cannot parse.
    :raises DataError: no judged query in the tuning split, or an input file that is missing or does not match
        its schema.
    :raises ValueError: a measure value JSON cannot hold (NaN or infinite); nothing is written then.
    """
    fuse = _method(method, method_modules).fuse
    tune = params["tune"]
    if tune["split"] in trained_on:
        # a model that has seen these queries ranks them better than unseen ones: α then favours that input
        console(
            "alpha is tuned on queries of split %r, which trained a model behind the input runs: their values "
            "on these queries are optimistic and alpha may favour that run; a split held out from training "
            "(params.tune.split) gives an unbiased choice",
            tune["split"],
        )
    qrels = artifacts.read_table(artifacts.QRELS, qrels_path)
    sample = sample_queries(qrels, tune["queries"], seed)
    if not sample:
        raise DataError(qrels_path, None, f"no judged query in split {tune['split']!r} to tune alpha on")
    keep = [("qid", "in", sample)]
    rankings = [read_ranking(path, filters=keep) for path in ranking_paths]
    qrels = qrels.filter(pc.is_in(qrels["qid"], value_set=pa.array(sample, pa.string())))
    grid = tune_weight(
        lambda alpha: fuse(rankings, {**params, "alpha": alpha}), qrels, params["alpha_grid"], tune["measure"]
    )
    record = {
        "split": tune["split"],
        "queries": len(sample),
        "seed": seed,
        "measure": tune["measure"],
        "grid": [{"alpha": row["alpha"], "value": row["value"]} for row in grid.to_pylist()],
        "alpha": chosen_alpha(grid),
    }
    warning = few_tuning_queries_warning(run, len(sample), tune["split"], tune["min_queries"], grid)
    if warning:
        console(warning)
    text = json.dumps(record, indent=2, allow_nan=False) + "\n"  # JSON has no NaN: refused before anything is written
    artifacts.write_table(grid, artifacts.FUSION_TUNING, parquet_path)
    write_text(json_path, text)
    log.info(
        "chosen alpha %g (%s %.4f on %d queries of %s)",
        record["alpha"],
        tune["measure"],
        max(grid["value"].to_pylist()),
        len(sample),
        tune["split"],
    )
    return record
