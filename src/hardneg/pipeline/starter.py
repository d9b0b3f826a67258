"""Starting configurations for a user's own data (``hardneg init``).

A starter config is a complete, validated config that stands alone (``snakemake --configfile my.yaml``
replaces config/config.yaml, it is not merged into it): the user's dataset, BM25, a zero-shot run when the
model is pretrained, the BM25-negative warm-up, STAR and ADORE on STAR's documents. The user edits it from
there; every key is documented in hardneg/schema/config.schema.yaml (in the installed package).

What it settles so that its runs train as written:

* **where its results go**: ``results/<dataset name>`` (the config's ``results``), so no run of it writes over a
  run of the default config or of a config of another dataset; the dense runs' names start with the model's
  (:func:`model_prefix`), so configs of one dataset and several models share that folder, its prepared dataset and
  BM25; a run whose folder there holds a run of another dataset is refused (:func:`check_results`);
* **a held-out split**: a collection with a ``train`` split (of 20 judged queries or more) and no ``dev`` split
  gets ``dev_from_train``, a seeded share of its training queries held out (never trained on): dev curves, the
  memorisation check after training and a hybrid run's tuning use it;
* **steps**: each training run's batch and epochs are chosen from the training split's size so that training
  makes enough optimiser steps (:func:`hardneg.pipeline.train_steps.too_few_steps` is false: the check behind the
  training's console warning), a small split in smaller batches;
* **the model as its authors saved it**: a pretrained model's pooling and normalisation left to its folder
  (``auto``), its prompts written out when it has some (:func:`pretrained_model_section`);
* **portable text**: plain YAML (no anchors), the packaged MiniLM by its short name ``minilm`` (found where a
  model is loaded, :mod:`hardneg.dense.pretrained`), paths as they were given (a relative path stays relative to
  the folder Snakemake runs in).
"""

from __future__ import annotations

import copy
import math
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import yaml

from hardneg.datasets.beir import read_beir_qrels
from hardneg.datasets.qrels import read_trec_qrels
from hardneg.datasets.splits import HELD_OUT, TRAIN, held_out_queries
from hardneg.dense.data import TrainQueries
from hardneg.dense.pretrained import MINILM, model_source
from hardneg.dense.st_folder import read_folder
from hardneg.errors import ConfigError
from hardneg.io.atomic import write_text
from hardneg.io.layout import RESULTS, Layout
from hardneg.pipeline.resolution import resolve_run
from hardneg.pipeline.starter_fusion import fused_runs, fusion_header
from hardneg.pipeline.train_steps import MIN_STEPS_PER_EPOCH, MIN_TOTAL_STEPS, optimiser_steps, too_few_steps
from hardneg.results.output_paths import check_output
from hardneg.schema.files import read_resolved

MEASURES = ["RR@10", "RR@100", "R@100", "R@1000", "nDCG@10", "AP@1000"]
DEFAULT_NAME = "mydata"
BATCH_SIZE = 32  # the batch of a training split that makes MIN_STEPS_PER_EPOCH batches of it
MIN_BATCH_SIZE = 8  # the smallest batch a small training split gets (in-batch negatives need a few)
# The share of the judged training queries held out as `dev` (dev_from_train): enough for about HELD_OUT_QUERIES
# queries, between 10% and 20%; a training split of fewer than HOLD_OUT_FROM judged queries keeps them all (a
# handful of held-out queries would measure nothing and cost training data).
HELD_OUT_QUERIES = 50
HELD_OUT_SHARE = (0.1, 0.2)
HOLD_OUT_FROM = 20
# Dev curves (train.dev_every) encode the whole corpus at each evaluation: written for corpora of at most this many
# documents, DEV_EVALUATIONS times over a training.
DEV_CURVE_MAX_DOCS = 20_000
DEV_EVALUATIONS = 5
# A corpus of at most this many documents is encoded by one job (``encode.shards: 1``) rather than the schema's
# two: each job starts Python and loads the model (seconds), longer than encoding such a corpus takes.
ONE_SHARD_MAX_DOCS = 10_000


def _as_given(path: Path) -> str:
    """``path`` as the user gave it, normalised: a relative path stays relative (to the folder where the command,
    and later Snakemake, runs), an absolute one absolute."""
    return os.path.normpath(path)


def beir_dataset(path: str | os.PathLike) -> dict:
    """A ``beir`` dataset entry for a BEIR folder: the splits are its ``qrels/<split>.tsv`` files; a folder with a
    ``train`` split and no ``dev`` split holds a share of its training queries out as ``dev``
    (:func:`held_out_option`)."""
    folder = Path(path)
    for name in ("corpus.jsonl", "queries.jsonl"):
        if not (folder / name).is_file():
            raise ConfigError(
                "--beir",
                f"{folder / name} is missing (a BEIR folder has corpus.jsonl, queries.jsonl and qrels/<split>.tsv)",
            )
    splits = sorted(p.stem for p in (folder / "qrels").glob("*.tsv"))
    if not splits:
        raise ConfigError("--beir", f"{folder / 'qrels'} has no <split>.tsv file")
    dataset = {"adapter": "beir", "path": _as_given(folder), "splits": splits}
    return dataset | held_out_option(splits, lambda: read_beir_qrels(folder / "qrels" / f"{TRAIN}.tsv")[0])


def msmarco_passage_dataset(path: str | os.PathLike, notes: list[str] | None = None) -> dict:
    """An ``msmarco_passage`` dataset entry for a folder of MS MARCO passage TSVs: ``collection.tsv``, and
    ``queries.<split>.tsv`` with ``qrels.<split>.tsv`` for each split. ``dev.small`` (the dev set the papers
    evaluate on) is named ``dev``, the full ``dev`` then ``dev_full``. A queries file without its qrels file (the
    official ``queries.eval.tsv``), or the reverse, is left out with a note appended to ``notes``."""
    folder = Path(path)
    if not (folder / "collection.tsv").is_file():
        raise ConfigError("--msmarco-passage", f"{folder / 'collection.tsv'} is missing")
    notes = [] if notes is None else notes
    found = {
        kind: {file.name[len(kind) + 1 : -len(".tsv")]: file for file in sorted(folder.glob(f"{kind}.*.tsv"))}
        for kind in ("queries", "qrels")
    }
    small = "dev.small" in found["queries"] and "dev.small" in found["qrels"]
    queries, qrels = {}, {}
    for split in sorted(set(found["queries"]) | set(found["qrels"])):
        if split not in found["qrels"] or split not in found["queries"]:
            have, lacks = ("queries", "qrels") if split in found["queries"] else ("qrels", "queries")
            notes.append(
                f"{found[have][split]}: no {lacks}.{split}.tsv beside it, so no split {split} (a split "
                f"needs queries and their judgements)"
            )
            continue
        name = "dev_full" if split == "dev" and small else split.replace(".small", "").replace(".", "_")
        if name in queries:
            raise ConfigError(
                "--msmarco-passage",
                f"{found['qrels'][split]} and the files of split {name} would both be split {name}: keep one of them",
            )
        if name == "dev_full":
            notes.append(f"{found['qrels'][split]}: split dev_full (the full dev set; split dev is dev.small)")
        queries[name], qrels[name] = _as_given(found["queries"][split]), _as_given(found["qrels"][split])
    if not queries:
        raise ConfigError("--msmarco-passage", f"{folder} has no pair of queries.<split>.tsv and qrels.<split>.tsv")
    dataset = {
        "adapter": "msmarco_passage",
        "collection": _as_given(folder / "collection.tsv"),
        "queries": queries,
        "qrels": qrels,
    }
    return dataset | held_out_option(list(queries), lambda: read_trec_qrels(qrels[TRAIN])[0])


def held_out_option(splits: list[str], train_qrels) -> dict:
    """``{"dev_from_train": {"share": ...}}`` for a dataset with a ``train`` split of at least
    :data:`HOLD_OUT_FROM` judged queries and no ``dev`` split, else ``{}``. The share holds out about
    :data:`HELD_OUT_QUERIES` of the judged training queries, between the bounds of :data:`HELD_OUT_SHARE` (rounded
    up to two decimals: enough held out to tune a weight on, :data:`hardneg.fusion.MIN_TUNING_QUERIES`);
    ``train_qrels``: a function reading the training split's QRELS table, called only then."""
    if TRAIN not in splits or HELD_OUT in splits:
        return {}
    qrels = train_qrels()
    judged = pc.count_distinct(qrels.filter(pc.greater_equal(qrels["relevance"], 1))["qid"]).as_py()
    if judged < HOLD_OUT_FROM:
        return {}
    low, high = HELD_OUT_SHARE
    # rounded up to whole percents, so that the share holds out HELD_OUT_QUERIES where the bounds allow
    share = min(high, max(low, math.ceil(100 * HELD_OUT_QUERIES / max(judged, 1)) / 100))
    return {"dev_from_train": {"share": share}}


def training_rows(dataset: dict) -> TrainQueries:
    """The training rows of ``dataset``'s ``train`` split, as training counts them (:class:`TrainQueries`: one row
    per query with a relevant document), once ``dev_from_train`` has held its queries out. Read from the qrels
    file alone: judgements of queries or documents that preparing the dataset would refuse are counted too."""
    if dataset["adapter"] == "beir":
        qrels = read_beir_qrels(Path(dataset["path"]) / "qrels" / f"{TRAIN}.tsv")[0]
    else:
        qrels = read_trec_qrels(dataset["qrels"][TRAIN])[0]
    option = dataset.get("dev_from_train")
    if option is not None:
        held = held_out_queries(qrels, option["share"], option.get("seed", 0))
        qrels = qrels.filter(pc.invert(pc.is_in(qrels["qid"], value_set=pa.array(held, pa.string()))))
    judged = qrels.filter(pc.greater_equal(qrels["relevance"], 1))
    return TrainQueries(qrels, sorted(set(judged["qid"].to_pylist())), sorted(set(judged["docid"].to_pylist())))


def batch_size_for(num_rows: int) -> int:
    """The training batch for ``num_rows`` training rows: :data:`BATCH_SIZE` when they make
    :data:`MIN_STEPS_PER_EPOCH` batches of it, else smaller, down to :data:`MIN_BATCH_SIZE`, so that a small
    collection reaches enough optimiser steps in fewer, cheaper steps (a step's cost grows with its batch).

    >>> batch_size_for(120), batch_size_for(300), batch_size_for(5_000)
    (8, 15, 32)
    """
    return max(MIN_BATCH_SIZE, min(BATCH_SIZE, num_rows // MIN_STEPS_PER_EPOCH))


def epochs_for(num_rows: int, batch_size: int, at_least: int) -> int:
    """The fewest epochs, ``at_least`` or more, whose optimiser steps over ``num_rows`` training rows in batches of
    ``batch_size`` are not too few to train (:func:`hardneg.pipeline.train_steps.too_few_steps`).

    >>> epochs_for(120, 32, 1)  # 4 steps an epoch: 25 epochs make 100 steps
    25

    :raises ValueError: fewer than two training rows, which make no batch.
    """
    per_epoch, _ = optimiser_steps(num_rows, batch_size=batch_size, grad_accumulation=1, epochs=1)
    if per_epoch == 0:
        raise ValueError(f"{num_rows} training rows make no batch; training needs at least two")
    epochs = max(at_least, 1 if per_epoch >= MIN_STEPS_PER_EPOCH else math.ceil(MIN_TOTAL_STEPS / per_epoch))
    while too_few_steps(*optimiser_steps(num_rows, batch_size=batch_size, grad_accumulation=1, epochs=epochs)):
        epochs += 1  # pragma: no cover  (the arithmetic above reaches the bound; this only guards it)
    return epochs


def _splits(dataset: dict) -> list[str]:
    splits = list(dataset["splits"]) if dataset["adapter"] == "beir" else list(dataset["qrels"])
    return splits + ([HELD_OUT] if "dev_from_train" in dataset else [])


def _num_docs_up_to(dataset: dict, limit: float) -> int | None:
    """The documents of a BEIR corpus or an MS MARCO passage collection when there are at most ``limit`` of them
    (lines read up to ``limit + 1``); None when there are more, or for another adapter."""
    if dataset["adapter"] == "beir":
        path = Path(dataset["path"]) / "corpus.jsonl"
    elif dataset["adapter"] == "msmarco_passage":
        path = Path(dataset["collection"])
    else:
        return None
    with open(path, encoding="utf-8", errors="replace") as corpus:
        count = 0
        for line in corpus:
            count += bool(line.strip())
            if count > limit:
                return None
    return count


def count_documents(dataset: dict) -> int | None:
    """The documents of ``dataset``: a synthetic one's ``num_docs``, a BEIR corpus's or an MS MARCO passage
    collection's lines; None for another adapter."""
    if dataset["adapter"] == "synthetic":
        return dataset.get("num_docs")
    path = Path(dataset["path"]) / "corpus.jsonl" if dataset["adapter"] == "beir" else dataset.get("collection")
    if not path or not os.path.isfile(path):
        return None
    return _num_docs_up_to(dataset, math.inf)


def model_prefix(model: str) -> str:
    """The start of a starter config's dense run names for ``model`` (after the dataset's name): nothing for the
    built-in model, ``minilm_`` for the packaged MiniLM, the folder's name for another model."""
    if model == "builtin":
        return ""
    if model == MINILM:
        return "minilm_"
    return "".join(c if c.isalnum() or c in "_.-" else "_" for c in Path(model).resolve().name) + "_"


def pretrained_model_section(reference: str, folder: str | os.PathLike) -> dict:
    """The ``params.model`` of a starter config for the pretrained model in ``folder`` (named ``reference`` in the
    config): pooling and normalisation left to the folder (``auto``: a sentence-transformers folder's own, else
    mean pooling and normalised vectors), queries cut at 64 tokens and documents at 256, or at the folder's
    ``max_seq_length`` when it is shorter, and, when the folder has prompts, its query and document prompts
    written out (:mod:`hardneg.dense.st_folder`)."""
    modules = read_folder(str(folder), where="--model")
    limit = modules.max_seq_length if modules is not None and modules.max_seq_length else None
    section = {
        "name": reference,
        "pooling": "auto",
        "normalize": "auto",
        "query_max_length": min(64, limit or 64),
        "doc_max_length": min(256, limit or 256),
    }
    if modules is not None and (modules.prompt("query") or modules.prompt("doc")):
        section |= {"query_prompt": modules.prompt("query"), "doc_prompt": modules.prompt("doc")}
    return section


def starter_config(dataset: dict, *, name: str = DEFAULT_NAME, model: str = "builtin", seed: int = 42) -> dict:
    """A config for ``dataset`` (an entry of ``datasets``, named ``name``) with the runs of the STAR/ADORE chain.

    ``model``: ``builtin`` (a small BERT trained from scratch, with a WordPiece vocabulary of the corpus),
    ``minilm`` (the packaged all-MiniLM-L6-v2, written as ``minilm``) or a local Hugging Face folder. Its results
    go to ``results/<name>`` (``results``), beside the default config's and other datasets'; the dense runs' names
    start with :func:`model_prefix`, so configs of one dataset and several models share that folder (and its
    dataset and BM25 run) without clashing. Each training run gets
    the batch :func:`batch_size_for` and the epochs :func:`epochs_for` give for the training split's rows
    (:func:`training_rows`), and, on a corpus of
    at most :data:`DEV_CURVE_MAX_DOCS` documents, :data:`DEV_EVALUATIONS` evaluations of its ``dev`` split while
    it trains (dev curves); on a corpus of at most :data:`ONE_SHARD_MAX_DOCS`, each run that encodes the corpus
    does it in one job (``encode.shards: 1``).

    :raises ConfigError: a model that is not installed or not a Hugging Face folder, or a training split too
        small to train on.
    """
    p = model_prefix(model)
    splits = _splits(dataset)
    evaluated = next((s for s in ("test", "dev") if s in splits), splits[-1])
    config: dict = {
        "seed": seed,
        "dataset": name,
        "results": f"{RESULTS}/{name}",
        "evaluation": {"split": evaluated, "measures": list(MEASURES)},
        "datasets": {name: dataset},
        "runs": {"bm25": {"method": "bm25", "params": {"k1": 0.9, "b": 0.4, "top_k": 1000}}},
    }
    runs = config["runs"]
    pretrained = model != "builtin"
    if pretrained:
        folder = model_source(model, where="--model") if model == MINILM else model
        if not (Path(folder) / "config.json").is_file():
            raise ConfigError("--model", f"{folder} is not a Hugging Face model folder (no config.json)")
        reference = MINILM if model == MINILM else _as_given(Path(model))
        model_section = pretrained_model_section(reference, folder)
        runs[f"{p}zeroshot"] = {"method": "zeroshot", "params": {"model": model_section}}
        first_train = {"epochs": 1, "batch_size": BATCH_SIZE, "learning_rate": 2e-5}
        later_train = {"epochs": 1, "batch_size": BATCH_SIZE, "learning_rate": 1e-5}
    else:
        model_section = {"name": "builtin", "query_max_length": 32, "doc_max_length": 256}
        first_train = {"epochs": 4, "batch_size": BATCH_SIZE, "learning_rate": 1e-3}
        later_train = {"epochs": 2, "batch_size": BATCH_SIZE, "learning_rate": 1e-4}
    if TRAIN in splits:
        rows = len(training_rows(dataset))
        if rows < 2:
            raise ConfigError(
                f"datasets.{name}",
                f"split {TRAIN!r} has {rows} judged quer{'y' if rows == 1 else 'ies'} "
                f"to train on (after dev_from_train); training needs at least two",
            )
        dev_curves = HELD_OUT in splits and _num_docs_up_to(dataset, DEV_CURVE_MAX_DOCS) is not None
        first_train, later_train = (
            _enough_steps({**train, "batch_size": batch_size_for(rows)}, rows, dev_curves)
            for train in (first_train, later_train)
        )
        runs[f"{p}warmup"] = {
            "method": "warmup",
            "inputs": {"negatives": "bm25"},
            "params": {"model": model_section, "train": first_train, "negatives": {"per_query": 1, "depth": 100}},
        }
        runs[f"{p}star"] = {
            "method": "star",
            "inputs": {"init": f"{p}warmup", "negatives": f"{p}warmup", "bm25": "bm25"},
            "params": {"train": copy.deepcopy(later_train), "mining": {"depth": 200}},
        }
        runs[f"{p}adore_star"] = {
            "method": "adore",
            "inputs": {"docs": f"{p}star"},
            "params": {"train": copy.deepcopy(later_train), "adore": {"top_k": 200, "cut": 200}},
        }
    if TRAIN in splits:
        fused_runs(runs, dataset, splits, p, f"{p}adore_star", evaluated)
    if _num_docs_up_to(dataset, ONE_SHARD_MAX_DOCS) is not None:
        for run in runs.values():
            if run["method"] not in ("bm25", "adore", "rrf", "hybrid"):  # ADORE encodes queries only
                run.setdefault("params", {})["encode"] = {"shards": 1}
    config["targets"] = list(runs)
    return config


def _enough_steps(train: dict, rows: int, dev_curves: bool) -> dict:
    """``train`` with the epochs :func:`epochs_for` gives ``rows`` training rows (at least its own), and
    ``dev_every`` spreading :data:`DEV_EVALUATIONS` dev evaluations over the training when ``dev_curves``."""
    epochs = epochs_for(rows, train["batch_size"], train["epochs"])
    train = {**train, "epochs": epochs}
    if dev_curves:
        _, total = optimiser_steps(rows, batch_size=train["batch_size"], grad_accumulation=1, epochs=epochs)
        train["dev_every"] = max(1, math.ceil(total / DEV_EVALUATIONS))
    return train


HEADER = """\
# A hardneg config for your own data, written by `hardneg init`. It stands alone: run it with
#   snakemake --cores all --configfile {path}
# (config/config.yaml is not read then). Everything it builds goes to {results}/ (`results`): a run's metrics are
# {results}/<run>/metrics.json, and `hardneg` commands read that folder with --results {results}.
# Every key, with its default: the schema hardneg/schema/config.schema.yaml of the installed hardneg package.
# Runs continuing another run's model (star, adore_star) inherit its `params.model`.
"""
HEADER_TRAINING = """\
# Batch and epochs: chosen for the {rows:,} training queries ({batch} a batch) so that no training run makes epochs
# of fewer than {per_epoch} optimiser steps and fewer than {total} in all, which hardly leave the learning rate's
# warm-up.
"""
HEADER_HELD_OUT = """\
# dev_from_train: {share:.0%} of the judged training queries are held out as split `dev` (never trained on), for dev
# curves, the memorisation check after training and the tuning of a hybrid run's weight.
"""


class _PlainDumper(yaml.SafeDumper):
    """YAML without anchors and aliases: a mapping used twice is written twice."""

    def ignore_aliases(self, data) -> bool:
        return True


def plain_yaml(data) -> str:
    """``data`` as block-style YAML, keys in their order, without anchors (``&id001``) or aliases (``*id001``)."""
    return yaml.dump(data, Dumper=_PlainDumper, sort_keys=False)


def check_results(config: dict) -> None:
    """Refuse a (validated) config whose ``results`` folder is the folder of a run of another config (``init
    --name star`` beside the default config's ``results/star``), or one of whose runs is already in its ``results``
    folder with another dataset: building it would mix its results into that run's, or replace that run's results
    with results of other data.

    :raises ConfigError: naming ``results``, or the run's ``runs.<run>`` key, the dataset recorded in
        ``<results>/<run>/config.yaml`` and this config's.
    """
    folder = Path(config["results"])
    if Path(Layout(str(folder.parent)).config(folder.name)).is_file():  # the folder of a run of another config
        raise ConfigError(
            "results",
            f"{folder} is the folder of run {folder.name} of another config (it holds "
            f"{Layout(str(folder.parent)).config(folder.name)}): give the dataset another "
            f"name (--name, which names the results folder)",
        )
    layout = Layout(config["results"])
    for run in config["runs"]:
        recorded_path = Path(layout.config(run))
        if not recorded_path.is_file():
            continue
        recorded = (read_resolved(recorded_path) or {}).get("dataset")
        mine = resolve_run(config, run)["dataset"]
        if not isinstance(recorded, dict) or _source(recorded) != _source(mine):
            theirs = recorded.get("name") if isinstance(recorded, dict) else None
            raise ConfigError(
                f"runs.{run}",
                f"{recorded_path.parent} holds run {run} of another dataset "
                f"({theirs!r}, read from {_where(recorded)}); this config's dataset "
                f"{mine['name']!r} is read from {_where(mine)}: give the dataset "
                f"another name (--name, which names the folder too), or remove "
                f"{recorded_path.parent}",
            )


def _source(dataset: dict) -> dict:
    """What identifies a dataset entry's data: its name, adapter and files (paths compared once resolved), not the
    settings of how it is prepared (``empty_documents``, ``dev_from_train``, ``hide_positives``)."""

    def resolved(value):
        if isinstance(value, str):
            return os.path.realpath(value)
        if isinstance(value, dict):
            return {key: resolved(item) for key, item in value.items()}
        if isinstance(value, list):
            return [resolved(item) for item in value]
        return value

    return {
        key: value if key in ("name", "adapter") else resolved(value)
        for key, value in dataset.items()
        if key not in ("empty_documents", "dev_from_train", "hide_positives")
    }


def _where(dataset) -> str:
    if not isinstance(dataset, dict):
        return "an unreadable record"
    for key in ("path", "collection", "docs", "corpus", "splits"):
        if key in dataset:
            return str(dataset[key])
    return str(dataset.get("adapter"))


def write_starter(
    config: dict, path: str | os.PathLike, *, force: bool = False, results: str | os.PathLike = "results"
) -> None:
    """Validate ``config`` and write it as plain YAML to ``path`` (atomically), with a header saying how to run it
    and why its epochs and held-out split are what they are.

    ``path`` must be a new file outside the ``results`` folder unless ``force`` is given, which replaces an
    existing file or writes inside ``results`` (:func:`hardneg.results.output_paths.check_output`: a folder, a
    symbolic link or a file that is not a regular file is refused even then). A run already in the config's
    results folder with another dataset is refused, ``force`` or not (:func:`check_results`)."""
    from hardneg.pipeline.config import validate_config  # Faiss: imported only where an index is built or searched

    path = check_output(path, folder=False, what="config", results=results, force=force)
    validated = validate_config(copy.deepcopy(config))
    check_results(validated)
    header = HEADER.format(path=path, results=validated["results"])
    dataset = config["datasets"][config["dataset"]]
    if any("train" in run.get("params", {}) for run in config["runs"].values()):
        rows = len(training_rows(dataset))
        header += HEADER_TRAINING.format(
            rows=rows, batch=batch_size_for(rows), per_epoch=MIN_STEPS_PER_EPOCH, total=MIN_TOTAL_STEPS
        )
    if "dev_from_train" in dataset:
        header += HEADER_HELD_OUT.format(share=dataset["dev_from_train"]["share"])
    header += fusion_header(config)
    write_text(path, header + plain_yaml(config))
