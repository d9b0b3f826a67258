"""A Pyserini query encoder that encodes queries exactly as hardneg does, for the folders of
:mod:`hardneg.export.index`.

:class:`HardnegQueryEncoder` loads a model folder with :meth:`hardneg.dense.model.BiEncoder.load` and tokenizes
queries as the tokenized cache does (the model's tokenizer, cut at the run's query length, no token type ids), so
pooling, projection head, L2 normalisation and ColBERT markers are all those of the run::

    from hardneg.export.pyserini import HardnegQueryEncoder
    from pyserini.search.faiss import FaissSearcher

    searcher = FaissSearcher(DIR, HardnegQueryEncoder(f"{DIR}/encoder"))
    hits = searcher.search("what is a hard negative", k=10)

:func:`faiss_searcher` does both. Importing this module starts the Java virtual machine (from hardneg's Java 21,
:mod:`hardneg.bm25.java`): Pyserini's modules need it when they are imported.

A plain model (no ColBERT markers, no projection head: ``markers`` null and ``projection_dim`` null in the folder's
``hardneg.json``) is also encoded by Pyserini's built-in ``pyserini.encode.AutoQueryEncoder(DIR/encoder,
pooling=<pooling>, l2_norm=<normalize>)``, with ``pooling`` (``cls`` or ``mean``) and ``normalize`` read from
``hardneg.json``: it reads the same ``last_hidden_state`` of the same tokens without token type ids, takes the
first token or the mean over the query's tokens, and normalises when asked. It cuts a query at the run's query
length when searched with ``{"query": text, "max_length": <length>}``. The export's ``hardneg_export.json`` names
those settings (``pyserini_auto_query_encoder``; null when no built-in encoder matches), and
:func:`hardneg.export.index.pyserini_recipe` (what ``hardneg export index`` prints) is the whole search with
Pyserini alone, the Java start included.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

from hardneg.bm25.java import start_jvm
from hardneg.errors import HardnegError
from hardneg.export.index import QUERY_SETTINGS

start_jvm()  # before any Pyserini import: pyserini.encode reaches the JVM when imported

import torch
from pyserini.encode import QueryEncoder
from pyserini.search.faiss import FaissSearcher

from hardneg.dense.model import BiEncoder
from hardneg.dense.tokenized import encode_chunk
from hardneg.dense.tokenizer import load_tokenizer


def _recorded_query_length(encoder_dir: Path) -> int:
    """The query length recorded in a model folder: the export's ``hardneg_query.json``, else the
    ``query_max_length`` of ``hardneg.json`` (recorded by newer saves); a HardnegError when neither has it."""
    settings = encoder_dir / QUERY_SETTINGS
    if settings.is_file():
        return int(json.loads(settings.read_text())["max_length"])
    recorded = json.loads((encoder_dir / "hardneg.json").read_text()).get("query_max_length")
    if recorded is None:
        raise HardnegError(
            f"{encoder_dir} records no query length ({settings} is missing): give max_length, the "
            "run's params.model.query_max_length"
        )
    return int(recorded)


class HardnegQueryEncoder(QueryEncoder):
    """Pyserini query encoder over a hardneg bi-encoder folder: encodes queries exactly as the run does.

    Queries are tokenized as the tokenized cache does (the model's tokenizer, cut at ``max_length`` tokens, no
    token type ids), so pooling, projection head, L2 normalisation and ColBERT markers are all the run's.

    :param encoder_dir: a hardneg model folder: an index export's ``encoder/`` or a run's ``model/``.
    :param max_length: the most tokens of a query (the run's ``params.model.query_max_length``); None: read from
        the folder's ``hardneg_query.json`` (which ``hardneg.export.index.export_index`` writes), else from its
        ``hardneg.json``.
    :param device: a torch device name, e.g. ``"cpu"`` or ``"cuda"``.
    :param batch_size: queries encoded at once by ``encode_batch``.
    :raises HardnegError: ``encoder_dir`` has no ``hardneg.json``, or no query length is given or recorded.
    """

    def __init__(
        self,
        encoder_dir: str | os.PathLike,
        *,
        max_length: int | None = None,
        device: str = "cpu",
        batch_size: int = 64,
    ):
        super().__init__()
        encoder_dir = Path(encoder_dir)
        if not (encoder_dir / "hardneg.json").is_file():
            raise HardnegError(
                f"{encoder_dir} is not a hardneg model folder: {encoder_dir / 'hardneg.json'} is missing"
            )
        if max_length is None:
            max_length = _recorded_query_length(encoder_dir)
        self.max_length = max_length
        self.batch_size = batch_size
        self.device = torch.device(device)
        self.tokenizer = load_tokenizer(encoder_dir)
        self.model = BiEncoder.load(encoder_dir).to(self.device).eval()
        self.has_model = True

    def encode_batch(self, queries: list[str]) -> np.ndarray:
        """Encode several queries.

        :param queries: the query texts.
        :returns: the vectors, shape (len(queries), dim), float32, in the order of ``queries``.
        """
        out = np.empty((len(queries), self.model.dim), dtype=np.float32)
        with torch.inference_mode():
            for start in range(0, len(queries), self.batch_size):
                part = list(queries[start : start + self.batch_size])
                ids, lengths, _ = encode_chunk(self.tokenizer, part, None, self.max_length)
                width = int(lengths.max())
                input_ids = torch.from_numpy(ids[:, :width].astype(np.int64)).to(self.device)
                mask = (torch.arange(width)[None, :] < torch.from_numpy(lengths.astype(np.int64))[:, None]).long()
                vectors = self.model.encode(input_ids, mask.to(self.device), "query")
                out[start : start + len(part)] = vectors.float().cpu().numpy()
        return out

    def encode(self, query: str, **kwargs) -> np.ndarray:
        """Encode one query (what Pyserini's ``FaissSearcher.search`` calls).

        :param query: the query text.
        :param **kwargs: ignored (Pyserini's interface).
        :returns: the vector, shape (dim,), float32.
        """
        return self.encode_batch([query])[0]


def faiss_searcher(export_dir: str | os.PathLike, *, device: str = "cpu"):
    """Pyserini's ``FaissSearcher`` over an index export, with a ``HardnegQueryEncoder`` of its ``encoder/``.

    Importing ``hardneg.export.pyserini`` starts the Java virtual machine Pyserini's modules need. Search with
    ``searcher.search(query_text, k=10)``: a list of hits with ``docid`` and ``score`` (an inner product), best
    first.

    :param export_dir: a folder written by ``hardneg.export.index.export_index``.
    :param device: the torch device the query encoder runs on, e.g. ``"cpu"`` or ``"cuda"``.
    :returns: the searcher (``pyserini.search.faiss.FaissSearcher``).
    :raises HardnegError: ``export_dir/encoder`` is not a hardneg model folder or records no query length.
    """
    return FaissSearcher(str(export_dir), HardnegQueryEncoder(Path(export_dir) / "encoder", device=device))
