"""`hardneg verify` through the real command, where its numbers and exit status are what a user trusts. On the tiny
STAR chain the workflow writes STAR's mining card (the same bytes when written again), verify re-mines the list
with overlap 1.0 over the Flat index and exits 0; once a document's text changes in the corpus, it names the
corpus as changed and exits 1 (not reproduced). On the main target built from nothing, the re-mined list of STAR
comes back query for query and the report says so for every query ("same order in N of N": the count once came
from two group-bys whose rows were not aligned, and said 1,341, 1,246 or 1,256 of 2,000 for identical lists). A
list or card it cannot read is "could not check" (exit 2, one message naming the file), never a traceback nor the
exit status of "not reproduced"; a run that mined nothing is said to be so."""

import hashlib
import json
import re
import subprocess

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from hardneg.cli import main
from hardneg.io import artifacts
from tests.support.builds import copy_build
from tests.support.workflow import BIN, output_of, snakemake

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
    assert "results/warmup/hardnegs.parquet does not exist, so there is nothing to verify (runs with one: star)" \
        in capsys.readouterr().err


def hardneg(workdir, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN / "hardneg"), *args], cwd=workdir, capture_output=True, text=True)


def test_verify_counts_every_query_of_the_main_runs_list(main_run):
    """On the main target (its STAR list and card are among its outputs), read only: nothing is written."""
    result = hardneg(main_run, "verify", "star")
    out = output_of(result)
    assert result.returncode == 0 and "reproduced: yes" in out, out[-3000:]
    queries = len(set(pq.read_table(main_run / "results/star/hardnegs.parquet", columns=["qid"])["qid"].to_pylist()))
    assert queries >= 1000  # enough queries for the group-bys' orders to differ, as they did
    overlap = re.search(r"overlap with the stored list: mean 1\.0000, min 1\.0000, 0 of (\d+) queries below 1\.0; "
                        r"same order in (\d+) of (\d+)", out)
    assert overlap and overlap.groups() == (str(queries),) * 3, out[-3000:]


def test_an_unreadable_list_is_could_not_check(carded, tmp_path):
    workdir = copy_build(carded, tmp_path / "work")
    listed = workdir / "results/star/hardnegs.parquet"
    listed.write_bytes(listed.read_bytes()[: listed.stat().st_size // 2])  # cut short
    result = hardneg(workdir, "verify", "star")
    out = output_of(result)
    assert result.returncode == 2, out[-3000:]
    assert "results/star/hardnegs.parquet: not a readable Parquet file of hardnegs" in out, out[-3000:]
    assert "Traceback" not in out and out.count("hardneg: error:") == 1


def test_a_card_edited_by_hand_is_could_not_check(carded, tmp_path):
    workdir = copy_build(carded, tmp_path / "work")
    card = json.loads((workdir / CARD).read_text())
    del card["search"]
    (workdir / CARD).write_text(json.dumps(card))
    result = hardneg(workdir, "verify", "star")
    out = output_of(result)
    assert result.returncode == 2, out[-3000:]
    assert f"{CARD}: could not check run star: the mining card's 'search' is missing" in out, out[-3000:]
    assert "Traceback" not in out and out.count("hardneg: error:") == 1


def test_auditing_a_miner_points_at_the_lists_it_mined(carded):
    qid = pq.read_table(carded / "results/star/hardnegs.parquet", columns=["qid"])["qid"][0].as_py()
    result = hardneg(carded, "audit", "warmup", "--qid", qid)
    out = output_of(result)
    assert result.returncode == 2, out[-3000:]
    assert "run warmup (method warmup) selects no hard-negative list of its own: it is the miner of star, whose " \
           "lists it gave (e.g. hardneg audit star)" in out and "Traceback" not in out
