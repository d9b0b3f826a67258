"""A rough estimate of what a config costs before anything runs: each run's heavy jobs and their time on this
machine, from the collection's size and an encoding rate measured here (``hardneg init`` prints it,
``hardneg check-config`` repeats it).

The rate: the run's model (``params.model``: the built-in BERT of its settings, or the pre-trained folder) encodes
two batches of random token ids at the collection's mean document length (from a sample of its documents,
words × 1.3, capped at ``doc_max_length``), forward only; a query costs the same per token. The rest is
arithmetic on it:

* encoding the corpus: documents ÷ rate;
* a training step: its batch's texts (a query, its positive and ``negatives.per_query`` negatives per row; an ADORE
  step encodes its queries only) at three times a forward pass's cost (forward and backward), each step;
* a dev evaluation: the dev candidates' documents (at most 2 × ``dev_depth`` a dev query, at most the corpus) or
  the corpus (``dev_search: corpus``), each evaluation; the memorisation check once;
* every job: :data:`JOB_OVERHEAD` seconds to start Python and load what it needs.

BM25, searches, mining and evaluation are counted as jobs only: on a collection a laptop trains on they take
seconds. The estimate is rough: it counts one job at a time (jobs that run at once take less), a run trained in
episodes as one training (its episodes' encodings aside), and a machine busy with other work measures a lower rate.
"""

from __future__ import annotations

import json
import math
import os
import time
from dataclasses import dataclass
from pathlib import Path

from hardneg import methods
from hardneg.dense.pretrained import PACKAGED
from hardneg.errors import HardnegError
from hardneg.io.atomic import write_text
from hardneg.pipeline.starter_fusion import judged_queries
from hardneg.pipeline.train_steps import optimiser_steps

JOB_OVERHEAD = 10.0  # seconds a job spends starting Python and loading its model and data
BACKWARD = 3.0  # a training step's cost per text, in forward passes (forward + backward)
WORDS_TO_TOKENS = 1.3
SAMPLE_DOCS = 500  # documents read for the mean length
RATE_TEXTS = 32  # texts encoded to measure a rate


@dataclass(frozen=True)
class RunEstimate:
    """One run's heavy jobs, in words, and their seconds on this machine."""

    run: str
    jobs: list
    seconds: float


def mean_document_words(dataset: dict, sample: int = SAMPLE_DOCS) -> float | None:
    """The mean number of words of the first ``sample`` documents of a BEIR, MS MARCO or TREC dataset's corpus
    file (JSONL: title and text; TSV: the fields after the id); None for another adapter."""
    path = (
        dataset.get("path")
        and Path(dataset["path"]) / "corpus.jsonl"
        or dataset.get("collection")
        or dataset.get("corpus")
    )
    if not path or not os.path.isfile(path):
        return None
    counts: list[int] = []
    with open(path, encoding="utf-8", errors="replace") as handle:
        for line in handle:
            if len(counts) >= sample:
                break
            if not line.strip():
                continue
            if str(path).endswith(".jsonl"):
                record = json.loads(line)
                text = f"{record.get('title', '')} {record.get('text', record.get('contents', ''))}"
            else:
                text = " ".join(line.rstrip("\n").split("\t")[1:])
            counts.append(len(text.split()))
    return sum(counts) / len(counts) if counts else None


def cache_path() -> Path:
    """Where measured encoding rates are kept between commands: ``$HARDNEG_CACHE``, else
    ``$XDG_CACHE_HOME/hardneg``, else ``~/.cache/hardneg``; the file ``encoding_rates.json``."""
    root = os.environ.get("HARDNEG_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "hardneg"
    )
    return Path(root) / "encoding_rates.json"


def encoding_rate(model_section: dict, length: int, *, texts: int = RATE_TEXTS, batch: int = 16) -> float:
    """Texts a second the model of ``model_section`` (a validated ``params.model``) encodes on this machine at
    ``length`` tokens (random token ids, forward only, no gradient). Measured once per model, length and number of
    CPUs, and kept in :func:`cache_path` (a cache: deleting it only costs a new measurement), so that later
    commands need not load the model."""
    key = json.dumps({"model": model_section, "length": length, "cpus": os.cpu_count()}, sort_keys=True)
    path = cache_path()
    try:
        rates = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(rates, dict):
            rates = {}
    except (OSError, ValueError):
        rates = {}
    if isinstance(rates.get(key), (int, float)) and rates[key] > 0:
        return float(rates[key])
    rates[key] = _measure_rate(model_section, length, texts, batch)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_text(path, json.dumps(rates, indent=1, sort_keys=True) + "\n")
    except OSError:  # a cache that cannot be written: measured again next time
        pass
    return rates[key]


def _measure_rate(model_section: dict, length: int, texts: int, batch: int) -> float:
    # torch: imported only where it is used
    import torch

    # torch: imported only where it is used
    from hardneg.dense.backbone import ModelSpec
    from hardneg.dense.model import BiEncoder

    spec = ModelSpec.from_params({**model_section, "markers": False})
    model = BiEncoder.create(spec, vocab_size=spec.vocab_size, pad_token_id=0, max_length=max(length, 8), seed=0).eval()
    vocab = next(m for m in model.modules() if isinstance(m, torch.nn.Embedding)).num_embeddings  # the folder's
    ids = torch.randint(min(1000, vocab - 1), vocab, (batch, length))
    mask = torch.ones_like(ids)
    with torch.inference_mode():
        model.encode(ids, mask, "doc")  # the first pass allocates: not timed
        started = time.perf_counter()
        for _ in range(max(1, texts // batch)):
            model.encode(ids, mask, "doc")
        elapsed = time.perf_counter() - started
    return max(1, texts // batch) * batch / max(elapsed, 1e-9)


def estimate(config: dict, plan, *, rate=encoding_rate) -> list[RunEstimate]:
    """Each run's heavy jobs and seconds (:class:`RunEstimate`) for a validated ``config`` and its ``plan``
    (:class:`hardneg.pipeline.plan.Plan`). ``rate``: how texts a second are measured (see :func:`encoding_rate`)."""
    rates: dict = {}
    estimates = []
    for name in target_runs(config):
        method = plan.method(name)
        dataset = plan.datasets[plan.dataset(name)]
        docs = _num_docs(plan, name)
        params = plan.params(name)
        jobs, seconds = [], 0.0
        if method.kind == methods.DENSE and "model" in params:
            section = params["model"]
            words = mean_document_words(dataset)  # None: not known before the dataset is prepared
            doc_length = (
                section["doc_max_length"]
                if words is None
                else min(section["doc_max_length"], math.ceil(words * WORDS_TO_TOKENS))
            )
            if not _on_this_machine(section["name"]):
                estimates.append(
                    RunEstimate(
                        name,
                        [
                            f"no estimate: model {section['name']} is not on this machine "
                            f"(it is downloaded when the run starts)"
                        ],
                        0.0,
                    )
                )
                continue
            key = json.dumps(section, sort_keys=True)
            if key not in rates:
                rates[key] = rate(section, doc_length)
            # a query costs what a document does per token (attention's quadratic part is small at these lengths)
            doc_rate, query_rate = rates[key], rates[key] * doc_length / section["query_max_length"]
            encodes = plan.doc_run(name) == name and docs is not None
            if encodes:
                jobs.append(f"encode {docs:,} documents")
                seconds += docs / doc_rate
            if method.trains and params.get("train", {}).get("epochs", 1):
                seconds += _training(plan, name, params, method, docs, doc_rate, query_rate, jobs)
        seconds += JOB_OVERHEAD * _job_count(plan, name, method)
        estimates.append(RunEstimate(name, jobs, seconds))
    return estimates


def _on_this_machine(name: str) -> bool:
    """Whether the model named ``name`` loads without a download: the built-in one, a packaged one, a folder."""

    return name == "builtin" or name in PACKAGED or os.path.isdir(name)


def target_runs(config: dict) -> list[str]:
    """The runs a plain ``snakemake`` builds: the runs ``targets`` names (every run when it is null) and every run
    they read, in the config's order."""
    targets = config.get("targets")
    wanted, stack = set(), [t for t in (list(config["runs"]) if targets is None else targets) if t in config["runs"]]
    while stack:
        name = stack.pop()
        if name in wanted or name not in config["runs"]:
            continue
        wanted.add(name)
        for value in config["runs"][name].get("inputs", {}).values():
            stack.extend(value if isinstance(value, list) else [value] if isinstance(value, str) else [])
    return [name for name in config["runs"] if name in wanted]


def _num_docs(plan, run: str) -> int | None:
    # the config's schema (jsonschema): only for a starter config
    from hardneg.pipeline.starter import count_documents

    return count_documents(plan.datasets[plan.dataset(run)])


def _training(plan, name, params, method, docs, doc_rate, query_rate, jobs) -> float:
    train = params["train"]
    rows = _training_rows(plan, name)
    if rows is None:
        return 0.0
    _, steps = optimiser_steps(
        rows, batch_size=train["batch_size"], grad_accumulation=train["grad_accumulation"], epochs=train["epochs"]
    )
    episodes = method.episodes(params) if method.episodes is not None else None
    if episodes is not None:
        steps = episodes.total_steps
    batch = train["batch_size"] * train["grad_accumulation"]
    per_query = params.get("negatives", {}).get("per_query", 1)
    fixed_documents = plan.doc_run(name) != name  # ADORE: its documents are another run's embeddings
    texts = batch / query_rate + (0 if fixed_documents else batch * (1 + per_query) / doc_rate)
    seconds = steps * BACKWARD * texts
    words = f"train {steps:,} optimiser steps"
    if train.get("dev_every"):
        every = train["dev_every"]
        evaluations = train["epochs"] if every == "epoch" else math.ceil(steps / every)
        dev_queries = _judged(plan, name, train["dev_split"]) or 0
        if fixed_documents:
            dev_docs = 0
        elif train.get("dev_search") == "corpus":
            dev_docs = docs or 0
        else:
            dev_docs = min(docs or 0, dev_queries * 2 * train["dev_depth"])
        seconds += evaluations * (dev_docs / doc_rate + dev_queries / query_rate)
        words += f" ({evaluations} dev evaluations of {dev_queries:,} queries, {dev_docs:,} documents each)"
    jobs.insert(0, words)
    return seconds


def _training_rows(plan, run: str) -> int | None:
    # the config's schema (jsonschema): only for a starter config
    from hardneg.pipeline.starter import training_rows

    dataset = plan.datasets[plan.dataset(run)]
    if dataset["adapter"] == "synthetic":
        return dataset.get("num_queries", {}).get(plan.train_split(run))
    try:
        return len(training_rows(dataset))
    except (KeyError, OSError, HardnegError):  # files not there (yet): no estimate of the training
        return None


def _judged(plan, run: str, split: str) -> int | None:

    return judged_queries(plan.datasets[plan.dataset(run)], split)


def _job_count(plan, run: str, method) -> int:
    """The run's jobs, roughly: its config, evaluation, and for a dense run training, encoding, index, searches."""
    if method.kind == methods.DENSE:
        return 2 + int(method.trains) + 2 + len(plan.splits(run))
    return 2 + len(plan.splits(run))


def describe(estimates: list[RunEstimate]) -> list[str]:
    """Lines for the console: a run a line with its heavy jobs and minutes, then the total."""
    lines = []
    for item in estimates:
        what = "; ".join(item.jobs) if item.jobs else "light jobs only"
        lines.append(f"  {item.run}: {what}: ~{_minutes(item.seconds)}")
    total = sum(item.seconds for item in estimates)
    lines.append(
        f"  in all: ~{_minutes(total)} on this machine (a rough estimate from its measured encoding rate; "
        f"jobs that can run at once, with --cores, take less)"
    )
    return lines


def _minutes(seconds: float) -> str:
    return f"{seconds / 3600:.1f} h" if seconds >= 5400 else f"{max(1, round(seconds / 60))} min"
