"""Multi-threaded BM25 batch search over a Lucene index → a ranking table.

The search is Anserini's ``SimpleSearcher.batch_search``, the Java call behind Pyserini's
``LuceneSearcher.batch_search``, reached through Pyserini's Java bridge (``pyserini.pyclass``): importing
``pyserini.search.lucene`` would also import Pyserini's dense encoders (torch, transformers, scikit-learn), six
seconds of every search job for nothing.
"""

from __future__ import annotations

import json
import logging
import os
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

from hardneg.bm25.index import lucene_dir
from hardneg.bm25.java import start_jvm
from hardneg.io import artifacts, logs
from hardneg.io.rankings import write_ranking

log = logging.getLogger(__name__)


def search(
    index_dir: str | os.PathLike,
    queries: pa.Table,
    *,
    k: int = 1000,
    k1: float = 0.9,
    b: float = 0.4,
    threads: int = 1,
    title_weight: float = 1.0,
    batch_size: int = 10_000,
    max_heap: str | None = None,
) -> pa.Table:
    """BM25 top-``k`` of every query, with Anserini's multi-threaded batch search.

    Starts the Java virtual machine on first use in the process. Queries are analysed with the stemmer the
    index was built with (its ``index.json``), as the documents were.

    :param index_dir: a folder written by ``hardneg.bm25.index.build_index`` (``lucene/`` and ``index.json``).
    :param queries: a QUERIES table: ``qid`` (string), ``text`` (string).
    :param k: documents retrieved per query (a query may get fewer).
    :param k1: BM25's term-frequency saturation parameter.
    :param b: BM25's document-length normalisation parameter, from 0 (none) to 1 (full).
    :param threads: search threads (at least 1 is used).
    :param title_weight: for a ``multifield`` index, the weight of the ``title`` field (``contents`` weighs 1);
        a ``flat`` index ignores it.
    :param batch_size: queries handed to Anserini per call (progress is logged after each).
    :param max_heap: the Java heap limit, e.g. ``"4g"`` (``-Xmx``); applies only when this call starts the JVM.
    :returns: a RANKING table: ``qid``, ``docid`` (strings), ``rank`` (int32, 1-based), ``score`` (float32, the
        BM25 score), queries in the order of ``queries``, each query's documents best first. A query without any
        matching document has no row.
    :raises FileNotFoundError: ``index_dir`` has no ``index.json``.
    """
    start_jvm(max_heap)
    from pyserini.pyclass import JArrayList, JFloat, JHashMap, autoclass  # Pyserini's Java bridge: needs the JVM

    facts = json.loads((Path(index_dir) / "index.json").read_text())
    searcher = autoclass("io.anserini.search.SimpleSearcher")(lucene_dir(index_dir))
    # Queries are analysed as the documents were: Anserini's searcher would stem them with Porter's stemmer
    # whatever the index holds, so a krovetz or unstemmed index would silently match fewer query terms.
    searcher.set_analyzer(query_analyzer(autoclass, facts.get("stemmer", "porter")))
    searcher.set_bm25(float(k1), float(b))
    fields = None
    if facts["fields"] == "multifield":
        fields = JHashMap()
        for field, weight in (("contents", 1.0), ("title", title_weight)):
            fields.put(field, JFloat(float(weight)))
    qids = queries["qid"].to_pylist()
    texts = queries["text"].to_pylist()
    out_q: list[str] = []
    out_d: list[str] = []
    out_r: list[int] = []
    out_s: list[float] = []
    started = time.perf_counter()
    for lo in range(0, len(qids), batch_size):
        batch_q, batch_t = qids[lo : lo + batch_size], texts[lo : lo + batch_size]
        java_q, java_t = JArrayList(), JArrayList()
        for qid, text in zip(batch_q, batch_t):
            java_q.add(qid)
            java_t.add(text)
        if fields is None:
            found = searcher.batch_search(java_t, java_q, int(k), max(1, int(threads)))
        else:
            found = searcher.batch_search_fields(java_t, java_q, int(k), max(1, int(threads)), fields)
        hits = {entry.getKey(): entry.getValue() for entry in found.entrySet().toArray()}
        for qid in batch_q:
            ranked = hits.get(qid, [])
            out_q.extend([qid] * len(ranked))
            out_r.extend(range(1, len(ranked) + 1))
            # one pass over the hits: each element of a Java array read from Python is a call through the bridge
            for hit in ranked:
                out_d.append(hit.docid)
                out_s.append(hit.score)
        done = min(lo + batch_size, len(qids))
        rate = done / max(time.perf_counter() - started, 1e-9)
        logs.progress(
            log,
            "BM25: %d / %d queries (%.0f queries/s)",
            done,
            len(qids),
            rate,
            last=done == len(qids),
            done=done,
            total=len(qids),
        )
    searcher.close()
    return pa.table(
        {
            "qid": pa.array(out_q, pa.string()),
            "docid": pa.array(out_d, pa.string()),
            "rank": pa.array(np.asarray(out_r, dtype=np.int32)),
            "score": pa.array(np.asarray(out_s, dtype=np.float32)),
        },
        schema=artifacts.RANKING.schema,
    )


def query_analyzer(autoclass, stemmer: str):
    """Anserini's English analyzer with ``stemmer`` (``"porter"``, ``"krovetz"``, or ``"none"``: no stemming),
    the analyzer ``hardneg.bm25.index.build_index`` indexed the documents with."""
    analyzer = autoclass("io.anserini.analysis.DefaultEnglishAnalyzer")
    return analyzer.newNonStemmingInstance() if stemmer == "none" else analyzer.newStemmingInstance(stemmer)


def retrieve_split(
    index_dir: str | os.PathLike,
    queries_path: str | os.PathLike,
    ranking_path: str | os.PathLike,
    trec_path: str | os.PathLike,
    *,
    top_k: int = 1000,
    k1: float = 0.9,
    b: float = 0.4,
    title_weight: float = 1.0,
    threads: int = 1,
    tag: str = "BM25",
    max_heap: str | None = None,
) -> pa.Table:
    """Stage function: BM25 top-``top_k`` of one split's queries, written as a ranking (Parquet and TREC).

    :param index_dir: a folder written by ``hardneg.bm25.index.build_index``.
    :param queries_path: the split's QUERIES Parquet file, e.g. ``results/datasets/<dataset>/queries/test.parquet``.
    :param ranking_path: the RANKING Parquet file to write.
    :param trec_path: the ranking in TREC format to write (``qid Q0 docid rank score tag`` lines).
    :param top_k: documents retrieved per query.
    :param k1: BM25's term-frequency saturation parameter.
    :param b: BM25's document-length normalisation parameter.
    :param title_weight: the ``title`` field's weight in a ``multifield`` index.
    :param threads: search threads.
    :param tag: the TREC file's tag (the workflow gives the run's name).
    :param max_heap: the Java heap limit, e.g. ``"4g"``; applies only when this call starts the JVM.
    :returns: the RANKING table written (see ``search``).
    :raises DataError: ``queries_path`` is missing or is not a QUERIES table.
    :raises HardnegError: a qid, docid or ``tag`` holding whitespace or a control character, which a TREC line
        cannot hold; neither file is written then.
    """
    queries = artifacts.read_table(artifacts.QUERIES, queries_path)
    ranking = search(
        index_dir, queries, k=top_k, k1=k1, b=b, threads=threads, title_weight=title_weight, max_heap=max_heap
    )
    write_ranking(ranking, ranking_path, trec_path, tag)
    return ranking
