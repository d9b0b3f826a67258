"""Dense-retrieval indexes built with Faiss: build, tune, save, load and search by inner product."""

from hardneg.index.faiss_index import (
    build_index,
    load_index,
    save_index,
    search,
    search_run,
    set_search_params,
    slug,
)

__all__ = ["build_index", "load_index", "save_index", "search", "search_run", "set_search_params", "slug"]
