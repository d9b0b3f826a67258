"""Commands about configs: ``check-config``, ``init``, ``methods`` and ``config-reference``."""

from __future__ import annotations

from hardneg import methods
from hardneg.cli.common import load_configs, say
from hardneg.pipeline import starter
from hardneg.pipeline.config_checks import check_dataset_files
from hardneg.pipeline.fuse import few_tuning_queries_warning
from hardneg.pipeline.resolution import resolve_run
from hardneg.pipeline.starter_fusion import fusion_note, judged_queries
from hardneg.schema.files import config_hash


def _check_config(args) -> int:
    config = load_configs(args.config, args.schema)
    check_dataset_files(config)  # as the workflow checks them
    say(f"{' + '.join(args.config)}: valid")
    for name in config["runs"]:
        resolved = resolve_run(config, name)
        say(
            f"  run {name}: method {resolved['method']}, dataset {resolved['dataset']['name']}, "
            f"config_hash {config_hash(resolved)[:12]}"
        )
    for warning in tuning_warnings(config):
        say(f"warning: {warning}")
    _say_estimate(config)
    return 0


def _say_estimate(config: dict) -> None:
    """The config's heavy jobs and a rough time on this machine (:mod:`hardneg.pipeline.estimate`), for its
    targets' runs."""
    # the plan and the estimate: kept out of the command line's start
    from hardneg.pipeline.estimate import describe, estimate
    from hardneg.pipeline.plan import Plan

    say("estimate (the heavy jobs of each run, on this machine):")
    for line in describe(estimate(config, Plan(config))):
        say(line)


def tuning_warnings(config: dict) -> list[str]:
    """The warnings of runs whose weight would be tuned on fewer judged queries than their ``tune.min_queries``
    (counted from the dataset's files; a count that needs the prepared dataset is not checked)."""
    warnings = []
    for name, run in config["runs"].items():
        split = methods.get(run["method"]).tuning_split(run["params"])
        if split is None:
            continue
        queries = judged_queries(config["datasets"][run.get("dataset", config["dataset"])], split)
        warning = (
            None
            if queries is None
            else few_tuning_queries_warning(name, queries, split, run["params"]["tune"]["min_queries"])
        )
        if warning:
            warnings.append(warning)
    return warnings


def _init(args) -> int:
    notes: list[str] = []
    if args.beir:
        dataset = starter.beir_dataset(args.beir)
    else:
        dataset = starter.msmarco_passage_dataset(args.msmarco_passage, notes)
    config = starter.starter_config(dataset, name=args.name, model=args.model)
    starter.write_starter(config, args.output, force=args.force)
    say(f"wrote {args.output}: dataset {args.name} ({dataset['adapter']}), runs {', '.join(config['runs'])}")
    if "dev_from_train" in dataset:
        say(
            f"  split dev: {dataset['dev_from_train']['share']:.0%} of the judged training queries, held out from "
            f"training (datasets.{args.name}.dev_from_train)"
        )
    say(f"  results: {config['results']}/ (hardneg commands: --results {config['results']})")
    fused = fusion_note(config)
    if fused:
        notes.append(fused)
    for note in notes:
        say(f"  note: {note}")
    _say_estimate(load_configs([args.output]))
    say(f"next: snakemake --cores all --configfile {args.output}")
    return 0


def _methods(args) -> int:
    methods.load_modules(args.module)
    for name, method in methods.methods().items():
        say(f"{name} ({method.kind}): {method.summary}  [{method.module}]")
        for role, spec in method.roles.items():
            need = "required" if spec.required else "optional"
            say(f"  inputs.{role}: {spec.provides} ({need}) - {spec.description or methods.PROVIDES[spec.provides]}")
        for key in method.schema:
            say(f"  params.{key}")
    return 0


def _config_reference(args) -> int:
    # the composed configuration schema: imported only where a config or the schema is read
    from hardneg.pipeline.config_reference import config_reference

    methods.load_modules(args.module)
    say(config_reference(), end="")
    return 0


def register(sub) -> None:
    """Add ``check-config``, ``init``, ``methods`` and ``config-reference`` to the subcommands ``sub``."""
    check = sub.add_parser("check-config", help="validate a config file and list its runs")
    check.add_argument(
        "config",
        nargs="*",
        default=["config/config.yaml"],
        help="config files, merged in order as Snakemake's --configfile merges them (default: config/config.yaml)",
    )
    check.add_argument("--schema", default=None, help="schema file (default: the schema inside the hardneg package)")
    check.set_defaults(func=_check_config)
    init = sub.add_parser("init", help="write a starting config for your own data (BEIR folder or MS MARCO TSVs)")
    source = init.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "--beir", metavar="FOLDER", help="a BEIR folder: corpus.jsonl, queries.jsonl, qrels/<split>.tsv"
    )
    source.add_argument(
        "--msmarco-passage",
        metavar="FOLDER",
        help="a folder with collection.tsv, queries.<split>.tsv and qrels.<split>.tsv",
    )
    init.add_argument(
        "--model",
        default="builtin",
        help="builtin (default: a small BERT trained from scratch), minilm (the packaged "
        "all-MiniLM-L6-v2) or a Hugging Face model folder",
    )
    init.add_argument(
        "--name",
        default="mydata",
        help="the dataset's name (default: mydata); the config's results go to results/NAME/, and a "
        "run already there with another dataset is refused",
    )
    init.add_argument("--output", default="my.yaml", help="where to write the config (default: my.yaml)")
    init.add_argument(
        "--force",
        action="store_true",
        help="replace an existing --output file, or write inside the results folder (results); "
        "without it, neither is done",
    )
    init.set_defaults(func=_init)
    listing = sub.add_parser("methods", help="list the registered methods, their input roles and own params")
    listing.add_argument(
        "--module",
        action="append",
        default=[],
        help="also load this method module (dotted name or .py path), as method_modules does",
    )
    listing.set_defaults(func=_methods)
    reference = sub.add_parser(
        "config-reference",
        help="print the configuration reference (every key of the schema) as Markdown",
        description="Every key of a configuration file, with its type, allowed values, "
        "default and description, from the schema and the registered methods: "
        "the page reference/configuration.md of the documentation site.",
    )
    reference.add_argument(
        "--module",
        action="append",
        default=[],
        help="also load this method module (dotted name or .py path), as method_modules does",
    )
    reference.set_defaults(func=_config_reference)
