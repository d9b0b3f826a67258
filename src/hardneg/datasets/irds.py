"""Datasets from the ``ir_datasets`` package, by id (e.g. ``beir/scifact/test``).

Optional: it needs the package (``pip install 'hardneg[irds]'``) and, on first use, network access to
download the files into ``ir_datasets``' own cache.
"""

from __future__ import annotations

from hardneg.datasets.adapter_declaration import Adapter
from hardneg.datasets.canonical import Dataset, Source
from hardneg.datasets.tables import corpus_table, qrels_table, queries_table
from hardneg.errors import HardnegError


def _import():
    try:
        import ir_datasets  # noqa: F401
    except ImportError:
        raise HardnegError(
            "the 'ir_datasets' adapter needs the ir_datasets package, which is not installed: "
            "pip install 'hardneg[irds]' (it also needs network access to download the data)"
        ) from None
    return ir_datasets


def _load_id(irds, dataset_id: str):
    try:
        return irds.load(dataset_id)
    except KeyError:
        raise HardnegError(f"ir_datasets has no dataset with id {dataset_id!r}") from None


def load(splits: dict[str, str]) -> Dataset:
    """``splits`` maps our split names to ir_datasets ids; the corpus comes from the first id."""
    irds = _import()
    handles = {split: _load_id(irds, dataset_id) for split, dataset_id in splits.items()}
    first_split, first = next(iter(handles.items()))
    if not first.has_docs():
        raise HardnegError(f"ir_datasets id {splits[first_split]!r} has no documents")
    try:

        def doc_rows():
            for i, doc in enumerate(first.docs_iter(), start=1):
                text = getattr(doc, "text", None) or getattr(doc, "body", "") or ""
                yield i, doc.doc_id, getattr(doc, "title", "") or "", text

        corpus, corpus_source = corpus_table(doc_rows(), f"ir_datasets:{splits[first_split]}")
        queries, queries_source, qrels, qrels_source = {}, {}, {}, {}
        for split, handle in handles.items():
            where = f"ir_datasets:{splits[split]}"
            queries[split], queries_source[split] = queries_table(
                ((i, q.query_id, getattr(q, "text", "") or "") for i, q in enumerate(handle.queries_iter(), 1)), where
            )
            qrels[split], qrels_source[split] = qrels_table(
                ((i, r.query_id, r.doc_id, str(r.relevance)) for i, r in enumerate(handle.qrels_iter(), 1)), where
            )
    except OSError as exc:
        raise HardnegError(
            f"ir_datasets could not fetch its files ({exc}); it needs network access on first use"
        ) from exc
    return Dataset(
        corpus, queries, qrels, corpus_source, queries_source, qrels_source, extra_stats={"ir_datasets": dict(splits)}
    )


__all__ = ["load", "Source"]


ADAPTER = Adapter("ir_datasets", splits=lambda cfg: list(cfg["splits"]), load=lambda cfg: load(cfg["splits"]))
