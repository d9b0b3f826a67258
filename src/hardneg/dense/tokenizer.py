"""Tokenizers: a WordPiece vocabulary trained on the corpus for the built-in model, or any Hugging Face one.

The built-in tokenizer makes the default run fully offline: its vocabulary is learnt from the dataset's own
documents with the ``tokenizers`` library and saved as a standard Hugging Face fast tokenizer folder.
"""

from __future__ import annotations

import json
import logging
import os

import pyarrow.parquet as pq

from hardneg.dense.pretrained import model_source
from hardneg.dense.st_folder import model_folder
from hardneg.io.atomic import atomic_dir

log = logging.getLogger(__name__)

BUILTIN = "builtin"
SPECIAL_TOKENS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def _texts(corpus_path: str | os.PathLike, query_paths, batch_size: int = 10_000):
    for batch in pq.ParquetFile(corpus_path).iter_batches(batch_size=batch_size, columns=["title", "text"]):
        titles, texts = batch.column(0).to_pylist(), batch.column(1).to_pylist()
        yield [f"{t} {x}" if t else x for t, x in zip(titles, texts)]
    for path in query_paths:
        for batch in pq.ParquetFile(path).iter_batches(batch_size=batch_size, columns=["text"]):
            yield batch.column(0).to_pylist()


def _alphabet(texts, normalizer) -> list[str]:
    """The characters of the normalised ``texts`` (whitespace aside: the pre-tokenizer splits on it), sorted.

    Normalising each distinct raw character gives the characters of the normalised text: the BERT normaliser
    works character by character (cleaning, accent stripping and lowercasing never look at neighbours)."""
    raw: set[str] = set()
    for batch in texts:
        raw.update("".join(batch))
    normalised: set[str] = set()
    for char in raw:
        normalised.update(normalizer.normalize_str(char))
    return sorted(c for c in normalised if not c.isspace())


def train_wordpiece(
    corpus_path: str | os.PathLike,
    out_dir: str | os.PathLike,
    *,
    query_paths=(),
    vocab_size: int = 32000,
    lowercase: bool = True,
    min_frequency: int = 1,
) -> int:
    """Train a BERT-style WordPiece tokenizer on the corpus (titles and texts) and on ``query_paths`` (the
    training queries: their words are part of what the model learns) and save it as a Hugging Face tokenizer
    folder, atomically. Returns the vocabulary size reached.

    The same texts give the same ``tokenizer.json``, byte for byte, in every process. The ``tokenizers``
    trainer numbers the continuation tokens (``##c``) it meets in hash-map order, which changes from one
    process to the next, and breaks ties between equally frequent merges by token id, so on small corpora the
    set of learnt tokens could change from run to run. Every alphabet character and its continuation token are
    therefore numbered up front, in sorted order (given to the trainer after the special tokens), which leaves
    nothing to hash-map order; the learnt tokens are then renumbered in a fixed order (special tokens, then the
    others sorted) into a fresh tokenizer whose only special tokens are the five real ones.
    """
    # tokenizers: imported only where a tokenizer is used
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast  # transformers: imported only where a model or tokenizer is used

    def pipeline(model) -> Tokenizer:
        tokenizer = Tokenizer(model)
        tokenizer.normalizer = normalizers.BertNormalizer(lowercase=lowercase, strip_accents=lowercase)
        tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
        tokenizer.decoder = decoders.WordPiece()
        return tokenizer

    learner = pipeline(models.WordPiece(unk_token="[UNK]"))
    alphabet = _alphabet(_texts(corpus_path, query_paths), learner.normalizer)
    seeded = SPECIAL_TOKENS + alphabet + ["##" + c for c in alphabet]
    trainer = trainers.WordPieceTrainer(
        vocab_size=vocab_size, min_frequency=min_frequency, special_tokens=seeded, show_progress=False
    )
    learner.train_from_iterator(_texts(corpus_path, query_paths), trainer=trainer)
    learnt = learner.get_vocab()
    ordered = SPECIAL_TOKENS + sorted(token for token in learnt if token not in SPECIAL_TOKENS)
    # A fresh tokenizer: the learner holds the seeded alphabet as special added tokens, which would be split
    # out of raw text before WordPiece sees it.
    tokenizer = pipeline(models.WordPiece({token: i for i, token in enumerate(ordered)}, unk_token="[UNK]"))
    tokenizer.add_special_tokens(SPECIAL_TOKENS)
    cls_id, sep_id = tokenizer.token_to_id("[CLS]"), tokenizer.token_to_id("[SEP]")
    tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", cls_id), ("[SEP]", sep_id)],
    )
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        unk_token="[UNK]",
        pad_token="[PAD]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        mask_token="[MASK]",
        model_max_length=512,
        do_lower_case=lowercase,
    )
    with atomic_dir(out_dir) as tmp:
        fast.save_pretrained(tmp)
    log.info(
        "trained a WordPiece vocabulary of %d tokens (alphabet of %d characters)",
        tokenizer.get_vocab_size(),
        len(alphabet),
    )
    return tokenizer.get_vocab_size()


# The class a folder saved from a bare ``tokenizers`` pipeline names in its tokenizer_config.json (transformers 5
# calls PreTrainedTokenizerFast TokenizersBackend): such a folder holds everything in tokenizer.json.
_PLAIN_FAST_CLASSES = {"PreTrainedTokenizerFast", "TokenizersBackend"}


def load_tokenizer(source: str | os.PathLike):
    """A fast tokenizer from a local folder, a hub name (the hub needs network on first use) or a packaged model's
    short name (:func:`hardneg.dense.pretrained.model_source`). A sentence-transformers folder whose Transformer
    has ``do_lower_case`` gets a lowercasing step first, as sentence-transformers gives it (:func:`_lowercasing`).

    A folder whose tokenizer_config.json names the plain fast tokenizer (the built-in WordPiece tokenizer's) is
    loaded as that class directly: ``AutoTokenizer`` would give the same tokenizer, but importing it imports torch,
    seconds of start-up for a tokenizing job that never uses torch."""
    return _lowercasing(_load(source), str(source))


def _lowercasing(tokenizer, source: str):
    """``tokenizer`` lowercasing its texts first when the sentence-transformers folder ``source`` says
    ``do_lower_case`` (its ``sentence_bert_config.json``); saved, the tokenizer keeps that step."""
    folder = model_folder(source) if source != BUILTIN else None
    if folder is None or not folder.transformer.get("do_lower_case"):
        return tokenizer
    from tokenizers import normalizers  # tokenizers: imported only where a tokenizer is used

    backend = tokenizer.backend_tokenizer
    if backend.normalizer is None:
        backend.normalizer = normalizers.Lowercase()
    elif not _lowercases(json.loads(backend.normalizer.__getstate__())):
        backend.normalizer = normalizers.Sequence([normalizers.Lowercase(), backend.normalizer])
    return tokenizer


def lowercasing_step(tokenizer) -> bool:
    """Whether ``tokenizer`` lowercases its texts by a step put before its own normaliser (:func:`load_tokenizer`
    of a folder with ``do_lower_case``, or sentence-transformers'): a step Hugging Face drops when it loads the
    saved tokenizer again, so a saved sentence-transformers layout says ``do_lower_case`` instead."""
    normalizer = tokenizer.backend_tokenizer.normalizer
    state = json.loads(normalizer.__getstate__()) if normalizer is not None else {}
    first = state["normalizers"][0] if state.get("type") == "Sequence" and state.get("normalizers") else state
    return first.get("type") == "Lowercase"


def _lowercases(state) -> bool:
    """Whether a normaliser (its JSON state) has a step that lowercases."""
    if isinstance(state, list):
        return any(_lowercases(item) for item in state)
    if not isinstance(state, dict):
        return False
    if state.get("type") == "Lowercase" or (state.get("type") == "BertNormalizer" and state.get("lowercase")):
        return True
    return any(_lowercases(value) for value in state.values())


def _load(source: str | os.PathLike):
    location = model_source(str(source))
    config = os.path.join(location, "tokenizer_config.json")
    if os.path.isfile(config):
        with open(config, encoding="utf-8") as handle:
            try:
                named = json.load(handle).get("tokenizer_class")
            except (ValueError, AttributeError):
                named = None
        if named in _PLAIN_FAST_CLASSES:
            # transformers: imported only where a model or tokenizer is used
            from transformers import PreTrainedTokenizerFast

            return PreTrainedTokenizerFast.from_pretrained(location)
    from transformers import AutoTokenizer  # transformers (and with it torch): imported only where they are used

    return AutoTokenizer.from_pretrained(location, use_fast=True)
