"""Exact search streamed from a ``.npy`` file: the rows IndexFlatIP finds, in blocks of any size, from float16 or
float32 files, and searched through the same code as a faiss index."""

import faiss
import numpy as np
import pytest

from hardneg.index import search_blocks
from hardneg.index.streamed import StreamedFlat


@pytest.fixture(scope="module")
def matrix(tmp_path_factory):
    rng = np.random.default_rng(7)
    vectors = rng.standard_normal((1_003, 24)).astype(np.float32)
    path = tmp_path_factory.mktemp("streamed") / "corpus.npy"
    np.save(path, vectors)
    return path, vectors, rng.standard_normal((40, 24)).astype(np.float32)


def _flat(vectors):
    index = faiss.IndexFlatIP(vectors.shape[1])
    index.add(vectors)
    return index


@pytest.mark.parametrize("block_rows", [1, 7, 100, 1_003, 5_000])
def test_the_streamed_search_finds_what_indexflatip_finds_whatever_the_block(matrix, block_rows):
    path, vectors, queries = matrix
    scores, ids = StreamedFlat(path, block_rows=block_rows).search(queries, 25)
    expected_scores, expected_ids = _flat(vectors).search(queries, 25)
    assert np.array_equal(ids, expected_ids)
    np.testing.assert_allclose(scores, expected_scores, rtol=1e-6, atol=1e-6)
    assert (np.diff(scores, axis=1) <= 0).all()  # best first


def test_a_float16_file_is_searched_as_its_float32_values(matrix, tmp_path):
    _, vectors, queries = matrix
    half = vectors.astype(np.float16)
    np.save(tmp_path / "half.npy", half)
    scores, ids = StreamedFlat(tmp_path / "half.npy", block_rows=64).search(queries, 10)
    expected_scores, expected_ids = _flat(half.astype(np.float32)).search(queries, 10)
    assert np.array_equal(ids, expected_ids)
    np.testing.assert_allclose(scores, expected_scores, rtol=1e-6, atol=1e-6)


def test_more_wanted_than_rows_leaves_the_tail_empty_as_faiss_does(matrix, tmp_path):
    _, vectors, queries = matrix
    np.save(tmp_path / "few.npy", vectors[:5])
    scores, ids = StreamedFlat(tmp_path / "few.npy", block_rows=2).search(queries, 8)
    expected_scores, expected_ids = _flat(vectors[:5]).search(queries, 8)
    assert np.array_equal(ids, expected_ids) and (ids[:, 5:] == -1).all()
    np.testing.assert_allclose(scores[:, :5], expected_scores[:, :5], rtol=1e-6, atol=1e-6)


def test_it_is_searched_through_the_index_search_code(matrix):
    path, vectors, queries = matrix
    streamed = StreamedFlat(path, block_rows=300)
    assert (streamed.d, streamed.ntotal) == (24, 1_003)
    blocks = list(search_blocks(streamed, queries, 5, batch_size=16, use_gpu=False))
    assert [start for start, _, _ in blocks] == [0, 16, 32]
    assert np.array_equal(np.concatenate([ids for _, _, ids in blocks]), _flat(vectors).search(queries, 5)[1])


def test_bad_inputs_are_refused(matrix, tmp_path):
    path, _, queries = matrix
    with pytest.raises(ValueError, match=r"queries must be \[n, 24\]"):
        StreamedFlat(path).search(queries[:, :10], 5)
    with pytest.raises(ValueError, match="k must be >= 1"):
        StreamedFlat(path).search(queries, 0)
    with pytest.raises(ValueError, match="block_rows must be >= 1"):
        StreamedFlat(path, block_rows=0)
    np.save(tmp_path / "ints.npy", np.zeros((3, 24), dtype=np.int32))
    with pytest.raises(ValueError, match="not floating-point"):
        StreamedFlat(tmp_path / "ints.npy")
