"""Exports of a finished run for other toolkits (the ``hardneg export`` command).

They find a run's files through :class:`hardneg.results.run_files.RunFiles`.

* :mod:`hardneg.export.texts`: documents as one text, title and text joined the way hardneg's encoder reads them;
* :mod:`hardneg.export.groups`: the training groups (query, positives with their grades, hard negatives in rank
  order, with their texts) of a run's hard-negative list;
* :mod:`hardneg.export.hardnegs`: those groups in the formats of sentence-transformers, Tevatron, Hugging Face
  ``datasets`` and plain JSON Lines;
* :mod:`hardneg.export.scores`: the teacher scores of those groups (the miner's or a cross-encoder's), for
  distillation;
* :mod:`hardneg.export.card`: the card every hard-negative export carries (the run's mining card, with the
  export's rows and digests), and :func:`read_export`, which checks an export against it;
* :mod:`hardneg.export.outputs`: the atomic writers of JSON Lines files and ``datasets`` folders (where an
  export may be written is :mod:`hardneg.results.output_paths`' call);
* :mod:`hardneg.export.index`: a run's Faiss index as a folder Pyserini's ``FaissSearcher`` opens, with the query
  encoder (and its model card, with the run's metrics), and the Python that searches it with Pyserini alone;
* :mod:`hardneg.export.pyserini`: the Pyserini query encoder that encodes queries exactly as hardneg does
  (importing it starts the JVM Pyserini needs).
"""

# The formats of ``hardneg export hardnegs`` (:mod:`hardneg.export.hardnegs`), here so that the command line names
# them without importing the exports.
FORMATS = ("sentence-transformers", "tevatron", "hf-dataset", "jsonl")
ST_FORMATS = ("triplet", "n-tuple", "labeled-pair", "labeled-list")  # mine_hard_negatives' output_format
SCORE_SOURCES = ("miner", "cross-encoder")  # ``--scores``: whose teacher scores (:mod:`hardneg.export.scores`)


def read_export(path):
    """The card of a hard-negative export (``hardneg export hardnegs``), once every digest it records matches the
    exported files: :func:`hardneg.export.card.read_export`.

    :param path: the export: a folder (``sentence-transformers``, ``hf-dataset``) or a file (``tevatron``,
        ``jsonl``).
    :returns: the card (a dict): the run's mining card and ``export`` (format, rows, queries, SHA-256 digests).
    :raises HardnegError: a missing export or card, or a file that differs from its card (named).
    """
    from hardneg.export.card import read_export as read  # the card reader: imported only when it is used

    return read(path)
