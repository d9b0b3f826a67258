"""Commands that read runs: ``evaluate``, ``audit`` and ``table``."""

from __future__ import annotations

import json
import os

from hardneg.cli.common import add_results, add_run, at_least, check_runs, load_configs, say
from hardneg.datasets.qrels import load_qrels
from hardneg.errors import ConfigError, HardnegError
from hardneg.evaluation.metrics import evaluate, parse_measures
from hardneg.evaluation.tables import available_rows, runs_table, table_rows
from hardneg.io.rankings import load_ranking
from hardneg.pipeline.replicates import replicates
from hardneg.results.query_view import describe_query
from hardneg.schema.names import quoted

TABLE_CONFIG = "config/config.yaml"


def _evaluate(args) -> int:

    try:
        parse_measures(args.measures)
    except ConfigError as exc:
        raise HardnegError(f"--measures: {exc.message}") from None
    ranking = load_ranking(args.ranking)
    qrels = load_qrels(args.qrels)
    means, per_query = evaluate(ranking, qrels, args.measures)
    if args.per_query:
        say(per_query_text(means, per_query, args.measures), end="")
    else:
        say(json.dumps(means, indent=2))
    return 0


def per_query_text(means: dict, per_query, measures: list[str]) -> str:
    """Per-query values as ``trec_eval -q`` prints them: one line ``measure qid value`` per judged query (by query
    id) and measure (in the order given), then one line per measure with query id ``all`` and the mean. The fields
    are padded to columns with spaces (trec_eval separates them with a tab; both split on white space).

    :param means: measure → mean, as :func:`hardneg.evaluation.metrics.evaluate` returns them.
    :param per_query: the PER_QUERY_METRICS table it returns.
    :param measures: the measure names, in the order to print.
    :returns: the lines, each ending with a line break.
    """
    values = {(m, q): v for q, m, v in zip(*(per_query[c].to_pylist() for c in ("qid", "measure", "value")))}
    qids = sorted({q for _, q in values})
    width, qid_width = max(len(m) for m in measures), max([len(q) for q in qids] + [len("all")])
    lines = [f"{m:<{width}}  {q:<{qid_width}}  {values[(m, q)]:.4f}" for q in qids for m in measures]
    lines += [f"{m:<{width}}  {'all':<{qid_width}}  {means[m]:.4f}" for m in measures]
    return "".join(line + "\n" for line in lines)


def _audit(args) -> int:
    check_runs([args.run], args.results)
    say(describe_query(args.run, args.qid, results=args.results, top=args.top), end="")
    return 0


def _build_command(args, runs: list[str]) -> str:
    """The command that builds the metrics of ``runs`` with the config ``hardneg table`` read: targets first, since
    ``--configfile`` takes every path after it as a config file."""
    targets = " ".join(f"{args.results}/{run}/metrics.json" for run in runs)
    default = os.path.abspath(args.config) == os.path.abspath(TABLE_CONFIG)
    return f"snakemake --cores all {targets}" + ("" if default else f" --configfile {args.config}")


def _table(args) -> int:
    config = load_configs([args.config])
    args.results = args.results if args.results is not None else config["results"]
    unknown = [run for run in args.runs if run not in config["runs"]]
    if unknown:
        raise HardnegError(f"{args.config} has no run {quoted(unknown[0])}; its runs: {', '.join(config['runs'])}")
    rows = available_rows(args.results, config["tables"], args.runs)
    if not rows:
        listed = [run for run, _ in table_rows(config["tables"]["results"])] or list(config["runs"])
        first = listed[0]
        raise HardnegError(
            f"no run of the config's tables has metrics under {args.results}/; build one first, "
            f"e.g. {_build_command(args, [first])}"
        )
    missing = [run for run, _ in rows if not os.path.lexists(os.path.join(args.results, run, "metrics.json"))]
    if missing:
        raise HardnegError(
            f"run {missing[0]} has no metrics: {args.results}/{missing[0]}/metrics.json is missing; "
            f"build {'it' if len(missing) == 1 else 'them'} with {_build_command(args, missing)}"
        )
    if args.baseline is not None and args.baseline not in config["runs"]:
        raise HardnegError(f"{args.config} has no run {quoted(args.baseline)} to compare with (--baseline)")
    say(
        runs_table(
            args.results, rows, replicates(config), baseline=args.baseline, p_value=config["summary"]["p_value"]
        ),
        end="",
    )
    return 0


def register(sub) -> None:
    """Add ``evaluate``, ``audit`` and ``table`` to the subcommands ``sub``."""
    ev = sub.add_parser(
        "evaluate",
        help="evaluate a ranking against qrels (each a Parquet artifact or a TREC file)",
        description="Print the mean of each measure over the judged queries, as JSON (with "
        "--per-query: each query's values, then the means, as trec_eval -q). Files are "
        "told apart by content: Parquet (hardneg's ranking and qrels artifacts) or TREC "
        "text ('qid Q0 docid rank score tag' rankings, 'qid 0 docid relevance' qrels).",
    )
    ev.add_argument(
        "ranking",
        help="a ranking: results/<run>/rankings/<split>.parquet or .trec, or any ranking file in TREC format",
    )
    ev.add_argument(
        "qrels", help="qrels: results/datasets/<dataset>/qrels/<split>.parquet or .trec, or any TREC qrels file"
    )
    ev.add_argument(
        "--measures",
        nargs="+",
        default=["RR@10", "nDCG@10", "R@100", "R@1000"],
        help="ir-measures names (default: RR@10 nDCG@10 R@100 R@1000)",
    )
    ev.add_argument(
        "--per-query",
        action="store_true",
        help="print each judged query's value of each measure, then the means (query 'all'), one "
        "'measure qid value' line each, as trec_eval -q does",
    )
    ev.set_defaults(func=_evaluate)
    audit = sub.add_parser("audit", help="show one query's positives and mined hard negatives of a run")
    add_run(audit)
    audit.add_argument("--qid", required=True, help="the query to show")
    add_results(audit)
    audit.add_argument("--top", type=at_least(0), default=10, help="how many negatives to show (default: 10)")
    audit.set_defaults(func=_audit)
    table = sub.add_parser(
        "table",
        help="print README's results table from the runs' metrics.json files",
        description="One Markdown row per run: the evaluation split's MRR@10, nDCG@10, R@100 and "
        "pairwise errors, as in README.md's results tables.",
    )
    table.add_argument(
        "runs",
        nargs="*",
        metavar="run",
        help="the runs to show (default: every run of the config's tables that has metrics)",
    )
    table.add_argument(
        "--config",
        default=TABLE_CONFIG,
        help="the config whose `tables` section lists the runs and labels (default: config/config.yaml)",
    )
    table.add_argument(
        "--baseline",
        metavar="run",
        default=None,
        help="compare every row with this run query by query on MRR@10: the difference, the paired "
        "t-test's p and the smallest difference the test queries could detect (p below the "
        "config's summary.p_value, 80%% power), in a last column",
    )
    add_results(table, from_config=True)
    table.set_defaults(func=_table)
