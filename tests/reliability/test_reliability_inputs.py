"""Bad input through the real entry point: ``snakemake`` on a tiny config, one case per way a data file or the
configuration can be wrong.

Each case asserts that the run fails with one error that names the file and line (data) or the dotted config
key (configuration) and says what is wrong; that nothing partial is left under ``results/`` (no artifact of the
failing stage, no ``.*.tmp`` temporary); and, for at least one case of every input category, that the same
command succeeds once the input is corrected.
"""

from __future__ import annotations

import copy
import uuid
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable

import pytest

from tests.support.files import write_lines
from tests.support.reliability import check_failed_cleanly, temporaries
from tests.support.workflow import output_of, snakemake, write_config

pytestmark = pytest.mark.slow

TARGET = "results/datasets/tiny/stats.json"  # the first stage: config errors stop before it, data errors in it
DATASET_ARTIFACTS = {"corpus.parquet", "stats.json", "queries", "qrels"}

DENSE = {"model": {"vocab_size": 500, "doc_max_length": 32, "query_max_length": 12,
                   "builtin": {"hidden_size": 32, "num_hidden_layers": 1, "num_attention_heads": 2,
                               "intermediate_size": 64}},
         "train": {"epochs": 1, "batch_size": 8, "learning_rate": 0.001},
         "search": {"top_k": 10}}


# ------------------------------------------------------------------------------------------ the valid inputs
def msmarco_files(root: Path) -> None:
    write_lines(root / "collection.tsv", ["1\tcats purr and sleep", "2\tdogs bark at night", "3\tfish swim"])
    write_lines(root / "queries.test.tsv", ["q1\tdo cats purr", "q2\tbarking dogs"])
    write_lines(root / "qrels.test.txt", ["q1 0 1 1", "q2 0 2 1"])


def trec_files(root: Path) -> None:
    write_lines(root / "corpus.jsonl", ['{"_id": "d1", "title": "Cats", "text": "cats purr and sleep"}',
                                        '{"_id": "d2", "title": "Dogs", "text": "dogs bark at night"}'])
    write_lines(root / "topics.test.txt", ["<top>", "<num> Number: 301", "<title> do cats purr", "</top>",
                                           "<top>", "<num> Number: 302", "<title> barking dogs", "</top>"])
    write_lines(root / "qrels.test.txt", ["301 0 d1 1", "302 0 d2 1"])


def dataset_config(kind: str, data: Path) -> dict:
    if kind == "beir":
        return {"adapter": "beir", "path": str(data / "beir"), "splits": ["test"]}
    if kind == "msmarco":
        root = data / "msmarco"
        return {"adapter": "msmarco_passage", "collection": str(root / "collection.tsv"),
                "queries": {"test": str(root / "queries.test.tsv")}, "qrels": {"test": str(root / "qrels.test.txt")}}
    if kind == "trec":
        root = data / "trec"
        return {"adapter": "trec", "corpus": str(root / "corpus.jsonl"),
                "topics": {"test": str(root / "topics.test.txt")}, "qrels": {"test": str(root / "qrels.test.txt")}}
    return {"adapter": "synthetic", "num_docs": 300, "docs_per_cluster": 20, "concept_vocab": 100,
            "num_queries": {"train": 20, "test": 10}}


def valid_config(kind: str, data: Path) -> dict:
    return {"seed": 1, "dataset": "tiny", "evaluation": {"split": "test"},
            "datasets": {"tiny": dataset_config(kind, data)},
            "runs": {"bm25": {"method": "bm25", "params": {"top_k": 10}}}}


@dataclass
class Inputs:
    """What a case may break: the data folder's files and the config (a dict, or ``text`` written verbatim)."""

    data: Path
    config: dict
    text: str | None = None

    def lines(self, name: str, lines: list[str] | bytes) -> None:
        write_lines(self.data / name, lines)

    def delete(self, name: str) -> None:
        (self.data / name).unlink()

    def runs(self, **runs) -> None:
        self.config["runs"].update(copy.deepcopy(runs))

    @property
    def tiny(self) -> dict:
        return self.config["datasets"]["tiny"]


@dataclass(frozen=True)
class Case:
    id: str
    kind: str  # the dataset the case starts from (and is corrected back to): beir, msmarco, trec, synthetic
    fault: Callable[[Inputs], None]
    expect: tuple[str, ...]  # what the one error says; {data} is the data folder
    at: str = "config"  # config: refused before any job; job: prepare_dataset fails
    rerun: bool = False  # run again with the input corrected
    category: str = ""


def _category(name: str, cases: list[Case]) -> list[Case]:
    return [replace(case, category=name) for case in cases]


def _warmup(**params) -> dict:
    merged = copy.deepcopy(DENSE)
    for section, values in params.items():
        merged.setdefault(section, {}).update(values)
    return {"method": "warmup", "inputs": {"negatives": "bm25"}, "params": merged}


def _set(*keys_and_value):
    *keys, value = keys_and_value

    def fault(inputs: Inputs) -> None:
        node = inputs.config
        for key in keys[:-1]:
            node = node.setdefault(key, {})
        node[keys[-1]] = value
    return fault


def _drop(*keys):
    def fault(inputs: Inputs) -> None:
        node = inputs.config
        for key in keys[:-1]:
            node = node[key]
        del node[keys[-1]]
    return fault


CORPUS = ['{"_id": "d1", "title": "Cats", "text": "cats purr and sleep"}',
          '{"_id": "d2", "title": "Dogs", "text": "dogs bark at night"}',
          '{"_id": "d3", "title": "Fish", "text": "fish swim in water"}']
QUERIES = ['{"_id": "q1", "text": "do cats purr"}', '{"_id": "q2", "text": "barking dogs"}']
QRELS = ["query-id\tcorpus-id\tscore", "q1\td1\t1", "q2\td2\t2"]
TRAVERSAL = "../" * 16 + f"tmp/x_{uuid.uuid4().hex}"  # from results/datasets/tiny/queries/ up to / and into /tmp

CASES = [
    *_category("BEIR files", [
        Case("duplicate-docid", "beir", lambda i: i.lines("beir/corpus.jsonl", CORPUS + [CORPUS[0]]),
             ("{data}/beir/corpus.jsonl, line 4: duplicate docid 'd1' (first seen on line 1)",), "job", rerun=True),
        Case("duplicate-qid", "beir", lambda i: i.lines("beir/queries.jsonl", QUERIES + [QUERIES[0]]),
             ("{data}/beir/queries.jsonl, line 3: duplicate qid 'q1' (first seen on line 1)",), "job"),
        Case("qrels-unknown-doc", "beir", lambda i: i.lines("beir/qrels/test.tsv", QRELS + ["q1\td9\t1"]),
             ("{data}/beir/qrels/test.tsv, line 4: unknown docid 'd9'",), "job"),
        Case("qrels-unknown-query", "beir", lambda i: i.lines("beir/qrels/test.tsv", QRELS + ["q9\td1\t1"]),
             ("{data}/beir/qrels/test.tsv, line 4: unknown qid 'q9'",), "job"),
        Case("empty-corpus", "beir", lambda i: i.lines("beir/corpus.jsonl", b""),
             ("{data}/beir/corpus.jsonl: the corpus holds no documents",), "job"),
        Case("malformed-json", "beir", lambda i: i.lines("beir/corpus.jsonl", [CORPUS[0], '{"_id": "d2", "text": }']),
             ("{data}/beir/corpus.jsonl, line 2: malformed JSON (Expecting value, column 23)",), "job"),
        Case("not-an-object", "beir", lambda i: i.lines("beir/queries.jsonl", [QUERIES[0], '["q2", "barking dogs"]']),
             ("{data}/beir/queries.jsonl, line 2: expected a JSON object, found list",), "job"),
        Case("missing-field", "beir", lambda i: i.lines("beir/queries.jsonl", [QUERIES[0], '{"_id": "q2"}']),
             ("{data}/beir/queries.jsonl, line 2: missing field 'text'",), "job"),
        Case("bad-utf8", "beir", lambda i: i.lines("beir/corpus.jsonl", (CORPUS[0] + "\n").encode() +
                                                    b'{"_id": "d2", "text": "caf\xe9"}\n'),
             ("{data}/beir/corpus.jsonl, line 2: invalid UTF-8 (invalid continuation byte at byte 26)",), "job"),
        Case("docid-with-space", "beir",
             lambda i: i.lines("beir/corpus.jsonl", CORPUS + ['{"_id": "d 4", "text": "x"}']),
             ("{data}/beir/corpus.jsonl, line 4: docid 'd 4' contains a space; ids must not contain whitespace",),
             "job",
             rerun=True),
        Case("qid-with-tab", "beir",
             lambda i: i.lines("beir/queries.jsonl", [QUERIES[0], '{"_id": "q\\t2", "text": "x"}']),
             ("{data}/beir/queries.jsonl, line 2: qid 'q\\t2' contains a tab; ids must not contain whitespace",),
             "job"),
        Case("docid-with-control-character", "beir",
             lambda i: i.lines("beir/corpus.jsonl", CORPUS + ['{"_id": "d\\u00074", "text": "x"}']),
             ("{data}/beir/corpus.jsonl, line 4: docid 'd\\x074' contains a control character",), "job"),
        Case("negative-relevance", "beir", lambda i: i.lines("beir/qrels/test.tsv", QRELS + ["q1\td3\t-1"]),
             ("{data}/beir/qrels/test.tsv, line 4: relevance '-1' is negative",), "job"),
        Case("non-integer-relevance", "beir", lambda i: i.lines("beir/qrels/test.tsv", QRELS + ["q1\td3\t0.5"]),
             ("{data}/beir/qrels/test.tsv, line 4: relevance '0.5' is not an integer",), "job"),
        Case("duplicate-judgement", "beir", lambda i: i.lines("beir/qrels/test.tsv", QRELS + ["q1\td1\t0"]),
             ("{data}/beir/qrels/test.tsv, line 4: duplicate judgement for query 'q1' and document 'd1' "
              "(first on line 2)",), "job"),
        Case("qrels-wrong-column-count", "beir", lambda i: i.lines("beir/qrels/test.tsv", QRELS + ["q1\td3"]),
             ("{data}/beir/qrels/test.tsv, line 4: expected 3 fields separated by tabs, found 2",), "job"),
        Case("empty-qrels", "beir", lambda i: i.lines("beir/qrels/test.tsv", QRELS[:1]),
             ("{data}/beir/qrels/test.tsv: the qrels file holds no judgements",), "job"),
        Case("missing-file", "beir", lambda i: i.delete("beir/queries.jsonl"),
             ("config key 'datasets.tiny': {data}/beir/queries.jsonl does not exist (the dataset is prepared from "
              "it)",), rerun=True),
        Case("missing-qrels-of-a-split", "beir", _set("datasets", "tiny", "splits", ["test", "dev"]),
             ("config key 'datasets.tiny': {data}/beir/qrels/dev.tsv does not exist",)),
        Case("missing-folder", "beir", _set("datasets", "tiny", "path", "/nonexistent/beir"),
             ("config key 'datasets.tiny': /nonexistent/beir/corpus.jsonl does not exist",)),
    ]),
    *_category("MS MARCO files", [
        Case("msmarco-collection-column-count", "msmarco",
             lambda i: i.lines("msmarco/collection.tsv", ["1\tcats purr", "2\tdogs\tbark", "3\tfish swim"]),
             ("{data}/msmarco/collection.tsv, line 2: expected 2 fields separated by tabs, found 3",), "job",
             rerun=True),
        Case("msmarco-queries-column-count", "msmarco",
             lambda i: i.lines("msmarco/queries.test.tsv", ["q1", "q2\tdogs"]),
             ("{data}/msmarco/queries.test.tsv, line 1: expected 2 fields separated by tabs, found 1",), "job"),
        Case("msmarco-qrels-column-count", "msmarco",
             lambda i: i.lines("msmarco/qrels.test.txt", ["q1 0 1 1", "q2 2 1"]),
             ("{data}/msmarco/qrels.test.txt, line 2: expected 4 fields separated by whitespace, found 3",), "job"),
        Case("msmarco-collection-with-a-header", "msmarco",
             lambda i: i.lines("msmarco/collection.tsv", ["id\ttext", "1\tcats purr", "2\tdogs bark"]),
             ("{data}/msmarco/collection.tsv, line 1: a header line (id, text): this format has none, and it "
              "would be read as an entry of id 'id'; remove the line",), "job"),
    ]),
    *_category("TREC files", [
        Case("trec-topics-without-qrels", "trec",
             lambda i: i.tiny["topics"].update(dev=i.tiny["topics"]["test"]),
             ("config key 'datasets.tiny.qrels.dev': required key is missing",), rerun=True),
        Case("trec-topic-not-closed", "trec",
             lambda i: i.lines("trec/topics.test.txt", ["<top>", "<num> Number: 301", "<title> do cats purr"]),
             ("{data}/trec/topics.test.txt, line 1: topic not closed with </top>",), "job", rerun=True),
    ]),
    *_category("the config file", [
        Case("invalid-yaml", "beir",
             lambda i: setattr(i, "text", "seed: 1\ndataset: tiny\nruns: {bm25: {method: bm25}\ndatasets: {}\n"),
             ("config/config.yaml, line 4: invalid YAML",), rerun=True),
        Case("yaml-not-a-mapping", "beir", lambda i: setattr(i, "text", "- seed\n- runs\n"),
             ("config/config.yaml: a config must be a mapping of keys, got a list",)),
        Case("duplicate-yaml-key", "beir",
             lambda i: setattr(i, "text", "seed: 1\nseed: 2\n"),
             ("config/config.yaml, line 2: invalid YAML: duplicate key 'seed' (first on line 1)",)),
    ]),
    *_category("config values", [
        Case("unknown-key", "beir", _set("runs", "bm25", "params", "k11", 1.0),
             ("config key 'runs.bm25.params.k11': unknown key; allowed keys: b, fields, k1",), rerun=True),
        Case("unknown-top-level-key", "beir", _set("evalution", {"split": "test"}),
             ("config key 'evalution': unknown key",)),
        Case("wrong-type", "beir", _set("runs", "bm25", "params", "top_k", "many"),
             ("config key 'runs.bm25.params.top_k': expected integer, got 'many' (str)",)),
        Case("negative-seed", "beir", _set("seed", -1),
             ("config key 'seed': -1 is less than the minimum of 0",)),
        Case("unknown-method", "beir", _set("runs", "bm25", "method", "bm26"),
             ("config key 'runs.bm25.method': must be one of", "got 'bm26'")),
        Case("unknown-adapter", "beir", _set("datasets", "tiny", "adapter", "beer"),
             ("config key 'datasets.tiny.adapter': must be one of synthetic, beir", "got 'beer'")),
        Case("missing-datasets", "beir", _drop("datasets"),
             ("config key 'datasets': required key is missing",)),
        Case("negative-batch-size", "beir", lambda i: i.runs(warmup=_warmup(train={"batch_size": -4})),
             ("config key 'runs.warmup.params.train.batch_size': -4 is less than the minimum of 2",)),
        Case("zero-batch-size", "beir", lambda i: i.runs(warmup=_warmup(train={"batch_size": 0})),
             ("config key 'runs.warmup.params.train.batch_size': 0 is less than the minimum of 2",)),
        Case("learning-rate-of-wrong-type", "beir", lambda i: i.runs(warmup=_warmup(train={"learning_rate": "fast"})),
             ("config key 'runs.warmup.params.train.learning_rate': expected number, got 'fast' (str)",)),
        Case("unknown-measure", "beir", _set("evaluation", "measures", ["RR@10", "Foo@10"]),
             ("config key 'evaluation.measures': 'Foo@10' is not an ir-measures measure",)),
        Case("run-name-with-slash", "beir", lambda i: i.runs(**{"bm25/b": {"method": "bm25"}}),
             ("config key 'runs.bm25/b': invalid name 'bm25/b'",)),
        Case("split-name-traversal", "synthetic", _set("datasets", "tiny", "num_queries", {"train": 20, TRAVERSAL: 10}),
             (f"config key 'datasets.tiny.num_queries.{TRAVERSAL}': invalid name",), rerun=True),
        Case("synthetic-concept-vocabulary-too-small", "synthetic", _set("datasets", "tiny", "concept_vocab", 30),
             ("config key 'datasets.tiny.concept_vocab':",)),
    ]),
    *_category("references between config keys", [
        Case("unknown-dataset", "beir", _set("dataset", "nope"),
             ("config key 'dataset': no dataset named 'nope' under 'datasets' (defined: tiny)",)),
        Case("unknown-evaluation-split", "beir", _set("evaluation", "split", "dev"),
             ("config key 'evaluation.split': dataset 'tiny' (used by run 'bm25') has no split 'dev'",)),
        Case("unknown-input-run", "beir", lambda i: i.runs(warmup={**_warmup(), "inputs": {"negatives": "bm99"}}),
             ("config key 'runs.warmup.inputs.negatives': no run named 'bm99'",), rerun=True),
        Case("input-of-the-wrong-kind", "beir",
             lambda i: i.runs(warmup=_warmup(), star={"method": "star", "params": DENSE,
                                                      "inputs": {"init": "bm25", "negatives": "warmup"}}),
             ("config key 'runs.star.inputs.init': run 'bm25' is a bm25 run, which has no model",)),
        Case("missing-required-role", "beir",
             lambda i: i.runs(warmup=_warmup(), star={"method": "star", "inputs": {"init": "warmup"}, "params": DENSE}),
             ("config key 'runs.star.inputs.negatives': required key is missing",)),
        Case("own-input", "beir", lambda i: i.runs(warmup={**_warmup(), "inputs": {"negatives": "warmup"}}),
             ("config key 'runs.warmup.inputs.negatives': a run cannot be its own input",)),
        Case("cyclic-inputs", "beir",
             lambda i: i.runs(a={"method": "star", "inputs": {"init": "b", "negatives": "b"}, "params": DENSE},
                              b={"method": "star", "inputs": {"init": "a", "negatives": "a"}, "params": DENSE}),
             ("runs depend on each other in a cycle: a -> b -> a",)),
        Case("unknown-target", "beir", _set("targets", ["bm25", "bm99"]),
             ("config key 'targets.1': no run named 'bm99'",)),
    ]),
    *_category("Faiss index settings", [
        Case("faiss-factory-typo", "synthetic", lambda i: i.runs(warmup=_warmup(index={"factory": "Flatt"})),
             ("config key 'runs.warmup.params.index.factory': 'Flatt' is not a Faiss index factory string",),
             rerun=True),
        Case("pq-not-dividing-the-dimension", "synthetic", lambda i: i.runs(warmup=_warmup(index={"factory": "PQ7"})),
             ("config key 'runs.warmup.params.index.factory': PQ7 needs a dimension divisible by 7",)),
        Case("ivf-lists-beyond-the-documents", "synthetic",
             lambda i: i.runs(warmup=_warmup(index={"factory": "IVF4096,Flat"})),
             ("config key 'runs.warmup.params.index.factory':", "IVF4096", "300")),
    ]),
]
assert len(CASES) >= 41 and len({case.id for case in CASES}) == len(CASES)


@pytest.fixture
def inputs(tmp_path, beir_folder):
    """Write the valid files of every format under ``tmp_path`` (again: a corrected re-run) and return them with
    the valid config of dataset ``kind``."""
    def build(kind: str) -> Inputs:
        beir_folder()  # tmp_path / "beir"
        msmarco_files(tmp_path / "msmarco")
        trec_files(tmp_path / "trec")
        return Inputs(tmp_path, valid_config(kind, tmp_path))
    return build


def _errors(out: str) -> str:
    """The lines of Snakemake's output that report an error (for assertion messages)."""
    return "\n".join(line for line in out.splitlines() if "Error" in line or "error" in line or ", line " in line)


def _fail(workdir: Path, case: Case, inputs: Inputs) -> str:
    write_config(workdir, inputs.text if inputs.text is not None else inputs.config)
    result = snakemake(workdir, TARGET)
    out = output_of(result)
    assert result.returncode != 0, f"{case.id}: the run succeeded:\n{out[-3000:]}"
    for text in case.expect:
        assert text.format(data=inputs.data) in out, f"{case.id}: {text!r} not in the output:\n{_errors(out)}"
    assert out.count(case.expect[0].format(data=inputs.data)) == 1, _errors(out)  # said once
    return out


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_bad_input_fails_with_one_clear_error_and_leaves_nothing(case, inputs, tmp_path):
    workdir = tmp_path / "work"
    broken = inputs(case.kind)
    case.fault(broken)
    out = _fail(workdir, case, broken)
    results = workdir / "results"
    check_failed_cleanly(out, results, before_jobs=case.at == "config")
    if case.at != "config":
        assert not DATASET_ARTIFACTS & set(p.name for p in (results / "datasets" / "tiny").iterdir())
    if case.id == "split-name-traversal":
        escaped = TRAVERSAL.rsplit("/", 1)[1]
        assert not Path(f"/tmp/{escaped}.parquet").exists() and not Path(f"/tmp/{escaped}").exists()
        assert not [p for p in workdir.rglob(f"{escaped}*")]
    if case.rerun:
        write_config(workdir, valid_config(case.kind, broken.data))
        inputs(case.kind)  # the files as they should be
        result = snakemake(workdir, TARGET)
        assert result.returncode == 0, f"{case.id}: the corrected run failed:\n{output_of(result)[-4000:]}"
        assert {"corpus.parquet", "stats.json", "queries", "qrels"} <= {
            p.name for p in (results / "datasets" / "tiny").iterdir()}
        assert temporaries(results) == []


def test_every_category_has_a_corrected_rerun():
    assert {case.category for case in CASES} == {case.category for case in CASES if case.rerun}
