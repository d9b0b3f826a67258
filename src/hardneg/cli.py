"""The ``hardneg`` command: helpers around the workflow (the workflow itself runs with ``snakemake``)."""

from __future__ import annotations

import argparse
import json
import sys

from hardneg.errors import HardnegError


def _check_config(args) -> int:
    from hardneg.config import load_config_files, resolve_run, config_hash

    config = load_config_files(args.config, args.schema)
    print(f"{' + '.join(args.config)}: valid")
    for name in config["runs"]:
        resolved = resolve_run(config, name)
        print(f"  run {name}: method {resolved['method']}, dataset {resolved['dataset']['name']}, "
              f"config_hash {config_hash(resolved)[:12]}")
    return 0


def _init(args) -> int:
    from hardneg import starter

    if args.beir:
        dataset = starter.beir_dataset(args.beir)
    else:
        dataset = starter.msmarco_passage_dataset(args.msmarco_passage)
    config = starter.starter_config(dataset, name=args.name, model=args.model)
    starter.write_starter(config, args.output)
    print(f"wrote {args.output}: dataset {args.name} ({dataset['adapter']}), runs {', '.join(config['runs'])}")
    print(f"next: snakemake --cores all --configfile {args.output}")
    return 0


def _methods(args) -> int:
    from hardneg import methods

    methods.load_modules(args.module)
    for name, method in methods.methods().items():
        print(f"{name} ({method.kind}): {method.summary}  [{method.module}]")
        for role, spec in method.roles.items():
            need = "required" if spec.required else "optional"
            print(f"  inputs.{role}: {spec.provides} ({need}) - {spec.description or methods.PROVIDES[spec.provides]}")
        for key in method.schema:
            print(f"  params.{key}")
    return 0


def _evaluate(args) -> int:
    from hardneg import artifacts
    from hardneg.evaluation import evaluate

    run = artifacts.read_table(artifacts.RUN, args.run)
    qrels = artifacts.read_table(artifacts.QRELS, args.qrels)
    means, _ = evaluate(run, qrels, args.measures)
    print(json.dumps(means, indent=2))
    return 0


def _audit(args) -> int:
    from hardneg.audit import describe_query

    print(describe_query(args.run, args.qid, results=args.results, top=args.top), end="")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="hardneg", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    check = sub.add_parser("check-config", help="validate a config file and list its runs")
    check.add_argument("config", nargs="*", default=["config/config.yaml"],
                       help="config files, merged in order as Snakemake's --configfile merges them "
                            "(default: config/config.yaml)")
    check.add_argument("--schema", default=None, help="schema file (default: the package's workflow schema)")
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
    init.set_defaults(func=_init)
    listing = sub.add_parser("methods", help="list the registered methods, their input roles and own params")
    listing.add_argument("--module", action="append", default=[],
                         help="also load this method module (dotted name or .py path), as method_modules does")
    listing.set_defaults(func=_methods)
    ev = sub.add_parser("evaluate", help="evaluate a run Parquet file against a qrels Parquet file")
    ev.add_argument("run")
    ev.add_argument("qrels")
    ev.add_argument("--measures", nargs="+", default=["RR@10", "nDCG@10", "R@100", "R@1000"])
    ev.set_defaults(func=_evaluate)
    audit = sub.add_parser("audit", help="show one query's positives and mined hard negatives of a run")
    audit.add_argument("run", help="run name: its results are in RESULTS/RUN/")
    audit.add_argument("--qid", required=True, help="the query to show")
    audit.add_argument("--results", default="results", help="the results folder (default: results)")
    audit.add_argument("--top", type=int, default=10, help="how many negatives to show (default: 10)")
    audit.set_defaults(func=_audit)
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except HardnegError as exc:
        print(f"hardneg: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
