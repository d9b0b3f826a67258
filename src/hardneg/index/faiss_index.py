"""Faiss dense-retrieval indexes: build (train + add), tune, save, load and search by inner product.

Every index uses the inner-product metric, so scores are dot products of the embeddings (cosine similarity when the
encoder normalises them). Indexes are always returned and saved as CPU indexes; the GPU, when used, only speeds up
training, adding and searching.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections.abc import Iterator
from typing import cast

import faiss
import numpy as np
import pyarrow as pa

from hardneg.errors import ConfigError
from hardneg.index.validate import (
    DEFAULT_TRAIN_SIZE,
    FAISS_POINTS_PER_CENTROID,
    default_train_size,
    describe_factory_error,
    faiss_message,
    needed_training_vectors,
    too_few_training_vectors,
)
from hardneg.io import artifacts
from hardneg.io.atomic import atomic_path
from hardneg.io.index_names import slug  # noqa: F401  (re-exported)

log = logging.getLogger(__name__)

_ADD_BATCH = 131_072  # rows converted to float32 and added at a time, so a float16 memmap is never copied whole
_GPU_MAX_K = 2048  # faiss GPU search refuses larger k


# ---------------------------------------------------------------------------------------------------------------
# helpers


def _faiss_message(exc: BaseException) -> str:
    """Faiss's own explanation without the C++ function signature and source location."""
    return faiss_message(exc)


def _check_matrix(array: np.ndarray, name: str, *, dim: int | None = None, allow_empty: bool = False) -> np.ndarray:
    """Check that ``array`` is a 2-D floating matrix (of ``dim`` columns when given); return it unchanged."""
    if not hasattr(array, "ndim") or array.ndim != 2:
        raise ValueError(f"{name} must be a 2-D array [rows, dim], got shape {getattr(array, 'shape', None)}")
    if not np.issubdtype(array.dtype, np.floating):
        raise ValueError(f"{name} must be float16 or float32, got {array.dtype}")
    if array.shape[1] == 0 or (array.shape[0] == 0 and not allow_empty):
        raise ValueError(f"{name} is empty (shape {array.shape})")
    if dim is not None and array.shape[1] != dim:
        raise ValueError(f"{name} have dimension {array.shape[1]}, the index expects {dim}")
    return array


def _float32(rows: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(rows, dtype=np.float32)


def _gpu_available() -> bool:
    return (
        hasattr(faiss, "index_cpu_to_all_gpus") and hasattr(faiss, "StandardGpuResources") and faiss.get_num_gpus() > 0
    )


def _want_gpu(use_gpu: bool | str) -> bool:
    """Resolve ``use_gpu`` (True, False or "auto") to whether to try the GPU; True without one logs and says no."""
    if use_gpu not in (True, False, "auto"):
        raise ValueError(f"use_gpu must be True, False or 'auto', got {use_gpu!r}")
    if use_gpu is False:
        return False
    if _gpu_available():
        return True
    if use_gpu is True:
        log.warning(
            "GPU faiss was requested but is not available (faiss %s sees %d GPU(s)); using the CPU",
            faiss.__version__,
            faiss.get_num_gpus(),
        )
    else:
        log.info("no GPU faiss available; using the CPU")
    return False


def _to_gpu(index: faiss.Index, *, ngpu: int, what: str) -> faiss.Index | None:
    """Copy ``index`` to ``ngpu`` GPUs (-1: all); None, logged, when faiss has no GPU version of this index type."""
    try:
        return faiss.index_cpu_to_all_gpus(index, ngpu=ngpu)
    except (RuntimeError, AttributeError) as exc:
        log.info("faiss cannot %s this index on the GPU (%s); using the CPU", what, _faiss_message(exc))
        return None


@contextlib.contextmanager
def _omp_threads(threads: int | None) -> Iterator[None]:
    """Run the block with faiss's OpenMP thread count set to ``threads`` (None: leave as is), then restore it."""
    if threads is None:
        yield
        return
    if threads < 1:
        raise ValueError(f"threads must be >= 1, got {threads}")
    before = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(threads)
    try:
        yield
    finally:
        faiss.omp_set_num_threads(before)


def _seed_index(index: faiss.Index, seed: int) -> None:
    """Set the k-means seed of every trainable part faiss exposes one for (IVF coarse quantizer, PQ codebooks).

    OPQ rotations and HNSW level draws use faiss's fixed internal seeds, so they are reproducible but not seedable.
    """
    index = faiss.downcast_index(index)
    if isinstance(index, faiss.IndexPreTransform):
        _seed_index(index.index, seed)
    if isinstance(index, faiss.IndexIVF):
        index.cp.seed = seed
        if isinstance(index, faiss.IndexIVFPQ):
            index.pq.cp.seed = seed
        _seed_index(index.quantizer, seed)
    if isinstance(index, faiss.IndexPQ):
        index.pq.cp.seed = seed
    if isinstance(index, faiss.IndexHNSW):
        _seed_index(index.storage, seed)


def _default_train_size(index: faiss.Index, n: int) -> int:
    """min(n, max(DEFAULT_TRAIN_SIZE, 64 x nlist)): an IVF index with many lists needs more than the default."""
    return default_train_size(index, n, DEFAULT_TRAIN_SIZE)


def _is_flat(index: faiss.Index) -> bool:
    """An empty exact index (``Flat``) whose storage is the float32 vectors themselves."""
    flat = faiss.downcast_index(index)
    return type(flat) in (faiss.IndexFlat, faiss.IndexFlatIP) and flat.ntotal == 0


def _fill_flat(index: faiss.Index, embeddings) -> None:
    """Store every row of ``embeddings`` in the empty flat ``index``, as ``add`` would, with its storage sized
    once: ``add`` grows it by doubling, and a doubling holds the old and the new buffer at once (up to three
    times the vectors, at the last block). Blocks are converted to float32 straight into the storage."""
    flat = cast(faiss.IndexFlat, faiss.downcast_index(index))  # an empty flat index (_is_flat)
    n = len(embeddings)
    flat.codes.resize(n * flat.code_size)
    stored = faiss.rev_swig_ptr(flat.get_xb(), n * flat.d).reshape(n, flat.d)
    for start in range(0, n, _ADD_BATCH):
        stored[start : start + _ADD_BATCH] = embeddings[start : start + _ADD_BATCH]
        log.info("added %d / %d rows", min(start + _ADD_BATCH, n), n)
    flat.ntotal = n


# ---------------------------------------------------------------------------------------------------------------
# building


def build_index(
    embeddings: np.ndarray,
    factory: str,
    *,
    train_size: int | None = None,
    seed: int = 0,
    use_gpu: bool | str = "auto",
    threads: int | None = None,
    key: str = "index.factory",
) -> faiss.Index:
    """Build an inner-product faiss index over ``embeddings`` and return it as a CPU index.

    Scores of the index are inner products of the vectors (cosine similarities when the encoder normalises
    them). An index that needs training is trained on ``train_size`` rows drawn without replacement by
    ``numpy.random.default_rng(seed)``; faiss's k-means seeds are set to ``seed`` too, so the same inputs, seed
    and thread count give the same index. HNSW graphs are built by several threads and are reproducible only
    with ``threads=1``. A training sample under faiss's 39 rows per centroid is a logged warning.

    :param embeddings: the vectors, shape (n, dim), float16 or float32; row i gets faiss id i. A memory map or a
        ``hardneg.io.npyfile.NpyRows`` is fine: rows are read and converted to float32 131,072 at a time, and a
        ``Flat`` index is sized once, never holding the vectors twice.
    :param factory: a faiss index-factory string, e.g. ``"Flat"``, ``"PQ8"`` (8 bits per code unless written
        ``"PQ8x4"``), ``"OPQ8,PQ8"``, ``"IVF1024,PQ8"``, ``"IVF1024,Flat"``, ``"HNSW32"``.
    :param train_size: the rows an index that needs training is trained on (never more than n); None: all rows up
        to 100,000, or up to 64 per IVF list when that is more.
    :param seed: the seed of the training sample and of faiss's k-means.
    :param use_gpu: ``True``, ``False`` or ``"auto"`` (GPU faiss when it is installed and sees a GPU); an index
        type faiss cannot put on a GPU (HNSW) and a missing GPU fall back to the CPU with a logged message.
    :param threads: the OpenMP thread count for this call; None: faiss's current setting.
    :param key: the configuration key that asked for this index, named by configuration errors.
    :returns: the index, on the CPU, holding n vectors.
    :raises ConfigError: faiss rejects the factory string, the training sample is smaller than the index's
        largest k-means (IVF4096 needs 4,096 training rows, PQ<m> 256; checked before faiss trains), or faiss
        cannot train the index; the error names ``key``.
    :raises ValueError: ``embeddings`` that are not a 2-D floating matrix or are empty, a ``train_size`` below
        1, ``threads`` below 1, or a ``use_gpu`` other than True, False or "auto".
    """
    embeddings = _check_matrix(embeddings, "embeddings")
    n, dim = embeddings.shape
    if not isinstance(factory, str) or not factory.strip():
        raise ConfigError(key, f"must be a non-empty faiss index-factory string, got {factory!r}")
    try:
        index = faiss.index_factory(dim, factory, faiss.METRIC_INNER_PRODUCT)
    except RuntimeError as exc:
        raise ConfigError(key, describe_factory_error(factory, dim, exc)) from exc
    problem = too_few_training_vectors(factory, index, n, train_size, DEFAULT_TRAIN_SIZE)
    if problem is not None:
        raise ConfigError(key, problem)
    _seed_index(index, seed % 2**31)
    started = time.perf_counter()
    log.info("building faiss index '%s' over %d x %d %s embeddings", factory, n, dim, embeddings.dtype)

    with _omp_threads(threads):
        work = index
        if _want_gpu(use_gpu):
            # One GPU for building: replicas would each train the same quantizer again.
            work = _to_gpu(index, ngpu=1, what="build") or index
        if work is not index:
            log.info("building on the GPU")

        if not work.is_trained:
            size = _default_train_size(index, n) if train_size is None else min(int(train_size), n)
            if size < 1:
                raise ValueError(f"train_size must be >= 1, got {train_size}")
            rows = np.sort(np.random.default_rng(seed).choice(n, size=size, replace=False))
            log.info("training on %d of %d rows (seed %d)", size, n, seed)
            needed, reason = needed_training_vectors(index)
            if size < FAISS_POINTS_PER_CENTROID * needed:
                log.warning(
                    "'%s' is trained on %d vectors, fewer than the %d per centroid faiss asks for (%d "
                    "centroids: %s); its clustering may be poor",
                    factory,
                    size,
                    FAISS_POINTS_PER_CENTROID,
                    needed,
                    reason,
                )
            try:
                work.train(_float32(embeddings[rows]))
            except RuntimeError as exc:
                raise ConfigError(
                    key, f"faiss cannot train '{factory}' on {size} vectors: {_faiss_message(exc)}"
                ) from exc
            log.info("trained in %.1f s", time.perf_counter() - started)

        if work is index and _is_flat(index):
            _fill_flat(index, embeddings)
        else:
            for start in range(0, n, _ADD_BATCH):
                work.add(_float32(embeddings[start : start + _ADD_BATCH]))
                log.info("added %d / %d rows", min(start + _ADD_BATCH, n), n)

        if work is not index:
            index = faiss.index_gpu_to_cpu(work)
    log.info("built '%s' with %d vectors in %.1f s", factory, index.ntotal, time.perf_counter() - started)
    return index


def set_search_params(index: faiss.Index, params: str | dict | None) -> None:
    """Apply search-time parameters to ``index`` in place (faiss's ``ParameterSpace``).

    Faiss saves them with the index: ``save_index`` after this keeps them.

    :param index: the index to tune.
    :param params: a string such as ``"nprobe=16"``, ``"efSearch=128"`` or ``"nprobe=16,ht=64"``, or a mapping such
        as ``{"nprobe": 16}``; None, ``""`` or ``{}`` leaves the index as it is.
    :raises ConfigError: a parameter the index does not have, a value it refuses, or ``params`` of another type;
        the error names ``index.search_params``.
    """
    if params is None or params == "" or params == {}:
        return
    space = faiss.ParameterSpace()
    try:
        if isinstance(params, str):
            space.set_index_parameters(index, params)  # type: ignore[arg-type]  # faiss's stub lacks its @overload
        elif isinstance(params, dict):
            for name, value in params.items():
                space.set_index_parameter(index, str(name), float(value))
        else:
            raise ConfigError("index.search_params", f"must be a string like 'nprobe=16' or a mapping, got {params!r}")
    except RuntimeError as exc:
        raise ConfigError(
            "index.search_params", f"cannot apply {params!r} to this index: {_faiss_message(exc)}"
        ) from exc
    log.info("search parameters: %s", params)


def save_index(index: faiss.Index, path: str | os.PathLike) -> None:
    """Write ``index`` to ``path`` atomically, in faiss's own file format (``faiss.read_index`` reads it).

    Faiss writes through a Python file here: writing to a path itself, faiss reports a failure to flush its last
    buffer (a full disk) only on stderr and returns, leaving a truncated index; a Python file raises.

    :param index: a CPU index (``build_index`` returns one).
    :param path: the file to write, e.g. ``results/<run>/index/<slug>.faiss``; its folder is created when missing.
    :raises OSError: the file cannot be written (e.g. no space left on the device); nothing replaces ``path``.
    """
    with atomic_path(path) as tmp, open(tmp, "wb") as handle:
        faiss.write_index(index, faiss.PyCallbackIOWriter(handle.write))  # type: ignore[attr-defined]  # not in faiss's stub
        handle.flush()


def load_index(path: str | os.PathLike) -> faiss.Index:
    """Read an index written by ``save_index`` (or any faiss index file).

    :param path: the index file, e.g. ``results/<run>/index/<slug>.faiss``.
    :returns: the index, on the CPU, with the search parameters saved with it.
    :raises FileNotFoundError: ``path`` does not exist.
    """
    if not os.path.exists(path):
        raise FileNotFoundError(f"faiss index does not exist: {path}")
    return faiss.read_index(str(path))


def is_exact(index: faiss.Index) -> bool:
    """Whether ``index`` scores by the exact inner product of the vectors it was built from (``Flat``), so that
    its search scores are the scores themselves rather than approximations."""
    index = faiss.downcast_index(index)
    return isinstance(index, faiss.IndexFlat) and index.metric_type == faiss.METRIC_INNER_PRODUCT


# ---------------------------------------------------------------------------------------------------------------
# searching


def search_blocks(
    index: faiss.Index, queries: np.ndarray, k: int, *, batch_size: int = 4096, use_gpu: bool | str = "auto"
) -> Iterator[tuple[int, np.ndarray, np.ndarray]]:
    """Search ``queries`` ([n, dim] float16/float32) ``batch_size`` at a time for their top ``k`` rows: an
    iterator over (first query row, scores, ids) of each batch, as :func:`search` returns them for all queries.
    The arguments are checked at the call, before the first batch."""
    queries = _check_matrix(queries, "queries", dim=index.d, allow_empty=True)
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    return _search_batches(index, queries, min(int(k), int(index.ntotal)), batch_size, use_gpu)


def _search_batches(
    index: faiss.Index, queries: np.ndarray, k: int, batch_size: int, use_gpu: bool | str
) -> Iterator[tuple[int, np.ndarray, np.ndarray]]:
    n = queries.shape[0]
    if n == 0 or k == 0:
        return
    searcher = index
    if _want_gpu(use_gpu) and isinstance(index, faiss.Index):  # not an index read from disk as it searches
        if k > _GPU_MAX_K:
            log.info("k=%d is above faiss's GPU limit of %d; searching on the CPU", k, _GPU_MAX_K)
        else:
            searcher = _to_gpu(index, ngpu=-1, what="search") or index
    started = time.perf_counter()
    for start in range(0, n, batch_size):
        scores, ids = searcher.search(_float32(queries[start : start + batch_size]), k)
        yield start, scores, ids
    log.info("searched %d queries for top %d in %.1f s", n, k, time.perf_counter() - started)


def search(
    index: faiss.Index, queries: np.ndarray, k: int, *, batch_size: int = 4096, use_gpu: bool | str = "auto"
) -> tuple[np.ndarray, np.ndarray]:
    """Search ``queries`` for their top ``k`` index rows by inner product, ``batch_size`` queries at a time.

    :param index: a faiss index (``build_index``, ``load_index``).
    :param queries: query vectors, shape (n, dim), float16 or float32, dim that of the index; n may be 0.
    :param k: rows wanted per query (at least 1); at most ``index.ntotal`` are returned.
    :param batch_size: queries searched per faiss call (at least 1).
    :param use_gpu: as in ``build_index``; when used, the index is copied to all GPUs for the call (and searched on
        the CPU when k' is above faiss's GPU limit of 2,048).
    :returns: (scores, ids), both of shape (n, k') with k' = min(k, index.ntotal), best first: ``scores`` float32
        (inner products, approximate for a compressed index), ``ids`` int64 index rows (0-based); where an
        approximate index finds fewer than k' rows the tail has id -1.
    :raises ValueError: ``queries`` that are not a 2-D floating matrix of the index's dim, or ``k`` or
        ``batch_size`` below 1.
    """
    blocks = search_blocks(index, queries, k, batch_size=batch_size, use_gpu=use_gpu)
    n, k = queries.shape[0], min(int(k), int(index.ntotal))
    scores = np.empty((n, k), dtype=np.float32)
    ids = np.empty((n, k), dtype=np.int64)
    for start, batch_scores, batch_ids in blocks:
        scores[start : start + len(batch_scores)] = batch_scores
        ids[start : start + len(batch_ids)] = batch_ids
    return scores, ids


def _check_ranking_ids(index: faiss.Index, query_embeddings: np.ndarray, qids, docids) -> None:
    if len(qids) != query_embeddings.shape[0]:
        raise ValueError(f"{len(qids)} qids for {query_embeddings.shape[0]} query embeddings")
    if len(docids) != index.ntotal:
        raise ValueError(f"{len(docids)} docids for an index of {index.ntotal} vectors")


def search_ranking(
    index: faiss.Index, query_embeddings: np.ndarray, qids: list[str], docids: list[str] | np.ndarray, k: int, **kw
) -> pa.Table:
    """Search the index and return the ranking as a RANKING table.

    :param index: a faiss index (``build_index``, ``load_index``).
    :param query_embeddings: query vectors, shape (len(qids), dim), float16 or float32.
    :param qids: the query id of each row of ``query_embeddings``.
    :param docids: the document id of each index row, ``len(docids) == index.ntotal`` (a run's
        ``embeddings/corpus.ids.parquet``).
    :param k: documents wanted per query (at least 1).
    :param **kw: ``batch_size`` and ``use_gpu``, passed to ``search``.
    :returns: a RANKING table: ``qid``, ``docid`` (strings), ``rank`` (int32, 1-based), ``score`` (float32, inner
        product), rows in ``qids`` order then by rank; equal scores keep faiss's order, and missing results (-1)
        are dropped.
    :raises ValueError: ``qids`` or ``docids`` of the wrong length, or an argument ``search`` rejects.
    """
    _check_ranking_ids(index, query_embeddings, qids, docids)
    scores, ids = search(index, query_embeddings, k, **kw)
    return ranking_table(scores, ids, qids, docids)


def search_ranking_blocks(
    index: faiss.Index, query_embeddings: np.ndarray, qids, docids, k: int, **kw
) -> Iterator[pa.Table]:
    """:func:`search_ranking` one search batch at a time: the RANKING table of each batch of queries, in order (their
    concatenation is :func:`search_ranking`'s table). ``qids`` and ``docids`` may be Arrow string arrays."""
    _check_ranking_ids(index, query_embeddings, qids, docids)
    batches = search_blocks(index, query_embeddings, k, **kw)
    qids, docids = artifacts.string_array(qids), artifacts.string_array(docids)
    return (ranking_table(scores, ids, qids.slice(start, len(ids)), docids) for start, scores, ids in batches)


def ranking_table(scores: np.ndarray, ids: np.ndarray, qids, docids) -> pa.Table:
    """A RANKING artifact table from search results: ``scores`` and row ``ids`` [n, k] best first (-1: no result,
    dropped), ``qids[i]`` naming query i and ``docids[j]`` naming row j (lists, NumPy or Arrow arrays)."""
    found = ids >= 0
    # Rank counts only real results, so a -1 anywhere in a row cannot leave a gap.
    ranks = np.cumsum(found, axis=1, dtype=np.int32)[found]
    row_of = np.repeat(np.arange(ids.shape[0]), ids.shape[1]).reshape(ids.shape)[found]
    table = pa.table(
        {
            "qid": artifacts.string_array(qids).take(pa.array(row_of, pa.int64())),
            "docid": artifacts.string_array(docids).take(pa.array(ids[found], pa.int64())),
            "rank": pa.array(ranks, type=pa.int32()),
            "score": pa.array(scores[found], type=pa.float32()),
        }
    )
    return table.cast(artifacts.RANKING.schema)


# ---------------------------------------------------------------------------------------------------------------
# naming
