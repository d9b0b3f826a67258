"""Bad input through the real ``hardneg`` command, in a subprocess: one case per way a user can get an argument,
an ``--output`` or an input file wrong.

Each case asserts that the command fails (exit status 2) with one error, said once, that names the option or the
file and says what is wrong; that no traceback is printed; and that nothing was written or changed: the names,
kinds, link targets and bytes of every file of the working folder (results, earlier exports, the user's files)
are the same after the command as before it. The working folder holds a finished run that every export of these
cases would succeed on with a good ``--output`` (the fixture exports it once per kind), so a refusal is the
output check's doing.

Not bad input, and so apart: a reader that goes away (``| head -1``) ends the command quietly with status 141,
and control characters of the data reach the terminal as visible escapes.
"""

from __future__ import annotations

import fcntl
import os
import socket
import stat
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from hardneg.io import artifacts
from hardneg.io.provenance import write_resolved
from tests.support import REPO
from tests.support.tables import HARDNEGS, POSITIVES, QRELS, RANKING, table
from tests.support.user_data import write_beir

pytestmark = pytest.mark.slow  # some 70 s: about 70 commands, each a new Python process

HARDNEG = str(Path(sys.executable).with_name("hardneg"))
CONFIG = str(REPO / "config" / "config.yaml")
BIG_NEGATIVES = 800  # query q5's: its audit prints far more than a pipe holds (64 KiB)

# The documents of tests/support/tables.py's hand-made mining, and q5 with many negatives. q1's text and its best
# negative n1 hold escape sequences and bidirectional overrides, as a hostile dataset may.
QUERIES = table(artifacts.QUERIES, [("q1", "why do cats purr \u202eyrtne"), ("q2", "do dogs bark"),
                                    ("q3", "where do fish swim"), ("q4", "when do birds sing"),
                                    ("q5", "which document is about many things")])
CORPUS = table(artifacts.CORPUS, [
    ("p1", "Purring", "Cats purr when they are content."), ("p2", "Cats", "A purr is a soft sound."),
    ("p3", "Dogs", "Dogs bark to warn."), ("p4", "Fish", "Fish swim in schools."),
    ("n1", "\x1b]0;owned\x07Barking", "Dogs \x1b[31mbark\x1b[0m at strangers.\rHIDDEN"),
    ("n2", "Wolves", "Wolves howl."), ("n3", "Owls", "Owls hunt at night."), ("m1", "Birds", "Birds sing."),
    ("m2", "Lions", "Lions roar."), ("m3", "Tigers", "Tigers are striped."), ("x", "Horses", "Horses gallop."),
    ("y", "Bees", "Bees buzz."), ("p5", "Everything", "A document about everything at once."),
    *((f"b{i:04d}", f"Topic {i}", f"Document {i} is about topic {i}, " + "and on, " * 20) for i in
      range(BIG_NEGATIVES)),
])
BIG = table(artifacts.HARDNEGS, [("q5", f"b{i:04d}", i + 1, 1.0 - i / BIG_NEGATIVES) for i in range(BIG_NEGATIVES)])
GOOD_METRICS = ('{"measures": {"RR@10": 0.25, "nDCG@10": 0.5, "R@100": 0.75}, "pairwise_errors": '
                '{"top200_pairwise_errors": 3.0, "total_pairwise_errors": 9.0, "total_is_lower_bound": false}}')
CORRUPT_METRICS = {
    "not-json": '{"measures": {"RR@10": 0.25,\n "nDCG@10": }}',
    "array": "[0.25, 0.5, 0.75]",
    "missing-keys": '{"measures": {"RR@10": 0.25, "nDCG@10": 0.5, "R@100": 0.75}}',
    "wrong-type": GOOD_METRICS.replace('"RR@10": 0.25', '"RR@10": "high"'),
    "non-finite": GOOD_METRICS.replace('"R@100": 0.75', '"R@100": NaN'),
}


def hardneg(*args: str, cwd: Path, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([HARDNEG, *args], cwd=cwd, capture_output=True, text=True, timeout=120, **kwargs)


def _write_run(results: Path) -> None:
    """Dataset 'toy' and the finished dense run 'star' (config, hard negatives mined from its ranking of the
    training queries, positive scores, a model's folder, its Flat index and the index's document ids, metrics), and
    run 'bm25' (its config)."""
    from hardneg.dense.backbone import ModelSpec
    from hardneg.dense.model import BiEncoder
    from hardneg.dense.tokenizer import train_wordpiece
    from hardneg.index import build_index, save_index
    from hardneg.pipeline.config import validate_params
    from tests.support.dense import TINY_MODEL

    data = results / "datasets" / "toy"
    artifacts.write_table(CORPUS, artifacts.CORPUS, data / "corpus.parquet")
    artifacts.write_table(QUERIES, artifacts.QUERIES, data / "queries" / "train.parquet")
    qrels = pa.concat_tables([QRELS, table(artifacts.QRELS, [("q5", "p5", 1)])])
    artifacts.write_table(qrels, artifacts.QRELS, data / "qrels" / "train.parquet")
    train_wordpiece(data / "corpus.parquet", data / "tokenizers" / "wordpiece-100", vocab_size=100)
    params = validate_params({"model": {"builtin": TINY_MODEL, "vocab_size": 100, "doc_max_length": 32,
                                        "query_max_length": 16}, "train": {"split": "train"},
                              "index": {"factory": "Flat"}})
    write_resolved({"name": "star", "method": "star", "seed": 0, "dataset": {"name": "toy"}, "evaluation": {},
                    "inputs": {"negatives": {"name": "warmup"}}, "params": params}, results / "star" / "config.yaml")
    write_resolved({"name": "bm25", "method": "bm25", "seed": 0, "dataset": {"name": "toy"}, "evaluation": {},
                    "inputs": {}, "params": {"top_k": 100}}, results / "bm25" / "config.yaml")
    artifacts.write_table(pa.concat_tables([HARDNEGS, BIG]), artifacts.HARDNEGS, results / "star" / "hardnegs.parquet")
    artifacts.write_table(POSITIVES, artifacts.POSITIVE_SCORES, results / "warmup" / "pools" / "positives_train.parquet")
    artifacts.write_table(RANKING, artifacts.RANKING, results / "star" / "rankings" / "train.parquet")
    model = BiEncoder.create(ModelSpec.from_params(params["model"]), vocab_size=100, pad_token_id=0, max_length=32,
                             seed=7)
    model.save(results / "star" / "model")
    vectors = np.random.default_rng(0).standard_normal((CORPUS.num_rows, model.dim)).astype(np.float32)
    save_index(build_index(vectors, "Flat"), results / "star" / "index" / "Flat.faiss")
    artifacts.write_table(pa.table({"id": CORPUS["docid"]}), artifacts.ROW_IDS,
                          results / "star" / "embeddings" / "corpus.ids.parquet")
    (results / "star" / "metrics.json").write_text(GOOD_METRICS)


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Path:
    """The working folder the commands run in: ``results/`` (run 'star', see :func:`_write_run`), earlier exports
    of each kind in ``exports/``, corrupt metrics in ``corrupt/<kind>/star/``, a BEIR folder, and the user's own
    files in ``user/``: a README, a config, a folder of notes, an empty folder, links, a FIFO and a socket."""
    root = tmp_path_factory.mktemp("cli")
    _write_run(root / "results")
    for args in (["hardnegs", "star", "--format", "jsonl", "--output", "exports/star.jsonl"],
                 ["hardnegs", "star", "--format", "hf-dataset", "--output", "exports/hf"],
                 ["index", "star", "--output", "exports/faiss"]):
        done = hardneg("export", *args, cwd=root)
        assert done.returncode == 0 and done.stdout.startswith("wrote exports/"), done.stderr
    for kind, text in CORRUPT_METRICS.items():
        (root / "corrupt" / kind / "star").mkdir(parents=True)
        (root / "corrupt" / kind / "star" / "metrics.json").write_text(text)
    (root / "corrupt" / "folder" / "star" / "metrics.json").mkdir(parents=True)
    write_beir(root / "beir")
    user = root / "user"
    (user / "notes").mkdir(parents=True)
    (user / "notes" / "todo.txt").write_text("keep me\n")
    (user / "empty").mkdir()
    (user / "README.md").write_text("# my project\n")
    (user / "my.yaml").write_text((REPO / "config" / "config.yaml").read_text())
    (user / "empty.yaml").write_text("")
    (user / "empty.trec").write_text("")
    os.symlink("README.md", user / "link.jsonl")
    os.symlink("nowhere.jsonl", user / "dangling.jsonl")
    os.symlink("notes", user / "dirlink")
    os.mkfifo(user / "fifo")
    with socket.socket(socket.AF_UNIX) as server:  # the socket file stays once the socket is closed
        server.bind(str(user / "sock"))
    return root


def snapshot(root: Path) -> dict[str, tuple]:
    """Every entry under ``root``: its kind and bytes (a file), link target (a link) or kind alone (a folder, a
    FIFO, a socket), by path. Links are not followed; FIFOs are not opened."""
    entries = {}
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(folder) / name
            mode = os.lstat(path).st_mode
            key = str(path.relative_to(root))
            if stat.S_ISLNK(mode):
                entries[key] = ("link", os.readlink(path))
            elif stat.S_ISREG(mode):
                entries[key] = ("file", path.read_bytes())
            else:
                entries[key] = (stat.S_IFMT(mode),)
    return entries


@dataclass(frozen=True)
class Case:
    args: list[str]
    message: str  # the error, which names the option or the file and says what is wrong


def export_hardnegs(fmt: str, output: str, *more: str) -> list[str]:
    return ["export", "hardnegs", "star", "--format", fmt, "--output", output, *more]


def export_index(output: str, *more: str) -> list[str]:
    return ["export", "index", "star", "--output", output, *more]


def init(output: str, *more: str) -> list[str]:
    return ["init", "--beir", "beir", "--output", output, *more]


def table_of(results: str, run: str = "star") -> list[str]:
    return ["table", run, "--config", CONFIG, "--results", results]


FIFO = "--output user/fifo is a FIFO (named pipe), not a {}: hardneg writes only regular files and folders"
INSIDE = "is inside the results folder results, where the workflow keeps its artifacts: give a path outside it, " \
         "or --force to write there anyway"
CASES = {
    # export hardnegs, the file formats
    "hardnegs-jsonl-over-a-users-file": Case(export_hardnegs("jsonl", "user/README.md"),
                                             "--output user/README.md already exists (a file): give --force"),
    "hardnegs-jsonl-over-an-earlier-export": Case(export_hardnegs("jsonl", "exports/star.jsonl"),
                                                  "--output exports/star.jsonl already exists (a file)"),
    "hardnegs-tevatron-over-the-run-artifact": Case(export_hardnegs("tevatron", "results/star/hardnegs.parquet"),
                                                    f"--output results/star/hardnegs.parquet {INSIDE}"),
    "hardnegs-jsonl-new-file-in-results": Case(export_hardnegs("jsonl", "results/star/h.jsonl"),
                                               f"--output results/star/h.jsonl {INSIDE}"),
    "hardnegs-jsonl-fifo-with-force": Case(export_hardnegs("jsonl", "user/fifo", "--force"), FIFO.format("file")),
    "hardnegs-tevatron-socket-with-force": Case(export_hardnegs("tevatron", "user/sock", "--force"),
                                                "--output user/sock is a socket, not a file"),
    "hardnegs-jsonl-symlink-with-force": Case(export_hardnegs("jsonl", "user/link.jsonl", "--force"),
                                              "--output user/link.jsonl is a symbolic link (to README.md): writing "
                                              "would replace the link, not what it points to"),
    "hardnegs-tevatron-dangling-symlink": Case(export_hardnegs("tevatron", "user/dangling.jsonl"),
                                               "--output user/dangling.jsonl is a symbolic link (to nowhere.jsonl)"),
    "hardnegs-jsonl-a-folder-with-force": Case(export_hardnegs("jsonl", "user/notes", "--force"),
                                               "--output user/notes is a folder; the jsonl export is written as one "
                                               "file"),
    "hardnegs-jsonl-empty-output": Case(export_hardnegs("jsonl", ""),
                                        "--output is empty: give the path of the file to write"),
    "hardnegs-jsonl-under-a-file": Case(export_hardnegs("jsonl", "user/README.md/h.jsonl", "--force"),
                                        "--output user/README.md/h.jsonl cannot be written: "),
    # export hardnegs, the folder formats
    "hardnegs-hf-over-an-earlier-export": Case(export_hardnegs("hf-dataset", "exports/hf"),
                                               "--output exports/hf already exists (an earlier hf-dataset export): "
                                               "give --force"),
    "hardnegs-hf-over-a-users-folder-with-force": Case(export_hardnegs("hf-dataset", "user/notes", "--force"),
                                                       "--output user/notes is a folder that holds something other "
                                                       "than a hf-dataset export"),
    "hardnegs-hf-empty-folder": Case(export_hardnegs("hf-dataset", "user/empty"),
                                     "--output user/empty already exists (an empty folder): give --force"),
    "hardnegs-hf-fifo-with-force": Case(export_hardnegs("hf-dataset", "user/fifo", "--force"),
                                         FIFO.format("folder")),
    "hardnegs-st-over-a-file-with-force": Case(export_hardnegs("sentence-transformers", "user/README.md", "--force"),
                                               "--output user/README.md is a file; the sentence-transformers export "
                                               "is written as a folder"),
    "hardnegs-st-in-results": Case(export_hardnegs("sentence-transformers", "results/star/st"),
                                   f"--output results/star/st {INSIDE}"),
    "hardnegs-st-linked-folder-with-force": Case(export_hardnegs("sentence-transformers", "user/dirlink", "--force"),
                                                 "--output user/dirlink is a symbolic link (to notes)"),
    "hardnegs-st-the-results-folder-with-force": Case(export_hardnegs("sentence-transformers", "results", "--force"),
                                                      "--output results is a folder that holds something other than "
                                                      "a sentence-transformers export"),
    # export hardnegs, other arguments
    "hardnegs-negatives-zero": Case(export_hardnegs("jsonl", "user/h.jsonl", "--negatives", "0"),
                                    "argument --negatives: expected a number of at least 1 or all, got '0'"),
    "hardnegs-negatives-negative": Case(export_hardnegs("jsonl", "user/h.jsonl", "--negatives", "-3"),
                                        "argument --negatives: expected a number of at least 1 or all, got '-3'"),
    "hardnegs-unknown-format": Case(export_hardnegs("csv", "user/h.csv"), "argument --format: invalid choice: 'csv'"),
    "hardnegs-st-format-for-jsonl": Case(export_hardnegs("jsonl", "user/h.jsonl", "--st-format", "n-tuple"),
                                         "--st-format and --title-separator apply to --format sentence-transformers "
                                         "only"),
    "hardnegs-unknown-run": Case(["export", "hardnegs", "nope", "--format", "jsonl", "--output", "user/h.jsonl"],
                                 "run 'nope' has no results folder: results/nope does not exist (runs with results: "
                                 "bm25, star)"),
    "hardnegs-run-without-negatives": Case(["export", "hardnegs", "bm25", "--format", "jsonl", "--output", "u.jsonl"],
                                           "run bm25 (method bm25) mines no hard negatives"),
    # the fixes a command suggests: only ones that work
    "compare-a-folder-that-is-no-run": Case(["compare", "datasets", "bm25"],
                                            "'datasets' is not a run: results/datasets holds the prepared datasets"),
    "compare-html-over-an-artifact-with-force": Case(["compare", "bm25", "star", "--html", "results/star/metrics.json",
                                                      "--force"],
                                                     "--html results/star/metrics.json is a file of the results "
                                                     "folder results"),
    "verify-a-run-without-negatives": Case(["verify", "bm25"],
                                           "run 'bm25' mined no hard negatives: results/bm25/hardnegs.parquet does not "
                                           "exist, so there is nothing to verify (runs with one: star)"),
    # export index
    "index-over-an-earlier-export": Case(export_index("exports/faiss"),
                                         "--output exports/faiss already exists (an earlier Pyserini index export): "
                                         "give --force"),
    "index-in-results": Case(export_index("results/star/pyserini"), f"--output results/star/pyserini {INSIDE}"),
    "index-over-a-file-with-force": Case(export_index("user/README.md", "--force"),
                                         "--output user/README.md is a file; the Pyserini index export is written as "
                                         "a folder"),
    "index-over-a-users-folder-with-force": Case(export_index("user/notes", "--force"),
                                                 "--output user/notes is a folder that holds something other than a "
                                                 "Pyserini index export"),
    "index-linked-folder-with-force": Case(export_index("user/dirlink", "--force"),
                                           "--output user/dirlink is a symbolic link (to notes)"),
    "index-fifo-with-force": Case(export_index("user/fifo", "--force"), FIFO.format("folder")),
    "index-empty-output": Case(export_index(""), "--output is empty: give the path of the folder to write"),
    "index-unknown-index": Case(export_index("user/faiss", "--index", "IVF4_Flat"),
                                "run star has no index 'IVF4_Flat': results/star/index/IVF4_Flat.faiss is missing; "
                                "the indexes built are: Flat"),
    # init
    "init-over-a-users-config": Case(init("user/my.yaml"), "--output user/my.yaml already exists (a file): give "
                                                           "--force"),
    "init-a-folder-with-force": Case(init("user/notes", "--force"),
                                     "--output user/notes is a folder; the config is written as one file"),
    "init-empty-output": Case(init(""), "--output is empty: give the path of the file to write"),
    "init-in-results": Case(init("results/my.yaml"), f"--output results/my.yaml {INSIDE}"),
    "init-symlink-with-force": Case(init("user/link.jsonl", "--force"), "--output user/link.jsonl is a symbolic link"),
    "init-fifo-with-force": Case(init("user/fifo", "--force"), FIFO.format("file")),
    "init-not-a-beir-folder": Case(["init", "--beir", "user/notes", "--output", "user/new.yaml"],
                                   "user/notes/corpus.jsonl is missing (a BEIR folder has corpus.jsonl"),
    # check-config
    "check-config-a-folder": Case(["check-config", "user/notes"], "user/notes: is a folder"),
    "check-config-missing-file": Case(["check-config", "user/none.yaml"], "user/none.yaml: no such config file"),
    "check-config-empty-file": Case(["check-config", "user/empty.yaml"],
                                    "user/empty.yaml: config key 'datasets': required key is missing"),
    "check-config-unknown-option": Case(["check-config", "--strict"], "unrecognized arguments: --strict"),
    # evaluate
    "evaluate-a-folder": Case(["evaluate", "user/notes", "user/empty.trec"], "user/notes: not a ranking file: it is a "
                                                                             "folder"),
    "evaluate-missing-file": Case(["evaluate", "user/none.trec", "user/empty.trec"],
                                  "user/none.trec: ranking file does not exist"),
    "evaluate-empty-file": Case(["evaluate", "user/empty.trec", "user/empty.trec"],
                                "user/empty.trec: the ranking file holds no ranked documents"),
    "evaluate-no-qrels-argument": Case(["evaluate", "user/empty.trec"],
                                       "the following arguments are required: qrels"),
    # table
    "table-config-a-folder": Case(["table", "--config", "user/notes"], "user/notes: is a folder"),
    "table-config-missing": Case(["table", "--config", "user/none.yaml"], "user/none.yaml: no such config file"),
    "table-config-empty": Case(["table", "--config", "user/empty.yaml"],
                               "user/empty.yaml: config key 'datasets': required key is missing"),
    "table-metrics-not-json": Case(table_of("corrupt/not-json"),
                                   "corrupt/not-json/star/metrics.json, line 2: invalid JSON: Expecting value "
                                   "(column 13)"),
    "table-metrics-an-array": Case(table_of("corrupt/array"), "corrupt/array/star/metrics.json: holds an array, not "
                                                              "the JSON object of a run's metrics"),
    "table-metrics-missing-keys": Case(table_of("corrupt/missing-keys"),
                                       "corrupt/missing-keys/star/metrics.json: pairwise_errors is missing"),
    "table-metrics-wrong-type": Case(table_of("corrupt/wrong-type"),
                                     'corrupt/wrong-type/star/metrics.json: measures.RR@10 is a string ("high"), '
                                     "not a number"),
    "table-metrics-non-finite": Case(table_of("corrupt/non-finite"),
                                     "corrupt/non-finite/star/metrics.json: measures.R@100 is NaN, not a finite "
                                     "number"),
    "table-metrics-a-folder": Case(table_of("corrupt/folder"), "corrupt/folder/star/metrics.json: not a file"),
    "table-unknown-run": Case(table_of("results", "nope"), f"{CONFIG} has no run 'nope'; its runs: bm25, warmup"),
    "table-run-without-metrics": Case(table_of("results", "warmup"),
                                      "run warmup has no metrics: results/warmup/metrics.json is missing; build it "
                                      f"with snakemake --cores all results/warmup/metrics.json --configfile {CONFIG}"),
    # audit
    "audit-results-is-a-file": Case(["audit", "star", "--qid", "q1", "--results", "user/README.md"],
                                    "run 'star' has no results folder: user/README.md/star does not exist"),
    "audit-unknown-run": Case(["audit", "nope", "--qid", "q1"], "run 'nope' has no results folder"),
    "audit-an-experiments-folder": Case(["audit", "pq_matrix", "--qid", "q1"],
                                        "'pq_matrix' is not a run: results/pq_matrix holds the ADORE PQ experiment"),
    "audit-unknown-query": Case(["audit", "star", "--qid", "q9"], "query 'q9' is unknown to dataset 'toy'"),
    "audit-top-negative": Case(["audit", "star", "--qid", "q1", "--top", "-1"],
                               "argument --top: must be at least 0, got -1"),
    "audit-no-qid": Case(["audit", "star"], "the following arguments are required: --qid"),
}


@pytest.mark.parametrize("case", list(CASES.values()), ids=list(CASES))
def test_bad_input_fails_with_one_clear_error_and_changes_nothing(work, case):
    before = snapshot(work)
    done = hardneg(*case.args, cwd=work)
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    assert "Traceback" not in done.stdout + done.stderr, done.stderr
    assert done.stdout == ""
    errors = [line for line in done.stderr.splitlines() if "error:" in line]
    assert len(errors) == 1 and errors[0].startswith("hardneg"), done.stderr
    assert done.stderr.count(case.message) == 1, done.stderr
    assert snapshot(work) == before


def test_the_cases_cover_what_they_should():
    assert len(CASES) >= 25
    for fmt in ("jsonl", "tevatron", "hf-dataset", "sentence-transformers"):
        assert any(case.args[:5] == ["export", "hardnegs", "star", "--format", fmt] for case in CASES.values()), fmt


def test_the_same_commands_succeed_with_a_good_output(work, tmp_path):
    """The run behind the cases exports with a good --output, and --force replaces an earlier export."""
    out = tmp_path / "h.jsonl"
    done = hardneg(*export_hardnegs("jsonl", str(out), "--negatives", "2"), cwd=work)
    assert done.returncode == 0 and done.stdout == f"wrote {out}: jsonl, 3 rows of 3 training queries\n", done.stderr
    first = out.read_bytes()
    assert hardneg(*export_hardnegs("jsonl", str(out), "--negatives", "1"), cwd=work).returncode == 2
    assert out.read_bytes() == first
    done = hardneg(*export_hardnegs("jsonl", str(out), "--negatives", "1", "--force"), cwd=work)
    assert done.returncode == 0 and len(out.read_bytes()) < len(first), done.stderr
    done = hardneg(*export_index(str(tmp_path / "faiss")), cwd=work)
    assert done.returncode == 0 and (tmp_path / "faiss" / "encoder" / "hardneg.json").is_file(), done.stderr
    done = hardneg(*init(str(tmp_path / "my.yaml")), cwd=work)
    assert done.returncode == 0 and (tmp_path / "my.yaml").read_text().startswith("# A hardneg config"), done.stderr
    done = hardneg(*table_of("results"), cwd=work)
    assert done.returncode == 0 and "| star | 0.250 | 0.500 | 0.750 | 3.0 | 9.0 |" in done.stdout, done.stderr


# ---------------------------------------------------------------------------------------- a reader goes away
def test_a_reader_that_stops_after_one_line_ends_the_command_quietly(work):
    """``hardneg audit ... | head -1``: the audit of q5 (800 negatives, 150 kB) is far more than the pipe holds
    (made as small as a pipe gets), so the command is still writing when head exits."""
    read, write = os.pipe()
    fcntl.fcntl(write, fcntl.F_SETPIPE_SZ, 4096)
    audit = subprocess.Popen([HARDNEG, "audit", "star", "--qid", "q5", "--top", str(BIG_NEGATIVES)], cwd=work,
                             stdout=write, stderr=subprocess.PIPE, text=True)
    os.close(write)
    with os.fdopen(read) as pipe:
        head = subprocess.run(["head", "-1"], stdin=pipe, capture_output=True, text=True, timeout=120)
    assert head.stdout == "query q5: which document is about many things\n"
    assert audit.wait(timeout=120) == 141 and audit.stderr.read() == ""
    audit.stderr.close()


EVALUATE = ["evaluate", "results/star/rankings/train.parquet", "results/datasets/toy/qrels/train.parquet"]


@pytest.mark.parametrize("args", [["methods"], ["check-config", CONFIG], EVALUATE],
                         ids=["methods", "check-config", "evaluate"])
def test_a_closed_stdout_ends_the_command_quietly(work, args):
    """The reader is gone before the command writes anything: its first write meets a closed pipe."""
    assert hardneg(*args, cwd=work).returncode == 0  # with a reader, the command prints and succeeds
    read, write = os.pipe()
    os.close(read)
    try:
        done = subprocess.run([HARDNEG, *args], cwd=work, stdout=write, stderr=subprocess.PIPE, text=True,
                              timeout=120)
    finally:
        os.close(write)
    assert done.returncode == 141 and done.stderr == ""


def test_help_on_a_closed_stdout_prints_no_traceback(work):
    read, write = os.pipe()
    os.close(read)
    try:
        done = subprocess.run([HARDNEG, "table", "--help"], cwd=work, stdout=write, stderr=subprocess.PIPE, text=True,
                              timeout=120)
    finally:
        os.close(write)
    assert done.returncode in (0, 141) and done.stderr == ""  # argparse itself ignores a failed write of its help


def test_an_error_still_reaches_stderr_when_stdout_is_closed(work):
    read, write = os.pipe()
    os.close(read)
    try:
        done = subprocess.run([HARDNEG, "evaluate", "user/none.trec", "user/empty.trec"], cwd=work, stdout=write,
                              stderr=subprocess.PIPE, text=True, timeout=120)
    finally:
        os.close(write)
    assert done.returncode == 2
    assert done.stderr == "hardneg: error: user/none.trec: ranking file does not exist\n"


# ------------------------------------------------------------------------------------- data on the terminal
def test_control_characters_of_the_data_reach_the_terminal_escaped(work):
    done = subprocess.run([HARDNEG, "audit", "star", "--qid", "q1"], cwd=work, capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr
    out = done.stdout.decode("utf-8")
    assert out.startswith("query q1: why do cats purr \\u202eyrtne\n")
    assert "\\x1b]0;owned\\x07Barking — Dogs \\x1b[31mbark\\x1b[0m at strangers. HIDDEN" in out
    assert all(line.isprintable() for line in out.splitlines())
    assert b"\x1b" not in done.stdout and b"\r" not in done.stdout and "\u202e" not in out
