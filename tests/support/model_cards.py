"""What the model card's tests share, those of the card (test_model_card.py) and of what it says of loading the
folder (test_card_usage.py): a run's facts, a tokenizer trained on a few texts, and a tiny bi-encoder saved with it."""

from pathlib import Path

import pyarrow as pa

from hardneg.dense.backbone import ModelSpec
from hardneg.dense.model import BiEncoder
from hardneg.dense.model_card import CardFacts
from hardneg.dense.tokenizer import load_tokenizer, train_wordpiece
from hardneg.io import artifacts
from tests.support.dense import TINY_MODEL

QUERY_MAX_LENGTH, DOC_MAX_LENGTH = 8, 24
FACTS = CardFacts(run="adore_x", method="adore", summary="query encoder trained on dynamic hard negatives",
                  base_model="builtin", seed=7, dataset="toy", split="train", training_hash="ab" * 32,
                  builtin={**TINY_MODEL, "vocab_size": 300}, training_queries=42, training_rows=45,
                  training={"epochs": 2, "batch_size": 16, "learning_rate": 0.001}, starts_from="star_x",
                  documents_of="star_x", inputs={"docs": "star_x"})


def card_tokenizer(root: Path) -> Path:
    """A WordPiece tokenizer of 300 tokens trained under ``root`` on four documents (the texts the card's recipes
    encode among them): its folder."""
    texts = ["Hard negatives are documents ranked high that are not relevant to the query.",
             "A document without a title is its text.", "what is a hard negative", "Cats purr when content."]
    artifacts.write_table(pa.table({"docid": [f"d{i}" for i in range(len(texts))], "title": ["Hard negatives"] * 4,
                                    "text": texts}), artifacts.CORPUS, root / "corpus.parquet")
    train_wordpiece(root / "corpus.parquet", root / "tokenizer", vocab_size=300)
    return root / "tokenizer"


def saved_model(tokenizer_dir, folder, **overrides):
    """A tiny built-in bi-encoder (mean pooling, normalised; ``overrides``: other :class:`ModelSpec` fields) saved in
    ``folder`` with the tokenizer of ``tokenizer_dir``: the folder."""
    tokenizer = load_tokenizer(tokenizer_dir)
    spec = ModelSpec(**{"name": "builtin", "pooling": "mean", "projection_dim": None, "shared": True,
                        "normalize": True, "markers": False, "query_augmentation": False, "vocab_size": 300,
                        "builtin": TINY_MODEL, "query_max_length": QUERY_MAX_LENGTH,
                        "doc_max_length": DOC_MAX_LENGTH, "query_prompt": "", "doc_prompt": "", **overrides})
    model = BiEncoder.create(spec, vocab_size=len(tokenizer), pad_token_id=tokenizer.pad_token_id,
                             max_length=DOC_MAX_LENGTH, seed=3, tokenizer=tokenizer)
    model.save(folder, tokenizer)
    return folder
