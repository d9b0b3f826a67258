"""Tokenizers: a WordPiece vocabulary trained on the corpus for the built-in model, or any Hugging Face one.

The built-in tokenizer makes the default run fully offline: its vocabulary is learnt from the dataset's own
documents with the ``tokenizers`` library and saved as a standard Hugging Face fast tokenizer folder.
"""

from __future__ import annotations

import logging
import os

import pyarrow.parquet as pq

from hardneg.atomic import atomic_dir

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


def train_wordpiece(corpus_path: str | os.PathLike, out_dir: str | os.PathLike, *, query_paths=(),
                    vocab_size: int = 32000, lowercase: bool = True, min_frequency: int = 1) -> int:
    """Train a BERT-style WordPiece tokenizer on the corpus (titles and texts) and on ``query_paths`` (the
    training queries: their words are part of what the model learns) and save it as a Hugging Face tokenizer
    folder, atomically. Returns the vocabulary size reached."""
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    tokenizer = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.BertNormalizer(lowercase=lowercase, strip_accents=lowercase)
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tokenizer.decoder = decoders.WordPiece()
    trainer = trainers.WordPieceTrainer(vocab_size=vocab_size, min_frequency=min_frequency,
                                        special_tokens=SPECIAL_TOKENS, show_progress=False)
    tokenizer.train_from_iterator(_texts(corpus_path, query_paths), trainer=trainer)
    # The trainer numbers tokens of equal frequency in hash-map order, which changes from one process to the
    # next; WordPiece looks tokens up by string only, so the tokens are renumbered in a fixed order (special
    # tokens, then the others sorted). On small corpora the trainer's choice between equally frequent merges can
    # still change a few subword tokens from run to run; the default synthetic corpus gives one vocabulary.
    learnt = tokenizer.get_vocab()
    ordered = SPECIAL_TOKENS + sorted(token for token in learnt if token not in SPECIAL_TOKENS)
    tokenizer.model = models.WordPiece({token: i for i, token in enumerate(ordered)}, unk_token="[UNK]")
    cls_id, sep_id = tokenizer.token_to_id("[CLS]"), tokenizer.token_to_id("[SEP]")
    tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1", special_tokens=[("[CLS]", cls_id), ("[SEP]", sep_id)])
    fast = PreTrainedTokenizerFast(tokenizer_object=tokenizer, unk_token="[UNK]", pad_token="[PAD]",
                                   cls_token="[CLS]", sep_token="[SEP]", mask_token="[MASK]",
                                   model_max_length=512, do_lower_case=lowercase)
    with atomic_dir(out_dir) as tmp:
        fast.save_pretrained(tmp)
    log.info("trained a WordPiece vocabulary of %d tokens", tokenizer.get_vocab_size())
    return tokenizer.get_vocab_size()


def load_tokenizer(source: str | os.PathLike):
    """A fast tokenizer from a local folder or a hub name (the hub needs network on first use)."""
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(source), use_fast=True)
