"""Stage functions around Faiss: build an index over a run's corpus embeddings, and retrieve with it."""

from __future__ import annotations

import logging

import numpy as np

from hardneg.dense.encode import encode_rows, save_embeddings
from hardneg.dense.tokenized import TokenizedTexts
from hardneg.io import artifacts
from hardneg.io.npyfile import NpyRows
from hardneg.io.rankings import RunWriter

log = logging.getLogger(__name__)


def build_index_stage(embeddings_path, factory: str, index_path, *, train_size=None, seed: int = 0,
                      threads: int | None = None, key: str = "index.factory") -> None:
    """Build the ``factory`` index over a corpus embedding matrix and save it atomically; errors name config
    ``key`` (see :func:`hardneg.pipeline.index_factories.factory_key`)."""
    from hardneg.index import build_index, save_index  # Faiss: imported only where an index is built or searched

    vectors = NpyRows(embeddings_path)  # read block by block: only the index holds the vectors
    index = build_index(vectors, factory, train_size=train_size, seed=seed, threads=threads, key=key)
    save_index(index, index_path)


def dense_search_split(model_dir, cache_dir, split: str, index_path, docids_path, *, run_path, trec_path,
                       query_npy, query_ids, top_k: int, search_params=None, batch_size: int = 256,
                       tag: str = "dense", device: str = "auto", precision: str = "fp32") -> int:
    """Encode one split's queries, search the index, write the run (Parquet + TREC) and the query embeddings.

    Queries are searched one batch at a time and each batch's ranking is written as it comes
    (:class:`hardneg.io.rankings.RunWriter`), so the whole run is never in memory. Returns the run's row count."""
    from hardneg.dense.model import BiEncoder  # torch: imported only where a model or tensor is used
    from hardneg.dense.trainer import resolve_device
    # Faiss: imported only where an index is built or searched
    from hardneg.index import load_index, search_run_blocks, set_search_params

    texts = TokenizedTexts(cache_dir, f"queries_{split}")
    model = BiEncoder.load(model_dir)
    vectors = encode_rows(model, texts, np.arange(len(texts)), "query", batch_size=batch_size,
                          device=resolve_device(device), precision=precision)
    save_embeddings(vectors, texts.row_ids, query_npy, query_ids)
    index = load_index(index_path)
    set_search_params(index, search_params)
    docids = artifacts.read_table(artifacts.ROW_IDS, docids_path)["id"]  # Arrow strings, not Python objects
    with RunWriter(run_path, trec_path, tag) as writer:
        for block in search_run_blocks(index, vectors, texts.row_ids, docids, top_k):
            writer.write(block)
    log.info("wrote %d ranked documents of %d queries", writer.rows, len(texts))
    return writer.rows
