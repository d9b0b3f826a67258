"""Stage functions around Faiss: build an index over a run's corpus embeddings, and retrieve with it."""

from __future__ import annotations

import logging

import numpy as np

from hardneg.dense.encode import encode_rows, save_embeddings
from hardneg.dense.tokenized import TokenizedTexts
from hardneg.io import artifacts, logs
from hardneg.io.npyfile import NpyRows
from hardneg.io.rankings import RankingWriter

log = logging.getLogger(__name__)


def build_index_stage(
    embeddings_path,
    factory: str,
    index_path,
    *,
    train_size=None,
    seed: int = 0,
    threads: int | None = None,
    key: str = "index.factory",
) -> None:
    """Stage function: build the ``factory`` index over a corpus embedding matrix and save it atomically.

    The matrix is read block by block: only the index holds the vectors.

    :param embeddings_path: the corpus embeddings (``.npy``, shape (documents, dim), float16 or float32), e.g. a
        dense run's ``embeddings/corpus.npy``; row i gets faiss id i.
    :type embeddings_path: str | os.PathLike
    :param factory: a faiss index-factory string, e.g. ``"Flat"``, ``"IVF1024,PQ8"``, ``"HNSW32"``.
    :param index_path: the index file to write, e.g. ``results/<run>/index/<slug>.faiss``.
    :type index_path: str | os.PathLike
    :param train_size: rows an index that needs training is trained on; None: the default of
        ``hardneg.index.faiss_index.build_index``.
    :type train_size: int | None
    :param seed: the seed of the training sample and of faiss's k-means.
    :param threads: the OpenMP thread count; None: faiss's current setting.
    :param key: the configuration key named by configuration errors (the workflow gives the key that asked for
        this index, see ``hardneg.pipeline.index_factories.factory_key``).
    :raises ConfigError: a factory string faiss rejects, or a training sample too small for the index (see
        ``hardneg.index.faiss_index.build_index``); the error names ``key``.
    :raises ValueError: a file that is not a 2-D floating ``.npy`` matrix, or an empty one.
    """
    from hardneg.index import build_index, save_index  # Faiss: imported only where an index is built or searched

    vectors = NpyRows(embeddings_path)  # read block by block: only the index holds the vectors
    index = build_index(vectors, factory, train_size=train_size, seed=seed, threads=threads, key=key)
    save_index(index, index_path)


def dense_search_split(
    model_dir,
    cache_dir,
    split: str,
    index_path,
    docids_path,
    *,
    ranking_path,
    trec_path,
    query_npy,
    query_ids,
    top_k: int,
    search_params=None,
    batch_size: int = 256,
    tag: str = "dense",
    device: str = "auto",
    precision: str = "fp32",
) -> int:
    """Stage function: encode one split's queries, search the index, write the ranking and the query embeddings.

    Queries are searched one batch at a time and each batch's ranking is written as it comes
    (``hardneg.io.rankings.RankingWriter``), so the whole ranking is never in memory.

    :param model_dir: a saved bi-encoder folder (a run's ``model/``).
    :type model_dir: str | os.PathLike
    :param cache_dir: the tokenized cache the model reads (``results/datasets/<dataset>/tokenized/<key>``).
    :type cache_dir: str | os.PathLike
    :param split: the split whose queries are searched (the cache's ``queries_<split>``).
    :param index_path: the faiss index file to search.
    :type index_path: str | os.PathLike
    :param docids_path: the ROW_IDS Parquet file naming each index row (``embeddings/corpus.ids.parquet``).
    :type docids_path: str | os.PathLike
    :param ranking_path: the RANKING Parquet file to write.
    :type ranking_path: str | os.PathLike
    :param trec_path: the ranking in TREC format to write (``qid Q0 docid rank score tag`` lines), or None for none.
    :type trec_path: str | os.PathLike | None
    :param query_npy: the ``.npy`` file of the query vectors to write, shape (queries, dim), float32.
    :type query_npy: str | os.PathLike
    :param query_ids: the ROW_IDS Parquet file to write: the qid of each row of ``query_npy``.
    :type query_ids: str | os.PathLike
    :param top_k: documents retrieved per query.
    :param search_params: search-time index parameters, e.g. ``"nprobe=16"`` (see
        ``hardneg.index.faiss_index.set_search_params``); None: as saved with the index.
    :type search_params: str | dict | None
    :param batch_size: queries per forward pass of the encoder.
    :param tag: the TREC file's tag (the workflow gives the run's name).
    :param device: ``"auto"`` (a GPU when torch sees one, else the CPU) or a torch device name.
    :param precision: the compute precision of the encoder: ``"fp32"``, ``"bf16"`` or ``"fp16"``.
    :returns: the number of rows of the ranking written.
    :raises ConfigError: ``search_params`` the index does not accept (naming ``index.search_params``).
    :raises FileNotFoundError: a missing index file.
    :raises ValueError: ``docids_path`` naming a different number of documents than the index holds.
    :raises HardnegError: a qid, docid or ``tag`` holding whitespace or a control character, which a TREC line
        cannot hold.
    """
    from hardneg.dense.model import BiEncoder  # torch: imported only where a model or tensor is used
    from hardneg.dense.train_config import resolve_device

    # Faiss: imported only where an index is built or searched
    from hardneg.index import load_index, set_search_params

    texts = TokenizedTexts(cache_dir, f"queries_{split}")
    model = BiEncoder.load(model_dir)
    vectors = encode_rows(
        model,
        texts,
        np.arange(len(texts)),
        "query",
        batch_size=batch_size,
        device=resolve_device(device),
        precision=precision,
    )
    save_embeddings(vectors, texts.row_ids, query_npy, query_ids)
    index = load_index(index_path)
    set_search_params(index, search_params)
    docids = artifacts.read_table(artifacts.ROW_IDS, docids_path)["id"]  # Arrow strings, not Python objects
    rows = write_search_ranking(
        index, vectors, texts.row_ids, docids, top_k, ranking_path, trec_path=trec_path, tag=tag
    )
    logs.progress(log, "searched %d queries: %d ranked documents written", len(texts), rows, last=True)
    return rows


def write_search_ranking(
    index, vectors: np.ndarray, qids, docids, top_k: int, ranking_path, *, trec_path=None, tag: str = "dense"
) -> int:
    """Search ``index`` (a faiss index, or :class:`hardneg.index.streamed.StreamedFlat`) with the query
    ``vectors`` and write each batch's ranking as it comes (RANKING Parquet at ``ranking_path``, TREC at ``trec_path``
    unless None), so the whole ranking is never in memory; ``qids`` name the vectors' rows, ``docids`` the index's.
    Returns the rows written."""
    from hardneg.index import search_ranking_blocks  # Faiss: imported only where an index is built or searched

    with RankingWriter(ranking_path, trec_path, tag) as writer:
        for block in search_ranking_blocks(index, vectors, qids, docids, top_k):
            writer.write(block)
    return writer.rows
