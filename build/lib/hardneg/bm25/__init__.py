"""BM25 retrieval through Pyserini (Lucene): index building and multi-threaded batch search."""

from hardneg.bm25.index import build_index
from hardneg.bm25.java import heap_for
from hardneg.bm25.search import retrieve_split, search

__all__ = ["build_index", "heap_for", "retrieve_split", "search"]
