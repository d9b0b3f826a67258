"""Encoding texts into vectors: length-sorted batches (little padding), optional float16 output, shards.

Corpus encoding is split into shards (contiguous row ranges of the tokenized corpus) that run as separate jobs;
:func:`gather_shards` concatenates them, file to file, into one memory-mappable ``.npy`` with its row-id table.
The rows are those of the tokenized corpus, which leaves the empty documents out under ``empty_documents:
exclude`` (:mod:`hardneg.dense.tokenized`): ``corpus.ids.parquet`` names exactly the documents ``corpus.npy``
holds, in the order of the tokenized corpus, so a row of the embeddings is a row of the tokenized corpus (ADORE
and dev evaluation rely on it).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from hardneg.dense.tokenized import TokenizedTexts
from hardneg.io import artifacts, logs
from hardneg.io.atomic import atomic_path
from hardneg.io.npyfile import NpyRows, NpyWriter

if TYPE_CHECKING:
    import torch

log = logging.getLogger(__name__)


def shard_range(num_rows: int, shard: int, num_shards: int) -> tuple[int, int]:
    """Rows [lo, hi) of shard ``shard`` (0-based) of ``num_shards`` near-equal contiguous shards."""
    return shard * num_rows // num_shards, (shard + 1) * num_rows // num_shards


FLUSH_ROWS = 32768  # vectors kept on the device before one copy back to the host


def encode_rows(
    model,
    texts: TokenizedTexts,
    rows: np.ndarray,
    side: str,
    *,
    batch_size: int = 128,
    device: str | torch.device = "cpu",
    fp16: bool = False,
    precision: str = "fp32",
) -> np.ndarray:
    """Encode rows of a tokenized text set into vectors with a bi-encoder.

    Rows are encoded longest first in batches trimmed to their longest member, which removes most padding. On a
    GPU, batches go over from pinned memory without waiting, and vectors come back every 32,768 rows
    (``FLUSH_ROWS``) rather than after each batch, so the host prepares the next batches while the GPU computes.

    :param model: the bi-encoder (``hardneg.dense.model.BiEncoder``, e.g. ``BiEncoder.load(model_dir)``); it is
        moved to ``device`` and put in evaluation mode.
    :type model: BiEncoder
    :param texts: a tokenized text set of the cache, e.g. ``TokenizedTexts(cache_dir, "corpus")`` or
        ``TokenizedTexts(cache_dir, "queries_test")``.
    :param rows: the row numbers (0-based) of ``texts`` to encode, any order, shape (n,).
    :param side: ``"query"`` or ``"doc"``: which of the model's encoders and heads to use.
    :param batch_size: texts per forward pass.
    :param device: a torch device or its name (``"cpu"``, ``"cuda"``, ``"cuda:1"``).
    :param fp16: store the vectors as float16 instead of float32.
    :param precision: the compute precision: ``"fp32"``, or ``"bf16"`` / ``"fp16"`` autocast; one the device
        cannot run falls back to fp32 with a logged warning.
    :returns: the vectors, shape (len(rows), model.dim), float32 (float16 with ``fp16``); row i is the vector of
        ``texts`` row ``rows[i]``.
    :raises ValueError: an unknown ``precision``.
    """
    import torch  # here, not at module level: gathering shards and building indexes do without it

    # torch: imported only where it is used
    from hardneg.dense.precision import attention_kernels, effective
    from hardneg.dense.precision import autocast as precision_autocast

    device = torch.device(device)
    rows = np.asarray(rows, dtype=np.int64)
    order = np.argsort(-texts.lengths[rows], kind="stable")
    out = np.empty((len(rows), model.dim), dtype=np.float16 if fp16 else np.float32)
    autocast = precision_autocast(device, effective(device, precision))
    model.to(device).eval()
    cuda = device.type == "cuda"
    done = 0
    meter = logs.Meter(log, "encoded %d / %d %s texts (%.0f per second)", len(rows), label=f"{side} texts")
    pending: list[tuple[np.ndarray, torch.Tensor]] = []

    def flush() -> None:
        for positions, vectors in pending:
            out[positions] = vectors.float().cpu().numpy().astype(out.dtype, copy=False)
        pending.clear()

    with torch.inference_mode(), autocast, attention_kernels(device):
        for lo in range(0, len(order), batch_size):
            positions = order[lo : lo + batch_size]
            batch = texts.batch(rows[positions])
            if cuda:
                batch = {k: v.pin_memory().to(device, non_blocking=True) for k, v in batch.items()}
            pending.append((positions, model.encode(batch["input_ids"], batch["attention_mask"], side)))
            done += len(positions)
            if len(pending) * batch_size >= FLUSH_ROWS or not cuda:
                flush()
            meter.update(done, side)
        flush()
    logs.progress(log, "encoded %d %s texts at %.1f per second", len(rows), side, meter.rate(len(rows)))
    return out


def save_embeddings(vectors: np.ndarray, ids: list[str], npy_path, ids_path) -> None:
    with atomic_path(npy_path) as tmp, open(tmp, "wb") as handle:
        np.save(handle, vectors)
    artifacts.write_table(pa.table({"id": pa.array(ids, pa.string())}), artifacts.ROW_IDS, ids_path)


def load_embeddings(npy_path, ids_path, mmap: bool = True) -> tuple[np.ndarray, list[str]]:
    """An embedding matrix and the id of each of its rows, e.g. a dense run's ``embeddings/corpus.npy`` and
    ``embeddings/corpus.ids.parquet`` or ``embeddings/queries_<split>.npy`` and ``queries_<split>.ids.parquet``.

    :param npy_path: the ``.npy`` file of the vectors, shape (rows, dim), float32 or float16.
    :type npy_path: str | os.PathLike
    :param ids_path: the ROW_IDS Parquet file naming each row of ``npy_path``.
    :type ids_path: str | os.PathLike
    :param mmap: memory-map the matrix (read-only) instead of reading it whole.
    :returns: (vectors, ids): the matrix, shape (rows, dim), and the id of each row, in row order.
    :raises ValueError: the two files differ in number of rows.
    :raises DataError: ``ids_path`` is missing or is not a ROW_IDS table.
    """
    vectors = np.load(npy_path, mmap_mode="r" if mmap else None)
    ids = artifacts.read_table(artifacts.ROW_IDS, ids_path)["id"].to_pylist()
    if len(ids) != len(vectors):
        raise ValueError(f"{npy_path} has {len(vectors)} rows but {ids_path} lists {len(ids)} ids")
    return vectors, ids


def encode_corpus_shard(
    model_dir,
    cache_dir,
    shard: int,
    num_shards: int,
    npy_path,
    ids_path,
    *,
    batch_size: int = 128,
    fp16: bool = False,
    precision: str = "fp32",
    device: str = "auto",
) -> int:
    """Stage function: encode one shard of the tokenized corpus with a saved bi-encoder.

    The corpus's rows are split into ``num_shards`` near-equal contiguous ranges; shard ``shard`` covers rows
    ``shard * n // num_shards`` (inclusive) to ``(shard + 1) * n // num_shards`` (exclusive), n being the number
    of documents in the tokenized corpus, which leaves the empty documents out under ``empty_documents:
    exclude``. ``gather_shards`` joins the shards.

    :param model_dir: a saved bi-encoder folder (a run's ``model/``).
    :type model_dir: str | os.PathLike
    :param cache_dir: the tokenized cache the model reads (``results/datasets/<dataset>/tokenized/<key>``).
    :type cache_dir: str | os.PathLike
    :param shard: the shard to encode, 0-based.
    :param num_shards: the number of shards the corpus is split into.
    :param npy_path: the ``.npy`` file of the shard's vectors to write, shape (rows of the shard, dim).
    :type npy_path: str | os.PathLike
    :param ids_path: the ROW_IDS Parquet file to write: the document id of each row of ``npy_path``.
    :type ids_path: str | os.PathLike
    :param batch_size: documents per forward pass.
    :param fp16: store the vectors as float16 instead of float32.
    :param precision: the compute precision: ``"fp32"``, ``"bf16"`` or ``"fp16"`` (see ``encode_rows``).
    :param device: ``"auto"`` (a GPU when torch sees one, else the CPU) or a torch device name.
    :returns: the number of documents encoded.
    :raises ValueError: an unknown ``precision``.
    """
    from hardneg.dense.model import BiEncoder  # torch: imported only where a model or tensor is used
    from hardneg.dense.train_config import resolve_device

    texts = TokenizedTexts(cache_dir, "corpus")
    lo, hi = shard_range(len(texts), shard, num_shards)
    model = BiEncoder.load(model_dir)
    vectors = encode_rows(
        model,
        texts,
        np.arange(lo, hi),
        "doc",
        batch_size=batch_size,
        device=resolve_device(device),
        fp16=fp16,
        precision=precision,
    )
    save_embeddings(vectors, texts.row_ids[lo:hi], npy_path, ids_path)
    logs.progress(log, "shard %d of %d: documents %d to %d encoded", shard + 1, num_shards, lo + 1, hi, last=True)
    return hi - lo


def gather_shards(npy_paths: list, ids_paths: list, npy_path, ids_path) -> int:
    """Concatenate shard embeddings, in the order given, into one ``.npy`` and one ROW_IDS file.

    The vectors are copied file to file: neither the shards nor the result are ever held in memory. Both outputs
    are written atomically.

    :param npy_paths: the shards' ``.npy`` files (``encode_corpus_shard``), in shard order; all of one dim and
        dtype.
    :param ids_paths: the shards' ROW_IDS Parquet files, in the same order.
    :param npy_path: the ``.npy`` file to write, shape (total rows, dim), the shards' dtype.
    :type npy_path: str | os.PathLike
    :param ids_path: the ROW_IDS Parquet file to write: the document id of each row of ``npy_path``.
    :type ids_path: str | os.PathLike
    :returns: the total number of rows.
    :raises ValueError: a shard whose ``.npy`` and id file differ in number of rows, or whose dtype or dim differs
        from the first shard's.
    :raises DataError: an id file that is missing or is not a ROW_IDS table.
    """
    shards = [NpyRows(p) for p in npy_paths]
    rows = sum(len(s) for s in shards)
    dim, dtype = shards[0].shape[1], shards[0].dtype
    ids = []
    for path, shard, npy in zip(ids_paths, shards, npy_paths):
        shard_ids = artifacts.read_table(artifacts.ROW_IDS, path)["id"]
        if len(shard_ids) != len(shard):  # row i of corpus.npy must be the document named on row i of the ids
            raise ValueError(f"{npy} has {len(shard)} rows but {path} lists {len(shard_ids)} ids")
        ids.append(shard_ids)
    with atomic_path(npy_path) as tmp, NpyWriter(tmp, (rows, dim), dtype) as merged:
        for npy in npy_paths:
            merged.copy_from(npy)
    ids_table = pa.table({"id": pa.chunked_array([c for part in ids for c in part.chunks], pa.string())})
    artifacts.write_table(ids_table.combine_chunks(), artifacts.ROW_IDS, ids_path)
    return rows
