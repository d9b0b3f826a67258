"""Exact inner-product search over a corpus embedding matrix larger than memory.

MS MARCO passage encoded at 768 dimensions is 8.8M × 768 float32, 27 GB: more than a 24 GiB machine holds, so a
``Flat`` index of it cannot be built. :class:`StreamedFlat` searches the ``.npy`` matrix itself: it reads it
block by block with ordinary file reads (nothing stays mapped, so the resident set is one block and the queries'
results; the page cache keeps what fits), the next block read on a thread while Faiss's exact kernel
(``faiss.knn``, the kernel of ``IndexFlatIP``) searches the current one, and merges the blocks' top k in Faiss's
``ResultHeap``. It answers ``search`` as a faiss index does, so :func:`hardneg.index.search_blocks` and the rest
of the search code take it where they take an index.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import faiss
import numpy as np

from hardneg.io.npyfile import NpyRows

BLOCK_ROWS = 262_144  # 768 MiB of 768-dimensional float32 vectors


class StreamedFlat:
    """An exact inner-product "index" over the rows of a 2-D ``.npy`` file (float16 or float32), read a block
    of ``block_rows`` at a time on every search. ``d``, ``ntotal`` and ``metric_type`` as a faiss index has
    them; :meth:`search` returns what ``IndexFlatIP.search`` returns over the same rows (ties in any order)."""

    def __init__(self, npy_path: str | os.PathLike, *, block_rows: int = BLOCK_ROWS):
        if block_rows < 1:
            raise ValueError(f"block_rows must be >= 1, got {block_rows}")
        self.rows = NpyRows(npy_path)
        if not np.issubdtype(self.rows.dtype, np.floating):
            raise ValueError(f"{self.rows.path} holds {self.rows.dtype}, not floating-point vectors")
        self.ntotal, self.d = self.rows.shape
        self.metric_type = faiss.METRIC_INNER_PRODUCT
        self.block_rows = int(block_rows)

    def _block(self, lo: int) -> np.ndarray:
        return np.ascontiguousarray(self.rows.read(lo, lo + self.block_rows), dtype=np.float32)

    def search(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """The top ``k`` rows of every query by inner product: (scores float32, ids int64), both [n, k], best
        first; where the matrix has fewer than ``k`` rows the tail has id -1 (as faiss leaves it)."""
        queries = np.ascontiguousarray(queries, dtype=np.float32)
        if queries.ndim != 2 or queries.shape[1] != self.d:
            raise ValueError(f"queries must be [n, {self.d}], got {list(queries.shape)}")
        if k < 1:
            raise ValueError(f"k must be >= 1, got {k}")
        heap = faiss.ResultHeap(len(queries), int(k), keep_max=True)
        starts = range(0, self.ntotal, self.block_rows)
        with ThreadPoolExecutor(max_workers=1) as reader:
            coming = reader.submit(self._block, 0) if self.ntotal else None
            for lo in starts:
                assert coming is not None  # each block is submitted before its turn
                block = coming.result()
                if lo + self.block_rows < self.ntotal:
                    coming = reader.submit(self._block, lo + self.block_rows)
                scores, ids = faiss.knn(queries, block, min(int(k), len(block)), metric=faiss.METRIC_INNER_PRODUCT)
                heap.add_result(scores, ids + lo)
        heap.finalize()
        return heap.D, heap.I


__all__ = ["BLOCK_ROWS", "StreamedFlat"]
