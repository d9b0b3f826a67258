"""Console messages of stage scripts (hardneg.io.logs.console): they reach the terminal under Snakemake as well as the
job's log; tokenization warns about texts cut at the maximum lengths, training about epochs of few optimiser
steps (and, after training, about a model that learnt its training queries by heart: tests/unit/dense/
test_memorisation.py); ``train.rows: judgement`` makes one row per (query, positive) judgement."""

import json
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from hardneg.dense.data import TrainQueries
from hardneg.dense.tokenized import (TokenizedTexts, build_cache, length_quantiles, query_truncation_warning,
                                     truncation_warning)
from hardneg.dense.tokenizer import load_tokenizer
from hardneg.dense.train_config import TrainConfig
from hardneg.io import artifacts
from hardneg.pipeline.config import validate_params
from hardneg.dense.memorisation import COLUMNS as MEMORISATION_COLUMNS
from hardneg.pipeline.train import steps_per_epoch, train_run, training_warnings
from hardneg.pipeline.train_steps import MIN_STEPS_PER_EPOCH, MIN_TOTAL_STEPS
from tests.support.dense import TINY_MODEL, build_tiny

_JOB = """
import sys
from hardneg.io.logs import console, log_to
log_to(sys.argv[1])
print("for the log only")
console("%d documents are empty", 2)
console("a second line\\nof the same message")
"""


def test_console_writes_to_the_log_and_to_the_standard_error_of_before(tmp_path):
    log = tmp_path / "logs" / "job.log"
    done = subprocess.run([sys.executable, "-c", _JOB, str(log)], capture_output=True, text=True, check=True)
    assert done.stdout == ""
    assert done.stderr == (f"hardneg warning: 2 documents are empty\n  (log: {log})\n"
                           f"hardneg warning: a second line\n  of the same message\n  (log: {log})\n")
    text = log.read_text()
    assert "for the log only" in text and "WARNING hardneg.console: 2 documents are empty" in text
    assert "a second line\nof the same message" in text


def test_console_without_a_log_file_prints_once(tmp_path):
    code = "from hardneg.io.logs import console, log_to\nlog_to(None)\nconsole('just once')\n"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stderr.count("just once") == 1


_PROGRESS_JOB = """
import logging
import sys
from hardneg.io import logs
logs.log_to(sys.argv[1])
log = logging.getLogger("hardneg.dense.trainer")
for step in range(1, 6):
    logs.progress(log, "step %d/5", step, last=step == 5)
logs.PROGRESS_SECONDS = 0.0
logs.progress(log, "one more, once the interval has passed")
"""


def test_progress_shows_the_first_line_the_last_and_one_per_interval_and_logs_every_line(tmp_path):
    log = tmp_path / "results" / "warmup" / "logs" / "train.log"
    done = subprocess.run([sys.executable, "-c", _PROGRESS_JOB, str(log)], capture_output=True, text=True, check=True)
    assert done.stderr == ("hardneg: warmup/train: step 1/5\nhardneg: warmup/train: step 5/5\n"
                           "hardneg: warmup/train: one more, once the interval has passed\n")
    logged = [line.rsplit(": ", 1)[1] for line in log.read_text().splitlines() if "INFO hardneg.dense.trainer: " in line]
    assert logged == [f"step {step}/5" for step in range(1, 6)] + ["one more, once the interval has passed"]


def test_a_jobs_label_is_its_run_and_log_name():
    from hardneg.io.logs import job_label

    assert job_label("results/warmup/logs/train.log") == "warmup/train"
    assert job_label("results/datasets/synthetic/logs/prepare_dataset.log") == "datasets/synthetic/prepare_dataset"
    assert job_label("/work/results/ance/episodes/2/logs/train_episode.log") == "ance/episodes/2/train_episode"
    assert job_label("elsewhere/job.log") == "elsewhere/job"


# ------------------------------------------------------------------------------------------------ truncation
def test_length_quantiles_among_kept_and_cut_texts():
    kept = np.array([3, 5, 4, 8, 8, 2, 7, 6])  # 8 texts within the maximum length 8
    cut = np.array([9, 12, 20, 30])  # 4 cut texts, tokenized whole
    # 12 texts: 50% is the 6th shortest (kept), 75% the 9th (the first cut one), 95% the 12th (the longest).
    assert length_quantiles(kept, cut, 4, (0.5, 0.75, 0.95)) == [7, 9, 30]  # the 6th, 9th and 12th shortest
    assert length_quantiles(kept, np.zeros(0), 0, (0.95,)) == [8]
    # A sample of the cut texts stands for all of them: 100 cut texts, a sample of 4.
    assert length_quantiles(kept, cut, 100, (0.99,)) == [30]


def test_truncation_warning_text():
    facts = {"rows": 150, "max_length": 32, "cut": 17, "fit": {"0.95": 41, "0.99": 57}}
    assert truncation_warning(facts, "'train' queries of dataset mini", "queries", "query_max_length") == (
        "17 of 150 'train' queries of dataset mini (11.3%) are longer than query_max_length 32 tokens and are cut.\n"
        "95% of the queries fit in 41 tokens, 99% in 57: set params.model.query_max_length: 57 to keep 99% of "
        "them whole.")
    assert "the model reads at most 512 tokens: params.model.doc_max_length: 512 keeps the most." in \
        truncation_warning({**facts, "fit": {"0.95": 400, "0.99": 900}}, "documents", "documents", "doc_max_length",
                           model_limit=512)
    assert truncation_warning({**facts, "cut": 1}, "q", "queries", "query_max_length") is None  # 0.7% <= 1%


def test_the_query_splits_of_a_dataset_get_one_length():
    """The query warning counts every split and proposes the one length that keeps 99% of each whole: that of
    the split with the longest queries (here dev, although train has more of them cut)."""
    facts = {"train": {"rows": 150, "max_length": 32, "cut": 17, "fit": {"0.95": 41, "0.99": 57}},
             "dev": {"rows": 50, "max_length": 32, "cut": 3, "fit": {"0.95": 30, "0.99": 90}},
             "test": {"rows": 40, "max_length": 32, "cut": 0, "fit": {"0.95": 20, "0.99": 25}}}
    assert query_truncation_warning(facts, " of dataset mini") == (
        "20 of 240 queries of dataset mini (8.3%) are longer than query_max_length 32 tokens and are cut ('train': "
        "17 of 150, 'dev': 3 of 50).\n95% of each split's queries fit in 41 tokens, 99% in 90: set "
        "params.model.query_max_length: 90 to keep 99% of every split's queries whole.")
    assert "the model reads at most 64 tokens: params.model.query_max_length: 64 keeps the most." in \
        query_truncation_warning(facts, model_limit=64)
    quiet = {split: {**f, "cut": 1 if f["cut"] else 0} for split, f in facts.items()}  # 1 of 150 and 1 of 50: 2%
    assert query_truncation_warning(quiet) is not None
    assert query_truncation_warning({"train": {**facts["train"], "cut": 1}}) is None  # 0.7% <= 1%


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return build_tiny(tmp_path_factory.mktemp("console"))


def _whole_lengths(tokenizer, texts) -> np.ndarray:
    backend = tokenizer.backend_tokenizer
    backend.no_truncation()
    return np.array([len(e.ids) for e in backend.encode_batch(texts)])


def test_tokenization_reports_cut_queries_and_documents(tiny, tmp_path, caplog):
    data = tiny["data"]
    queries = {s: data / "queries" / f"{s}.parquet" for s in ("train", "test")}
    with caplog.at_level("WARNING", logger="hardneg.console"):
        facts = build_cache(tiny["tokenizer"], data / "corpus.parquet", queries, tmp_path / "cache", doc_max_length=24,
                            query_max_length=6, dataset="tiny")
    tokenizer = load_tokenizer(tiny["tokenizer"])
    train = pq.read_table(queries["train"])["text"].to_pylist()
    whole = _whole_lengths(tokenizer, train)
    expected = facts["truncation"]["queries_train"]
    assert expected["rows"] == 120 and expected["max_length"] == 6
    assert expected["cut"] == int((whole > 6).sum()) > 0  # cut exactly when longer than the maximum
    assert expected["fit"] == {"0.95": int(np.sort(whole)[int(np.ceil(0.95 * 120)) - 1]),
                               "0.99": int(np.sort(whole)[int(np.ceil(0.99 * 120)) - 1])}
    assert json.loads((tmp_path / "cache" / "cache.json").read_text())["truncation"] == facts["truncation"]
    messages = [r.getMessage() for r in caplog.records if r.name == "hardneg.console"]
    test = facts["truncation"]["queries_test"]
    rows, cut = 120 + test["rows"], expected["cut"] + test["cut"]
    fit = {q: max(expected["fit"][q], test["fit"][q]) for q in ("0.95", "0.99")}
    # one message for the dataset's queries, one length for all of its splits
    assert (f"{cut} of {rows} queries of dataset tiny ({100 * cut / rows:.1f}%) are longer than query_max_length 6 "
            f"tokens and are cut ('train': {expected['cut']} of 120, 'test': {test['cut']} of {test['rows']}).\n95% "
            f"of each split's queries fit in {fit['0.95']} tokens, 99% in {fit['0.99']}: set "
            f"params.model.query_max_length: {fit['0.99']} to keep 99% of every split's queries whole.") in messages
    assert test["cut"] > 0 and sum("queries of dataset tiny" in m for m in messages) == 1
    assert any(m.startswith("") and "documents of dataset tiny" in m and "doc_max_length 24" in m for m in messages)
    caplog.clear()
    with caplog.at_level("WARNING", logger="hardneg.console"):
        build_cache(tiny["tokenizer"], data / "corpus.parquet", queries, tmp_path / "roomy", doc_max_length=512,
                    query_max_length=64, dataset="tiny")
    assert not [r for r in caplog.records if r.name == "hardneg.console"]  # nothing cut: nothing said
    assert TokenizedTexts(tmp_path / "roomy", "corpus").lengths.max() < 512


# ------------------------------------------------------------------------------------------------- training
def _config(**train) -> TrainConfig:
    return TrainConfig.from_params(validate_params({"train": train})["train"], 0)


def _toy_train(num_queries: int, positives_each: int = 1, per_judgement: bool = False) -> TrainQueries:
    qids = [f"q{i}" for i in range(num_queries)]
    rows = [(q, f"d{i * positives_each + k}", 1) for i, q in enumerate(qids) for k in range(positives_each)]
    qrels = pa.table({"qid": [r[0] for r in rows], "docid": [r[1] for r in rows],
                      "relevance": pa.array([r[2] for r in rows], pa.int32())})
    return TrainQueries(qrels, qids, [f"d{i}" for i in range(num_queries * positives_each)],
                        per_judgement=per_judgement)


def test_training_warnings_for_a_small_dataset():
    train, config = _toy_train(150, positives_each=2), _config(batch_size=32, epochs=3)
    assert steps_per_epoch(150, config) == 5  # 4 batches of 32 and one of 22
    messages = training_warnings({"name": "warmup"}, config, train)
    assert messages == [
        "run warmup: an epoch is 5 optimiser steps (150 training rows, one per query; batch_size 32), 15 in all over "
        "3 epochs: too few to train.\nFor more steps: more epochs (params.train.epochs), a smaller batch "
        "(params.train.batch_size) or one row per judgement (params.train.rows: judgement, 300 rows).",
    ]
    rows = _toy_train(150, positives_each=2, per_judgement=True)
    assert "(300 training rows, one per (query, positive) judgement; batch_size 32)" in \
        training_warnings({"name": "s"}, _config(batch_size=32, epochs=3), rows)[0]
    assert training_warnings({"name": "s"}, _config(batch_size=32, grad_accumulation=2), _toy_train(700)) == [
        "run s: an epoch is 11 optimiser steps (700 training rows, one per query; batch_size 32, grad_accumulation "
        "2), 33 in all over 3 epochs: too few to train.\nFor more steps: more epochs (params.train.epochs) or a "
        "smaller batch (params.train.batch_size)."]
    assert training_warnings({"name": "s"}, _config(batch_size=32, epochs=MIN_TOTAL_STEPS // 5),
                             train) == []  # 5 steps an epoch, but enough epochs
    enough = _toy_train(2_000)
    assert steps_per_epoch(len(enough), _config()) >= MIN_STEPS_PER_EPOCH
    assert training_warnings({"name": "s"}, _config(), enough) == []


def test_train_run_warns_on_the_console_and_trains_one_row_per_judgement(tiny, tmp_path, caplog):
    # The tiny qrels with a second positive (as highly graded as the first) for the first 40 training queries.
    qrels = artifacts.read_table(artifacts.QRELS, tiny["data"] / "qrels" / "train.parquet")
    top = qrels.filter(pa.compute.equal(qrels["relevance"], pa.compute.max(qrels["relevance"]))).slice(0, 40)
    corpus_ids = TokenizedTexts(tiny["cache"], "corpus").row_ids
    extra = pa.table({"qid": top["qid"], "docid": [corpus_ids[-1 - i] for i in range(40)],
                      "relevance": top["relevance"]})
    qrels_path = tmp_path / "qrels" / "train.parquet"
    artifacts.write_table(pa.concat_tables([qrels, extra.cast(qrels.schema)]), artifacts.QRELS, qrels_path)
    train = TrainQueries(artifacts.read_table(artifacts.QRELS, qrels_path),
                         TokenizedTexts(tiny["cache"], "queries_train").row_ids, corpus_ids)
    assert train.num_queries == 120 and train.num_judgements == 160
    params = validate_params({"model": {"builtin": TINY_MODEL, "doc_max_length": 64, "query_max_length": 16},
                              "train": {"epochs": 1, "batch_size": 16, "checkpoint_every": 0, "rows": "judgement"}})
    resolved = {"name": "inbatch", "method": "inbatch", "seed": 1, "params": params}
    with caplog.at_level("WARNING", logger="hardneg.console"):
        rows = train_run(resolved, cache_dir=tiny["cache"], qrels_path=qrels_path, model_dir=tmp_path / "model",
                         log_path=tmp_path / "log.parquet", checkpoint_dir=tmp_path / "ckpt",
                         tokenizer_source=tiny["tokenizer"])
    assert len(rows) == 10  # one epoch visits the 160 judgements once: 10 batches of 16 (8 with one row per query)
    messages = [r.getMessage() for r in caplog.records if r.name == "hardneg.console"]
    assert messages[0].startswith("run inbatch: an epoch is 10 optimiser steps (160 training rows, one per (query, "
                                  "positive) judgement; batch_size 16), 10 in all over 1 epoch: too few to train.")
    # the memorisation check measured the training queries at the last step (the tiny data has no dev split)
    assert all(np.isnan(rows[0][column]) for column in MEMORISATION_COLUMNS)
    assert 0 < rows[-1]["memorisation_train_rr10"] <= 1 and np.isnan(rows[-1]["memorisation_heldout_rr10"])
