"""Tiny pretrained cross-encoders built in a test, as their authors would save them: a one-label
``BertForSequenceClassification`` folder over a WordPiece vocabulary written here, and the sentence-transformers
``CrossEncoder`` folder it gives."""

import string
from pathlib import Path

SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
# every lowercase word and number as pieces of one character: no text of a synthetic dataset is unknown
CHARACTERS = [*string.ascii_lowercase, *string.digits, *string.punctuation]
PIECES = CHARACTERS + [f"##{c}" for c in string.ascii_lowercase + string.digits]


def tiny_cross_encoder(root: Path, words: list[str], *, max_length: int, seed: int = 0) -> dict:
    """Under ``root``: ``hf``, a one-label BertForSequenceClassification (2 layers of width 16, weights drawn with
    a wide spread so that its scores differ between pairs) with a tokenizer of ``words`` that cuts at
    ``max_length`` tokens, and ``st``, the sentence-transformers CrossEncoder folder of it (its default activation,
    the sigmoid). Returns both paths."""
    import torch
    from sentence_transformers import CrossEncoder
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizerFast

    root.mkdir(parents=True, exist_ok=True)
    (root / "vocab.txt").write_text("\n".join([*SPECIAL, *dict.fromkeys(words)]) + "\n")
    tokenizer = BertTokenizerFast(str(root / "vocab.txt"), model_max_length=max_length)
    torch.manual_seed(seed)
    config = BertConfig(vocab_size=len(tokenizer), hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=32, max_position_embeddings=max(64, max_length), num_labels=1,
                        initializer_range=0.5)
    BertForSequenceClassification(config).save_pretrained(root / "hf")
    tokenizer.save_pretrained(root / "hf")
    CrossEncoder(str(root / "hf")).save(str(root / "st"))
    return {"hf": root / "hf", "st": root / "st"}
