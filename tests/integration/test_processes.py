"""The library across processes: what one process computes, another gives byte for byte whatever its hash seed
(Python randomises the order of sets and dicts of strings per process, ``PYTHONHASHSEED``), and what a stage
costs a process in memory. Each test starts Python processes of its own (seconds of start-up and imports), which
is why they are here and not in the unit tier."""

import hashlib
import json
import os
import random
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from hardneg.dense.encode import save_embeddings
from hardneg.dense.tokenizer import load_tokenizer
from hardneg.io import artifacts
from hardneg.pipeline.config_reference import config_reference
from tests.support import REPO
from tests.support.mining import random_problem


_TRAIN_TOKENIZER = """
import sys
from hardneg.dense.tokenizer import train_wordpiece
train_wordpiece(sys.argv[1], sys.argv[2], query_paths=[sys.argv[3]], vocab_size=200)
"""


def test_wordpiece_vocabulary_is_the_same_in_every_process(tmp_path):
    """A corpus full of frequency ties (200 random words, each used twice): the trainer's hash-map order, which
    changes between processes, must decide neither the token ids nor which tokens are learnt."""
    rng = random.Random(0)
    words = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(3, 8))) for _ in range(200)]
    docs = [" ".join(words[(7 * i + j) % 200] for j in range(10)) for i in range(40)]
    pq.write_table(pa.table({"docid": [f"d{i}" for i in range(40)], "title": ["Títle"] * 40, "text": docs}),
                   tmp_path / "corpus.parquet")
    pq.write_table(pa.table({"qid": ["q1"], "text": ["Ünïcode QUERY, about ΟΔΟΣ"]}), tmp_path / "queries.parquet")
    outs = [tmp_path / f"tokenizer{i}" for i in range(3)]
    processes = [subprocess.Popen([sys.executable, "-c", _TRAIN_TOKENIZER, str(tmp_path / "corpus.parquet"), str(out),
                                   str(tmp_path / "queries.parquet")], stderr=subprocess.PIPE, text=True)
                 for out in outs]
    for process in processes:
        assert process.wait(timeout=120) == 0, process.stderr.read()
    digests = {hashlib.sha256((out / "tokenizer.json").read_bytes()).hexdigest() for out in outs}
    assert len(digests) == 1
    tokenizer = load_tokenizer(outs[0])
    assert len(tokenizer) == 200
    # The alphabet the trainer was seeded with is not special: "ab" is one word to WordPiece ("ab" or "a ##b"),
    # never two added tokens "a", "b"; only the five real special tokens are.
    assert tokenizer.tokenize("ab") in (["ab"], ["a", "##b"])
    added = json.loads((outs[0] / "tokenizer.json").read_text())["added_tokens"]
    assert [token["content"] for token in added] == ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    assert tokenizer.tokenize(words[0]) == tokenizer.tokenize(words[0].upper())


def test_random_sampling_does_not_depend_on_python_hash_seed(tmp_path):
    run, qrels = random_problem(num_queries=5)
    artifacts.write_table(run, artifacts.RANKING, tmp_path / "run.parquet")
    artifacts.write_table(qrels, artifacts.QRELS, tmp_path / "qrels.parquet")
    code = ("import sys; from hardneg.mining.pool import pool_stage; from hardneg.mining.selection import select_stage; "
            "pool_stage(sys.argv[1], sys.argv[2], sys.argv[3] + '.pool', depth=200); "
            "select_stage(sys.argv[3] + '.pool', sys.argv[3], sys.argv[3] + '.json', "
            "policy={'keep': 3, 'sampling': 'random'}, seed=5)")
    for name, hash_seed in (("here", "0"), ("there", "12345")):
        subprocess.run([sys.executable, "-c", code, str(tmp_path / "run.parquet"), str(tmp_path / "qrels.parquet"),
                        str(tmp_path / name)], check=True, env={**os.environ, "PYTHONHASHSEED": hash_seed})
    assert (tmp_path / "here").read_bytes() == (tmp_path / "there").read_bytes()


def test_the_same_schema_gives_the_same_page():
    page = config_reference()
    assert config_reference() == page
    code = "import sys; from hardneg.pipeline.config_reference import config_reference as c; sys.stdout.write(c())"
    for seed in ("1", "2"):
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                              env={**os.environ, "PYTHONHASHSEED": seed}, cwd=REPO)
        assert done.stdout == page


# ------------------------------------------------------------------------------------------------ peak memory

_PEAK = """
import json, sys
import numpy as np
from hardneg.dense.encode import gather_shards
from hardneg.dense.search import build_index_stage
from hardneg.io.logs import log_to, peak_memory_kib
import faiss
from hardneg.io import artifacts
log_to(sys.argv[1] + "/job.log")
d = sys.argv[1]
for shard in range(2):  # Arrow's memory pool keeps what reading the id tables takes: not the matrix's doing
    artifacts.read_table(artifacts.ROW_IDS, f"{d}/s{shard}.parquet")
before = peak_memory_kib()
if sys.argv[2] == "gather":
    gather_shards([d + "/s0.npy", d + "/s1.npy"], [d + "/s0.parquet", d + "/s1.parquet"], d + "/all.npy",
                  d + "/all.parquet")
else:
    build_index_stage(d + "/all.npy", "Flat", d + "/flat.faiss")
with open(d + "/peak.json", "w") as handle:
    json.dump({"before": before, "after": peak_memory_kib()}, handle)
"""


def test_gathering_and_indexing_never_hold_the_matrix_twice(tmp_path):
    rows, dim = 400_000, 64  # two shards of 51 MB, a matrix of 102 MB
    rng = np.random.default_rng(10)
    for shard in range(2):
        save_embeddings(rng.standard_normal((rows // 2, dim), dtype=np.float32),
                        [f"d{shard}_{i}" for i in range(rows // 2)], tmp_path / f"s{shard}.npy",
                        tmp_path / f"s{shard}.parquet")
    matrix_kib = rows * dim * 4 // 1024

    def grown(stage: str) -> int:
        subprocess.run([sys.executable, "-c", _PEAK, str(tmp_path), stage], check=True)
        peak = json.loads((tmp_path / "peak.json").read_text())
        return peak["after"] - peak["before"]

    gather, index = grown("gather"), grown("index")
    print(f"peak memory grew by {gather} KiB gathering, {index} KiB indexing a {matrix_kib} KiB matrix")
    # a memory-mapped copy grew by 1.7 matrices, adding to a Flat index from a memory map by 2.3
    assert gather < matrix_kib // 2  # shards copied file to file: buffers and Arrow's pool, not the matrix
    assert index < matrix_kib * 3 // 2  # the Flat index itself and one block, no second copy
    assert "peak resident memory" in (tmp_path / "job.log").read_text()
    assert np.array_equal(np.load(tmp_path / "all.npy", mmap_mode="r")[rows // 2 - 1:rows // 2 + 1],
                          np.concatenate([np.load(tmp_path / "s0.npy")[-1:], np.load(tmp_path / "s1.npy")[:1]]))
