"""What a user sees on the terminal while the workflow runs: one message per job naming its run (split, shard)
and its log, a long job's progress (training steps, encoded documents), each line naming its run and job, and no
empty shell commands of script rules. (A terminal gets a progress bar instead: tests/unit/io/test_logs.py.)"""

import re

import pytest

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def terminal(builds):
    """What Snakemake printed while it built the session's tiny chain from nothing (tests/support/builds.py), two
    jobs at a time: each line whole, whichever job wrote it."""
    return builds.star_chain_output()


def test_each_job_is_one_message_naming_its_run_and_log(terminal):
    jobs = re.findall(r"^Job \d+: (.*)$", terminal, re.M)
    assert "train run warmup (log: results/warmup/logs/train.log)" in jobs, terminal[-3000:]
    assert "encode corpus shard 0 with the model of run warmup " \
           "(log: results/warmup/logs/encode_corpus_shard_0.log)" in jobs
    assert "BM25 search of split train, run bm25 (log: results/bm25/logs/bm25_search_train.log)" in jobs
    assert "evaluate run star (log: results/star/logs/evaluate.log)" in jobs
    assert not re.search(r"^rule (?!all)", terminal, re.M)  # no job shows Snakemake's block of inputs instead


def test_training_shows_its_first_and_last_step_under_its_run(terminal):
    steps = re.findall(r"^hardneg: warmup/train: step (\d+)/(\d+) epoch \d+ loss [\d.]+ .*left\)$", terminal, re.M)
    assert len(steps) >= 2, terminal[-3000:]
    assert steps[0][0] == "1" and steps[-1][0] == steps[-1][1]  # the first step and the last


def test_encoding_shows_each_shard_done(terminal):
    shards = re.findall(r"^hardneg: warmup/encode_corpus_shard_(\d+): shard (\d+) of (\d+): documents \d+ to \d+ "
                        r"encoded$", terminal, re.M)
    count = int(shards[0][2]) if shards else 0
    assert count >= 2 and sorted((int(job), int(shard)) for job, shard, _ in shards) == \
        [(n, n + 1) for n in range(count)], terminal[-3000:]


def test_no_empty_shell_command_is_printed(terminal):
    assert "Shell command: None" not in terminal and "Shell command" not in terminal


def test_searches_show_when_they_are_done(terminal):
    assert re.search(r"^hardneg: bm25/bm25_search_train: BM25: (\d+) / \1 queries", terminal, re.M), terminal[-3000:]
    assert re.search(r"^hardneg: star/dense_search_test: searched \d+ queries: \d+ ranked documents written$",
                     terminal, re.M), terminal[-3000:]
