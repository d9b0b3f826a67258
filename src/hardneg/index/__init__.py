"""Dense-retrieval indexes built with Faiss: build, tune, save, load and search by inner product.

Faiss is imported on first use of one of its functions, so that ``slug`` (used when Snakemake builds the DAG)
does not pay for it.
"""

from hardneg.io.index_names import slug

_FAISS_FUNCTIONS = (
    "build_index",
    "is_exact",
    "load_index",
    "ranking_table",
    "save_index",
    "search",
    "search_blocks",
    "search_ranking",
    "search_ranking_blocks",
    "set_search_params",
)


def __getattr__(name: str):
    if name in _FAISS_FUNCTIONS:
        from hardneg.index import faiss_index  # Faiss: loaded on first use of one of its functions

        return getattr(faiss_index, name)
    raise AttributeError(f"module 'hardneg.index' has no attribute {name!r}")


__all__ = [*_FAISS_FUNCTIONS, "slug"]
