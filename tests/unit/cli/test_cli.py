from hardneg.cli import main
from tests.support import REPO


def test_check_config_lists_runs(capsys):
    assert main(["check-config", str(REPO / "config" / "config.yaml")]) == 0
    out = capsys.readouterr().out
    assert "valid" in out and "run bm25: method bm25, dataset synthetic" in out


def test_check_config_reports_the_bad_key(tmp_path, capsys):
    bad = tmp_path / "c.yaml"
    bad.write_text((REPO / "config" / "config.yaml").read_text().replace("k1: 0.9", "k1: fast", 1))
    assert main(["check-config", str(bad)]) == 2
    assert "config key 'runs.bm25.params.k1': expected number, got 'fast'" in capsys.readouterr().err


def test_methods_lists_the_registry(capsys):
    assert main(["methods"]) == 0
    out = capsys.readouterr().out
    assert "star (dense): static hard negatives" in out and "[hardneg.methods.star]" in out
    assert "  inputs.negatives: miner (required)" in out and "  params.mining" in out
    assert "bm25 (lexical)" in out and "  params.k1" in out


def test_config_reference_prints_the_documentation_page(capsys):
    from hardneg.pipeline.config_reference import config_reference

    assert main(["config-reference"]) == 0
    out = capsys.readouterr().out
    assert out == config_reference() and out.startswith("# Configuration reference\n")
    assert "`runs.<run>.params.train.learning_rate`" in out and "`datasets.<name>.num_docs`" in out


# ----------------------------------------------------------------------------------------------- TREC inputs
def _write_parquet_and_trec(tmp_path):
    """A small run and its qrels, as hardneg's Parquet artifacts and as TREC files (written by hardneg's writers)."""
    import pyarrow as pa

    from hardneg.io import artifacts
    from hardneg.io.rankings import write_ranking, write_trec_qrels

    run = pa.table({"qid": ["q1", "q1", "q1", "q2", "q2", "q3"], "docid": ["d1", "d2", "d3", "d2", "d4", "d9"],
                    "rank": [1, 2, 3, 1, 2, 1], "score": [3.5, 2.25, 1.0, 0.75, 0.5, 9.0]}, schema=artifacts.RANKING.schema)
    qrels = pa.table({"qid": ["q1", "q2", "q2", "q3"], "docid": ["d2", "d4", "d7", "d1"], "relevance": [1, 2, 1, 0]},
                     schema=artifacts.QRELS.schema)
    write_ranking(run, tmp_path / "run.parquet", tmp_path / "run.trec", "test")
    artifacts.write_table(qrels, artifacts.QRELS, tmp_path / "qrels.parquet")
    write_trec_qrels(qrels, tmp_path / "qrels.trec")
    return tmp_path


def _evaluate(capsys, *args):
    import json

    assert main(["evaluate", *map(str, args), "--measures", "RR@10", "nDCG@10", "R@2"]) == 0
    return json.loads(capsys.readouterr().out)


def test_evaluate_gives_the_same_numbers_for_trec_and_parquet_inputs(tmp_path, capsys):
    files = _write_parquet_and_trec(tmp_path)
    parquet = _evaluate(capsys, files / "run.parquet", files / "qrels.parquet")
    assert parquet == {"RR@10": 0.5, "nDCG@10": parquet["nDCG@10"], "R@2": 0.75} and 0 < parquet["nDCG@10"] < 1
    for run, qrels in (("run.trec", "qrels.trec"), ("run.parquet", "qrels.trec"), ("run.trec", "qrels.parquet")):
        assert _evaluate(capsys, files / run, files / qrels) == parquet, (run, qrels)


def test_evaluate_reports_bad_inputs_by_file_and_line(tmp_path, capsys):
    files = _write_parquet_and_trec(tmp_path)
    lines = (files / "run.trec").read_text().splitlines()
    cases = {
        "missing.trec": (None, "missing.trec: ranking file does not exist"),
        "bad_rank.trec": ("\n".join(lines[:2] + ["q2 Q0 d2 first 0.75 test"]) + "\n",
                          "bad_rank.trec, line 3: rank 'first' is not an integer"),
        "fields.tsv": ("q1\td1\t3\n", "fields.tsv, line 1: expected 6 fields separated by whitespace, found 3"),
        "twice.trec": ("\n".join(lines[:2] + [lines[0]]) + "\n", "twice.trec, line 3: document 'd1' is ranked twice"),
        "empty.trec": ("", "empty.trec: the ranking file holds no ranked documents"),
        "binary.bin": (b"\x89PNG\r\n\x1a\n\xff\xfe", "binary.bin, line 1: invalid UTF-8"),
    }
    for name, (content, message) in cases.items():
        if isinstance(content, bytes):
            (tmp_path / name).write_bytes(content)
        elif content is not None:
            (tmp_path / name).write_text(content)
        assert main(["evaluate", str(tmp_path / name), str(files / "qrels.parquet")]) == 2, name
        err = capsys.readouterr().err
        assert err.startswith("hardneg: error: ") and message in err and "Traceback" not in err, (name, err)
    # a Parquet file of another kind, qrels given as the run, and a malformed TREC qrels line
    assert main(["evaluate", str(files / "qrels.parquet"), str(files / "qrels.parquet")]) == 2
    assert "qrels.parquet: not a ranking table: missing column(s) rank, score" in capsys.readouterr().err
    (tmp_path / "bad.qrels").write_text("q1 0 d2 1\nq2 0 d4 very\n")
    assert main(["evaluate", str(files / "run.trec"), str(tmp_path / "bad.qrels")]) == 2
    assert "bad.qrels, line 2:" in capsys.readouterr().err
    assert main(["evaluate", str(files / "run.trec"), str(files / "qrels.trec"), "--measures", "MRR@ten"]) == 2
    assert "--measures: 'MRR@ten' is not an ir-measures measure" in capsys.readouterr().err


def test_prepared_datasets_carry_trec_qrels_equal_to_the_parquet_ones(tmp_path):
    from hardneg.datasets.prepare import prepare_dataset
    from hardneg.datasets.qrels import load_qrels
    from hardneg.io import artifacts

    prepare_dataset({"adapter": "synthetic", "num_docs": 40, "docs_per_cluster": 10,
                     "concept_vocab": 100, "num_queries": {"train": 8, "test": 4}, "seed": 3}, tmp_path)
    for split in ("train", "test"):
        parquet = artifacts.read_table(artifacts.QRELS, tmp_path / "qrels" / f"{split}.parquet")
        trec = tmp_path / "qrels" / f"{split}.trec"
        assert trec.read_text().splitlines()[0].split(" ")[1] == "0"
        assert load_qrels(trec).equals(parquet)


# ------------------------------------------------------------------------------------------ help and version
def test_every_command_has_help_and_there_is_a_version(capsys):
    import argparse

    import pytest

    from hardneg import __version__
    from hardneg.cli import build_parser

    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0 and capsys.readouterr().out.strip() == f"hardneg {__version__}"
    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices
    assert {"check-config", "init", "methods", "evaluate", "audit"} <= set(commands)
    for name, command in commands.items():
        with pytest.raises(SystemExit) as exit_:
            main([name, "--help"])
        out = capsys.readouterr().out
        assert exit_.value.code == 0 and out.startswith(f"usage: hardneg {name}"), name
        for action in command._actions:  # every option and argument is described
            assert action.help, f"hardneg {name}: {action.dest} has no help"


# --------------------------------------------------------------------------------------- errors name the file
def test_a_config_error_names_the_file_and_a_folder_is_not_a_config(tmp_path, capsys):
    empty = tmp_path / "empty.yaml"
    empty.write_text("")
    assert main(["check-config", str(empty)]) == 2
    assert capsys.readouterr().err == f"hardneg: error: {empty}: config key 'datasets': required key is missing\n"
    assert main(["check-config", str(tmp_path)]) == 2
    assert capsys.readouterr().err.startswith(f"hardneg: error: {tmp_path}: is a folder")
    assert main(["table", "--config", str(tmp_path)]) == 2
    assert capsys.readouterr().err.startswith(f"hardneg: error: {tmp_path}: is a folder")


def test_counts_below_their_minimum_are_refused_before_anything_is_read(capsys):
    import pytest

    for argv, message in ((["audit", "star", "--qid", "q1", "--top", "-1"], "argument --top: must be at least 0, got -1"),
                          (["export", "hardnegs", "star", "--format", "jsonl", "--output", "x", "--negatives", "0"],
                           "argument --negatives: expected a number of at least 1 or all, got '0'"),
                          (["audit", "star", "--qid", "q1", "--top", "ten"], "argument --top: expected an integer, "
                                                                             "got 'ten'")):
        with pytest.raises(SystemExit) as exit_:
            main(argv)
        assert exit_.value.code == 2 and message in capsys.readouterr().err, argv


# ------------------------------------------------------------------------------------------- hardneg table
GOOD_METRICS = {"measures": {"RR@10": 0.25, "nDCG@10": 0.5, "R@100": 0.75},
                "pairwise_errors": {"top200_pairwise_errors": 3.0, "total_pairwise_errors": 9.0,
                                    "total_is_lower_bound": False}}


def _corrupt(change):
    import copy

    metrics = copy.deepcopy(GOOD_METRICS)
    change(metrics)
    return metrics


CORRUPT_METRICS = {
    "not-json": ('{"measures": {"RR@10": 0.25,\n  "nDCG@10": }', r"metrics.json, line 2: invalid JSON: Expecting value "
                                                                  r"\(column 14\)"),
    "not-utf8": (b"\xff\xfe{}", r"metrics.json: invalid UTF-8"),
    "array": ([GOOD_METRICS], r"metrics.json: holds an array, not the JSON object of a run's metrics"),
    "null": (None, r"metrics.json: holds null, not the JSON object"),
    "no-measures": (_corrupt(lambda m: m.pop("measures")), r"metrics.json: measures is missing"),
    "measures-list": (_corrupt(lambda m: m.update(measures=[0.25])), r"metrics.json: measures is an array, not an "
                                                                      r"object"),
    "missing-measure": (_corrupt(lambda m: m["measures"].pop("nDCG@10")), r"metrics.json: measures.nDCG@10 is missing"),
    "string-measure": (_corrupt(lambda m: m["measures"].update({"RR@10": "0.25"})),
                       r'metrics.json: measures.RR@10 is a string \("0.25"\), not a number'),
    "boolean-measure": (_corrupt(lambda m: m["measures"].update({"R@100": True})),
                        r"metrics.json: measures.R@100 is a boolean \(true\), not a number"),
    "nan-measure": (_corrupt(lambda m: m["measures"].update({"RR@10": float("nan")})),
                    r"metrics.json: measures.RR@10 is NaN, not a finite number"),
    "infinite-errors": (_corrupt(lambda m: m["pairwise_errors"].update(total_pairwise_errors=float("inf"))),
                        r"metrics.json: pairwise_errors.total_pairwise_errors is Infinity, not a finite number"),
    "no-pairwise": (_corrupt(lambda m: m.pop("pairwise_errors")), r"metrics.json: pairwise_errors is missing"),
    "bound-not-boolean": (_corrupt(lambda m: m["pairwise_errors"].update(total_is_lower_bound="no")),
                          r"pairwise_errors.total_is_lower_bound is a string, not a boolean"),
}


def _write_metrics(path, content):
    import json

    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif isinstance(content, str):
        path.write_text(content)
    else:
        path.write_text(json.dumps(content))


def test_table_prints_a_run_from_good_metrics(tmp_path, capsys):
    _write_metrics(tmp_path / "results" / "star" / "metrics.json", GOOD_METRICS)
    assert main(["table", "star", "--config", str(REPO / "config" / "config.yaml"),
                 "--results", str(tmp_path / "results")]) == 0
    assert capsys.readouterr().out.splitlines()[2] == "| star | 0.250 | 0.500 | 0.750 | 3.0 | 9.0 |"


def test_table_names_a_corrupt_metrics_file_and_what_is_wrong(tmp_path, capsys):
    import re

    for kind, (content, message) in CORRUPT_METRICS.items():
        results = tmp_path / kind
        path = results / "star" / "metrics.json"
        _write_metrics(path, content)
        assert main(["table", "star", "--config", str(REPO / "config" / "config.yaml"),
                     "--results", str(results)]) == 2, kind
        err = capsys.readouterr().err
        assert err.startswith(f"hardneg: error: {path}") and err.count("\n") == 1, (kind, err)
        assert re.search(message, err) and f"rebuild it with snakemake --force {path}" in err, (kind, err)
    (tmp_path / "folder" / "star" / "metrics.json").mkdir(parents=True)
    assert main(["table", "star", "--config", str(REPO / "config" / "config.yaml"),
                 "--results", str(tmp_path / "folder")]) == 2
    assert "metrics.json: not a file: a run's metrics.json is the JSON file its evaluation writes" in \
        capsys.readouterr().err


# ------------------------------------------------------------------------------- data shown on the terminal
def test_labels_from_a_config_reach_the_terminal_escaped(tmp_path, capsys):
    import yaml

    _write_metrics(tmp_path / "results" / "star" / "metrics.json", GOOD_METRICS)
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    config["tables"]["results"] = [{"run": "star", "label": "STAR \x1b]0;owned\x07 \u202eruns"}]
    (tmp_path / "my.yaml").write_text(yaml.safe_dump(config))
    assert main(["table", "--config", str(tmp_path / "my.yaml"), "--results", str(tmp_path / "results")]) == 0
    out = capsys.readouterr().out
    assert "| STAR \\x1b]0;owned\\x07 \\u202eruns | 0.250 |" in out and "\x1b" not in out and "\u202e" not in out


# ------------------------------------------------------------------------------------------- hardneg init
def test_init_replaces_a_config_only_with_force(beir_folder, tmp_path, capsys, monkeypatch):
    folder = beir_folder(split="train")
    out = tmp_path / "mine.yaml"
    out.write_text("# my own config\n")
    assert main(["init", "--beir", str(folder), "--output", str(out)]) == 2
    assert capsys.readouterr().err == (f"hardneg: error: --output {out} already exists (a file): give --force to "
                                       "replace it, or another path\n")
    assert out.read_text() == "# my own config\n"
    assert main(["init", "--beir", str(folder), "--output", str(out), "--force"]) == 0
    assert out.read_text().startswith("# A hardneg config for your own data")
    monkeypatch.chdir(tmp_path)  # the results folder init keeps out of is ./results
    (tmp_path / "results").mkdir()
    assert main(["init", "--beir", str(folder), "--output", "results/my.yaml"]) == 2
    assert "--output results/my.yaml is inside the results folder results" in capsys.readouterr().err
    assert main(["init", "--beir", str(folder), "--output", ""]) == 2
    assert capsys.readouterr().err == "hardneg: error: --output is empty: give the path of the file to write\n"
    assert main(["init", "--beir", str(folder), "--output", str(tmp_path)]) == 2
    assert f"--output {tmp_path} is a folder; the config is written as one file" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["beir", "mine.yaml", "results"]
    assert list((tmp_path / "results").iterdir()) == []
