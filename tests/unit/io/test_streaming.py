"""Stages that scale: .npy files written and read in row blocks, Parquet written in row groups as blocks come,
runs written query block by query block, Flat indexes sized once, mining in blocks of whole queries. Each gives
the same bytes as the whole-table path. (That the embedding matrix is never held twice, measured as the peak memory
of a process gathering shards and building an index: tests/integration/test_processes.py.)"""

import hashlib

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from hardneg.dense.encode import gather_shards, save_embeddings
from hardneg.errors import HardnegError
from hardneg.index import build_index, ranking_table, search_ranking, search_ranking_blocks
from hardneg.io import artifacts
from hardneg.io.npyfile import NpyRows, NpyWriter
from hardneg.io.rankings import RankingWriter, write_ranking
from hardneg.mining.selection import select_stage
from hardneg.mining.pool import pool_stage
from hardneg.mining.rows import query_blocks


def digest(path) -> str:
    return hashlib.sha256(open(path, "rb").read()).hexdigest()


def a_run(num_queries: int, k: int, seed: int = 0, prefix: str = "q") -> pa.Table:
    rng = np.random.default_rng(seed)
    qids = np.repeat(np.array([f"{prefix}{i}" for i in range(num_queries)], dtype=object), k)
    return pa.table({"qid": qids, "docid": [f"d{j}" for j in rng.integers(0, 10**6, num_queries * k)],
                     "rank": np.tile(np.arange(1, k + 1, dtype=np.int32), num_queries),
                     "score": np.sort(rng.random((num_queries, k)).astype(np.float32))[:, ::-1].ravel()},
                    schema=artifacts.RANKING.schema)


# ------------------------------------------------------------------------------------------------ .npy files

@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int32])
def test_npy_writer_writes_what_numpy_saves(tmp_path, dtype):
    matrix = (np.arange(1000 * 7) % 251).reshape(1000, 7).astype(dtype)
    np.save(tmp_path / "saved.npy", matrix)
    with NpyWriter(tmp_path / "written.npy", matrix.shape, dtype) as writer:
        for lo in range(0, 1000, 333):
            writer.write(matrix[lo:lo + 333])
    assert (tmp_path / "written.npy").read_bytes() == (tmp_path / "saved.npy").read_bytes()


def test_npy_writer_refuses_missing_rows_and_other_shapes(tmp_path):
    writer = NpyWriter(tmp_path / "x.npy", (10, 4), np.float32)
    with pytest.raises(ValueError, match="cannot append"):
        writer.write(np.zeros((3, 5), np.float32))
    writer.write(np.zeros((9, 4), np.float32))
    with pytest.raises(ValueError, match="9 of 10 rows"):
        writer.close()


def test_npy_rows_reads_ranges_and_sets_of_rows(tmp_path):
    matrix = np.random.default_rng(1).standard_normal((1000, 5)).astype(np.float16)
    np.save(tmp_path / "m.npy", matrix)
    rows = NpyRows(tmp_path / "m.npy")
    assert rows.shape == (1000, 5) and rows.dtype == np.float16 and len(rows) == 1000 and rows.ndim == 2
    assert np.array_equal(rows[10:20], matrix[10:20]) and np.array_equal(rows[990:2000], matrix[990:])
    assert np.array_equal(rows[-1], matrix[-1]) and rows[5:5].shape == (0, 5)
    picked = np.array([999, 3, 500, 3, 0])
    assert np.array_equal(rows.take(picked, block_rows=64), matrix[picked])
    assert np.array_equal(rows[np.sort(picked)], matrix[np.sort(picked)])
    assert np.array_equal(np.concatenate([b for _, b in rows.blocks(300)]), matrix)
    np.save(tmp_path / "f.npy", np.asfortranarray(matrix.astype(np.float32)))
    with pytest.raises(ValueError, match="Fortran"):
        NpyRows(tmp_path / "f.npy")


def test_gather_copies_shards_file_to_file(tmp_path):
    rng = np.random.default_rng(2)
    parts = [rng.standard_normal((n, 6)).astype(np.float32) for n in (5, 0, 8)]
    npys, ids = [], []
    for i, part in enumerate(parts):
        npys.append(tmp_path / f"s{i}.npy")
        ids.append(tmp_path / f"s{i}.parquet")
        save_embeddings(part, [f"d{i}_{j}" for j in range(len(part))], npys[-1], ids[-1])
    assert gather_shards(npys, ids, tmp_path / "all.npy", tmp_path / "all.parquet") == 13
    whole = np.concatenate(parts)
    save_embeddings(whole, [f"d{i}_{j}" for i, p in enumerate(parts) for j in range(len(p))],
                    tmp_path / "ref.npy", tmp_path / "ref.parquet")
    assert digest(tmp_path / "all.npy") == digest(tmp_path / "ref.npy")
    assert digest(tmp_path / "all.parquet") == digest(tmp_path / "ref.parquet")


# -------------------------------------------------------------------------------------------- Parquet streams

@pytest.mark.parametrize("block", [1, 7, 64, 10_000])
def test_table_writer_gives_write_tables_bytes(tmp_path, block):
    run = a_run(40, 25)  # 1000 rows in row groups of 64
    pq.write_table(run, tmp_path / "whole.parquet", compression="zstd", row_group_size=64)
    with artifacts.TableWriter(artifacts.RANKING, tmp_path / "blocks.parquet", row_group_rows=64) as writer:
        for lo in range(0, run.num_rows, block):
            writer.write(run.slice(lo, block))
    assert writer.rows == 1000
    assert digest(tmp_path / "blocks.parquet") == digest(tmp_path / "whole.parquet")


def test_table_writer_default_row_groups_are_write_tables(tmp_path):
    run = a_run(5300, 200)  # 1,060,000 rows: two row groups
    artifacts.write_table(run, artifacts.RANKING, tmp_path / "whole.parquet")
    with artifacts.TableWriter(artifacts.RANKING, tmp_path / "blocks.parquet") as writer:
        for lo in range(0, run.num_rows, 300_000):
            writer.write(run.slice(lo, 300_000))
    assert pq.ParquetFile(tmp_path / "blocks.parquet").metadata.num_row_groups == 2
    assert digest(tmp_path / "blocks.parquet") == digest(tmp_path / "whole.parquet")


def test_table_writer_empty_and_failed(tmp_path):
    artifacts.write_table(a_run(0, 1), artifacts.RANKING, tmp_path / "whole.parquet")
    with artifacts.TableWriter(artifacts.RANKING, tmp_path / "empty.parquet"):
        pass
    assert digest(tmp_path / "empty.parquet") == digest(tmp_path / "whole.parquet")
    with pytest.raises(RuntimeError), artifacts.TableWriter(artifacts.RANKING, tmp_path / "failed.parquet") as writer:
        writer.write(a_run(3, 2))
        raise RuntimeError("stopped")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty.parquet", "whole.parquet"]


# ------------------------------------------------------------------------------------------------------- runs

def test_a_file_is_checked_against_its_kind_from_its_footer(tmp_path, monkeypatch):
    """check_file refuses what read_table refuses, with the same message, and reads no row."""
    good, bad = tmp_path / "corpus.parquet", tmp_path / "bad.parquet"
    pq.write_table(pa.table({"docid": ["d1"], "title": ["t"], "text": ["x"], "extra": [1]}), good)
    pq.write_table(pa.table({"docid": ["d1"], "text": ["x"]}), bad)
    monkeypatch.setattr(pq, "read_table", lambda *a, **k: pytest.fail("a row was read"))
    artifacts.check_file(artifacts.CORPUS, good)
    with pytest.raises(HardnegError, match=r"bad\.parquet: not a corpus table: missing column\(s\) title"):
        artifacts.check_file(artifacts.CORPUS, bad)
    with pytest.raises(HardnegError, match=r"missing\.parquet: corpus file does not exist"):
        artifacts.check_file(artifacts.CORPUS, tmp_path / "missing.parquet")
    monkeypatch.undo()
    with pytest.raises(HardnegError) as read:
        artifacts.read_table(artifacts.CORPUS, bad)
    with pytest.raises(HardnegError) as checked:
        artifacts.check_file(artifacts.CORPUS, bad)
    assert str(read.value) == str(checked.value)


def test_ranking_writer_gives_write_rankings_files(tmp_path):
    # qids out of id order, some non-ASCII: the TREC file is sorted by id, the Parquet file keeps the blocks' order
    run = pa.concat_tables([a_run(30, 9, seed=3, prefix="z"), a_run(20, 9, seed=4, prefix="é"),
                            a_run(25, 9, seed=5, prefix="A")]).combine_chunks()
    write_ranking(run, tmp_path / "whole.parquet", tmp_path / "whole.trec", "dense")
    with RankingWriter(tmp_path / "blocks.parquet", tmp_path / "blocks.trec", "dense") as writer:
        for lo in range(0, run.num_rows, 9 * 11):  # blocks of 11 whole queries
            writer.write(run.slice(lo, 9 * 11))
    assert writer.rows == run.num_rows
    assert digest(tmp_path / "blocks.parquet") == digest(tmp_path / "whole.parquet")
    assert (tmp_path / "blocks.trec").read_text() == (tmp_path / "whole.trec").read_text()


def test_ranking_writer_leaves_no_file_for_a_bad_id_or_a_split_query(tmp_path):
    bad = a_run(4, 3).set_column(1, "docid", pa.array(["d 1"] * 12))
    with pytest.raises(HardnegError, match="cannot write docid"):
        with RankingWriter(tmp_path / "r.parquet", tmp_path / "r.trec", "dense") as writer:
            writer.write(a_run(4, 3, prefix="ok"))
            writer.write(bad)
    run = a_run(2, 4)
    with pytest.raises(ValueError, match="not in one block"):
        with RankingWriter(tmp_path / "r.parquet", tmp_path / "r.trec", "dense") as writer:
            writer.write(run.slice(0, 6))
            writer.write(run.slice(6))
    with pytest.raises(HardnegError, match="cannot write tag"):
        RankingWriter(tmp_path / "r.parquet", tmp_path / "r.trec", "my run").__enter__()
    assert list(tmp_path.iterdir()) == []


def test_search_ranking_blocks_concatenate_to_search_ranking():
    rng = np.random.default_rng(6)
    docs = rng.standard_normal((300, 8)).astype(np.float32)
    queries = rng.standard_normal((25, 8)).astype(np.float32)
    index = build_index(docs, "Flat", use_gpu=False)
    qids, docids = [f"q{i}" for i in range(25)], [f"d{i}" for i in range(300)]
    whole = search_ranking(index, queries, qids, docids, 10, use_gpu=False)
    blocks = list(search_ranking_blocks(index, queries, pa.array(qids), pa.chunked_array([docids[:100], docids[100:]]),
                                    10, batch_size=7, use_gpu=False))
    assert len(blocks) == 4 and pa.concat_tables(blocks).equals(whole)
    with pytest.raises(ValueError, match="docids for an index"):
        search_ranking_blocks(index, queries, qids, docids[:5], 10)
    scores, ids = np.array([[3.0, 2.0]], np.float32), np.array([[1, -1]])
    assert ranking_table(scores, ids, ["q"], np.array(["a", "b"], dtype=object)).equals(
        ranking_table(scores, ids, pa.array(["q"]), pa.array(["a", "b"])))


# ---------------------------------------------------------------------------------------------------- indexes

@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_flat_index_sized_once_is_the_added_index(tmp_path, dtype):
    import faiss

    matrix = np.random.default_rng(7).standard_normal((1000, 16)).astype(dtype)
    np.save(tmp_path / "m.npy", matrix)
    added = faiss.index_factory(16, "Flat", faiss.METRIC_INNER_PRODUCT)
    added.add(matrix.astype(np.float32))
    built = build_index(NpyRows(tmp_path / "m.npy"), "Flat", use_gpu=False)
    assert built.ntotal == 1000
    assert np.array_equal(faiss.serialize_index(built), faiss.serialize_index(added))


def test_trained_index_reads_its_sample_from_the_file(tmp_path):
    import faiss

    matrix = np.random.default_rng(8).standard_normal((3000, 16)).astype(np.float32)
    np.save(tmp_path / "m.npy", matrix)
    from_file = build_index(NpyRows(tmp_path / "m.npy"), "PQ4x4", train_size=1000, seed=3, threads=1, use_gpu=False)
    in_memory = build_index(matrix, "PQ4x4", train_size=1000, seed=3, threads=1, use_gpu=False)
    assert np.array_equal(faiss.serialize_index(from_file), faiss.serialize_index(in_memory))


# ----------------------------------------------------------------------------------------------------- mining

def test_query_blocks_cut_between_queries():
    run = a_run(10, 7)
    assert query_blocks(run, 20) == [(0, 21), (21, 42), (42, 63), (63, 70)]
    assert query_blocks(run, 1000) == [(0, 70)] and query_blocks(a_run(0, 1)) == [(0, 0)]
    shuffled = pa.concat_tables([run.slice(0, 3), run.slice(7, 7), run.slice(3, 4)])  # q0 split around q1
    assert query_blocks(shuffled, 2) == [(0, 14)]


@pytest.mark.parametrize("sampling", ["top", "random"])
def test_mining_in_blocks_writes_the_whole_runs_negatives(tmp_path, sampling):
    run = a_run(60, 30, seed=9)
    docids = run["docid"].to_pylist()
    qrels = pa.table({"qid": [f"q{i}" for i in range(60)], "docid": [docids[i * 30 + 2] for i in range(60)],
                      "relevance": [1] * 60}, schema=artifacts.QRELS.schema)
    artifacts.write_table(run, artifacts.RANKING, tmp_path / "run.parquet")
    artifacts.write_table(qrels, artifacts.QRELS, tmp_path / "qrels.parquet")
    counts = {}
    for block_rows in (10**9, 100, 1):
        pool = tmp_path / f"pool{block_rows}.parquet"
        pool_stage(tmp_path / "run.parquet", tmp_path / "qrels.parquet", pool, depth=20, block_rows=block_rows)
        counts[block_rows] = select_stage(pool, tmp_path / f"h{block_rows}.parquet", tmp_path / f"h{block_rows}.json",
                                          policy={"keep": 5, "sampling": sampling}, seed=1).kept
    assert counts == {10**9: 300, 100: 300, 1: 300}
    assert digest(tmp_path / "h100.parquet") == digest(tmp_path / "h1.parquet") == digest(tmp_path / f"h{10**9}.parquet")


# ------------------------------------------------------------------------------------------------- evaluation

@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_full_corpus_ranks_in_document_blocks(tmp_path, dtype):
    import pandas as pd

    from hardneg.evaluation.pairwise import full_corpus_ranks

    rng = np.random.default_rng(11)
    docs = rng.standard_normal((1000, 8)).astype(dtype)
    docs[500] = docs[7]  # a tie with a relevant document: never counted above it
    queries = rng.standard_normal((30, 8)).astype(np.float32)
    docids = [f"d{i}" for i in range(1000)]
    pairs = pd.DataFrame({"qid": [f"q{i % 30}" for i in range(90)],
                          "docid": [f"d{j}" for j in rng.integers(0, 1000, 90)[:-2]] + ["d7", "gone"]})
    np.save(tmp_path / "docs.npy", docs)
    ranks = full_corpus_ranks(queries, [f"q{i}" for i in range(30)], NpyRows(tmp_path / "docs.npy"),
                              pa.array(docids), pairs, batch=8, doc_block=100)
    scores = queries.astype(np.float64) @ docs.astype(np.float64).T
    rows, cols = pairs["qid"].str[1:].astype(int).to_numpy(), [docids.index(d) if d in docids else 0
                                                                for d in pairs["docid"]]
    expected = [1 + int((scores[r] > scores[r, c]).sum()) for r, c in zip(rows, cols)]
    expected[-1] = 1001  # no embedding: after every document
    assert ranks.tolist() == expected
