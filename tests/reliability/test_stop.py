"""Clean stops through the real entry point: SIGTERM or SIGINT sent to Snakemake while a training job runs ends
that job after its current step with a checkpoint saved, leaves no model, log or temporary file behind, and a
re-run resumes from the checkpoint and completes."""

import json
import signal
import subprocess
import time

import pytest

from tests.support.workflow import command, snakemake, write_config

pytestmark = pytest.mark.slow

CONFIG = {
    "seed": 5,
    "dataset": "tiny",
    "datasets": {"tiny": {"adapter": "synthetic", "num_docs": 200, "docs_per_cluster": 20, "concept_vocab": 100,
                          "num_queries": {"train": 64, "test": 10}}},
    "targets": ["warmup"],
    "runs": {
        "bm25": {"method": "bm25", "params": {"top_k": 50}},
        "warmup": {"method": "warmup", "inputs": {"negatives": "bm25"}, "params": {
            "model": {"vocab_size": 2000, "doc_max_length": 32, "query_max_length": 16,
                      "builtin": {"hidden_size": 16, "num_hidden_layers": 1, "num_attention_heads": 2,
                                  "intermediate_size": 32}},
            # 320 steps, several seconds of training even on an idle machine: far more than it takes to see a
            # checkpoint and send the signal (the stops come near steps 10 and 16), so the stop comes in the
            # middle however the test is scheduled
            "train": {"epochs": 20, "batch_size": 4, "learning_rate": 0.001, "checkpoint_every": 5},
            "negatives": {"depth": 50},
        }},
    },
}


TOTAL = 20 * 64 // 4  # optimiser steps: epochs x training queries / batch size


def start(workdir):
    return subprocess.Popen(command(workdir), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def wait_for_checkpoint(workdir, process, after_step=0, timeout=300.0):
    """Wait until training has saved a checkpoint past ``after_step``; return the checkpoint folder."""
    checkpoints = workdir / "results" / "warmup" / "checkpoints"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if json.loads((checkpoints / "state.json").read_text())["step"] > after_step:
                return checkpoints
        except (OSError, ValueError, KeyError):
            pass
        assert process.poll() is None, process.stdout.read()[-3000:]
        time.sleep(0.2)
    raise AssertionError("no checkpoint appeared")


def stop_training(workdir, signum, after_step=0) -> int:
    """Start the workflow, send ``signum`` to Snakemake once training has saved a checkpoint; return the step of
    the checkpoint the stop left."""
    process = start(workdir)
    checkpoints = wait_for_checkpoint(workdir, process, after_step)
    time.sleep(0.2)  # the signal lands within a step, not at the checkpoint
    process.send_signal(signum)
    output, _ = process.communicate(timeout=120)
    assert process.returncode != 0, output[-3000:]
    run = workdir / "results" / "warmup"
    assert (checkpoints / "state.json").is_file(), f"no checkpoint after the stop (training ended first?)\n{output[-3000:]}"
    state = json.loads((checkpoints / "state.json").read_text())
    assert state["step"] < TOTAL, "training ended before the stop: nothing was tested"
    assert not (run / "model").exists() and not (run / "train_log.parquet").exists()
    assert not list((workdir / "results").rglob("*.tmp")), list((workdir / "results").rglob("*.tmp"))
    return state["step"]


def test_stop_signals_end_training_with_a_checkpoint_and_a_rerun_resumes(tmp_path):
    """SIGTERM stops the first attempt, SIGINT the second (which resumed from the first's checkpoint), and a
    third attempt resumes and completes."""
    write_config(tmp_path, CONFIG)
    first = stop_training(tmp_path, signal.SIGTERM)
    second = stop_training(tmp_path, signal.SIGINT, after_step=first)
    assert second > first
    log = (tmp_path / "results" / "warmup" / "logs" / "train.log").read_text()
    assert f"resuming from step {first} of {TOTAL}" in log and "stopping after the current step" in log, log[-3000:]
    rerun = snakemake(tmp_path)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    run = tmp_path / "results" / "warmup"
    assert f"resuming from step {second} of {TOTAL}" in (run / "logs" / "train.log").read_text()
    assert (run / "model").is_dir() and (run / "train_log.parquet").is_file()
    assert not (run / "checkpoints" / "state.json").exists()
