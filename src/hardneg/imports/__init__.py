"""Hard negatives mined elsewhere, brought in as a hard-negative list of a dataset (the ``hardneg import``
command): the reverse of :mod:`hardneg.export`.

* :mod:`hardneg.imports.records`: what every reader gives, one :class:`~hardneg.imports.records.Example` per row of
  the source (a query, its positives and its negatives, by id or by text, with scores and grades where the
  format carries them);
* :mod:`hardneg.imports.sources`: the rows of a source file or folder (JSON Lines, Parquet, or a ``datasets``
  folder written by ``Dataset.save_to_disk``), each with where it is (file and line, or row);
* a reader per format: :mod:`hardneg.imports.sentence_transformers` (triplet, n-tuple, labeled-pair and
  labeled-list datasets), :mod:`hardneg.imports.tevatron` (its v1 and v2 training files),
  :mod:`hardneg.imports.flagembedding` (FlagEmbedding's ``{query, pos, neg}`` files) and
  :mod:`hardneg.imports.own` (hardneg's own ``hf-dataset`` and ``jsonl`` exports);
* :mod:`hardneg.imports.matching`: ids and texts mapped to the dataset's query and document ids, with one error
  that counts and shows what could not be mapped;
* :mod:`hardneg.imports.card`: the card of an imported list (the source's digest, its format, the mapping
  counts) and :func:`~hardneg.imports.card.verify_import`, the digest check of ``hardneg verify``;
* :mod:`hardneg.imports.lists`: the command itself, :func:`~hardneg.imports.lists.import_hardnegs`, which writes
  the list folder.
"""

# The formats ``hardneg import --format`` reads, here so that the command line names them without importing the
# readers.
FORMATS = ("sentence-transformers", "tevatron", "flagembedding", "hf-dataset", "jsonl")
# What joins a document's title and text in the one string of a text-only format, besides a space: BERT's pair
# separator, which hardneg's sentence-transformers export writes for BERT-style tokenizers (the built-in one too).
TITLE_SEPARATOR = "[SEP]"
# The files of an imported list's folder (and of a run's copy of it: the list and card under a mining run's names).
LIST = "hardnegs.parquet"
POSITIVES = "positives.parquet"
CARD = "hardnegs_card.json"
