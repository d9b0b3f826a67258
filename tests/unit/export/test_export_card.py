"""Every hard-negative export carries a card (the run's mining card with the export's rows and digests), and reading
an export back (hardneg.export.read_export) refuses one whose files were changed, naming the file."""

import json

import pyarrow as pa
import pytest

from hardneg.errors import HardnegError
from hardneg.export import read_export
from hardneg.export.hardnegs import export_hardnegs
from hardneg.io import artifacts
from hardneg.io.provenance import write_resolved
from hardneg.mining.card import build_card, file_sha256, write_card
from tests.support.mining import qrels_table, ranking_table

datasets = pytest.importorskip("datasets")

CORPUS = [("d1", "Cats", "cats purr when content"), ("d2", "Purring", "a purr is a soft sound"),
          ("d3", "Dogs", "dogs bark at strangers"), ("d4", "Fish", "fish swim in schools"),
          ("d5", "Birds", "birds sing at dawn"), ("d6", None, "owls hunt at night")]
QUERIES = [("q1", "why do cats purr"), ("q2", "do dogs bark"), ("q3", "where do fish swim")]
QRELS = qrels_table([("q1", "d2", 1), ("q2", "d3", 1), ("q3", "d4", 1)])
# q1: 3 negatives, q2: 2, q3: 1; every query is exported (each has a positive and a negative)
HARDNEGS = ranking_table([("q1", "d1", 1, 0.9), ("q1", "d5", 2, 0.8), ("q1", "d6", 3, 0.7), ("q2", "d1", 1, 0.6),
                      ("q2", "d4", 2, 0.5), ("q3", "d5", 1, 0.4)])


def _table(kind, rows):
    return pa.table({f.name: list(c) for f, c in zip(kind.schema, zip(*rows))}, schema=kind.schema)


def write_results(root):
    """A results folder with a star run's list, its dataset, and the resolved configs the export reads."""
    data = root / "datasets" / "toy"
    artifacts.write_table(_table(artifacts.CORPUS, CORPUS), artifacts.CORPUS, data / "corpus.parquet")
    artifacts.write_table(_table(artifacts.QUERIES, QUERIES), artifacts.QUERIES, data / "queries" / "train.parquet")
    artifacts.write_table(QRELS, artifacts.QRELS, data / "qrels" / "train.parquet")
    write_resolved({"name": "star", "method": "star", "seed": 0, "dataset": {"name": "toy"}, "evaluation": {},
                    "inputs": {}, "params": {"model": {"name": "builtin", "vocab_size": 100, "query_max_length": 16},
                                             "train": {"split": "train"}, "index": {"factory": "Flat"}}},
                   root / "star" / "config.yaml")
    artifacts.write_table(HARDNEGS, artifacts.HARDNEGS, root / "star" / "hardnegs.parquet")
    return root


@pytest.fixture
def results(tmp_path, monkeypatch):
    """A hand-made results folder with a mining card of star's list."""
    monkeypatch.chdir(tmp_path)  # the card's paths are relative to the working folder, as the workflow writes them
    root = write_results(tmp_path / "results")
    card = build_card(run="star", miner="warmup", dataset="toy", split="train",
                      inputs={"corpus": "results/datasets/toy/corpus.parquet",
                              "qrels": "results/datasets/toy/qrels/train.parquet"},
                      hardnegs="results/star/hardnegs.parquet", search={"factory": "Flat"},
                      pool={"name": "train_top200", "depth": 200}, policy={"keep": None}, policy_name=None, seed=0,
                      threads={"torch_intra_op": 1, "faiss_omp": 1}, versions={"hardneg": "0"})
    write_card(root / "star" / "hardnegs_card.json", card)
    return root


def test_a_file_export_carries_the_runs_card_with_its_own_rows_and_digest(results, tmp_path):
    out = tmp_path / "out" / "hardnegs.jsonl"
    export_hardnegs("star", "jsonl", out, results=results)
    card_file = tmp_path / "out" / "hardnegs.jsonl.hardneg_card.json"
    card = json.loads(card_file.read_text())
    mined = json.loads((results / "star" / "hardnegs_card.json").read_text())
    assert {key: value for key, value in card.items() if key != "export"} == mined
    assert card["export"] == {"format": "jsonl", "name": "hardnegs.jsonl", "queries": 3, "rows": 3,
                              "negatives": "all", "sha256": file_sha256(out)}
    assert read_export(out) == card


def test_a_tampered_file_export_is_refused_naming_the_file(results, tmp_path):
    out = tmp_path / "tevatron.jsonl"
    export_hardnegs("star", "tevatron", out, results=results)
    out.write_text(out.read_text().replace("cats", "dogs"))
    with pytest.raises(HardnegError, match=f"{out}: its digest does not match the export's card {out}"
                                           r"\.hardneg_card\.json \(sha256 "):
        read_export(out)
    (tmp_path / "tevatron.jsonl.hardneg_card.json").unlink()
    with pytest.raises(HardnegError, match=f"{out}: the export has no card"):
        read_export(out)


def test_a_folder_export_carries_its_card_inside_and_a_tampered_file_is_refused(results, tmp_path):
    out = tmp_path / "hf"
    export_hardnegs("star", "hf-dataset", out, results=results)
    card = read_export(out)
    assert card["run"] == "star" and card["list"]["rows"] == HARDNEGS.num_rows
    assert card["export"]["rows"] == 3 and "hardneg_card.json" not in card["export"]["files"]
    assert set(card["export"]["files"]) >= {"state.json", "dataset_info.json"}
    assert len(datasets.load_from_disk(str(out))) == 3  # the card does not disturb the dataset
    data = next(out / name for name in card["export"]["files"] if name.endswith(".arrow"))
    data.write_bytes(data.read_bytes()[:-8] + b"tampered")
    with pytest.raises(HardnegError, match=f"{data}: its digest does not match the export's card"):
        read_export(out)
    export_hardnegs("star", "hf-dataset", out, results=results, force=True)  # an earlier export: replaced whole
    assert read_export(out)["export"]["rows"] == 3
    (out / "notes.txt").write_text("added")
    with pytest.raises(HardnegError, match=f"{out / 'notes.txt'}: not in the export's card"):
        read_export(out)


def test_a_sentence_transformers_export_records_its_format_and_columns(results, tmp_path):
    out = tmp_path / "st"
    export_hardnegs("star", "sentence-transformers", out, results=results, title_separator=" ")
    export = read_export(out)["export"]
    assert export["format"] == "sentence-transformers" and export["st_format"] == "triplet"
    assert export["columns"] == ["query", "positive", "negative"] and export["negatives"] == 3


def test_a_card_that_describes_another_list_stops_the_export_before_it_writes(results, tmp_path):
    artifacts.write_table(HARDNEGS.slice(0, 5), artifacts.HARDNEGS, results / "star" / "hardnegs.parquet")
    with pytest.raises(HardnegError, match=r"hardnegs_card\.json does not describe the run's list: the hard-negative "
                                           r"list .*hardnegs\.parquet changed"):
        export_hardnegs("star", "jsonl", tmp_path / "x.jsonl", results=results)
    assert not (tmp_path / "x.jsonl").exists()


def test_a_run_without_a_mining_card_still_gets_an_export_card(results, tmp_path):
    (results / "star" / "hardnegs_card.json").unlink()
    out = tmp_path / "h.jsonl"
    export_hardnegs("star", "jsonl", out, results=results)
    card = read_export(out)
    assert card["run"] == "star" and "inputs" not in card and card["export"]["rows"] == 3
