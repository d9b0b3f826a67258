"""BEIR folder layout: ``corpus.jsonl``, ``queries.jsonl`` and ``qrels/<split>.tsv``.

A split's queries are those its qrels file judges, in ``queries.jsonl`` order (the BEIR convention).
"""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow.compute as pc

from hardneg.datasets.adapter_declaration import Adapter
from hardneg.datasets.canonical import Dataset, Source
from hardneg.datasets.tables import corpus_table, qrels_table, queries_table, text_field
from hardneg.errors import DataError
from hardneg.io.readers import iter_jsonl, iter_tsv


def read_jsonl_corpus(path: str | Path):
    """A BEIR-style corpus JSONL (``_id``, ``title``, ``text``) → (table, Source)."""
    path = str(path)
    rows = (
        (
            line,
            text_field(path, line, obj, "_id", required=True),
            text_field(path, line, obj, "title", required=False),
            text_field(path, line, obj, "text", required=True),
        )
        for line, obj in iter_jsonl(path)
    )
    return corpus_table(rows, path)


def read_beir_qrels(path: str | Path):
    path = str(path)
    rows = ((line, f[0], f[1], f[2]) for line, f in iter_tsv(path, 3, header="query-id"))
    return qrels_table(rows, path)


def load(folder: str | Path, splits: list[str]) -> Dataset:
    folder = Path(folder)
    if not folder.is_dir():
        raise DataError(folder, None, "BEIR dataset folder does not exist")
    corpus, corpus_source = read_jsonl_corpus(folder / "corpus.jsonl")
    q_path = str(folder / "queries.jsonl")
    all_queries, all_source = queries_table(
        (
            (
                line,
                text_field(q_path, line, obj, "_id", required=True),
                text_field(q_path, line, obj, "text", required=True),
            )
            for line, obj in iter_jsonl(q_path)
        ),
        q_path,
    )
    queries, queries_source, qrels, qrels_source = {}, {}, {}, {}
    for split in splits:
        qrels[split], qrels_source[split] = read_beir_qrels(folder / "qrels" / f"{split}.tsv")
        judged = pc.is_in(all_queries["qid"], value_set=qrels[split]["qid"].unique())
        queries[split] = all_queries.filter(judged)
        # Unknown-qid errors must point into the qrels file, so the split's source keeps all query lines.
        queries_source[split] = Source(q_path, all_source.lines[judged.to_numpy(zero_copy_only=False)])
    return Dataset(corpus, queries, qrels, corpus_source, queries_source, qrels_source)


def _input_files(cfg: dict) -> list[str]:
    root = cfg["path"]
    return [os.path.join(root, "corpus.jsonl"), os.path.join(root, "queries.jsonl")] + [
        os.path.join(root, "qrels", f"{s}.tsv") for s in cfg["splits"]
    ]


ADAPTER = Adapter(
    "beir",
    splits=lambda cfg: list(cfg["splits"]),
    load=lambda cfg: load(cfg["path"], list(cfg["splits"])),
    input_files=_input_files,
)
