"""The ``hardneg`` command: helpers around the workflow (the workflow itself runs with ``snakemake``)."""

from __future__ import annotations

import argparse
import errno
import json
import logging
import os
import signal
import sys

from hardneg import __version__, methods
from hardneg.datasets.qrels import load_qrels
from hardneg.errors import ConfigError, ConfigFileError, HardnegError
from hardneg.evaluation.tables import available_rows, runs_table, table_rows
from hardneg.export import FORMATS, ST_FORMATS
from hardneg.export.hardnegs import export_hardnegs
from hardneg.export.index import export_index
from hardneg.io.rankings import load_run
from hardneg.pipeline import starter
from hardneg.pipeline.resolution import resolve_run
from hardneg.results.query_view import describe_query
from hardneg.io.text import visible_lines
from hardneg.schema.files import config_hash
from hardneg.schema.names import quoted


# Bytes written to stdout at a time: no more than its buffer holds, so each is buffered and goes out with a flush,
# which reports a reader that went away (a write larger than the buffer goes out at once, and a pipe closed midway
# shows as a short write, which is not reported).
_PIECE = 512


def _say(text: str = "", end: str = "\n") -> None:
    """Print ``text`` on stdout with its control characters escaped (:func:`visible_lines`): names, labels and
    texts printed come from files."""
    shown = visible_lines(text) + end
    binary = getattr(sys.stdout, "buffer", None)
    if binary is None:  # a text-only stream
        sys.stdout.write(shown)
        return
    sys.stdout.flush()
    data = shown.encode(sys.stdout.encoding or "utf-8", errors="backslashreplace")
    for start in range(0, len(data), _PIECE):
        binary.write(data[start:start + _PIECE])


def _load_configs(paths: list[str], schema: str | None = None) -> dict:
    """:func:`hardneg.pipeline.config.load_config_files`, whose errors about a key name the files too."""
    from hardneg.pipeline.config import load_config_files  # Faiss: imported only where an index is built or searched

    try:
        return load_config_files(paths, schema)
    except ConfigFileError:
        raise  # it names its file and line already
    except ConfigError as exc:
        raise HardnegError(f"{' + '.join(map(str, paths))}: {exc}") from None


def _check_config(args) -> int:
    config = _load_configs(args.config, args.schema)
    _say(f"{' + '.join(args.config)}: valid")
    for name in config["runs"]:
        resolved = resolve_run(config, name)
        _say(f"  run {name}: method {resolved['method']}, dataset {resolved['dataset']['name']}, "
             f"config_hash {config_hash(resolved)[:12]}")
    return 0


def _init(args) -> int:
    if args.beir:
        dataset = starter.beir_dataset(args.beir)
    else:
        dataset = starter.msmarco_passage_dataset(args.msmarco_passage)
    config = starter.starter_config(dataset, name=args.name, model=args.model)
    starter.write_starter(config, args.output, force=args.force)
    _say(f"wrote {args.output}: dataset {args.name} ({dataset['adapter']}), runs {', '.join(config['runs'])}")
    _say(f"next: snakemake --cores all --configfile {args.output}")
    return 0


def _methods(args) -> int:
    methods.load_modules(args.module)
    for name, method in methods.methods().items():
        _say(f"{name} ({method.kind}): {method.summary}  [{method.module}]")
        for role, spec in method.roles.items():
            need = "required" if spec.required else "optional"
            _say(f"  inputs.{role}: {spec.provides} ({need}) - {spec.description or methods.PROVIDES[spec.provides]}")
        for key in method.schema:
            _say(f"  params.{key}")
    return 0


def _config_reference(args) -> int:
    # the composed configuration schema: imported only where a config or the schema is read
    from hardneg.pipeline.config_reference import config_reference

    methods.load_modules(args.module)
    _say(config_reference(), end="")
    return 0


def _evaluate(args) -> int:
    from hardneg.evaluation.metrics import evaluate, parse_measures  # ir-measures: slow to import, needed only here

    try:
        parse_measures(args.measures)
    except ConfigError as exc:
        raise HardnegError(f"--measures: {exc.message}") from None
    run = load_run(args.run)
    qrels = load_qrels(args.qrels)
    means, _ = evaluate(run, qrels, args.measures)
    _say(json.dumps(means, indent=2))
    return 0


def _audit(args) -> int:
    _say(describe_query(args.run, args.qid, results=args.results, top=args.top), end="")
    return 0


TABLE_CONFIG = "config/config.yaml"


def _build_command(args, runs: list[str]) -> str:
    """The command that builds the metrics of ``runs`` with the config ``hardneg table`` read: targets first, since
    ``--configfile`` takes every path after it as a config file."""
    targets = " ".join(f"{args.results}/{run}/metrics.json" for run in runs)
    default = os.path.abspath(args.config) == os.path.abspath(TABLE_CONFIG)
    return f"snakemake --cores all {targets}" + ("" if default else f" --configfile {args.config}")


def _table(args) -> int:
    config = _load_configs([args.config])
    unknown = [run for run in args.runs if run not in config["runs"]]
    if unknown:
        raise HardnegError(f"{args.config} has no run {quoted(unknown[0])}; its runs: {', '.join(config['runs'])}")
    rows = available_rows(args.results, config["tables"], args.runs)
    if not rows:
        listed = [run for run, _ in table_rows(config["tables"].get("results", []))] or list(config["runs"])
        first = listed[0]
        raise HardnegError(f"no run of the config's tables has metrics under {args.results}/; build one first, "
                           f"e.g. {_build_command(args, [first])}")
    missing = [run for run, _ in rows if not os.path.lexists(os.path.join(args.results, run, "metrics.json"))]
    if missing:
        raise HardnegError(f"run {missing[0]} has no metrics: {args.results}/{missing[0]}/metrics.json is missing; "
                           f"build {'it' if len(missing) == 1 else 'them'} with {_build_command(args, missing)}")
    _say(runs_table(args.results, rows), end="")
    return 0


def _export_hardnegs(args) -> int:
    written = export_hardnegs(args.run, args.format, args.output, results=args.results, negatives=args.negatives,
                              st_format=args.st_format, title_separator=args.title_separator, force=args.force)
    columns = f", columns {', '.join(written['columns'])}" if "columns" in written else ""
    _say(f"wrote {written['output']}: {written['format']}"
         + (f" ({written['st_format']})" if "st_format" in written else "")
         + f", {written['rows']} rows of {written['queries']} training queries{columns}")
    return 0


def _export_index(args) -> int:
    info = export_index(args.run, args.output, results=args.results, slug=args.index, force=args.force)
    _say(f"wrote {args.output}: index {info['index']} of run {info['run']} ({info['documents']} documents, "
         f"dim {info['dim']}) with its query encoder in {args.output}/{info['encoder']}")
    _say(f"search it: from hardneg.export.pyserini import faiss_searcher; "
         f"faiss_searcher({str(args.output)!r}).search('a query', k=10)")
    auto = info["pyserini_auto_query_encoder"]
    if auto:
        _say(f"or with Pyserini alone: FaissSearcher({str(args.output)!r}, AutoQueryEncoder("
             f"{str(args.output) + '/' + info['encoder']!r}, pooling={auto['pooling']!r}, l2_norm={auto['l2_norm']}))"
             f" (queries of at most {info['query_max_length']} tokens encode the same)")
    return 0


def _at_least(minimum: int):
    """An argparse type: an integer of at least ``minimum``."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}, got {value}")
        return value
    return parse


def _add_force(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument("--force", action="store_true",
                        help=f"replace an existing --output ({what}), or write inside the results folder; "
                             "without it, neither is done")


def _add_run(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run", help="run name: its results are in RESULTS/RUN/")


def _add_results(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--results", default="results", help="the results folder (default: results)")


def _add_export(sub) -> None:
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
    _add_run(hardnegs)
    hardnegs.add_argument("--format", required=True, choices=FORMATS,
                          help="sentence-transformers (mine_hard_negatives' dataset, a load_from_disk folder), "
                               "tevatron (JSON Lines file), hf-dataset (a load_from_disk folder, one row per query) "
                               "or jsonl (JSON Lines file, one object per query)")
    hardnegs.add_argument("--output", required=True, help="the file (tevatron, jsonl) or folder to write")
    _add_results(hardnegs)
    hardnegs.add_argument("--negatives", type=_at_least(1), default=None, metavar="N",
                          help="keep each query's first N negatives in rank order (default: all)")
    hardnegs.add_argument("--st-format", choices=ST_FORMATS, default=None,
                          help="sentence-transformers only: mine_hard_negatives' output_format (default: triplet)")
    hardnegs.add_argument("--title-separator", default=None, metavar="TEXT",
                          help="sentence-transformers only: what joins a document's title and text (default: the "
                               "separator of the run's tokenizer, e.g. [SEP], as hardneg's encoder reads them)")
    _add_force(hardnegs, "a file, or a folder holding an earlier export of the same format")
    hardnegs.set_defaults(func=_export_hardnegs)
    index = kinds.add_parser("index", help="the run's Faiss index and query encoder as a Pyserini folder",
                             description="Write the folder Pyserini's FaissSearcher opens (index, docid) with a copy "
                                         "of the run's model as its query encoder (encoder/); search it with "
                                         "hardneg.export.pyserini.HardnegQueryEncoder.")
    _add_run(index)
    index.add_argument("--output", required=True, help="the folder to write")
    index.add_argument("--index", default=None, metavar="SLUG",
                       help="which index of the run (a file name under index/, without .faiss; default: the one "
                            "its queries are searched with)")
    _add_results(index)
    _add_force(index, "a folder holding an earlier index export")
    index.set_defaults(func=_export_index)


def build_parser() -> argparse.ArgumentParser:
    """The ``hardneg`` argument parser: one subcommand per helper, each with its own ``--help``."""
    parser = argparse.ArgumentParser(prog="hardneg", description=__doc__)
    parser.add_argument("--version", action="version", version=f"hardneg {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    check = sub.add_parser("check-config", help="validate a config file and list its runs")
    check.add_argument("config", nargs="*", default=["config/config.yaml"],
                       help="config files, merged in order as Snakemake's --configfile merges them "
                            "(default: config/config.yaml)")
    check.add_argument("--schema", default=None, help="schema file (default: the schema inside the hardneg package)")
    check.set_defaults(func=_check_config)
    init = sub.add_parser("init", help="write a starting config for your own data (BEIR folder or MS MARCO TSVs)")
    source = init.add_mutually_exclusive_group(required=True)
    source.add_argument("--beir", metavar="FOLDER", help="a BEIR folder: corpus.jsonl, queries.jsonl, qrels/<split>.tsv")
    source.add_argument("--msmarco-passage", metavar="FOLDER",
                        help="a folder with collection.tsv, queries.<split>.tsv and qrels.<split>.tsv")
    init.add_argument("--model", default="builtin",
                      help="builtin (default: a small BERT trained from scratch), minilm (the packaged "
                           "all-MiniLM-L6-v2) or a Hugging Face model folder")
    init.add_argument("--name", default="mydata",
                      help="the dataset's name; run names start with it unless it is the default, mydata")
    init.add_argument("--output", default="my.yaml", help="where to write the config (default: my.yaml)")
    init.add_argument("--force", action="store_true",
                      help="replace an existing --output file, or write inside the results folder (results); "
                           "without it, neither is done")
    init.set_defaults(func=_init)
    listing = sub.add_parser("methods", help="list the registered methods, their input roles and own params")
    listing.add_argument("--module", action="append", default=[],
                         help="also load this method module (dotted name or .py path), as method_modules does")
    listing.set_defaults(func=_methods)
    reference = sub.add_parser("config-reference", help="print the configuration reference (every key of the schema) "
                                                        "as Markdown",
                               description="Every key of a configuration file, with its type, allowed values, "
                                           "default and description, from the schema and the registered methods: "
                                           "the page reference/configuration.md of the documentation site.")
    reference.add_argument("--module", action="append", default=[],
                           help="also load this method module (dotted name or .py path), as method_modules does")
    reference.set_defaults(func=_config_reference)
    ev = sub.add_parser("evaluate", help="evaluate a run against qrels (each a Parquet artifact or a TREC file)",
                        description="Print the mean of each measure over the judged queries, as JSON. Files are "
                                    "told apart by content: Parquet (hardneg's run and qrels artifacts) or TREC "
                                    "text ('qid Q0 docid rank score tag' runs, 'qid 0 docid relevance' qrels).")
    ev.add_argument("run", help="a run: results/<run>/runs/<split>.parquet or .trec, or any TREC run file")
    ev.add_argument("qrels", help="qrels: results/datasets/<dataset>/qrels/<split>.parquet or .trec, or any "
                                  "TREC qrels file")
    ev.add_argument("--measures", nargs="+", default=["RR@10", "nDCG@10", "R@100", "R@1000"],
                    help="ir-measures names (default: RR@10 nDCG@10 R@100 R@1000)")
    ev.set_defaults(func=_evaluate)
    audit = sub.add_parser("audit", help="show one query's positives and mined hard negatives of a run")
    _add_run(audit)
    audit.add_argument("--qid", required=True, help="the query to show")
    _add_results(audit)
    audit.add_argument("--top", type=_at_least(0), default=10, help="how many negatives to show (default: 10)")
    audit.set_defaults(func=_audit)
    table = sub.add_parser("table", help="print README's results table from the runs' metrics.json files",
                           description="One Markdown row per run: the evaluation split's MRR@10, nDCG@10, R@100 and "
                                       "pairwise errors, as in README.md's results tables.")
    table.add_argument("runs", nargs="*", metavar="RUN",
                       help="the runs to show (default: every run of the config's tables that has metrics)")
    table.add_argument("--config", default=TABLE_CONFIG,
                       help="the config whose `tables` section lists the runs and labels (default: config/config.yaml)")
    _add_results(table)
    table.set_defaults(func=_table)
    _add_export(sub)
    return parser


def _os_error(exc: OSError) -> str:
    """An operating-system error as one line: the file, then what is wrong with it."""
    reason = {errno.EISDIR: "is a folder, not a file", errno.ENOTDIR: "a part of the path is not a folder",
              errno.ENOENT: "does not exist", errno.EACCES: "permission denied"}.get(exc.errno)
    reason = reason or (exc.strerror or str(exc)).lower()
    return f"{exc.filename}: {reason}" if exc.filename is not None else reason


def _run(argv: list[str] | None) -> int:
    args = build_parser().parse_args(argv)
    # the library's warnings (a run that answers few of the judged queries) as one line each on stderr
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="hardneg: warning: %(message)s")
    try:
        return args.func(args)
    except HardnegError as exc:
        message = str(exc)
    except BrokenPipeError:
        raise
    except OSError as exc:  # a file the command reads or writes, e.g. a folder given for a file
        message = _os_error(exc)
    sys.stderr.write(f"hardneg: error: {visible_lines(message)}\n")
    return 2


def _discard_output() -> None:
    """Point stdout and stderr at the null device, so that the interpreter's last flush at exit cannot meet the
    closed pipe again."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    for stream in (sys.stdout, sys.stderr):
        try:
            os.dup2(devnull, stream.fileno())
        except (AttributeError, OSError, ValueError):  # not a file of the process (an in-memory stream)
            pass
    os.close(devnull)


def main(argv: list[str] | None = None) -> int:
    """Run the ``hardneg`` command with ``argv`` (default: the process's arguments); return its exit status: 0,
    2 for an error (one line on stderr, ``hardneg: error: ...``), or 141 (128 + SIGPIPE) when the reader of its
    output went away, as ``hardneg methods | head -1`` does, where it stops without a word like other Unix
    tools."""
    try:
        try:
            return _run(argv)
        finally:
            sys.stdout.flush()  # a closed pipe shows here, not in the interpreter's flush at exit
    except BrokenPipeError:
        _discard_output()
        return 128 + signal.SIGPIPE


if __name__ == "__main__":
    sys.exit(main())
