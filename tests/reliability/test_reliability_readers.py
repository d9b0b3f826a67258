"""`hardneg init --msmarco-passage` on MS MARCO folders as they come: nothing it finds is dropped without a word. A
queries file without its judgements (the official ``queries.eval.tsv``, or a training split whose qrels are
missing) is named in a note and left out; ``dev`` beside ``dev.small`` becomes a split of its own (``dev_full``)
instead of one silently replacing the other."""

from __future__ import annotations

import subprocess

import pytest
import yaml

from tests.support.user_data import write_msmarco
from tests.support.workflow import BIN


def init(folder, workdir) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN / "hardneg"), "init", "--msmarco-passage", str(folder), "--name", "ms",
                           "--output", "ms.yaml"], cwd=workdir, capture_output=True, text=True)


@pytest.fixture
def msmarco(tmp_path):
    return write_msmarco(tmp_path / "msmarco")


def test_queries_without_judgements_are_named_not_dropped_silently(msmarco, tmp_path):
    (msmarco / "qrels.train.tsv").unlink()
    (msmarco / "queries.eval.tsv").write_text("e1\tan unjudged query\n")
    result = init(msmarco, tmp_path)
    assert result.returncode == 0, result.stderr
    assert f"note: {msmarco / 'queries.train.tsv'}: no qrels.train.tsv beside it, so no split train" in result.stdout
    assert f"note: {msmarco / 'queries.eval.tsv'}: no qrels.eval.tsv beside it, so no split eval" in result.stdout
    dataset = yaml.safe_load((tmp_path / "ms.yaml").read_text())["datasets"]["ms"]
    assert set(dataset["queries"]) == set(dataset["qrels"]) == {"test"}


def test_dev_beside_dev_small_is_a_split_of_its_own(msmarco, tmp_path):
    for kind in ("queries", "qrels"):
        text = (msmarco / f"{kind}.test.tsv").read_text()
        (msmarco / f"{kind}.dev.small.tsv").write_text(text)
        (msmarco / f"{kind}.dev.tsv").write_text(text)
    result = init(msmarco, tmp_path)
    assert result.returncode == 0, result.stderr
    assert f"note: {msmarco / 'qrels.dev.tsv'}: split dev_full (the full dev set; split dev is dev.small)" \
        in result.stdout
    dataset = yaml.safe_load((tmp_path / "ms.yaml").read_text())["datasets"]["ms"]
    assert dataset["queries"]["dev"].endswith("queries.dev.small.tsv")
    assert dataset["queries"]["dev_full"].endswith("queries.dev.tsv")
    assert set(dataset["queries"]) == set(dataset["qrels"]) == {"dev", "dev_full", "test", "train"}
