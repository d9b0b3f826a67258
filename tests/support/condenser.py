"""What the Condenser's tests share, those of its model (test_condenser.py) and of its training step
(test_condenser_step.py): its section of the configuration with the schema's defaults, and the tiny corpus they
pre-train on."""

from pathlib import Path

from hardneg.dense.tokenized import TokenizedTexts
from hardneg.dense.tokenizer import load_tokenizer
from hardneg.methods.condenser import SECTION_SCHEMA, CondenserSection
from tests.support.dense import build_tiny


def condenser_params(**overrides) -> CondenserSection:
    """The schema's defaults, with ``overrides``."""
    values = {key: spec["default"] for key, spec in SECTION_SCHEMA["properties"].items()}
    return CondenserSection(**{**values, **overrides})


def tiny_corpus(root: Path) -> dict:
    """:func:`tests.support.dense.build_tiny` under ``root``, with its tokenizer loaded (``tok``) and its tokenized
    corpus (``docs``)."""
    built = build_tiny(root)
    return {**built, "tok": load_tokenizer(built["tokenizer"]), "docs": TokenizedTexts(built["cache"], "corpus")}
