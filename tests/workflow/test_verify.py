"""`hardneg verify` on the tiny STAR chain: the workflow writes STAR's mining card (the same bytes when written
again), verify re-mines the list with overlap 1.0 over the Flat index and exits 0; once a document's text changes
in the corpus, verify names the corpus as changed and exits non-zero."""

import hashlib
import json

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from hardneg.cli import main
from hardneg.io import artifacts
from tests.support.builds import copy_build
from tests.support.workflow import output_of, snakemake

pytestmark = pytest.mark.slow

CARD = "results/star/hardnegs_card.json"


@pytest.fixture(scope="module")
def carded(builds, tmp_path_factory):
    """A copy of the session's tiny STAR chain (tests/support/builds.py) with STAR's mining card built."""
    workdir = copy_build(builds.star_chain(), tmp_path_factory.mktemp("verify") / "work")
    result = snakemake(workdir, CARD)
    assert result.returncode == 0, output_of(result)[-4000:]
    return workdir


def sha256(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_the_card_records_the_inputs_and_the_list_and_is_written_again_byte_for_byte(carded, tmp_path):
    card_file = carded / CARD
    card = json.loads(card_file.read_text())
    assert card["run"] == "star" and card["miner"] == "warmup" and card["split"] == "train"
    assert card["search"]["factory"] == "Flat" and card["search"]["top_k"] == 50 and card["pool"]["depth"] == 30
    assert card["pool"]["name"] == "train_top30_bm25-bm25" and card["seed"] == 5
    assert {"model", "tokenizer", "tokenized_queries", "corpus", "queries", "qrels", "ranking", "index", "docids",
            "corpus_embeddings", "pool", "positives", "bm25_ranking", "duplicates"} == set(card["inputs"])
    assert card["inputs"]["corpus"] == {"path": "results/datasets/tiny/corpus.parquet",
                                        "sha256": sha256(carded / "results/datasets/tiny/corpus.parquet")}
    assert "model.safetensors" in card["inputs"]["model"]["files"]
    assert card["list"]["sha256"] == sha256(carded / "results/star/hardnegs.parquet")
    assert card["list"]["rows"] == pq_rows(carded / "results/star/hardnegs.parquet")
    before = card_file.read_bytes()
    again = copy_build(carded, tmp_path / "again")
    result = snakemake(again, CARD, "--forcerun", "mining_card")
    assert result.returncode == 0, output_of(result)[-4000:]
    assert (again / CARD).read_bytes() == before


def pq_rows(path):
    return artifacts.read_table(artifacts.HARDNEGS, path).num_rows


def test_verify_remines_the_list_exactly(carded, capsys):
    results = str(carded / "results")
    assert main(["verify", "star", "--results", results]) == 0
    out = capsys.readouterr().out
    assert "inputs: 14 checked, none changed" in out
    assert "re-mined with index Flat (exact) of run warmup" in out
    assert "overlap with the stored list: mean 1.0000, min 1.0000, 0 of 60 queries below 1.0; same order in 60 " \
           "of 60" in out
    assert out.rstrip().endswith("reproduced: yes")
    assert main(["verify", "star", "--results", results, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["overlap"] == {"queries": 60, "mean": 1.0, "min": 1.0, "below_one": 0, "same_order": 60}
    assert report["ranking"]["mean"] == 1.0 and report["exact_drift"] is None and report["index"]["exact"] is True
    assert report["changed"] == [] and report["reproduced"] is True


def test_verify_names_a_changed_corpus_and_fails(carded, tmp_path, capsys, monkeypatch):
    work = copy_build(carded, tmp_path / "work")
    monkeypatch.chdir(work)  # as a user runs it, with the default --results: paths as the card records them
    path = work / "results" / "datasets" / "tiny" / "corpus.parquet"
    recorded = sha256(path)
    corpus = artifacts.read_table(artifacts.CORPUS, path)
    first = corpus["docid"][0].as_py()
    text = pc.if_else(pc.equal(corpus["docid"], first), pa.scalar("a different text"), corpus["text"])
    artifacts.write_table(corpus.set_column(corpus.column_names.index("text"), "text", text), artifacts.CORPUS, path)
    assert main(["verify", "star"]) == 1
    out = capsys.readouterr().out
    assert "inputs: 14 checked, 1 changed:" in out
    assert (f"corpus results/datasets/tiny/corpus.parquet changed since the list was mined (sha256 {recorded[:12]}… "
            f"→ {sha256(path)[:12]}…)") in out
    assert out.rstrip().endswith("reproduced: no")
    assert main(["verify", "star", "--inputs-only", "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert [line.split()[0] for line in report["changed"]] == ["corpus"] and report["remined"] is False


def test_verify_errors_name_what_is_missing(carded, tmp_path, capsys):
    assert main(["verify", "nope", "--results", str(carded / "results")]) == 2
    assert "hardneg: error: run 'nope' has no results folder" in capsys.readouterr().err
    assert main(["verify", "warmup", "--results", str(carded / "results")]) == 2
    assert "results/warmup/hardnegs_card.json: no mining card there" in capsys.readouterr().err
