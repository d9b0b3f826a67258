"""The tokenized cache: corpus and queries tokenized once into memory-mapped arrays that every stage reuses.

A cache folder holds, per text set (``corpus`` and ``queries_<split>``):

    <name>.ids.npy      int32 [rows, max_length], padded with the tokenizer's pad id
    <name>.len.npy      int32 [rows], number of real tokens
    <name>.rows.parquet the document or query id of each row (ROW_IDS)

Documents are encoded as the pair (title, text): ``[CLS] title [SEP] text [SEP]``, or ``[CLS] text [SEP]`` when
the title is blank. A prompt (``params.model.query_prompt`` / ``doc_prompt``, or the model folder's:
:mod:`hardneg.dense.st_folder`) is put before every text of its side before it is tokenized, as
sentence-transformers puts it: before the query, before a document's title (the pair's first text), or before its
text when it has no title; its tokens count within the maximum length. The prompts are part of the cache's
identity (:func:`cache_key`) and recorded in ``cache.json``.

Texts are tokenized in chunks and each chunk's rows are appended to the file, so the tokenized corpus is never in
memory; stages read it through a memory map (as DRhard's pre-tokenised memmaps).

With ``exclude_empty`` the corpus set leaves out the empty documents (see :mod:`hardneg.datasets.empty_documents`), so
every stage that reads it (encoding, hence the corpus embeddings and their row ids, indexes, dense rankings and
mining; random negatives; ADORE; dev evaluation) sees only the others: a row of the corpus set is a row of
``embeddings/corpus.npy``.

Texts longer than the maximum length are cut. ``cache.json`` records, per text set, how many were cut and the
lengths that would keep 95% and 99% of them whole; when more than :data:`TRUNCATION_WARN_SHARE` of a set is
cut, the console says so (:func:`hardneg.io.logs.console`).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from hardneg.datasets.empty_documents import EXAMPLES, empty_docids, empty_mask
from hardneg.dense.st_folder import folder_prompts
from hardneg.dense.tokenizer import load_tokenizer
from hardneg.errors import DataError
from hardneg.io import artifacts
from hardneg.io.atomic import atomic_dir
from hardneg.io.logs import console
from hardneg.io.npyfile import NpyWriter

log = logging.getLogger(__name__)

_CHUNK = 20_000
TRUNCATION_WARN_SHARE = 0.01  # a set with more of its texts cut than this gets a console warning
LENGTH_QUANTILES = (0.95, 0.99)  # the suggested maximum lengths keep these shares of a set whole
_LENGTH_SAMPLE = 10_000  # cut texts re-tokenized whole to estimate the length quantiles


def _inputs(first: list[str], second: list[str] | None, prompt: str = "") -> list:
    """What the tokenizer reads: queries as they are; documents as (title, text), or the text alone when the
    title is blank; ``prompt`` before the first text of each."""
    if second is None:
        return [prompt + text for text in first]
    return [(prompt + t, x) if t and t.strip() else prompt + x for t, x in zip(first, second)]


def encode_chunk(tokenizer, first: list[str], second: list[str] | None, max_length: int, prompt: str = ""):
    """Token ids [rows, max_length] (padded), lengths, and whether each text was cut to ``max_length``;
    ``prompt`` put before each text (see the module docstring)."""
    backend = tokenizer.backend_tokenizer
    backend.enable_truncation(max_length)
    backend.no_padding()
    encodings = backend.encode_batch(_inputs(first, second, prompt))
    ids = np.full((len(encodings), max_length), tokenizer.pad_token_id, dtype=np.int32)
    lengths = np.empty(len(encodings), dtype=np.int32)
    cut = np.zeros(len(encodings), dtype=bool)
    for row, enc in enumerate(encodings):
        n = len(enc.ids)
        ids[row, :n] = enc.ids
        lengths[row] = n
        cut[row] = bool(enc.overflowing)  # the tokens beyond max_length, when there were any
    return ids, lengths, cut


def _full_lengths(tokenizer, texts: list) -> np.ndarray:
    """Token counts of ``texts`` (strings or (title, text) pairs) tokenized whole."""
    backend = tokenizer.backend_tokenizer
    backend.no_truncation()
    backend.no_padding()
    return np.array([len(enc.ids) for enc in backend.encode_batch(texts)], dtype=np.int64)


def length_quantiles(kept: np.ndarray, cut_sample: np.ndarray, num_cut: int, quantiles=LENGTH_QUANTILES) -> list[int]:
    """The token length within which a share ``q`` of a set's texts fit, for each ``q`` of ``quantiles``.

    ``kept`` holds the lengths of the texts that were not cut (exact), ``cut_sample`` the whole lengths of a
    uniform sample of the ``num_cut`` texts that were (all of them when there are few): a quantile that falls
    among the cut texts is the matching quantile of the sample."""
    kept = np.sort(np.asarray(kept))
    total = len(kept) + num_cut
    out = []
    for q in quantiles:
        position = max(int(np.ceil(q * total)), 1)  # the position-th shortest text, 1-based
        if position <= len(kept) or not len(cut_sample):
            out.append(int(kept[min(position, len(kept)) - 1]) if len(kept) else 0)
        else:
            share = (position - len(kept)) / num_cut
            out.append(int(np.quantile(np.asarray(cut_sample), share, method="inverted_cdf")))
    return out


def _write_set(tokenizer, path: Path, name: str, batches, rows: int, max_length: int, prompt: str = "") -> dict:
    """Tokenize one text set into the cache; return its truncation facts (see :func:`_truncation`)."""
    matrix = NpyWriter(path / f"{name}.ids.npy", (rows, max_length), np.int32)  # rows appended, never all in memory
    lengths = np.empty(rows, dtype=np.int32)
    cut = np.zeros(rows, dtype=bool)
    row_ids: list[pa.Array] = []
    # A uniform sample of the cut texts, for their whole lengths: those with the smallest random keys.
    rng = np.random.default_rng(0)
    sample, sample_keys = [], np.zeros(0)
    cursor = 0
    for id_chunk, first, second in batches:
        chunk_ids, chunk_len, chunk_cut = encode_chunk(tokenizer, first, second, max_length, prompt)
        matrix.write(chunk_ids)
        lengths[cursor : cursor + len(chunk_ids)] = chunk_len
        cut[cursor : cursor + len(chunk_ids)] = chunk_cut
        if chunk_cut.any():
            inputs = _inputs(first, second, prompt)
            sample += [inputs[i] for i in np.flatnonzero(chunk_cut)]
            sample_keys = np.concatenate([sample_keys, rng.random(int(chunk_cut.sum()))])
            if len(sample) > _LENGTH_SAMPLE:
                keep = np.sort(np.argpartition(sample_keys, _LENGTH_SAMPLE)[:_LENGTH_SAMPLE])
                sample, sample_keys = [sample[i] for i in keep], sample_keys[keep]
        row_ids.append(pa.array(id_chunk, pa.string()))
        cursor += len(chunk_ids)
        log.info("tokenized %s: %d / %d", name, cursor, rows)
    matrix.close()
    np.save(path / f"{name}.len.npy", lengths)
    ids = pa.concat_arrays(row_ids) if row_ids else pa.array([], pa.string())
    pq.write_table(pa.table({"id": ids}), path / f"{name}.rows.parquet")
    whole = _full_lengths(tokenizer, sample) if sample else np.zeros(0, np.int64)
    num_cut = int(cut.sum())
    fit = length_quantiles(lengths[~cut], whole, num_cut)
    return {
        "rows": rows,
        "max_length": max_length,
        "cut": num_cut,
        "fit": {f"{q:g}": length for q, length in zip(LENGTH_QUANTILES, fit)},
    }


def truncation_warning(
    facts: dict,
    what: str,
    noun: str,
    setting: str,
    *,
    model_limit: int | None = None,
    threshold: float = TRUNCATION_WARN_SHARE,
) -> str | None:
    """The console warning for one text set's truncation ``facts`` (an entry of ``truncation`` in the cache's
    ``cache.json``), or None when at most ``threshold`` of the set is cut. ``what`` names the set (e.g.
    "'train' queries of dataset X"), ``noun`` its texts ("queries"), ``setting`` the maximum-length key
    (``query_max_length``); ``model_limit``: the most tokens the model reads, when known."""
    rows, num_cut = facts["rows"], facts["cut"]
    if not rows or num_cut / rows <= threshold:
        return None
    (low_q, low), (high_q, high) = list(facts["fit"].items())[0], list(facts["fit"].items())[-1]
    low_pct, high_pct = f"{100 * float(low_q):g}%", f"{100 * float(high_q):g}%"
    advice = _length_advice(setting, high, f"{high_pct} of them", model_limit)
    return (
        f"{num_cut:,} of {rows:,} {what} ({100 * num_cut / rows:.1f}%) are longer than {setting} "
        f"{facts['max_length']} tokens and are cut.\n{low_pct} of the {noun} fit in {low} tokens, {high_pct} in "
        f"{high}: {advice}"
    )


def _length_advice(setting: str, length: int, kept: str, model_limit: int | None) -> str:
    """The closing advice of a truncation warning: set ``setting`` to ``length`` to keep ``kept`` whole, or, when
    the model reads fewer tokens than that, to the model's limit."""
    if model_limit and model_limit < length:
        return f"the model reads at most {model_limit} tokens: params.model.{setting}: {model_limit} keeps the most."
    return f"set params.model.{setting}: {length} to keep {kept} whole."


def query_truncation_warning(
    facts: dict[str, dict], where: str = "", *, model_limit: int | None = None, threshold: float = TRUNCATION_WARN_SHARE
) -> str | None:
    """The console warning for the query splits of one dataset (``facts``: split → its truncation facts, as
    :func:`truncation_warning` takes them), or None when at most ``threshold`` of each split is cut: the queries cut
    in all, each split's share, and one ``query_max_length`` for the collection, the one that keeps the most
    demanding split's share whole (``where``: e.g. " of dataset X")."""
    shown = {split: f for split, f in facts.items() if f["rows"]}
    if not any(f["cut"] / f["rows"] > threshold for f in shown.values()):
        return None
    rows, num_cut = sum(f["rows"] for f in shown.values()), sum(f["cut"] for f in shown.values())
    max_length = next(iter(shown.values()))["max_length"]
    quantiles = list(next(iter(shown.values()))["fit"])
    low_q, high_q = quantiles[0], quantiles[-1]
    low, high = max(f["fit"][low_q] for f in shown.values()), max(f["fit"][high_q] for f in shown.values())
    low_pct, high_pct = f"{100 * float(low_q):g}%", f"{100 * float(high_q):g}%"
    splits = ", ".join(f"'{split}': {f['cut']:,} of {f['rows']:,}" for split, f in shown.items() if f["cut"])
    advice = _length_advice("query_max_length", high, f"{high_pct} of every split's queries", model_limit)
    return (
        f"{num_cut:,} of {rows:,} queries{where} ({100 * num_cut / rows:.1f}%) are longer than query_max_length "
        f"{max_length} tokens and are cut ({splits}).\n{low_pct} of each split's queries fit in {low} tokens, "
        f"{high_pct} in {high}: {advice}"
    )


def _model_limit(tokenizer) -> int | None:
    limit = getattr(tokenizer, "model_max_length", None)
    return int(limit) if isinstance(limit, int) and 0 < limit < 1_000_000 else None


def build_cache(
    tokenizer_source: str | os.PathLike,
    corpus_path: str | os.PathLike,
    queries: dict[str, str | os.PathLike],
    out_dir: str | os.PathLike,
    *,
    doc_max_length: int,
    query_max_length: int,
    exclude_empty: bool = False,
    dataset: str | None = None,
    query_prompt: str | None = "",
    doc_prompt: str | None = "",
) -> dict:
    """Tokenize the corpus and each split's queries into ``out_dir`` (written whole, then renamed into place).

    ``query_prompt`` / ``doc_prompt``: put before each query / document (see the module docstring); None: the
    prompt of that side of the model folder ``tokenizer_source`` (:func:`hardneg.dense.st_folder.folder_prompts`),
    which is how the job reads a hub model's prompts. A prompt is recorded in ``cache.json`` (``prompts``).

    ``exclude_empty`` leaves the empty documents out of the corpus set. Returns the ``cache.json`` facts: the
    empty documents (``count``, first ``docids``, whether ``excluded``) and per text set its ``truncation``
    (``rows``, ``cut``, ``max_length``, and ``fit``: the lengths keeping 95% and 99% whole). A set with more
    than :data:`TRUNCATION_WARN_SHARE` cut is reported on the console, the query splits together with one
    ``query_max_length`` for all of them (:func:`query_truncation_warning`); ``dataset`` names it there."""
    tokenizer = load_tokenizer(tokenizer_source)
    if query_prompt is None or doc_prompt is None:
        own = folder_prompts(str(tokenizer_source))
        query_prompt = own["query"] if query_prompt is None else query_prompt
        doc_prompt = own["doc"] if doc_prompt is None else doc_prompt
    empty = empty_docids(corpus_path)
    truncation = {}
    with atomic_dir(out_dir) as tmp:
        corpus = pq.ParquetFile(corpus_path)

        def corpus_batches():
            for batch in corpus.iter_batches(batch_size=_CHUNK, columns=["docid", "title", "text"]):
                if exclude_empty and empty:
                    batch = batch.filter(pa.array(~empty_mask(batch)))
                yield batch.column(0).to_pylist(), batch.column(1).to_pylist(), batch.column(2).to_pylist()

        rows = corpus.metadata.num_rows - (len(empty) if exclude_empty else 0)
        if rows == 0:
            raise DataError(corpus_path, None, "every document is empty (no title, no text): nothing to encode")
        truncation["corpus"] = _write_set(tokenizer, tmp, "corpus", corpus_batches(), rows, doc_max_length, doc_prompt)
        if exclude_empty and empty:
            log.info(
                "left %d empty documents out of the tokenized corpus (e.g. %s)", len(empty), ", ".join(empty[:EXAMPLES])
            )
        for split, path in queries.items():
            table = artifacts.read_table(artifacts.QUERIES, path)

            def query_batches(table=table):
                for lo in range(0, table.num_rows, _CHUNK):
                    part = table.slice(lo, _CHUNK)
                    yield part["qid"].to_pylist(), part["text"].to_pylist(), None

            truncation[f"queries_{split}"] = _write_set(
                tokenizer, tmp, f"queries_{split}", query_batches(), table.num_rows, query_max_length, query_prompt
            )
        facts = {
            "tokenizer": str(tokenizer_source),
            "doc_max_length": doc_max_length,
            "query_max_length": query_max_length,
            "pad_token_id": tokenizer.pad_token_id,
            "vocab_size": len(tokenizer),
            "empty_documents": {"count": len(empty), "docids": empty[:EXAMPLES], "excluded": bool(exclude_empty)},
            "truncation": truncation,
        }
        if query_prompt or doc_prompt:  # a cache without prompts records none, as before there were any
            facts["prompts"] = {"query": query_prompt, "doc": doc_prompt}
        (tmp / "cache.json").write_text(json.dumps(facts, indent=2) + "\n")
    where = f" of dataset {dataset}" if dataset else ""
    limit = _model_limit(tokenizer)
    queries_facts = {name[len("queries_") :]: f for name, f in truncation.items() if name != "corpus"}
    for message in (
        truncation_warning(truncation["corpus"], f"documents{where}", "documents", "doc_max_length", model_limit=limit),
        query_truncation_warning(queries_facts, where, model_limit=limit),
    ):
        if message:
            console(message)
    return facts


CHUNK_GRANULARITY = 8  # chunk sizes are multiples of this (the last may be smaller)
CHUNK_OVERHEAD_TOKENS = 256  # what one more chunk (one more pass through the encoder) costs, in padded tokens
# on a GPU a pass costs its kernel launches whatever its size, and padding is cheap: chunks pay off far less often
GPU_CHUNK_OVERHEAD_TOKENS = 8192


def chunk_overhead(device) -> int:
    """The cost of one more chunk, in padded tokens, on ``device`` (see :func:`length_chunks`)."""
    return GPU_CHUNK_OVERHEAD_TOKENS if str(device).startswith("cuda") else CHUNK_OVERHEAD_TOKENS


def length_chunks(
    lengths: np.ndarray, *, granularity: int = CHUNK_GRANULARITY, overhead: int = CHUNK_OVERHEAD_TOKENS
) -> list[np.ndarray]:
    """Split texts of ``lengths`` into length-homogeneous chunks: the positions of each chunk (longest texts
    first). The texts are sorted by length, longest first (ties in position order), and cut into runs whose
    sizes are multiples of ``granularity``, chosen to minimise the padded tokens of all chunks plus
    ``overhead`` tokens per chunk (exact dynamic programming over the cut points). The plan depends on the
    lengths alone, so the same batch is always encoded the same way."""
    lengths = np.asarray(lengths, dtype=np.int64)
    order = np.argsort(-lengths, kind="stable")
    if len(order) <= granularity:
        return [order]
    cuts = list(range(0, len(order), granularity)) + [len(order)]  # allowed chunk boundaries
    widths = lengths[order]
    best = [0.0] + [float("inf")] * (len(cuts) - 1)  # best[j]: cheapest plan of the first cuts[j] texts
    back = [0] * len(cuts)
    for j in range(1, len(cuts)):
        for i in range(j):
            cost = best[i] + overhead + (cuts[j] - cuts[i]) * int(widths[cuts[i]])
            if cost < best[j]:
                best[j], back[j] = cost, i
    bounds, j = [], len(cuts) - 1
    while j > 0:
        bounds.append((cuts[back[j]], cuts[j]))
        j = back[j]
    return [order[lo:hi] for lo, hi in reversed(bounds)]


def cap_rows(chunks: list[np.ndarray], max_rows: int | None) -> list[np.ndarray]:
    """``chunks`` with every chunk of more than ``max_rows`` rows cut into consecutive pieces of ``max_rows``
    (the last may be smaller); unchanged when ``max_rows`` is None."""
    if max_rows is None:
        return chunks
    if max_rows < 1:
        raise ValueError(f"max_rows must be positive, got {max_rows}")
    return [chunk[lo : lo + max_rows] for chunk in chunks for lo in range(0, len(chunk), max_rows)]


class Chunked:
    """A batch of texts as length-homogeneous chunks, each ``input_ids`` + ``attention_mask`` trimmed to its
    longest text (see :func:`length_chunks`). ``inverse`` puts the concatenated per-chunk outputs back in the
    order the rows were given: ``torch.cat(outputs)[inverse]``.

    With ``recompute`` the encoder keeps no activations of a chunk in the forward pass and recomputes them, one
    chunk at a time, in the backward pass (gradient caching: see :meth:`hardneg.dense.model.BiEncoder.encode_batch`)."""

    def __init__(self, parts: list[dict], inverse, *, recompute: bool = False):
        self.parts, self.inverse, self.recompute = parts, inverse, recompute

    def to(self, device, non_blocking: bool = False) -> Chunked:
        return Chunked(
            [{k: v.to(device, non_blocking=non_blocking) for k, v in part.items()} for part in self.parts],
            self.inverse.to(device, non_blocking=non_blocking),
            recompute=self.recompute,
        )

    def __len__(self) -> int:
        return len(self.inverse)


class TokenizedTexts:
    """One memory-mapped text set of the cache; yields padded-to-batch-maximum tensors for any rows."""

    def __init__(self, cache_dir: str | os.PathLike, name: str):
        cache_dir = Path(cache_dir)
        self.ids = np.load(cache_dir / f"{name}.ids.npy", mmap_mode="r")
        self.lengths = np.load(cache_dir / f"{name}.len.npy")
        self.row_ids = pq.ParquetFile(cache_dir / f"{name}.rows.parquet").read(columns=["id"])["id"].to_pylist()
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

    def chunked(
        self,
        rows: np.ndarray,
        *,
        granularity: int = CHUNK_GRANULARITY,
        overhead: int = CHUNK_OVERHEAD_TOKENS,
        grad_cache_rows: int | None = None,
    ) -> Chunked:
        """The texts of ``rows`` as length-homogeneous chunks (:func:`length_chunks`): far less padding than one
        block padded to the longest text when lengths vary. Encoding the chunks and reordering the outputs with
        ``inverse`` gives the vectors of one padded block, up to floating-point rounding (attention masks
        padding out exactly); with dropout on, the masks drawn differ with the layout.

        With ``grad_cache_rows`` no chunk has more rows than that, and the batch is encoded with gradient
        caching (:class:`Chunked`'s ``recompute``): a training step then holds the activations of one such
        chunk at a time, whatever the batch size."""
        import torch  # torch: imported only where a model or tensor is used

        rows = np.asarray(rows)
        chunks = cap_rows(
            length_chunks(self.lengths[rows], granularity=granularity, overhead=overhead), grad_cache_rows
        )
        order = np.concatenate(chunks)
        inverse = np.empty_like(order)
        inverse[order] = np.arange(len(order))
        return Chunked(
            [self.batch(rows[positions]) for positions in chunks],
            torch.from_numpy(inverse),
            recompute=grad_cache_rows is not None,
        )


def cache_key(
    tokenizer_source: str,
    doc_max_length: int,
    query_max_length: int,
    query_prompt: str | None = "",
    doc_prompt: str | None = "",
) -> str:
    """A folder name for one (tokenizer, lengths, prompts) combination. The prompts (:func:`build_cache`'s; None:
    the model folder's own, read by the job) add ``-p<digest>``; a cache without prompts has none."""
    digest = hashlib.sha256(str(tokenizer_source).encode()).hexdigest()[:10]
    key = f"{Path(str(tokenizer_source)).name or 'tok'}-{digest}-d{doc_max_length}-q{query_max_length}"
    if query_prompt == "" and doc_prompt == "":
        return key
    prompts = hashlib.sha256(json.dumps([query_prompt, doc_prompt]).encode()).hexdigest()[:10]
    return f"{key}-p{prompts}"
