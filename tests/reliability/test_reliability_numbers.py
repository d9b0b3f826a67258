"""Bad numbers and bad evaluation inputs through the real entry points: ``hardneg evaluate`` on run and qrels
files (TREC text and Parquet), and ``snakemake`` on a tiny config (configuration values; texts of the dataset's
JSON-lines files).

Each case asserts that the command fails with one error, said once, naming the file and line or row (data) or
the dotted config key (configuration) and what is wrong; and that nothing partial is left (``hardneg evaluate``
writes no file; a failed workflow leaves no artifact and no ``.*.tmp`` temporary under ``results/``). The
Snakemake cases fail before any job runs (configuration) or in the first job, the dataset's preparation.
"""

from __future__ import annotations

import copy
import json
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.support.files import write_lines
from tests.support.reliability import check_failed_cleanly, temporaries
from tests.support.workflow import BIN, output_of, snakemake, write_config

pytestmark = pytest.mark.slow

HARDNEG = str(BIN / "hardneg")
TARGET = "results/datasets/tiny/stats.json"  # the first stage: config errors stop before it, data errors in it

# ------------------------------------------------------------------------------------- run and qrels files
RUN_ROWS = [("q1", "d1", 1, 3.5), ("q1", "d2", 2, 2.0), ("q2", "d3", 1, 1.5)]
QRELS_ROWS = [("q1", "d2", 1), ("q2", "d3", 2), ("q2", "d4", 0)]


def trec_run(path: Path, rows) -> Path:
    return write_lines(path, [f"{q} Q0 {d} {r} {s} test" for q, d, r, s in rows])


def trec_qrels(path: Path, rows) -> Path:
    return write_lines(path, [f"{q} 0 {d} {r}" for q, d, r in rows])


def parquet_run(path: Path, rows) -> Path:
    """A run as a user's tool might write it: float64 scores (NaN and infinity allowed), nulls where given."""
    qid, docid, rank, score = (list(c) for c in zip(*rows)) if rows else ([], [], [], [])
    pq.write_table(pa.table({"qid": pa.array(qid, pa.string()), "docid": pa.array(docid, pa.string()),
                             "rank": pa.array(rank, pa.int64()), "score": pa.array(score, pa.float64())}), path)
    return path


def parquet_qrels(path: Path, rows) -> Path:
    qid, docid, relevance = (list(c) for c in zip(*rows)) if rows else ([], [], [])
    pq.write_table(pa.table({"qid": pa.array(qid, pa.string()), "docid": pa.array(docid, pa.string()),
                             "relevance": pa.array(relevance, pa.int64())}), path)
    return path


def _bad_run(writer, name, rows):
    """A case's files: the bad run ``name`` and good TREC qrels → the command's arguments."""
    return lambda d: [writer(d / name, rows), trec_qrels(d / "qrels.txt", QRELS_ROWS)]


def _bad_qrels(writer, name, rows):
    return lambda d: [trec_run(d / "run.txt", RUN_ROWS), writer(d / name, rows)]


def _measures(*names):
    return lambda d: [trec_run(d / "run.txt", RUN_ROWS), trec_qrels(d / "qrels.txt", QRELS_ROWS), "--measures",
                      "RR@10", *names]


NAN, INF = float("nan"), float("inf")


# ----------------------------------------------------------------------------------------- the tiny config
CORPUS = ['{"_id": "d1", "title": "Cats", "text": "cats purr and sleep"}',
          '{"_id": "d2", "title": "Dogs", "text": "dogs bark at night"}',
          '{"_id": "d3", "title": "Fish", "text": "fish swim in water"}']
QUERIES = ['{"_id": "q1", "text": "do cats purr"}', '{"_id": "q2", "text": "barking dogs"}']
QRELS = ["query-id\tcorpus-id\tscore", "q1\td1\t1", "q2\td2\t2"]


def tiny_config(data: Path) -> dict:
    """BM25 twice (k1 apart) and their hybrid on a three-document BEIR folder."""
    return {"seed": 1, "dataset": "tiny", "evaluation": {"split": "test"},
            "datasets": {"tiny": {"adapter": "beir", "path": str(data / "beir"), "splits": ["test"]}},
            "runs": {"bm25": {"method": "bm25", "params": {"top_k": 10}},
                     "bm25_k1": {"method": "bm25", "params": {"top_k": 10, "k1": 1.2}},
                     "hybrid": {"method": "hybrid", "inputs": {"runs": ["bm25", "bm25_k1"]},
                                "params": {"alpha": 0.5}}}}


def _set(*keys_and_value):
    """A fault setting one config key (its parents made as needed)."""
    *keys, value = keys_and_value

    def fault(config: dict, data: Path) -> None:
        node = config
        for key in keys[:-1]:
            node = node.setdefault(key, {})
        node[keys[-1]] = value
    return fault


def _lines(name: str, lines: list[str]):
    """A fault rewriting one file of the data folder."""
    return lambda config, data: write_lines(data / name, lines)


def _trec_corpus(lines: list[str]):
    """A fault switching the dataset to a TREC collection whose corpus.jsonl holds ``lines``."""
    def fault(config: dict, data: Path) -> None:
        root = data / "trec"
        write_lines(root / "corpus.jsonl", lines)
        write_lines(root / "topics.test.txt", ["<top>", "<num> Number: 301", "<title> do cats purr", "</top>"])
        write_lines(root / "qrels.test.txt", ["301 0 d1 1"])
        config["datasets"]["tiny"] = {"adapter": "trec", "corpus": str(root / "corpus.jsonl"),
                                      "topics": {"test": str(root / "topics.test.txt")},
                                      "qrels": {"test": str(root / "qrels.test.txt")}}
    return fault


def _tuned_on_dev(alpha_grid=(0.0, 0.5, 1.0), **tune):
    """A fault tuning the hybrid's alpha over ``alpha_grid`` on a held-out split, dev (its qrels written), with
    ``tune``'s keys."""
    def fault(config: dict, data: Path) -> None:
        write_lines(data / "beir" / "qrels" / "dev.tsv", QRELS[:2])
        config["datasets"]["tiny"]["splits"] = ["test", "dev"]
        config["runs"]["hybrid"]["params"] = {"alpha": None, "alpha_grid": list(alpha_grid),
                                              "tune": {"split": "dev", **tune}}
    return fault


# ------------------------------------------------------------------------------------------------- the cases
@dataclass(frozen=True)
class Case:
    id: str
    entry: str  # evaluate: `hardneg evaluate`; config: Snakemake refuses before any job; job: the first job fails
    fault: Callable  # evaluate: (folder) -> arguments; config, job: (config, data folder) -> None
    expect: str  # the one error; {dir} is the case's folder


CASES = [
    # a run that is TREC text
    Case("trec-run-nan-score", "evaluate", _bad_run(trec_run, "run.txt", RUN_ROWS[:2] + [("q2", "d3", 1, "NaN")]),
         "{dir}/run.txt, line 3: score 'NaN' is not a finite number"),
    Case("trec-run-infinite-score", "evaluate",
         _bad_run(trec_run, "run.txt", RUN_ROWS[:2] + [("q2", "d3", 1, "-Infinity")]),
         "{dir}/run.txt, line 3: score '-Infinity' is not a finite number"),
    Case("trec-run-score-beyond-float32", "evaluate",
         _bad_run(trec_run, "run.txt", RUN_ROWS[:2] + [("q2", "d3", 1, "1e39")]),
         "{dir}/run.txt, line 3: score '1e39' is beyond the range of a 32-bit float"),
    Case("trec-run-duplicate-pair", "evaluate", _bad_run(trec_run, "run.txt", RUN_ROWS + [("q1", "d2", 3, 0.5)]),
         "{dir}/run.txt, line 4: document 'd2' is ranked twice for query 'q1' (first on line 2)"),
    Case("trec-run-empty", "evaluate", _bad_run(trec_run, "run.txt", []),
         "{dir}/run.txt: the ranking file holds no ranked documents"),
    # a run that is Parquet
    Case("parquet-run-nan-score", "evaluate",
         _bad_run(parquet_run, "run.parquet", RUN_ROWS[:2] + [("q2", "d3", 1, NAN)]),
         "{dir}/run.parquet: row 3: score nan is not a finite number"),
    Case("parquet-run-infinite-score", "evaluate",
         _bad_run(parquet_run, "run.parquet", [("q1", "d1", 1, INF)] + RUN_ROWS[1:]),
         "{dir}/run.parquet: row 1: score inf is not a finite number"),
    Case("parquet-run-score-beyond-float32", "evaluate",
         _bad_run(parquet_run, "run.parquet", RUN_ROWS[:2] + [("q2", "d3", 1, -1e39)]),
         "{dir}/run.parquet: row 3: score -1e+39 is beyond the range of a 32-bit float"),
    Case("parquet-run-duplicate-pair", "evaluate",
         _bad_run(parquet_run, "run.parquet", RUN_ROWS + [("q1", "d2", 3, 0.5)]),
         "{dir}/run.parquet: row 4: document 'd2' is ranked twice for query 'q1' (first on row 2)"),
    Case("parquet-run-null-docid", "evaluate",
         _bad_run(parquet_run, "run.parquet", RUN_ROWS[:1] + [("q1", None, 2, 2.0)]),
         "{dir}/run.parquet: row 2: docid is missing (null)"),
    Case("parquet-run-null-score", "evaluate",
         _bad_run(parquet_run, "run.parquet", RUN_ROWS[:2] + [("q2", "d3", 1, None)]),
         "{dir}/run.parquet: row 3: score is missing (null)"),
    Case("parquet-run-empty-qid", "evaluate", _bad_run(parquet_run, "run.parquet", RUN_ROWS + [("", "d1", 1, 1.0)]),
         "{dir}/run.parquet: row 4: qid '' is empty"),
    Case("parquet-run-empty", "evaluate", _bad_run(parquet_run, "run.parquet", []),
         "{dir}/run.parquet: the ranking file holds no ranked documents"),
    # qrels that are TREC text
    Case("trec-qrels-negative-relevance", "evaluate",
         _bad_qrels(trec_qrels, "qrels.txt", QRELS_ROWS[:2] + [("q2", "d4", -1)]),
         "{dir}/qrels.txt, line 3: relevance '-1' is negative"),
    Case("trec-qrels-nan-relevance", "evaluate",
         _bad_qrels(trec_qrels, "qrels.txt", QRELS_ROWS[:2] + [("q2", "d4", "nan")]),
         "{dir}/qrels.txt, line 3: relevance 'nan' is not an integer"),
    Case("trec-qrels-duplicate-judgement", "evaluate",
         _bad_qrels(trec_qrels, "qrels.txt", QRELS_ROWS + [("q1", "d2", 0)]),
         "{dir}/qrels.txt, line 4: duplicate judgement for query 'q1' and document 'd2' (first on line 1)"),
    Case("trec-qrels-empty", "evaluate", _bad_qrels(trec_qrels, "qrels.txt", []),
         "{dir}/qrels.txt: the qrels file holds no judgements"),
    # qrels that are Parquet
    Case("parquet-qrels-negative-relevance", "evaluate",
         _bad_qrels(parquet_qrels, "qrels.parquet", QRELS_ROWS[:2] + [("q2", "d4", -1)]),
         "{dir}/qrels.parquet: row 3: relevance -1 is negative"),
    Case("parquet-qrels-duplicate-judgement", "evaluate",
         _bad_qrels(parquet_qrels, "qrels.parquet", QRELS_ROWS + [("q1", "d2", 0)]),
         "{dir}/qrels.parquet: row 4: duplicate judgement for query 'q1' and document 'd2' (first on row 1)"),
    Case("parquet-qrels-null-qid", "evaluate",
         _bad_qrels(parquet_qrels, "qrels.parquet", [(None, "d1", 1)] + QRELS_ROWS),
         "{dir}/qrels.parquet: row 1: qid is missing (null)"),
    Case("parquet-qrels-empty", "evaluate", _bad_qrels(parquet_qrels, "qrels.parquet", []),
         "{dir}/qrels.parquet: the qrels file holds no judgements"),
    # measures on the command line
    Case("evaluate-measure-cutoff-zero", "evaluate", _measures("P@0"),
         "--measures: 'P@0' has cutoff 0: a cutoff (the number of top-ranked documents the measure reads) must be "
         "a positive integer"),
    Case("evaluate-measure-fractional-cutoff", "evaluate", _measures("nDCG@2.5"),
         "--measures: 'nDCG@2.5' has cutoff 2.5: a cutoff"),
    # configuration values
    Case("config-alpha-nan", "config", _set("runs", "hybrid", "params", "alpha", NAN),
         "config key 'runs.hybrid.params.alpha': expected a finite number, got nan"),
    Case("config-alpha-infinite", "config", _set("runs", "hybrid", "params", "alpha", INF),
         "config key 'runs.hybrid.params.alpha': expected a finite number, got inf"),
    Case("config-alpha-grid-nan", "config", _tuned_on_dev(alpha_grid=[0.0, NAN]),
         "config key 'runs.hybrid.params.alpha_grid.1': expected a finite number, got nan"),
    Case("config-k1-negative-infinity", "config", _set("runs", "bm25", "params", "k1", -INF),
         "config key 'runs.bm25.params.k1': expected a finite number, got -inf"),
    Case("config-global-seed-beyond-32-bits", "config", _set("seed", 2**64),
         f"config key 'seed': {2**64} is greater than the maximum of 4294967295"),
    Case("config-run-seed-beyond-32-bits", "config", _set("runs", "bm25", "seed", 2**32),
         "config key 'runs.bm25.seed': 4294967296 is greater than the maximum of 4294967295"),
    Case("config-measure-cutoff-zero", "config", _set("evaluation", "measures", ["RR@10", "P@0"]),
         "config key 'evaluation.measures': 'P@0' has cutoff 0: a cutoff"),
    Case("config-tuning-measure-cutoff-zero", "config", _tuned_on_dev(measure="RR@0"),
         "config key 'runs.hybrid.params.tune.measure': 'RR@0' has cutoff 0: a cutoff"),
    # texts of the dataset's JSON-lines files
    Case("corpus-lone-surrogate", "job", _lines("beir/corpus.jsonl", CORPUS + ['{"_id": "d4", "text": "\\ud800"}']),
         "{dir}/beir/corpus.jsonl, line 4: field 'text' holds a lone surrogate"),
    Case("queries-lone-surrogate", "job",
         _lines("beir/queries.jsonl", [QUERIES[0], '{"_id": "q\\udc002", "text": "barking dogs"}']),
         "{dir}/beir/queries.jsonl, line 2: field '_id' holds a lone surrogate"),
    Case("corpus-nan-literal", "job", _lines("beir/corpus.jsonl", CORPUS[:2] + ['{"_id": NaN, "text": "x"}']),
         "{dir}/beir/corpus.jsonl, line 3: NaN is not a JSON number"),
    Case("trec-corpus-lone-surrogate", "job",
         _trec_corpus(['{"_id": "d1", "text": "cats purr"}', '{"_id": "d2", "text": "\\udfff dogs"}']),
         "{dir}/trec/corpus.jsonl, line 2: field 'text' holds a lone surrogate"),
]
assert len(CASES) >= 25 and len({case.id for case in CASES}) == len(CASES)


def _evaluate(args: list) -> subprocess.CompletedProcess:
    return subprocess.run([HARDNEG, "evaluate", *map(str, args)], capture_output=True, text=True, timeout=120)


def _files(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_bad_number_or_evaluation_input_fails_with_one_clear_error(case, tmp_path, beir_folder):
    expect = case.expect.format(dir=tmp_path)
    if case.entry == "evaluate":
        args = case.fault(tmp_path)
        before = _files(tmp_path)
        result = _evaluate(args)
        assert result.returncode != 0, f"{case.id}: evaluate succeeded:\n{result.stdout}{result.stderr}"
        assert result.stdout == "" and "Traceback" not in result.stderr, result.stderr
        errors = [line for line in result.stderr.splitlines() if line.startswith("hardneg: error: ")]
        assert errors == [line for line in result.stderr.splitlines() if line], result.stderr  # the error alone
        assert len(errors) == 1 and errors[0].startswith(f"hardneg: error: {expect}"), result.stderr
        assert _files(tmp_path) == before  # nothing written
        return
    beir_folder(corpus=CORPUS, queries=QUERIES, qrels=QRELS)  # tmp_path / "beir"
    config = tiny_config(tmp_path)
    case.fault(config, tmp_path)
    workdir = tmp_path / "work"
    write_config(workdir, config)
    result = snakemake(workdir, TARGET)
    out = output_of(result)
    assert result.returncode != 0, f"{case.id}: the run succeeded:\n{out[-3000:]}"
    assert out.count(expect) == 1, f"{case.id}: {expect!r} not said once in:\n{out[-4000:]}"
    check_failed_cleanly(out, workdir / "results", before_jobs=case.entry == "config")


def test_evaluate_warns_when_the_run_shares_no_query_with_its_qrels(tmp_path):
    """The run is of other queries: the means are 0 and the warning says how many judged queries it answers."""
    run = trec_run(tmp_path / "run.txt", [("x1", "d1", 1, 2.0), ("x2", "d2", 1, 1.0)])
    for qrels in (trec_qrels(tmp_path / "qrels.txt", QRELS_ROWS), parquet_qrels(tmp_path / "qrels.parquet",
                                                                                 QRELS_ROWS)):
        result = _evaluate([run, qrels, "--measures", "RR@10", "nDCG@10"])
        assert result.returncode == 0, result.stderr
        assert json.loads(result.stdout) == {"RR@10": 0.0, "nDCG@10": 0.0}
        warning = "the ranking answers none of the 2 judged queries of the qrels: every mean is 0"
        assert result.stderr.count(f"hardneg: warning: {warning}") == 1 and "error" not in result.stderr, result.stderr


def test_evaluate_does_not_warn_when_the_run_answers_every_judged_query(tmp_path):
    result = _evaluate([trec_run(tmp_path / "run.txt", RUN_ROWS), parquet_qrels(tmp_path / "qrels.parquet",
                                                                                QRELS_ROWS)])
    assert result.returncode == 0 and result.stderr == "", result.stderr
    assert json.loads(result.stdout)["RR@10"] == pytest.approx((0.5 + 1.0) / 2)


def test_the_tiny_config_is_valid_and_prepares_its_dataset(tmp_path, beir_folder):
    """The cases' starting point runs: each case's failure is its fault's."""
    beir_folder(corpus=CORPUS, queries=QUERIES, qrels=QRELS)
    workdir = tmp_path / "work"
    write_config(workdir, copy.deepcopy(tiny_config(tmp_path)))
    result = snakemake(workdir, TARGET)
    assert result.returncode == 0, output_of(result)[-4000:]
    assert (workdir / TARGET).exists() and temporaries(workdir / "results") == []
    tuned = copy.deepcopy(tiny_config(tmp_path))
    _tuned_on_dev()(tuned, tmp_path)  # the tuned hybrid's cases start from a valid config too
    checked = subprocess.run([HARDNEG, "check-config", str(write_config(tmp_path / "tuned", tuned))],
                             capture_output=True, text=True, timeout=120)
    assert checked.returncode == 0 and "run hybrid: method hybrid" in checked.stdout, checked.stderr
