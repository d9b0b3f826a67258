"""Documents as one text: title and text joined the way hardneg's encoder reads them.

hardneg encodes a document as the tokenizer's pair (title, text), ``[CLS] title [SEP] text [SEP]`` with a BERT
tokenizer, or its text alone when the title is blank (:mod:`hardneg.dense.tokenized`). A format that carries one
string per document (sentence-transformers') gets ``"<title> <separator> <text>"``, where the separator is the
special tokens the tokenizer's pair template puts between the two segments (``[SEP]`` for BERT's): tokenizing
that string gives the very tokens hardneg encoded, for WordPiece tokenizers (the built-in one and BERT's, whose
special tokens are matched in raw text and whose splitting ignores spaces). Documents with a blank title are their
text, as hardneg encodes them.
"""

from __future__ import annotations

import os

from hardneg.dense.st_layout import pair_separator
from hardneg.dense.tokenizer import load_tokenizer
from hardneg.errors import HardnegError


def tokenizer_separator(source: str | os.PathLike, run: str) -> str:
    """:func:`pair_separator` of the tokenizer at ``source`` (a folder or hub name), the one run ``run``'s
    tokenized cache was built with; a HardnegError naming it when it cannot be loaded."""
    try:
        tokenizer = load_tokenizer(source)
    except (OSError, ValueError) as exc:
        raise HardnegError(
            f"run {run}: cannot load its tokenizer {str(source)!r} to join document titles and texts "
            f"as its model reads them ({exc}); give the separator with --title-separator"
        ) from None
    return pair_separator(tokenizer)


def joined_texts(titles: list, texts: list, separator: str) -> list[str]:
    """One string per document: ``"<title> <separator> <text>"``, or the text alone when the title is blank
    (``None``, empty or whitespace), as :mod:`hardneg.dense.tokenized` leaves such titles out. A missing text is
    an empty one; a blank separator joins title and text with one space."""
    middle = f" {separator.strip()} " if separator.strip() else " "
    return [
        f"{title}{middle}{text or ''}" if title and title.strip() else (text or "")
        for title, text in zip(titles, texts)
    ]
