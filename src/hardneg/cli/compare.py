"""The command that compares finished runs query by query: ``compare``."""

from __future__ import annotations

from hardneg.cli.common import add_results, at_least, check_runs, say
from hardneg.evaluation.significance import CORRECTIONS, RESAMPLES, SEED
from hardneg.io.atomic import write_text
from hardneg.results.output_paths import check_output


def _compare(args) -> int:
    # pandas (the comparison's tables): imported when the command runs, so that every other command starts without
    from hardneg.report.comparison_page import comparison_html
    from hardneg.results.comparison import compare_results
    from hardneg.results.comparison_text import comparison_text

    if args.html is not None:  # refused before anything is read
        html_path = check_output(
            args.html, folder=False, what="comparison page", results=args.results, force=args.force, option="--html"
        )
    check_runs(args.runs, args.results)
    report = compare_results(
        args.runs,
        results=args.results,
        measure=args.measure,
        split=args.split,
        top=args.top,
        depth=args.depth,
        correction=args.correction,
        resamples=args.resamples,
        seed=args.seed,
    )
    say(comparison_text(report), end="")
    if args.html is not None:
        write_text(html_path, comparison_html(report))
        say(f"\nwrote {html_path}")
    return 0


def register(sub) -> None:
    """Add ``compare`` to the subcommands ``sub``."""
    compare = sub.add_parser(
        "compare",
        help="compare finished runs query by query, each against the first",
        description="Each run after the first against the first, on one measure over the queries of a split: its "
        "mean and difference, the queries it wins, ties and loses, a paired t-test and a randomisation "
        "test with p-values corrected over the runs compared, Cohen's d_z, and the queries that "
        "changed most with the runs' rankings side by side (texts, relevance, the hard negatives each "
        "run trained on). --html writes the same as a self-contained page.",
    )
    compare.add_argument(
        "runs", nargs="+", metavar="run", help="two or more runs (results/<run>/), the reference first"
    )
    compare.add_argument(
        "--measure",
        default="RR@10",
        help="the measure compared: one the runs were evaluated with (their per_query.parquet), "
        "or any ir-measures name with --split of another split (default: RR@10)",
    )
    compare.add_argument(
        "--split",
        default=None,
        help="the split whose queries are compared (default: the runs' evaluation split); another "
        "split the runs ranked is evaluated from their rankings",
    )
    add_results(compare)
    compare.add_argument(
        "--top",
        type=at_least(0),
        default=5,
        help="how many of the queries that changed most to show with the rankings (default: 5)",
    )
    compare.add_argument(
        "--depth", type=at_least(1), default=10, help="how many documents of each ranking to show (default: 10)"
    )
    compare.add_argument(
        "--correction",
        choices=list(CORRECTIONS),
        default="holm",
        help="how the p-values are corrected over the runs compared with the first (default: holm)",
    )
    compare.add_argument(
        "--resamples",
        type=at_least(1),
        default=RESAMPLES,
        help=f"resamples of the randomisation test (default: {RESAMPLES}; exact below 2^queries)",
    )
    compare.add_argument(
        "--seed", type=at_least(0), default=SEED, help=f"seed of the randomisation test's resamples (default: {SEED})"
    )
    compare.add_argument(
        "--html", metavar="FILE", default=None, help="also write the comparison as a self-contained HTML page"
    )
    compare.add_argument(
        "--force", action="store_true", help="replace an existing --html file, or write it inside the results folder"
    )
    compare.set_defaults(func=_compare)
