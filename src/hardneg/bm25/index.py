"""Build a Lucene index of a canonical corpus with Anserini's multi-threaded indexer."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

import pyarrow.parquet as pq

from hardneg.bm25.java import start_jvm
from hardneg.errors import IncompleteOutputError
from hardneg.io import artifacts
from hardneg.io.atomic import atomic_dir

log = logging.getLogger(__name__)

_SHARD_DOCS = 250_000


# What Java's String.trim() removes: Anserini skips a document whose indexed text is empty once trimmed.
_JAVA_BLANK = "".join(chr(code) for code in range(0x21))


def _write_collection(corpus_path: str, folder: Path, fields: str) -> tuple[int, int]:
    """Write the corpus as Anserini JsonCollection shards. ``flat``: title and text in one ``contents``
    field; ``multifield``: ``title`` indexed as its own field beside ``contents`` (the text). Documents whose
    ``contents`` is blank are left out (Anserini would skip them: BM25 never ranks an empty document). Returns
    (documents written, documents left out)."""
    parquet = pq.ParquetFile(corpus_path)
    artifacts.check_file(artifacts.CORPUS, corpus_path)
    count, blank, shard, handle = 0, 0, 0, None
    for batch in parquet.iter_batches(batch_size=10_000, columns=["docid", "title", "text"]):
        for docid, title, text in zip(*(batch.column(i).to_pylist() for i in range(3))):
            title, text = title or "", text or ""
            if fields == "flat":
                doc = {"id": docid, "contents": f"{title}\n{text}" if title else text}
            else:
                doc = {"id": docid, "contents": text, "title": title}
            if not doc["contents"].strip(_JAVA_BLANK):
                blank += 1
                continue
            if handle is None or count % _SHARD_DOCS == 0:
                if handle:
                    handle.close()
                handle = open(folder / f"docs{shard:04d}.jsonl", "w", encoding="utf-8")  # noqa: SIM115 (one per shard)
                shard += 1
            handle.write(json.dumps(doc, ensure_ascii=False) + "\n")
            count += 1
            if count % 1_000_000 == 0:
                log.info("collection: %d documents written", count)
    if handle:
        handle.close()
    return count, blank


def build_index(
    corpus_path: str | os.PathLike,
    index_dir: str | os.PathLike,
    *,
    fields: str = "flat",
    threads: int = 1,
    stemmer: str = "porter",
    max_heap: str | None = None,
    store_raw: bool = False,
) -> dict:
    """Index a canonical corpus with Anserini's multi-threaded indexer (Lucene, through Pyserini).

    Documents whose indexed text is blank are left out: BM25 never ranks an empty document. The folder is
    written atomically and holds ``lucene/`` (the Lucene index, with positions and document vectors stored, which
    Pyserini's RM3 and Rocchio read) and ``index.json`` (the facts returned), which ``search`` reads. The raw
    documents are not stored unless asked: the texts are in the corpus file, and a stored copy makes every hit of a
    search load and decompress it (``benchmarks/bm25_raw.py --store-raw`` measures what that costs). Starts the
    Java virtual machine on first use in the process.

    :param corpus_path: a CORPUS Parquet file (``docid``, ``title``, ``text``), e.g. a prepared dataset's
        ``corpus.parquet``.
    :param index_dir: the index folder to write; an existing one is replaced.
    :param fields: ``"flat"``: title and text indexed as one ``contents`` field (the title first, on its own line);
        ``"multifield"``: the text as ``contents`` and the title as its own ``title`` field, which ``search``
        weighs with ``title_weight``.
    :param threads: indexing threads (at least 1 is used).
    :param stemmer: Anserini's stemmer: ``"porter"``, ``"krovetz"`` or ``"none"``.
    :param max_heap: the Java heap limit, e.g. ``"4g"`` or ``"3072m"`` (``-Xmx``); applies only when this call
        starts the JVM. None: Java's default.
    :param store_raw: also store each document's JSON as Anserini's ``raw`` field (what Pyserini's
        ``doc(docid).raw()`` returns).
    :returns: the facts written to ``index.json``: ``num_docs`` (documents indexed), ``fields`` and ``stemmer``.
    :raises DataError: ``corpus_path`` is missing or is not a CORPUS table.
    :raises IncompleteOutputError: Anserini's indexer failed, or the index it wrote cannot be opened or does not
        hold every document written (a full disk); nothing replaces ``index_dir`` then.
    """
    start_jvm(max_heap)
    from jnius import JavaException, autoclass  # Pyserini's Java bridge: starts a Java VM

    index_collection = autoclass("io.anserini.index.IndexCollection")
    index_dir = Path(index_dir)
    with atomic_dir(index_dir) as tmp:
        collection = tmp / "_collection"
        collection.mkdir()
        count, blank = _write_collection(str(corpus_path), collection, fields)
        args = [
            "-collection",
            "JsonCollection",
            "-input",
            str(collection),
            "-index",
            str(tmp / "lucene"),
            "-generator",
            "DefaultLuceneDocumentGenerator",
            "-threads",
            str(max(1, threads)),
            "-stemmer",
            stemmer,
            "-storePositions",
            "-storeDocvectors",
            "-optimize",
        ]
        if store_raw:
            args.append("-storeRaw")
        if fields == "multifield":
            args += ["-fields", "title"]
        log.info(
            "indexing %d documents with %d threads (%s); %d with nothing to index left out",
            count,
            threads,
            fields,
            blank,
        )
        try:
            index_collection.main(args)
        except JavaException as exc:
            raise IncompleteOutputError(index_dir, f"Anserini's indexer failed: {java_failure(exc)}") from None
        check_index(tmp / "lucene", count, index_dir)
        for shard in collection.iterdir():
            shard.unlink()
        collection.rmdir()
        facts = {"num_docs": count, "fields": fields, "stemmer": stemmer}
        (tmp / "index.json").write_text(json.dumps(facts, indent=2) + "\n")
    return facts


def check_index(lucene: Path, expected: int, index_dir: str | os.PathLike) -> None:
    """Open the Lucene index just written in ``lucene`` and check that it holds ``expected`` documents. Anserini's
    indexer logs a failed write (a full disk) and returns as if it had succeeded, leaving segment files that no
    reader opens; the job must fail instead, before the index takes ``index_dir``'s place."""
    from jnius import JavaException, autoclass  # Pyserini's Java bridge, started by build_index

    try:
        directory = autoclass("org.apache.lucene.store.FSDirectory").open(
            autoclass("java.io.File")(str(lucene)).toPath()
        )
        reader = autoclass("org.apache.lucene.index.DirectoryReader").open(directory)
        try:
            held = reader.numDocs()
        finally:
            reader.close()
            directory.close()
    except JavaException as exc:
        raise IncompleteOutputError(
            index_dir,
            f"the Lucene index written cannot be opened ({java_failure(exc)}); "
            f"the indexer's log above says why (e.g. no space left on "
            f"device)",
        ) from None
    if held != expected:
        raise IncompleteOutputError(
            index_dir,
            f"the Lucene index written holds {held} documents, not the "
            f"corpus's {expected}; the indexer's log above says why",
        )


def java_failure(exc) -> str:
    """A Java exception in one line: its class and message, and those of its first cause (``Caused by:`` in its
    stack trace), e.g. ``AlreadyClosedException: this IndexWriter is closed (caused by java.io.IOException: No
    space left on device)``."""
    message = exc.innermessage or ""
    message = message if len(message) <= 120 else message[:120] + "..."  # Lucene's may list every file
    text = f"{exc.classname.rsplit('.', 1)[-1]}: {message}" if exc.classname else str(exc)
    trace = list(exc.stacktrace or [])
    for before, line in zip(trace, trace[1:]):
        if before.strip() == "Caused by:":
            return f"{text} (caused by {line.strip()})"
    return text


def lucene_dir(index_dir: str | os.PathLike) -> str:
    return str(Path(index_dir) / "lucene")
