"""Crashes and concurrent invocations through the real entry point: ``snakemake`` on a tiny STAR chain.

Every stage kind is killed with SIGKILL at a known point (its process paused just before, or after, renaming an
output into place: see ``faults/sitecustomize.py``), and Snakemake itself is killed once; after each kill the
chain is run again. The finished artifacts must be byte-identical to those of an uninterrupted run, with no
``.*.tmp`` temporary left under ``results/``. That uninterrupted run is the session's build of the chain, made
from nothing in another folder at another time (tests/support/builds.py): completed to ADORE, the killed chain
gives the same bytes in every artifact of every kind, so the two builds also show that the same config and seed
give the same artifacts. A second Snakemake started on a working directory in use is refused by Snakemake's lock
while the first run completes.
"""

from __future__ import annotations

import os
import re
import signal
import time
from pathlib import Path

import pytest

from tests.support.builds import copy_build
from tests.support.configs import STAR_CONFIG as CONFIG
from tests.support.configs import STAR_TARGETS
from tests.support.reliability import PausedRun, digests, temporaries
from tests.support.workflow import output_of, snakemake, write_config

FINAL = "results/star/metrics.json"
LOCKED = "Directory cannot be locked"

# Each kill: (rule run to with --until, text of the path whose rename pauses the job, pause after the rename).
# In DAG order, so every kill finds its stage still to do; the job killed last is run again by the next kill's run.
KILLS = [
    ("prepare_dataset", "datasets/tiny/corpus.parquet", False),  # queries/ and qrels/ are in place already
    ("bm25_index", "bm25/bm25_index", False),
    ("bm25_search", "bm25/rankings/train.trec", False),  # the Parquet ranking is in place already
    ("train_tokenizer", "tokenizers/wordpiece-", False),
    ("tokenize", "/tokenized/", False),
    ("near_duplicates", "datasets/tiny/duplicates.parquet", False),
    ("train_dense", "warmup/checkpoints/state.json", True),  # just after the first checkpoint
    ("encode_corpus_shard", "warmup/embeddings/shards/0.ids.parquet", False),
    ("gather_embeddings", "warmup/embeddings/corpus.ids.parquet", False),
    ("build_faiss_index", "warmup/index/Flat.faiss", False),
    ("dense_search", "warmup/rankings/train.trec", False),
    ("positive_scores", "warmup/pools/positives_train.parquet", False),
    ("candidate_pool", "warmup/pools/train_top30_bm25-bm25.parquet", False),
    ("select_hard_negatives", "star/hardnegs.parquet", False),  # before the selection's JSON is written
    ("audit_hard_negatives", "star/hardnegs_audit.md", False),  # the audit's Parquet table is in place already
    ("train_dense", "star/model", False),  # just before the trained model takes its place
    ("encode_corpus_shard", "star/embeddings/shards/1.ids.parquet", False),  # Snakemake itself is killed here
    ("gather_embeddings", "star/embeddings/corpus.ids.parquet", False),
    ("build_faiss_index", "star/index/Flat.faiss", False),
    ("dense_search", "star/rankings/test.trec", False),
    ("run_config", "star/config.yaml", False),
    ("evaluate", "star/metrics.json", False),  # per_query.parquet is in place already
]
KILL_SNAKEMAKE_AT = "star/embeddings/shards/1.ids.parquet"
KEPT_LOGS = {f"{folder}/logs/attempts/{name}.1.log" for folder, names in {
    "datasets/tiny": ["prepare_dataset", "train_tokenizer_2000", "tokenize", "near_duplicates"],
    "bm25": ["bm25_index", "bm25_search_train"],
    "warmup": ["train", "encode_corpus_shard_0", "gather_embeddings", "build_faiss_index_Flat", "dense_search_train",
               "positive_scores_train", "candidate_pool_train_top30_bm25-bm25"],
    "star": ["select_hard_negatives", "audit_hard_negatives", "train", "gather_embeddings",
             "build_faiss_index_Flat", "dense_search_test", "run_config", "evaluate"],
}.items() for name in names}  # the job orphaned by killing Snakemake finished: it keeps no attempt log


def _group_alive(pgid: int) -> bool:
    """Whether a live (not zombie) process of process group ``pgid`` remains."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        if int(fields[2]) == pgid and fields[0] != "Z":
            return True
    return False


def _wait_for_group(pgid: int, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while _group_alive(pgid):
        if time.monotonic() > deadline:
            os.killpg(pgid, signal.SIGKILL)
            raise AssertionError(f"processes of group {pgid} still alive after {timeout} s")
        time.sleep(0.1)


@pytest.fixture(scope="module")
def reference(builds):
    """The session's uninterrupted run of the chain (tests/support/builds.py), with the digests of what the kills
    rebuild: the chain's artifacts up to STAR (it goes on to ADORE for the other tests that share it)."""
    workdir = builds.star_chain()
    return {"workdir": workdir, "digests": chain_digests(workdir / "results")}


def chain_digests(results: Path) -> dict[str, str]:
    """The digests (tests/support/reliability.py) of the artifacts of the chain up to STAR, ADORE's left out."""
    return {path: digest for path, digest in digests(results).items() if not path.startswith("adore_star/")}


@pytest.mark.slow
def test_a_second_invocation_is_refused_by_the_lock_and_the_first_completes(reference, tmp_path):
    """While a run's job is in progress (the evaluation, run again and paused before its rename), a second
    Snakemake on the same directory is refused; the first completes."""
    workdir = copy_build(reference["workdir"], tmp_path / "work")
    again = [FINAL, "--forcerun", "evaluate"]
    with PausedRun(workdir, again, pause_at="star/metrics.json") as first:
        first.wait_for_pause()  # a job is running: the directory is locked
        second = snakemake(workdir, *again)  # with a job to run (with none, Snakemake takes no lock)
        first.resume_job()
        code, out = first.finish()
    assert code == 0, out[-4000:]
    assert second.returncode != 0
    assert LOCKED in output_of(second) and "--unlock" in output_of(second), output_of(second)[-3000:]
    assert (workdir / FINAL).exists() and temporaries(workdir / "results") == []


def _kill_job(workdir: Path, until: str, pause_at: str, after: bool) -> None:
    with PausedRun(workdir, [FINAL, "--until", until], pause_at=pause_at, after=after) as run:
        run.wait_for_pause()
        run.kill_job()
        code, out = run.finish()
    assert code != 0, out[-3000:]
    assert "died with <Signals.SIGKILL: 9>" in out, out[-3000:]


def _kill_snakemake(workdir: Path, until: str, pause_at: str) -> None:
    """Kill Snakemake (only) while a job is paused; the orphaned jobs finish on their own a moment later, and
    the next run must be told that Snakemake's lock is stale (``--unlock``)."""
    with PausedRun(workdir, [FINAL, "--until", until], pause_at=pause_at, seconds=2) as run:
        run.wait_for_pause()
        run.kill_snakemake()
        run.process.wait()
        _wait_for_group(run.process.pid)
    locked = snakemake(workdir, FINAL)
    assert locked.returncode != 0 and LOCKED in output_of(locked), output_of(locked)[-3000:]
    unlock = snakemake(workdir, FINAL, "--unlock")
    assert unlock.returncode == 0, output_of(unlock)[-3000:]


@pytest.mark.slow
def test_every_stage_killed_then_run_again_gives_the_uninterrupted_artifacts(reference, tmp_path):
    workdir = tmp_path / "work"
    write_config(workdir, CONFIG)
    results = workdir / "results"
    for until, pause_at, after in KILLS:
        if pause_at == KILL_SNAKEMAKE_AT:
            _kill_snakemake(workdir, until, pause_at)
        else:
            _kill_job(workdir, until, pause_at, after)
    complete = snakemake(workdir, FINAL)
    assert complete.returncode == 0, output_of(complete)[-4000:]

    assert temporaries(results) == []
    assert not (results / "warmup" / "checkpoints" / "state.json").exists()
    got, want = chain_digests(results), reference["digests"]
    assert sorted(got) == sorted(want)
    assert [path for path in want if got[path] != want[path]] == []
    again = snakemake(workdir, FINAL)
    assert again.returncode == 0 and "Nothing to be done" in output_of(again)

    # The log of every killed attempt is kept; the training attempt that resumed has its own.
    kept = {re.sub(r"tokenize_.*\.1\.log$", "tokenize.1.log", str(p.relative_to(results)))
            for p in results.rglob("logs/attempts/*.log")}
    assert kept == KEPT_LOGS
    logs = results / "warmup" / "logs"
    killed, resumed = (logs / "attempts" / "train.1.log").read_text(), (logs / "train.log").read_text()
    assert "step 2/4" in killed and "step 3/4" not in killed and "resuming" not in killed
    assert "resuming from step 2 of 4" in resumed and "step 4/4" in resumed

    # The chain completed to ADORE: two builds from nothing, in two folders at two times (one of them killed at
    # every stage), give the same bytes in every artifact.
    rest = snakemake(workdir, *STAR_TARGETS, timeout=900)
    assert rest.returncode == 0, output_of(rest)[-4000:]
    got, want = digests(results), digests(reference["workdir"] / "results")
    assert sorted(got) == sorted(want)
    assert [path for path in want if got[path] != want[path]] == []
    # what the comparison covered: every kind of artifact of the chain
    for path in ("datasets/tiny/corpus.parquet", "datasets/tiny/tokenizers/wordpiece-2000/tokenizer.json",
                 "bm25/rankings/train.parquet", "warmup/model/model.safetensors", "warmup/train_log.parquet",
                 "warmup/embeddings/corpus.npy", "star/hardnegs.parquet", "star/model/model.safetensors",
                 "star/index/Flat.faiss", "adore_star/model/model.safetensors", "adore_star/train_log.parquet",
                 "adore_star/rankings/test.parquet", "adore_star/metrics.json"):
        assert path in want, path
    assert any(path.startswith("datasets/tiny/tokenized/") and path.endswith(".npy") for path in want)


@pytest.mark.slow
def test_a_killed_re_mining_keeps_the_mined_list(reference, tmp_path):
    """``snakemake -R select_hard_negatives`` killed during the selection: the previous list stays (Snakemake would
    otherwise have deleted it, and a later run, its metrics up to date, would never make it again)."""
    workdir = copy_build(reference["workdir"], tmp_path / "work")
    results = workdir / "results"
    rerun = [FINAL, "-R", "select_hard_negatives", "--until", "select_hard_negatives"]
    with PausedRun(workdir, rerun, pause_at="star/hardnegs.parquet") as run:
        run.wait_for_pause()
        run.kill_job()
        code, out = run.finish()
    assert code != 0 and "Restored previous version of results/star/hardnegs.parquet" in out, out[-3000:]
    assert "removed results/star/.hardnegs.parquet." in out  # the killed job's temporary, after the run failed
    assert temporaries(results) == [] and chain_digests(results) == reference["digests"]
    later = snakemake(workdir, FINAL)
    assert later.returncode == 0 and "Nothing to be done" in output_of(later)

    again = snakemake(workdir, *rerun)  # the interrupted command, run again to the end
    assert again.returncode == 0, output_of(again)[-4000:]
    assert temporaries(results) == [] and chain_digests(results) == reference["digests"]


# Each forced re-run killed: (rule run again with -R and --until, text of the path whose rename pauses its job). In
# each, some of the job's outputs are already in place when it is killed (written again, or about to be).
FORCED = [
    ("prepare_dataset", "datasets/tiny/stats.json"),
    ("bm25_index", "bm25/bm25_index"),
    ("bm25_search", "bm25/rankings/train.trec"),
    ("train_tokenizer", "tokenizers/wordpiece-"),
    ("tokenize", "/tokenized/"),
    ("train_dense", "warmup/train_log.parquet"),  # the model is in place already
    ("gather_embeddings", "warmup/embeddings/corpus.ids.parquet"),
    ("build_faiss_index", "warmup/index/Flat.faiss"),
    ("dense_search", "warmup/rankings/train.trec"),
    ("run_config", "star/config.yaml"),
    ("evaluate", "star/metrics.json"),
]


@pytest.mark.slow
def test_a_killed_forced_re_run_of_every_stage_keeps_its_artifacts(reference, tmp_path):
    """``snakemake -R <rule>`` killed while its job writes: every artifact of the chain is still there, whole (the
    previous version, put back by Snakemake), no temporary is left, and the chain is up to date. Snakemake
    stopped with SIGTERM (which stops its jobs) does the same. A killed training also leaves its last checkpoint
    (a training run again resumes from it, to the same model), and a killed gathering the shards it gathers
    (temp(): Snakemake removes them once a gathering succeeds)."""
    workdir = copy_build(reference["workdir"], tmp_path / "work")
    results = workdir / "results"
    for rule, pause_at in FORCED:
        with PausedRun(workdir, [FINAL, "-R", rule, "--until", rule], pause_at=pause_at) as run:
            run.wait_for_pause()
            if rule == "dense_search":
                os.kill(run.process.pid, signal.SIGTERM)  # Snakemake itself; it stops its jobs
            else:
                run.kill_job()
            code, out = run.finish()
        assert code != 0, f"{rule}: {out[-3000:]}"
        assert f"Restored previous version of results/" in out, f"{rule}: {out[-3000:]}"
        assert temporaries(results) == [], f"{rule}: {temporaries(results)}"
        got = {path: digest for path, digest in chain_digests(results).items() 
               if "/checkpoints/" not in path and "/embeddings/shards/" not in path}
        assert sorted(got) == sorted(reference["digests"]), f"{rule}: {set(got) ^ set(reference['digests'])}"
        assert [path for path in got if got[path] != reference["digests"][path]] == [], rule
    later = snakemake(workdir, FINAL, "-n")
    assert later.returncode == 0 and "Nothing to be done" in output_of(later), output_of(later)[-3000:]
