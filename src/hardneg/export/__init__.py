"""Exports of a finished run for other toolkits (the ``hardneg export`` command).

They find a run's files through :class:`hardneg.results.run_files.RunFiles`.

* :mod:`hardneg.export.texts`: documents as one text, title and text joined the way hardneg's encoder reads them;
* :mod:`hardneg.export.groups`: the training groups (query, positives, hard negatives in rank order, with their
  texts) of a run's hard-negative list;
* :mod:`hardneg.export.hardnegs`: those groups in the formats of sentence-transformers, Tevatron, Hugging Face
  ``datasets`` and plain JSON Lines;
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
