"""A run trained on an imported list (``inputs.negatives: {imported: <folder>}``): the config checks it, the plan
trains it on its copy of the list (rule import_hard_negatives), audits that copy and shows it in the viewer, the
copy is refused when it is not the list of the run's dataset and split or changed since it was imported, and the
audit, ``hardneg audit`` and ``hardneg verify <run>`` read it as they read a mined list."""

import copy
import json

import pytest
import yaml

from hardneg.cli import main
from hardneg.errors import ConfigError, HardnegError
from hardneg.export.hardnegs import export_hardnegs
from hardneg.imports.lists import import_hardnegs
from hardneg.imports.runs import take_imported_list
from hardneg.io.layout import Layout
from hardneg.mining.audit import audit_stage
from hardneg.pipeline.config import validate_config
from hardneg.pipeline.model_folder import card_facts
from hardneg.pipeline.plan import Plan
from hardneg.pipeline.resolution import resolve_run
from tests.support import REPO
from tests.support.exports import scored_results

pytest.importorskip("datasets")
FOLDER = "imports/star_st"


@pytest.fixture(scope="module")
def raw():
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    config["runs"]["star_imported"] = {"method": "star", "inputs": {"init": "warmup",
                                                                    "negatives": {"imported": FOLDER}}}
    return config


def test_a_run_trains_on_its_copy_of_the_imported_list(raw):
    plan = Plan(validate_config(copy.deepcopy(raw)))
    layout = plan.layout
    assert "star_imported" in plan.mining.imported_runs and "star_imported" not in plan.mining.mining_runs
    assert "star" in plan.mining.mining_runs and plan.mining.imported_list("star") is None
    assert plan.train_inputs("star_imported")["hard_negatives"] == layout.hard_negatives("star_imported")
    assert plan.mining.import_inputs("star_imported") == {"hardnegs": f"{FOLDER}/hardnegs.parquet",
                                                   "positives": f"{FOLDER}/positives.parquet",
                                                   "card": f"{FOLDER}/hardnegs_card.json"}
    assert plan.reports("star_imported") == [layout.audit("star_imported", "md"), layout.viewer("star_imported"),
                                             layout.hardnegs_card("star_imported")]
    audit = plan.mining.audit_inputs("star_imported")
    assert audit["positives"] == layout.imported_positives("star_imported") and "run" not in audit
    viewer = plan.mining.viewer_inputs("star_imported")  # where the list came from (its card), in place of a ranking
    assert viewer["card"] == layout.hardnegs_card("star_imported") and "run" not in viewer and "pool" not in viewer
    assert plan.mining.viewer_miner("star_imported") is None and plan.mining.viewer_miner("star") == "warmup"
    assert "card" not in plan.mining.viewer_inputs("star")
    assert plan.upstream("star_imported") == ["warmup"]  # the list is no run
    assert resolve_run(plan.config, "star_imported")["inputs"]["negatives"] == {"imported": FOLDER}
    assert plan.training_slice("star_imported")["inputs"]["negatives"] == {"imported": FOLDER}
    facts = card_facts(plan.training_slice("star_imported"))  # the model card names the list by its folder
    assert facts.inputs == {"init": "warmup", "negatives": f"{FOLDER} (imported list)"}
    assert facts.starts_from == "warmup"


@pytest.mark.parametrize("negatives, key, message", [
    ({"imported": 3}, "runs.x.inputs.negatives.imported", "expected string"),
    ({"folder": FOLDER}, "runs.x.inputs.negatives.folder", "unknown key; allowed keys: imported"),
    ({}, "runs.x.inputs.negatives.imported", "required key is missing"),
])
def test_an_imported_list_is_named_by_its_folder(raw, negatives, key, message):
    config = copy.deepcopy(raw)
    config["runs"]["x"] = {"method": "star", "inputs": {"init": "warmup", "negatives": negatives}}
    with pytest.raises(ConfigError, match=message) as error:
        validate_config(config)
    assert error.value.key == key


def test_only_a_miner_role_takes_an_imported_list(raw):
    config = copy.deepcopy(raw)
    config["runs"]["x"] = {"method": "warmup", "inputs": {"negatives": {"imported": FOLDER}}}
    with pytest.raises(ConfigError, match="expected string") as error:
        validate_config(config)
    assert error.value.key == "runs.x.inputs.negatives"
    config = copy.deepcopy(raw)
    config["runs"]["ance"]["inputs"]["negatives"] = {"imported": FOLDER}
    with pytest.raises(ConfigError, match="mines its episodes' negatives with its own checkpoints") as error:
        validate_config(config)
    assert error.value.key == "runs.ance.inputs.negatives"


@pytest.fixture
def run_copy(tmp_path):
    """A Tevatron export with cross-encoder scores imported back, and run 'star_imported''s copy of it."""
    root, _, _ = scored_results(tmp_path)
    export_hardnegs("star", "tevatron", tmp_path / "train.jsonl", results=root, scores="cross-encoder")
    folder = tmp_path / "imported"
    import_hardnegs(tmp_path / "train.jsonl", "tevatron", folder, dataset="toy", results=root)
    layout = Layout(str(root))
    (root / "star_imported").mkdir()
    outputs = {"out_hardnegs": layout.hard_negatives("star_imported"),
               "out_positives": layout.imported_positives("star_imported"),
               "out_card": layout.hardnegs_card("star_imported")}
    files = {"hardnegs": folder / "hardnegs.parquet", "positives": folder / "positives.parquet",
             "card": folder / "hardnegs_card.json"}
    return root, folder, files, outputs


def test_the_runs_copy_carries_the_card_and_verifies(run_copy, capsys):
    root, folder, files, outputs = run_copy
    card = take_imported_list(**files, run="star_imported", dataset="toy", split="train", **outputs)
    assert card["run"] == "star_imported" and card["list"]["path"] == outputs["out_hardnegs"]
    assert card["list"]["sha256"] == json.loads(files["card"].read_text())["list"]["sha256"]  # the same bytes
    (root / "star_imported" / "config.yaml").write_text(yaml.safe_dump({
        "name": "star_imported", "method": "star", "dataset": {"name": "toy"}, "params": {"train": {"split": "train"}},
        "inputs": {"negatives": {"imported": str(folder)}}}))
    assert main(["verify", "star_imported", "--results", str(root)]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith(f"run star_imported: hard negatives {outputs['out_hardnegs']}")
    assert "nothing is mined again" in printed
    # hardneg audit <run> --qid: the imported teacher scores and margins
    assert main(["audit", "star_imported", "--qid", "q1", "--results", str(root)]) == 0
    shown = capsys.readouterr().out
    assert "best score 0.9000" in shown and "d8" in shown and "-0.8900" in shown  # q1's d8: 0.01 - 0.9
    # the run's list exported again: the file's teacher scores are the run's "miner" scores
    export_hardnegs("star_imported", "tevatron", root / ".." / "again.jsonl", results=root, scores="miner")
    lines = [json.loads(line) for line in (root / ".." / "again.jsonl").read_text().splitlines()]
    assert lines[0]["query_id"] == "q1" and lines[0]["negative_passages"][0]["score"] == pytest.approx(0.01)
    assert lines[0]["positive_passages"][0]["score"] == pytest.approx(0.9)
    with pytest.raises(HardnegError, match="trains on an imported list, whose teacher scores are those its file"):
        export_hardnegs("star_imported", "tevatron", root / ".." / "ce.jsonl", results=root, scores="cross-encoder")
    summary = audit_stage(outputs["out_hardnegs"], None, root / "datasets" / "toy" / "qrels" / "train.parquet",
                          outputs["out_positives"], root / "a.md", root / "a.parquet")
    assert summary["best_positive_rank"] is None and summary["num_negatives"] == 9
    assert summary["margin"]["count"] == 9 and "## Imported list" in (root / "a.md").read_text()


def test_the_runs_card_records_its_files_under_the_runs_results_folder(run_copy, tmp_path, monkeypatch, capsys):
    # imported against the results folder spelled absolute (run_copy), copied by Snakemake from the project folder:
    # the run's card records every file under the run's folder as Snakemake spells it, and verify finds them all
    root, _, files, _ = run_copy
    monkeypatch.chdir(root.parent)
    outputs = {"out_hardnegs": "results/star_imported/hardnegs.parquet",
               "out_positives": "results/star_imported/hardnegs_positives.parquet",
               "out_card": "results/star_imported/hardnegs_card.json"}
    card = take_imported_list(**files, run="star_imported", dataset="toy", split="train", **outputs,
                              results="results")
    assert card["results"] == "results" and card["inputs"]["corpus"]["path"] == "results/datasets/toy/corpus.parquet"
    assert card["inputs"]["positives"]["path"] == outputs["out_positives"]
    (root / "star_imported" / "config.yaml").write_text(yaml.safe_dump({
        "name": "star_imported", "method": "star", "dataset": {"name": "toy"}, "params": {"train": {"split": "train"}},
        "inputs": {"negatives": {"imported": "imported"}}}))
    monkeypatch.chdir(tmp_path / "..")  # anywhere else
    assert main(["verify", "star_imported", "--results", str(root)]) == 0
    assert "none changed" in capsys.readouterr().out


def test_a_list_of_another_split_or_changed_since_is_refused(run_copy):
    root, _, files, outputs = run_copy
    with pytest.raises(HardnegError, match="imported for split 'train', run star_imported trains on split 'dev'"):
        take_imported_list(**files, run="star_imported", dataset="toy", split="dev", **outputs)
    files["positives"].write_bytes(b"changed")
    with pytest.raises(HardnegError, match="not the file its card .* records"):
        take_imported_list(**files, run="star_imported", dataset="toy", split="train", **outputs)
    assert not any(root.glob("star_imported/*"))  # nothing copied
