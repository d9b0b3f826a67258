# Helpers shared by every stage (config slices, path builders). Functions only, no rules.
import re

from hardneg.config import DENSE_METHODS, dataset_config, model_root, pq_matrix_run, resolve_run
from hardneg.dense.tokenized import cache_key
from hardneg.index import slug as index_slug
from hardneg.datasets import dataset_input_files, dataset_splits


RESULTS = "results"
DATASETS = config["datasets"]
RUNS = config["runs"]
EVAL_SPLIT = config["evaluation"]["split"]


def names_regex(names):
    """A wildcard constraint matching exactly these names (and nothing when there are none)."""
    return "|".join(re.escape(n) for n in names) or "(?!)"


def runs_with_method(*methods):
    return [name for name, run in RUNS.items() if run["method"] in methods]


def run_dataset(run):
    return RUNS[run].get("dataset", config["dataset"])


def dataset_dir(dataset):
    return f"{RESULTS}/datasets/{dataset}"


def run_dataset_dir(wildcards):
    return dataset_dir(run_dataset(wildcards.run))


def run_splits(run):
    return dataset_splits(DATASETS[run_dataset(run)])


def run_files(wildcards):
    """The run's ranking of every split of its dataset."""
    return [f"{RESULTS}/{wildcards.run}/runs/{split}.parquet" for split in run_splits(wildcards.run)]


def run_params(run, *keys):
    """The named keys of a run's ``params`` (so a rule re-runs only when those change)."""
    params = RUNS[run].get("params", {})
    return {key: params[key] for key in keys}



# ---------------------------------------------------------------------------------------------- dense runs
DENSE_RUNS = runs_with_method(*DENSE_METHODS)


def dense_params(run):
    return RUNS[run]["params"]


def root_model_params(run):
    """The ``model`` section that defines this run's architecture and tokenizer (follows ``inputs.init``)."""
    return RUNS[model_root(config, run)]["params"]["model"]


def tokenizer_source(run):
    model = root_model_params(run)
    if model["name"] == "builtin":
        return f"{dataset_dir(run_dataset(run))}/tokenizers/wordpiece-{model['vocab_size']}"
    return model["name"]


def run_cache_key(run):
    model = root_model_params(run)
    return cache_key(tokenizer_source(run), model["doc_max_length"], model["query_max_length"])


def run_cache_dir(wildcards):
    return f"{dataset_dir(run_dataset(wildcards.run))}/tokenized/{run_cache_key(wildcards.run)}"


# Every tokenized cache some run needs: (dataset, key) -> how to build it.
CACHES = {
    (run_dataset(run), run_cache_key(run)): {
        "tokenizer": tokenizer_source(run),
        "doc_max_length": root_model_params(run)["doc_max_length"],
        "query_max_length": root_model_params(run)["query_max_length"],
        "splits": run_splits(run),
    }
    for run in DENSE_RUNS
}


def run_input(run, role):
    return RUNS[run].get("inputs", {}).get(role)


def doc_run(run):
    """The run whose document embeddings and indexes ``run`` searches: its ``docs`` input (ADORE), else itself."""
    return run_input(run, "docs") or run


ENCODED_RUNS = [run for run in DENSE_RUNS if doc_run(run) == run]


def adore_train_factory(run):
    params = dense_params(run)
    return params["adore"]["index"] or params["index"]["factory"]


def index_factories(run):
    """slug -> factory of every index built over a run's embeddings: its own, and those of the ADORE runs
    that keep its documents fixed (their training and evaluation indexes)."""
    factories = [dense_params(run)["index"]["factory"]]
    for other in DENSE_RUNS:
        if other != run and doc_run(other) == run:
            factories += [dense_params(other)["index"]["factory"], adore_train_factory(other)]
    return {index_slug(f): f for f in factories}


def run_index(run, factory=None):
    factory = factory or dense_params(run)["index"]["factory"]
    return f"{RESULTS}/{doc_run(run)}/index/{index_slug(factory)}.faiss"


def adore_inputs(wildcards):
    """The fixed document side of an ADORE run: embeddings and the index searched during training."""
    run = wildcards.run
    if RUNS[run]["method"] != "adore":
        return {}
    return {"doc_embeddings": f"{RESULTS}/{doc_run(run)}/embeddings/corpus.npy",
            "train_index": run_index(run, adore_train_factory(run))}


def train_negatives(wildcards):
    """The ranked negatives a training run samples from: a run's train ranking (warmup) or the mined list (star)."""
    run, method = wildcards.run, RUNS[wildcards.run]["method"]
    split = dense_params(run)["train"]["split"]
    if method == "warmup":
        return [f"{RESULTS}/{run_input(run, 'negatives')}/runs/{split}.parquet"]
    if method == "star":
        return [f"{RESULTS}/{run}/hardnegs.parquet"]
    return []


def init_model(wildcards):
    init = run_input(wildcards.run, "init") or run_input(wildcards.run, "docs")
    return [f"{RESULTS}/{init}/model"] if init else []


def builtin_tokenizer(wildcards):
    source = CACHES[(wildcards.dataset, wildcards.cache)]["tokenizer"]
    return [source] if source.startswith(f"{RESULTS}/") else []


def run_reports(wildcards):
    """Reports a run makes beside its metrics (the hard-negative audit of a mining run)."""
    if wildcards.run in RUNS and RUNS[wildcards.run]["method"] == "star":
        return [f"{RESULTS}/{wildcards.run}/hardnegs_audit.md"]
    return []


def training_slice(run):
    """What training depends on in the config (changing search or index settings does not retrain)."""
    params = dense_params(run)
    return {
        "name": run,
        "method": RUNS[run]["method"],
        "seed": RUNS[run].get("seed", config["seed"]),
        "dataset": run_dataset(run),
        "inputs": dict(RUNS[run].get("inputs", {})),
        # ADORE also depends on its training index (and so on the index settings); other methods do not.
        "params": {key: params[key] for key in ("model", "train", "negatives")
                   + (("adore", "index") if RUNS[run]["method"] == "adore" else ())},
    }


def run_embeddings(wildcards):
    """Query embeddings of the evaluation split and the corpus embeddings a dense run searched (for exact
    whole-corpus pairwise errors); nothing for other runs."""
    run = wildcards.run
    if run not in DENSE_RUNS:
        return {}
    docs = doc_run(run)
    return {"query_npy": f"{RESULTS}/{run}/embeddings/queries_{EVAL_SPLIT}.npy",
            "query_ids": f"{RESULTS}/{run}/embeddings/queries_{EVAL_SPLIT}.ids.parquet",
            "doc_npy": f"{RESULTS}/{docs}/embeddings/corpus.npy",
            "doc_ids": f"{RESULTS}/{docs}/embeddings/corpus.ids.parquet"}
