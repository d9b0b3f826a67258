"""Build a Lucene index of a canonical corpus with Anserini's multi-threaded indexer."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

import pyarrow.parquet as pq

from hardneg.bm25.java import start_jvm
from hardneg.io import artifacts
from hardneg.io.atomic import atomic_dir

log = logging.getLogger(__name__)

_SHARD_DOCS = 250_000


def _write_collection(corpus_path: str, folder: Path, fields: str) -> int:
    """Write the corpus as Anserini JsonCollection shards. ``flat``: title and text in one ``contents``
    field; ``multifield``: ``title`` indexed as its own field beside ``contents`` (the text)."""
    parquet = pq.ParquetFile(corpus_path)
    artifacts.read_table(artifacts.CORPUS, corpus_path).slice(0, 0)  # schema check only
    count, shard, handle = 0, 0, None
    for batch in parquet.iter_batches(batch_size=10_000, columns=["docid", "title", "text"]):
        for docid, title, text in zip(*(batch.column(i).to_pylist() for i in range(3))):
            if handle is None or count % _SHARD_DOCS == 0:
                if handle:
                    handle.close()
                handle = open(folder / f"docs{shard:04d}.jsonl", "w", encoding="utf-8")
                shard += 1
            title, text = title or "", text or ""
            if fields == "flat":
                doc = {"id": docid, "contents": f"{title}\n{text}" if title else text}
            else:
                doc = {"id": docid, "contents": text, "title": title}
            handle.write(json.dumps(doc, ensure_ascii=False) + "\n")
            count += 1
            if count % 1_000_000 == 0:
                log.info("collection: %d documents written", count)
    if handle:
        handle.close()
    return count


def build_index(corpus_path: str | os.PathLike, index_dir: str | os.PathLike, *, fields: str = "flat",
                threads: int = 1, stemmer: str = "porter", max_heap: str | None = None) -> dict:
    """Index ``corpus.parquet`` into ``index_dir`` (written atomically). Returns index facts for logging."""
    start_jvm(max_heap)
    from jnius import autoclass  # Pyserini's Java bridge: starts a Java VM

    index_collection = autoclass("io.anserini.index.IndexCollection")
    index_dir = Path(index_dir)
    with atomic_dir(index_dir) as tmp:
        collection = tmp / "_collection"
        collection.mkdir()
        count = _write_collection(str(corpus_path), collection, fields)
        args = ["-collection", "JsonCollection", "-input", str(collection), "-index", str(tmp / "lucene"),
                "-generator", "DefaultLuceneDocumentGenerator", "-threads", str(max(1, threads)),
                "-stemmer", stemmer, "-storePositions", "-storeDocvectors", "-storeRaw", "-optimize"]
        if fields == "multifield":
            args += ["-fields", "title"]
        log.info("indexing %d documents with %d threads (%s)", count, threads, fields)
        index_collection.main(args)
        for shard in collection.iterdir():
            shard.unlink()
        collection.rmdir()
        facts = {"num_docs": count, "fields": fields, "stemmer": stemmer}
        (tmp / "index.json").write_text(json.dumps(facts, indent=2) + "\n")
    return facts


def lucene_dir(index_dir: str | os.PathLike) -> str:
    return str(Path(index_dir) / "lucene")
