"""A disk that fills up, through the real entry point: ``snakemake`` on the tiny fusion chain (BM25, in-batch and
their tuned hybrid) with ``results/`` on a small disk (a tmpfs, tests/support/disk.py).

Each larger size lets the chain get further (more of its artifacts are kept): the run fails at the first stage that
cannot write, with one failed job, no temporary and no partial artifact (every artifact present is the
uninterrupted run's, byte for byte). Which stage that is depends on the order Snakemake picks among independent
jobs: Lucene's indexer, whose merges need more than the index it leaves, may be stopped at two sizes. The
disk then grows and the same command completes, with the artifacts of an uninterrupted run. On that disk, filled
up again, every stage of the chain is run again (``snakemake -R <rule>``): each fails for want of space and keeps
its previous artifacts.
"""

from __future__ import annotations

import re

import pytest

from tests.support.configs import FUSION_CONFIG, FUSION_TARGETS
from tests.support.disk import fill, used_bytes
from tests.support.reliability import digests, temporaries
from tests.support.workflow import output_of, snakemake, write_config

pytestmark = pytest.mark.slow

FAILED_RULE = re.compile(r"Error in rule (\w+):")
# Every stage kind of the fusion chain, run again on a full disk (in DAG order). The gathering of the embeddings
# is not among them: its shards are temp(), so running it again encodes them first, and that fails first.
RERUN = ["prepare_dataset", "train_tokenizer", "tokenize", "bm25_index", "bm25_search", "train_dense",
         "encode_corpus_shard", "build_faiss_index", "dense_search", "tune_fusion", "fuse", "run_config", "evaluate"]
# Snakemake deletes a job's log before it runs: the few kilobytes of these outputs may fit where their log was.
SMALL = {"run_config", "evaluate"}


def test_a_full_disk_fails_at_the_first_stage_that_cannot_write_and_completes_once_it_grows(builds, small_disk,
                                                                                            tmp_path):
    reference = builds.fusion_chain() / "results"
    want, total = digests(reference), used_bytes(reference)
    workdir = tmp_path / "work"
    write_config(workdir, FUSION_CONFIG)
    results = small_disk(workdir / "results", "64k")
    failed_rules, kept = [], []
    # the disk grows by steps: each run gets further, and fails at the next stage that cannot write
    for share in (0.02, 0.25, 0.6, 0.9):
        small_disk.disks[-1].grow(f"{max(64, int(total * share) // 1024)}k")
        result = snakemake(workdir, *FUSION_TARGETS)
        out = output_of(result)
        assert result.returncode != 0, out[-3000:]
        failed = FAILED_RULE.findall(out)
        assert len(failed) == 1, out[-4000:]  # the first stage that could not write, alone
        failed_rules.append(failed[0])
        assert "No space left on device" in out, out[-4000:]  # the job's error says why
        assert temporaries(results) == [], temporaries(results)
        got = digests(results)
        assert [path for path in got if got[path] != want.get(path)] == []  # nothing partial, nothing else
        kept.append(len(got))
    assert kept == sorted(set(kept)), (kept, failed_rules)  # each size kept more of the chain's artifacts
    assert len(set(failed_rules)) >= 3, failed_rules  # and the sizes stopped it at several stages
    assert "bm25_index" in failed_rules, failed_rules  # Lucene's indexer, which returns as if it had succeeded

    small_disk.disks[-1].grow(f"{2 * total // 1024 + 1024}k")
    done = snakemake(workdir, *FUSION_TARGETS)
    assert done.returncode == 0, output_of(done)[-4000:]
    assert digests(results) == want
    assert temporaries(results) == []

    for rule in RERUN:
        ballast = fill(results)
        again = snakemake(workdir, *FUSION_TARGETS, "-R", rule, "--until", rule)
        out = output_of(again)
        if not (rule in SMALL and again.returncode == 0):
            assert again.returncode != 0 and FAILED_RULE.findall(out)[:1] == [rule], f"{rule}: {out[-4000:]}"
        assert temporaries(results) == [], f"{rule}: {temporaries(results)}"
        got = {path: digest for path, digest in digests(results).items()
               if path != ballast.name and "/embeddings/shards/" not in path}  # shards: the gathering's temp()
        assert got == want, f"{rule}: {sorted(set(got) ^ set(want))}"
    ballast.unlink()
    later = snakemake(workdir, *FUSION_TARGETS, "-n")
    assert later.returncode == 0 and "Nothing to be done" in output_of(later), output_of(later)[-3000:]
