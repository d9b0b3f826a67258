"""The ``export`` command: ``export hardnegs`` and ``export index``."""

from __future__ import annotations

from hardneg.cli.common import add_force, add_results, add_run, at_least, say
from hardneg.export import FORMATS, ST_FORMATS
from hardneg.export.hardnegs import export_hardnegs
from hardneg.export.index import export_index


def _export_hardnegs(args) -> int:
    written = export_hardnegs(args.run, args.format, args.output, results=args.results, negatives=args.negatives,
                              st_format=args.st_format, title_separator=args.title_separator, force=args.force)
    columns = f", columns {', '.join(written['columns'])}" if "columns" in written else ""
    say(f"wrote {written['output']}: {written['format']}"
         + (f" ({written['st_format']})" if "st_format" in written else "")
         + f", {written['rows']} rows of {written['queries']} training queries{columns}")
    return 0


def _export_index(args) -> int:
    info = export_index(args.run, args.output, results=args.results, slug=args.index, force=args.force)
    say(f"wrote {args.output}: index {info['index']} of run {info['run']} ({info['documents']} documents, "
         f"dim {info['dim']}) with its query encoder in {args.output}/{info['encoder']}")
    say(f"search it: from hardneg.export.pyserini import faiss_searcher; "
         f"faiss_searcher({str(args.output)!r}).search('a query', k=10)")
    auto = info["pyserini_auto_query_encoder"]
    if auto:
        say(f"or with Pyserini alone: FaissSearcher({str(args.output)!r}, AutoQueryEncoder("
             f"{str(args.output) + '/' + info['encoder']!r}, pooling={auto['pooling']!r}, l2_norm={auto['l2_norm']}))"
             f" (queries of at most {info['query_max_length']} tokens encode the same)")
    return 0


def register(sub) -> None:
    """The ``export`` command: ``export hardnegs`` and ``export index``."""
    export = sub.add_parser("export", help="export a run's hard negatives or its index for other toolkits",
                            description="Write a finished run's hard negatives as training data for "
                                        "sentence-transformers, Tevatron or Hugging Face datasets, or its Faiss "
                                        "index and query encoder as a Pyserini FaissSearcher folder.")
    kinds = export.add_subparsers(dest="export", required=True, metavar="{hardnegs,index}",
                                  help="what to export: hardnegs or index")
    hardnegs = kinds.add_parser("hardnegs", help="the run's mined hard negatives, with their texts",
                                description="One training group per training query with a relevant document and "
                                            "a hard negative: the query, its positives and its negatives in rank "
                                            "order, with their texts.")
    add_run(hardnegs)
    hardnegs.add_argument("--format", required=True, choices=FORMATS,
                          help="sentence-transformers (mine_hard_negatives' dataset, a load_from_disk folder), "
                               "tevatron (JSON Lines file), hf-dataset (a load_from_disk folder, one row per query) "
                               "or jsonl (JSON Lines file, one object per query)")
    hardnegs.add_argument("--output", required=True, help="the file (tevatron, jsonl) or folder to write")
    add_results(hardnegs)
    hardnegs.add_argument("--negatives", type=at_least(1), default=None, metavar="N",
                          help="keep each query's first N negatives in rank order (default: all)")
    hardnegs.add_argument("--st-format", choices=ST_FORMATS, default=None,
                          help="sentence-transformers only: mine_hard_negatives' output_format (default: triplet)")
    hardnegs.add_argument("--title-separator", default=None, metavar="TEXT",
                          help="sentence-transformers only: what joins a document's title and text (default: the "
                               "separator of the run's tokenizer, e.g. [SEP], as hardneg's encoder reads them)")
    add_force(hardnegs, "a file, or a folder holding an earlier export of the same format")
    hardnegs.set_defaults(func=_export_hardnegs)
    index = kinds.add_parser("index", help="the run's Faiss index and query encoder as a Pyserini folder",
                             description="Write the folder Pyserini's FaissSearcher opens (index, docid) with a copy "
                                         "of the run's model as its query encoder (encoder/); search it with "
                                         "hardneg.export.pyserini.HardnegQueryEncoder.")
    add_run(index)
    index.add_argument("--output", required=True, help="the folder to write")
    index.add_argument("--index", default=None, metavar="SLUG",
                       help="which index of the run (a file name under index/, without .faiss; default: the one "
                            "its queries are searched with)")
    add_results(index)
    add_force(index, "a folder holding an earlier index export")
    index.set_defaults(func=_export_index)
