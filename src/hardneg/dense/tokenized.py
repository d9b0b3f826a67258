"""The tokenized cache: corpus and queries tokenized once into memory-mapped arrays that every stage reuses.

A cache folder holds, per text set (``corpus`` and ``queries_<split>``):

    <name>.ids.npy      int32 [rows, max_length], padded with the tokenizer's pad id
    <name>.len.npy      int32 [rows], number of real tokens
    <name>.rows.parquet the document or query id of each row (ROW_IDS)

Documents are encoded as the pair (title, text): ``[CLS] title [SEP] text [SEP]``, or ``[CLS] text [SEP]`` when
the title is empty. Files are written in chunks through a memory map, so the corpus never has to fit twice
in memory (as DRhard's pre-tokenised memmaps).
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from hardneg import artifacts
from hardneg.atomic import atomic_dir

log = logging.getLogger(__name__)

_CHUNK = 20_000


def _encode_chunk(tokenizer, first: list[str], second: list[str] | None, max_length: int):
    backend = tokenizer.backend_tokenizer
    backend.enable_truncation(max_length)
    backend.no_padding()
    if second is None:
        encodings = backend.encode_batch(first)
    else:
        encodings = backend.encode_batch([(t, x) if t else x for t, x in zip(first, second)])
    ids = np.full((len(encodings), max_length), tokenizer.pad_token_id, dtype=np.int32)
    lengths = np.empty(len(encodings), dtype=np.int32)
    for row, enc in enumerate(encodings):
        n = len(enc.ids)
        ids[row, :n] = enc.ids
        lengths[row] = n
    return ids, lengths


def _write_set(tokenizer, path: Path, name: str, batches, rows: int, max_length: int) -> None:
    matrix = np.lib.format.open_memmap(path / f"{name}.ids.npy", mode="w+", dtype=np.int32, shape=(rows, max_length))
    lengths = np.empty(rows, dtype=np.int32)
    row_ids: list[str] = []
    cursor = 0
    for id_chunk, first, second in batches:
        chunk_ids, chunk_len = _encode_chunk(tokenizer, first, second, max_length)
        matrix[cursor:cursor + len(chunk_ids)] = chunk_ids
        lengths[cursor:cursor + len(chunk_ids)] = chunk_len
        row_ids.extend(id_chunk)
        cursor += len(chunk_ids)
        log.info("tokenized %s: %d / %d", name, cursor, rows)
    matrix.flush()
    del matrix
    np.save(path / f"{name}.len.npy", lengths)
    pq.write_table(pa.table({"id": pa.array(row_ids, pa.string())}), path / f"{name}.rows.parquet")


def build_cache(tokenizer_source: str | os.PathLike, corpus_path: str | os.PathLike,
                queries: dict[str, str | os.PathLike], out_dir: str | os.PathLike, *, doc_max_length: int,
                query_max_length: int) -> None:
    """Tokenize the corpus and each split's queries into ``out_dir`` (written whole, then renamed into place)."""
    from hardneg.dense.tokenizer import load_tokenizer

    tokenizer = load_tokenizer(tokenizer_source)
    with atomic_dir(out_dir) as tmp:
        corpus = pq.ParquetFile(corpus_path)

        def corpus_batches():
            for batch in corpus.iter_batches(batch_size=_CHUNK, columns=["docid", "title", "text"]):
                yield batch.column(0).to_pylist(), batch.column(1).to_pylist(), batch.column(2).to_pylist()

        _write_set(tokenizer, tmp, "corpus", corpus_batches(), corpus.metadata.num_rows, doc_max_length)
        for split, path in queries.items():
            table = artifacts.read_table(artifacts.QUERIES, path)

            def query_batches(table=table):
                for lo in range(0, table.num_rows, _CHUNK):
                    part = table.slice(lo, _CHUNK)
                    yield part["qid"].to_pylist(), part["text"].to_pylist(), None

            _write_set(tokenizer, tmp, f"queries_{split}", query_batches(), table.num_rows, query_max_length)
        (tmp / "cache.json").write_text(json.dumps({
            "tokenizer": str(tokenizer_source), "doc_max_length": doc_max_length,
            "query_max_length": query_max_length, "pad_token_id": tokenizer.pad_token_id,
            "vocab_size": len(tokenizer)}, indent=2) + "\n")


class TokenizedTexts:
    """One memory-mapped text set of the cache; yields padded-to-batch-maximum tensors for any rows."""

    def __init__(self, cache_dir: str | os.PathLike, name: str):
        cache_dir = Path(cache_dir)
        self.ids = np.load(cache_dir / f"{name}.ids.npy", mmap_mode="r")
        self.lengths = np.load(cache_dir / f"{name}.len.npy")
        self.row_ids = pq.read_table(cache_dir / f"{name}.rows.parquet")["id"].to_pylist()
        self.pad_token_id = json.loads((cache_dir / "cache.json").read_text())["pad_token_id"]

    def __len__(self) -> int:
        return len(self.lengths)

    def batch(self, rows: np.ndarray) -> dict:
        """``input_ids`` and ``attention_mask`` tensors of ``rows``, trimmed to the longest of them."""
        import torch  # here, not at module level: the workflow imports this module to name cache folders

        rows = np.asarray(rows)
        width = int(self.lengths[rows].max()) if len(rows) else 1
        ids = torch.from_numpy(np.ascontiguousarray(self.ids[rows, :width]).astype(np.int64))
        mask = (torch.arange(width)[None, :] < torch.from_numpy(self.lengths[rows].astype(np.int64))[:, None]).long()
        return {"input_ids": ids, "attention_mask": mask}


def cache_key(tokenizer_source: str, doc_max_length: int, query_max_length: int) -> str:
    """A folder name for one (tokenizer, lengths) combination."""
    import hashlib

    digest = hashlib.sha256(str(tokenizer_source).encode()).hexdigest()[:10]
    return f"{Path(str(tokenizer_source)).name or 'tok'}-{digest}-d{doc_max_length}-q{query_max_length}"
