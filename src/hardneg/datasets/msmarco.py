"""MS MARCO passage and document ranking files, as distributed.

Passage: ``collection.tsv`` (pid, passage), ``queries.<split>.tsv`` (qid, text), qrels ``qid 0 pid rel``.
Document: ``msmarco-docs.tsv`` (docid, url, title, body), queries as above, qrels ``qid 0 docid rel``.
"""

from __future__ import annotations

from hardneg.datasets.adapter_declaration import Adapter
from hardneg.datasets.canonical import Dataset
from hardneg.datasets.qrels import read_trec_qrels
from hardneg.datasets.splits import check_query_and_qrels_files
from hardneg.datasets.tables import corpus_table, queries_table, restrict_to_judged
from hardneg.io.readers import iter_tsv


def read_tsv_queries(path: str):
    return queries_table(((line, f[0], f[1]) for line, f in iter_tsv(path, 2, headerless=True)), path)


def _load(corpus, corpus_source, queries_files: dict, qrels_files: dict, judged_only: bool) -> Dataset:
    queries, queries_source, qrels, qrels_source = {}, {}, {}, {}
    for split, q_path in queries_files.items():
        qrels[split], qrels_source[split] = read_trec_qrels(qrels_files[split])
        queries[split], queries_source[split] = read_tsv_queries(q_path)
        if judged_only:
            queries[split], queries_source[split] = restrict_to_judged(
                queries[split], queries_source[split], qrels[split]
            )
    return Dataset(corpus, queries, qrels, corpus_source, queries_source, qrels_source)


def load_passage(collection: str, queries: dict, qrels: dict, judged_only: bool = True) -> Dataset:
    check_query_and_qrels_files({"queries": queries, "qrels": qrels}, "queries")  # before the big file
    corpus, source = corpus_table(
        ((line, f[0], "", f[1]) for line, f in iter_tsv(collection, 2, headerless=True)), collection
    )
    return _load(corpus, source, queries, qrels, judged_only)


def load_document(docs: str, queries: dict, qrels: dict, judged_only: bool = True) -> Dataset:
    check_query_and_qrels_files({"queries": queries, "qrels": qrels}, "queries")
    corpus, source = corpus_table(((line, f[0], f[2], f[3]) for line, f in iter_tsv(docs, 4, headerless=True)), docs)
    return _load(corpus, source, queries, qrels, judged_only)


PASSAGE = Adapter(
    "msmarco_passage",
    splits=lambda cfg: list(cfg["queries"]),
    query_files="queries",
    load=lambda cfg: load_passage(cfg["collection"], cfg["queries"], cfg["qrels"], cfg["judged_only"]),
    input_files=lambda cfg: [cfg["collection"], *cfg["queries"].values(), *cfg["qrels"].values()],
)
DOCUMENT = Adapter(
    "msmarco_document",
    splits=lambda cfg: list(cfg["queries"]),
    query_files="queries",
    load=lambda cfg: load_document(cfg["docs"], cfg["queries"], cfg["qrels"], cfg["judged_only"]),
    input_files=lambda cfg: [cfg["docs"], *cfg["queries"].values(), *cfg["qrels"].values()],
)
