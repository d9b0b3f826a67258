"""The ``hardneg import`` command, and ``hardneg verify`` of an imported list: a digest check of the source, the
dataset's files and the list's, with verify's exit statuses (0 nothing changed, 1 changed, 2 could not check)."""

import json

import pytest

from hardneg.cli import main
from hardneg.export.hardnegs import export_hardnegs
from tests.support.exports import write_results

pytest.importorskip("datasets")


@pytest.fixture
def imported(tmp_path, capsys):
    """A Tevatron export of the hand-made run, imported back with the command; its source, folder and results."""
    root = write_results(tmp_path / "results")
    source = tmp_path / "train.jsonl"
    export_hardnegs("star", "tevatron", source, results=root)
    folder = tmp_path / "imports" / "star_tevatron"
    assert main(["import", str(source), "--format", "tevatron", "--dataset", "toy", "--results", str(root),
                 "--output", str(folder)]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith(f"wrote {folder}: 9 hard negatives of 3 queries of split train of toy, from 3 rows "
                              "(tevatron, v1); matched by id and by text: 3 and 0 query mentions, 13 and 0 document "
                              "mentions")
    return source, folder, root


def verify(folder, root, capsys, *extra):
    status = main(["verify", str(folder), "--results", str(root), *extra])
    return status, capsys.readouterr()


def test_verify_of_an_imported_list_checks_its_digests_and_mines_nothing(imported, capsys):
    source, folder, root = imported
    status, printed = verify(folder, root, capsys)
    assert status == 0, printed.err
    assert f"imported from {source} (tevatron, v1) for split train of toy" in printed.out
    assert "files: 5 checked (the source, the dataset's and the list's), none changed" in printed.out
    assert printed.out.rstrip().endswith("reproduced: yes")
    status, printed = verify(folder, root, capsys, "--json")
    report = json.loads(printed.out)
    assert status == 0 and report["remined"] is False and report["changed"] == []
    source.write_text(source.read_text().replace("cats", "kittens"))  # the source changed since
    status, printed = verify(folder, root, capsys)
    assert status == 1 and f"source {source} changed since the list was imported" in printed.out
    source.unlink()
    status, printed = verify(folder, root, capsys)
    assert status == 1 and f"source {source} is missing" in printed.out


def test_a_changed_list_or_dataset_is_named(imported, capsys):
    _, folder, root = imported
    (root / "datasets" / "toy" / "qrels" / "train.parquet").write_bytes(b"changed")
    (folder / "hardnegs.parquet").write_bytes(b"changed")
    status, printed = verify(folder, root, capsys)
    assert status == 1
    assert f"qrels {root}/datasets/toy/qrels/train.parquet changed since the list was imported" in printed.out
    assert f"hard-negative list {folder}/hardnegs.parquet changed since the list was imported" in printed.out


def test_import_errors_are_one_line_and_status_2(imported, tmp_path, capsys):
    source, folder, root = imported
    status = main(["import", str(source), "--format", "tevatron", "--dataset", "toy", "--results", str(root),
                   "--output", str(folder)])
    assert status == 2 and "already exists" in capsys.readouterr().err  # replaced with --force only
    assert main(["import", str(source), "--format", "tevatron", "--dataset", "toy", "--results", str(root),
                 "--output", str(folder), "--force"]) == 0
    (folder / "hardnegs_card.json").write_text("{}")
    status, printed = verify(folder, root, capsys)
    assert status == 2 and "not a mining card" in printed.err
