"""Faiss indexes: every supported type against exact search, determinism, save/load, RANKING tables, errors, GPU."""

import re

import faiss
import numpy as np
import pytest

from hardneg.errors import ConfigError
from hardneg.index import build_index, faiss_index, load_index, save_index, search, search_ranking, set_search_params, slug
from hardneg.io import artifacts

N, DIM, NQ = 2000, 32, 50
# One OpenMP thread: on a busy 2-core runner faiss's spinning threads can make k-means many times slower.
THREADS = 1


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    emb = rng.standard_normal((N, DIM)).astype(np.float32)
    queries = rng.standard_normal((NQ, DIM)).astype(np.float32)
    return emb, queries


@pytest.fixture(scope="module")
def exact_top10(data):
    emb, queries = data
    return np.argsort(-(queries.astype(np.float64) @ emb.T.astype(np.float64)), axis=1, kind="stable")[:, :10]


def recall_at_10(ids: np.ndarray, exact: np.ndarray) -> float:
    return float(np.mean([len(set(row) & set(truth)) / 10 for row, truth in zip(ids[:, :10], exact)]))


# Recall@10 on this data (2000 x 32 Gaussian, inner product) measured with faiss 1.15: Flat 1.0, PQ8np 0.66,
# PQ8x4 0.28, OPQ8,PQ8np 0.66, IVF32,PQ8np@nprobe8 0.56, IVF32,Flat@nprobe8 0.70, HNSW32 0.95, HNSW16@ef128 1.0.
# Random vectors are the hardest case for quantisation, so the floors are low but still far above chance (0.005).
CASES = [
    ("Flat", None, 1.0),
    ("PQ8np", None, 0.45),  # 8 sub-quantizers of 8 bits; "np": no polysemous training, which only costs seconds
    ("PQ8x4", None, 0.2),  # 4 bits per code: 16 centroids per sub-quantizer
    ("OPQ8,PQ8np", None, 0.45),
    ("IVF32,PQ8np", "nprobe=8", 0.4),
    ("IVF32,Flat", "nprobe=8", 0.55),
    ("HNSW32", None, 0.9),
    ("HNSW16", "efSearch=128", 0.95),
]


@pytest.mark.parametrize(("factory", "params", "min_recall"), CASES, ids=[c[0] + (f"@{c[1]}" if c[1] else "")
                                                                           for c in CASES])
def test_index_types_build_search_and_recall(data, exact_top10, factory, params, min_recall):
    emb, queries = data
    index = build_index(emb, factory, threads=THREADS, use_gpu=False)
    assert index.ntotal == N and index.d == DIM and index.is_trained
    assert index.metric_type == faiss.METRIC_INNER_PRODUCT
    set_search_params(index, params)
    scores, ids = search(index, queries, 10, use_gpu=False)
    assert scores.shape == ids.shape == (NQ, 10)
    assert scores.dtype == np.float32 and ids.dtype == np.int64
    assert ids.min() >= 0 and ids.max() < N
    assert np.all(np.diff(scores, axis=1) <= 0)  # best first
    assert all(len(set(row)) == 10 for row in ids)  # no document twice for one query
    assert recall_at_10(ids, exact_top10) >= min_recall


def test_flat_equals_brute_force_inner_product(data):
    emb, queries = data
    k = 20
    scores, ids = search(build_index(emb, "Flat", use_gpu=False), queries, k, use_gpu=False)
    full = queries.astype(np.float64) @ emb.T.astype(np.float64)
    order = np.argsort(-full, axis=1, kind="stable")[:, :k]
    np.testing.assert_allclose(scores, np.take_along_axis(full, order, axis=1), rtol=0, atol=1e-5)
    # Ids may differ only where two documents tie on score.
    differ = ids != order
    assert np.all(np.abs(np.take_along_axis(full, ids, axis=1) - np.take_along_axis(full, order, axis=1))[differ]
                  < 1e-5)
    assert differ.sum() <= 2


def test_nprobe_controls_ivf_recall(data, exact_top10):
    emb, queries = data
    index = build_index(emb, "IVF32,Flat", threads=THREADS, use_gpu=False)
    _, one_list = search(index, queries, 10, use_gpu=False)  # faiss default nprobe=1
    set_search_params(index, {"nprobe": 32})  # every list: exhaustive, so exact
    _, all_lists = search(index, queries, 10, use_gpu=False)
    assert recall_at_10(one_list, exact_top10) < 0.4
    assert recall_at_10(all_lists, exact_top10) == 1.0
    assert faiss.extract_index_ivf(index).nprobe == 32


def test_float16_embeddings_and_queries(data):
    emb, queries = data
    emb16, queries16 = emb.astype(np.float16), queries.astype(np.float16)
    scores, ids = search(build_index(emb16, "Flat", use_gpu=False), queries16, 5, use_gpu=False)
    full = queries16.astype(np.float64) @ emb16.T.astype(np.float64)
    np.testing.assert_allclose(scores, -np.sort(-full, axis=1)[:, :5], rtol=0, atol=1e-4)
    assert np.array_equal(ids[:, 0], full.argmax(axis=1))
    trained = build_index(emb16, "IVF32,Flat", threads=THREADS, use_gpu=False)
    assert trained.ntotal == N


def test_same_seed_same_index_other_seed_other_codebooks(data):
    emb, queries = data
    first = build_index(emb, "PQ8np", train_size=1000, seed=7, threads=THREADS, use_gpu=False)
    second = build_index(emb, "PQ8np", train_size=1000, seed=7, threads=THREADS, use_gpu=False)
    other = build_index(emb, "PQ8np", train_size=1000, seed=8, threads=THREADS, use_gpu=False)
    assert np.array_equal(faiss.serialize_index(first), faiss.serialize_index(second))
    assert not np.array_equal(faiss.serialize_index(first), faiss.serialize_index(other))
    for a, b in zip(search(first, queries, 10, use_gpu=False), search(second, queries, 10, use_gpu=False)):
        assert np.array_equal(a, b)


def test_ivf_seed_reaches_faiss_clustering(data):
    emb, _ = data
    index = build_index(emb, "IVF32,PQ8np", seed=5, threads=THREADS, use_gpu=False)
    ivf = faiss.extract_index_ivf(index)
    assert ivf.cp.seed == 5 and faiss.downcast_index(ivf).pq.cp.seed == 5


def test_add_and_search_batches_do_not_change_results(data, monkeypatch):
    emb, queries = data
    whole = build_index(emb, "Flat", use_gpu=False)
    monkeypatch.setattr(faiss_index, "_ADD_BATCH", 300)  # 2000 rows: 6 full batches and one of 200
    batched = build_index(emb, "Flat", use_gpu=False)
    assert batched.ntotal == N
    assert np.array_equal(faiss.serialize_index(whole), faiss.serialize_index(batched))
    for a, b in zip(search(whole, queries, 10, use_gpu=False),
                    search(whole, queries, 10, batch_size=7, use_gpu=False)):
        assert np.array_equal(a, b)


def test_k_is_clipped_to_index_size(data):
    emb, queries = data
    scores, ids = search(build_index(emb[:30], "Flat", use_gpu=False), queries, 100, use_gpu=False)
    assert scores.shape == ids.shape == (NQ, 30)
    assert all(sorted(row) == list(range(30)) for row in ids)


def test_threads_setting_is_restored(data):
    emb, _ = data
    before = faiss.omp_get_max_threads()
    build_index(emb[:500], "IVF8,Flat", threads=1, use_gpu=False)
    assert faiss.omp_get_max_threads() == before


def test_save_load_round_trip_is_atomic(data, tmp_path):
    emb, queries = data
    index = build_index(emb, "IVF32,PQ8x4", threads=THREADS, use_gpu=False)
    set_search_params(index, "nprobe=4")
    path = tmp_path / "indexes" / "ivf.faiss"
    save_index(index, path)
    assert sorted(p.name for p in path.parent.iterdir()) == ["ivf.faiss"]  # no temporary left
    loaded = load_index(path)
    set_search_params(loaded, "nprobe=4")
    assert loaded.ntotal == N
    for a, b in zip(search(index, queries, 10, use_gpu=False), search(loaded, queries, 10, use_gpu=False)):
        assert np.array_equal(a, b)
    save_index(loaded, path)  # overwriting leaves one file too
    assert sorted(p.name for p in path.parent.iterdir()) == ["ivf.faiss"]
    with pytest.raises(FileNotFoundError):
        load_index(tmp_path / "missing.faiss")


def test_an_index_the_disk_cannot_hold_fails_and_leaves_nothing(tmp_path, small_disk):
    """Faiss writing to a path reports a failed flush of its last buffer (a full disk) only on stderr; written
    through a Python file, the save raises and leaves nothing, the byte-identical index still writes elsewhere."""
    rng = np.random.default_rng(0)
    index = build_index(rng.standard_normal((2000, 64)).astype("float32"), "Flat", use_gpu=False)  # 512 kB
    disk = small_disk(tmp_path / "disk", "500k")
    with pytest.raises((OSError, RuntimeError)):
        save_index(index, disk / "flat.faiss")
    assert list(disk.iterdir()) == []
    save_index(index, tmp_path / "flat.faiss")
    assert (tmp_path / "flat.faiss").read_bytes() == faiss.serialize_index(index).tobytes()


def test_search_run_is_a_correct_run_table(data):
    emb, queries = data
    index = build_index(emb, "Flat", use_gpu=False)
    qids = [f"q{i}" for i in range(5)][::-1]  # not sorted: the table must keep input order
    docids = np.array([f"d{j}" for j in range(N)])
    run = search_ranking(index, queries[:5], qids, docids, 10, use_gpu=False)
    assert run.schema == artifacts.RANKING.schema
    assert run.num_rows == 50
    scores, ids = search(index, queries[:5], 10, use_gpu=False)
    rows = run.to_pylist()
    assert [r["qid"] for r in rows] == [q for q in qids for _ in range(10)]
    assert [r["rank"] for r in rows] == list(range(1, 11)) * 5
    assert [r["docid"] for r in rows] == [f"d{j}" for j in ids.ravel()]
    np.testing.assert_array_equal(run["score"].to_numpy(), scores.ravel())


def test_search_run_drops_missing_results_without_rank_gaps(data):
    emb, queries = data
    index = build_index(emb, "IVF32,Flat", threads=THREADS, use_gpu=False)  # nprobe=1: ~60 docs per list
    qids = [f"q{i}" for i in range(NQ)]
    _, ids = search(index, queries, 200, use_gpu=False)
    assert (ids == -1).any()  # the test needs short lists
    run = search_ranking(index, queries, qids, [f"d{j}" for j in range(N)], 200, use_gpu=False)
    assert run.num_rows == int((ids >= 0).sum())
    assert "d-1" not in set(run["docid"].to_pylist())
    by_query = {}
    for row in run.to_pylist():
        by_query.setdefault(row["qid"], []).append(row["rank"])
    assert list(by_query) == qids
    assert all(ranks == list(range(1, len(ranks) + 1)) for ranks in by_query.values())


def test_search_run_checks_id_counts(data):
    emb, queries = data
    index = build_index(emb[:10], "Flat", use_gpu=False)
    with pytest.raises(ValueError, match="qids"):
        search_ranking(index, queries[:3], ["q1"], [f"d{j}" for j in range(10)], 5, use_gpu=False)
    with pytest.raises(ValueError, match="docids"):
        search_ranking(index, queries[:3], ["q1", "q2", "q3"], ["d1"], 5, use_gpu=False)


@pytest.mark.parametrize("factory", ["NotAnIndex12", "PQ7", ""])
def test_invalid_factory_raises_config_error(data, factory):
    emb, _ = data
    with pytest.raises(ConfigError) as caught:
        build_index(emb, factory, use_gpu=False)
    assert caught.value.key == "index.factory"
    assert "index.factory" in str(caught.value)


def test_too_few_training_vectors_is_a_config_error(data):
    emb, _ = data
    with pytest.raises(ConfigError, match=r"^config key 'index\.factory': 'IVF512,Flat' needs at least 512 training "
                                          r"vectors \(one per inverted list of IVF512\); index\.train_size is 200$"):
        build_index(emb, "IVF512,Flat", train_size=200, use_gpu=False)


def test_too_few_documents_is_checked_before_faiss_trains(data, monkeypatch):
    emb, _ = data

    def never(*args, **kwargs):  # the check must come first: faiss is never asked to train
        raise AssertionError("faiss trained")

    monkeypatch.setattr(faiss.Index, "train", never)
    key = "runs.star.params.index.factory"
    with pytest.raises(ConfigError) as caught:
        build_index(emb[:600], "IVF4096,Flat", use_gpu=False, key=key)
    assert str(caught.value) == (f"config key '{key}': 'IVF4096,Flat' needs at least 4096 training vectors (one per "
                                 f"inverted list of IVF4096); the corpus has 600 documents")
    with pytest.raises(ConfigError, match=r"'PQ8' needs at least 256 training vectors \(one per centroid of its "
                                          r"8-bit product quantizer\); the corpus has 100 documents"):
        build_index(emb[:100], "PQ8", use_gpu=False, key=key)


def test_a_thin_training_sample_builds_with_a_warning(data, caplog):
    emb, _ = data
    with caplog.at_level("WARNING"):
        index = build_index(emb[:300], "IVF10,Flat", use_gpu=False, threads=THREADS)
    assert index.ntotal == 300
    assert "fewer than the 39 per centroid faiss asks for" in caplog.text


@pytest.mark.parametrize("factory, dim, message", [
    ("Flatt", 32, "'Flatt' is not a Faiss index factory string (e.g. Flat, PQ32"),
    ("PQ7", 32, "PQ7 needs a dimension divisible by 7; the model's embeddings have 32"),
    ("OPQ7,PQ7", 32, "PQ7 needs a dimension divisible by 7; the model's embeddings have 32"),
    ("IVF16,PQ5", 32, "PQ5 needs a dimension divisible by 5; the model's embeddings have 32"),
    ("OPQ16_1000,PQ16", 32, "PQ16 needs a dimension divisible by 16; after OPQ16_1000 the vectors have 1000 "
                            "(the model's embeddings have 32)"),
    ("LSH", 32, "'LSH' does not support the inner-product metric every hardneg index uses"),
    (" Flat", 32, "' Flat' has spaces around it; write 'Flat'"),
    ("Flatt", None, "'Flatt' is not a Faiss index factory string"),
])
def test_check_factory_names_the_key(factory, dim, message):
    from hardneg.index.validate import check_factory

    with pytest.raises(ConfigError) as caught:
        check_factory(factory, "runs.x.params.index.factory", dim=dim)
    assert caught.value.key == "runs.x.params.index.factory"
    assert message in caught.value.message


def test_check_factory_without_a_dimension_only_parses():
    from hardneg.index.validate import check_factory

    assert check_factory("PQ7", "k", dim=None) is None  # may suit the unknown dimension
    assert check_factory("OPQ32,IVF64,PQ32", "k", dim=None) is not None
    with pytest.raises(ConfigError, match=r"'IVF64,Flat' needs at least 64 training vectors"):
        check_factory("IVF64,Flat", "k", dim=None, num_docs=63)  # list counts do not depend on the dimension
    assert check_factory("HNSW32", "k", dim=32) is not None


def test_training_vectors_rule():
    from hardneg.index.validate import check_factory

    check_factory("IVF100,Flat", "k", dim=32, num_docs=100)  # one vector per list is enough
    with pytest.raises(ConfigError, match=r"'IVF101,Flat' needs at least 101 training vectors .* the corpus has 100 "):
        check_factory("IVF101,Flat", "k", dim=32, num_docs=100)
    with pytest.raises(ConfigError, match=r"OPQ trains with\); index\.train_size is 100$"):
        check_factory("OPQ8,PQ8x4", "k", dim=32, num_docs=5000, train_size=100)
    check_factory("HNSW32", "k", dim=32, num_docs=1)


def test_bad_embeddings_and_queries_raise_value_error(data):
    emb, queries = data
    with pytest.raises(ValueError, match="empty"):
        build_index(np.zeros((0, DIM), np.float32), "Flat")
    with pytest.raises(ValueError, match="2-D"):
        build_index(emb[0], "Flat")
    with pytest.raises(ValueError, match="float"):
        build_index(emb.astype(np.int64), "Flat")
    index = build_index(emb, "Flat", use_gpu=False)
    with pytest.raises(ValueError, match="dimension 16"):
        search(index, queries[:, :16], 10, use_gpu=False)
    with pytest.raises(ValueError, match="k must be"):
        search(index, queries, 0, use_gpu=False)
    with pytest.raises(ValueError, match="use_gpu"):
        search(index, queries, 5, use_gpu="yes")


def test_unknown_search_parameter_is_a_config_error(data):
    emb, _ = data
    index = build_index(emb[:100], "Flat", use_gpu=False)
    with pytest.raises(ConfigError) as caught:
        set_search_params(index, "efSearch=64")
    assert caught.value.key == "index.search_params"
    set_search_params(index, None)  # nothing to apply is fine


def test_slug():
    assert slug("OPQ8,PQ8") == "OPQ8_PQ8"
    assert slug("Flat") == "Flat"
    assert slug("IVF1024,PQ8x4") == "IVF1024_PQ8x4"
    supported = ["Flat", "PQ8", "PQ8x4", "PQ8np", "PQ16", "OPQ8,PQ8", "OPQ16_64,PQ16", "IVF32,PQ8", "IVF1024,PQ8",
                 "IVF32,Flat", "IVF65536_HNSW32,Flat", "HNSW32", "HNSW32,Flat", "IVF100(PQ4),Flat", "RR32,PQ8+4"]
    slugs = [slug(f) for f in supported]
    assert len(set(slugs)) == len(supported)
    assert all(re.fullmatch(r"[A-Za-z0-9_.\-]+", s) for s in slugs)
    with pytest.raises(ValueError):
        slug("")


@pytest.mark.skipif(faiss.get_num_gpus() > 0, reason="tests the fallback when no GPU is present")
def test_use_gpu_true_without_gpu_falls_back_to_cpu(data, caplog):
    emb, queries = data
    with caplog.at_level("WARNING", logger="hardneg.index.faiss_index"):
        index = build_index(emb[:200], "Flat", use_gpu=True)
    assert "using the CPU" in caplog.text
    assert search(index, queries, 3, use_gpu=True)[1].shape == (NQ, 3)


@pytest.mark.gpu
@pytest.mark.skipif(faiss.get_num_gpus() == 0, reason="no GPU visible to faiss")
def test_gpu_flat_matches_cpu(data):
    emb, queries = data
    cpu = build_index(emb, "Flat", use_gpu=False)
    gpu = build_index(emb, "Flat", use_gpu=True)
    assert "Gpu" not in type(faiss.downcast_index(gpu)).__name__  # a CPU index comes back, ready to save
    cpu_scores, cpu_ids = search(cpu, queries, 10, use_gpu=False)
    gpu_scores, gpu_ids = search(gpu, queries, 10, use_gpu=True)
    np.testing.assert_allclose(gpu_scores, cpu_scores, rtol=0, atol=1e-4)
    assert (gpu_ids == cpu_ids).mean() > 0.99  # only near-ties may swap
