"""What a model card (:mod:`hardneg.dense.model_card`) tells its reader about using the folder: which
sentence-transformers call gives which side's vectors, and the card's "How to load" section, with the recipes it
gives for sentence-transformers and for transformers.

The recipes are code the reader runs as written (``tests/unit/dense/test_card_usage.py`` runs them): the
sentence-transformers one always, the transformers one only where a plain ``AutoModel`` with the pooling and
normalisation it writes out gives the run's vectors (``cls`` or ``mean`` pooling, no projection head, no layers
after the pooling, no prompts, no markers); otherwise the section says what transformers does not read and names
the loaders that do. A folder that is not a bi-encoder gets a section that says so.
"""

from __future__ import annotations

import json
from pathlib import Path

from hardneg.dense.st_layout import DOC_ENCODER, REQUIREMENT


def which_call(meta: dict) -> str:
    """The card's line saying which sentence-transformers call gives which side's vectors."""
    line = (
        "- **Which call gives which vectors**: sentence-transformers' `encode_query` gives the query vectors, "
        "`encode_document` the document vectors; plain `encode` "
    )
    prompted = any((meta.get("prompts") or {}).values())
    if prompted or meta.get("markers"):
        return line + f"gives neither, as it reads a text without the {'prompts' if prompted else 'marker'}."
    if not meta.get("shared", True):
        return line + "reads a text as a document, with the document encoder."
    return line + "reads a text as a document (cut at the documents' length)."


def _st_snippet(path: str) -> list[str]:
    return [
        "```python",
        "from sentence_transformers import SentenceTransformer",
        "",
        f"model = SentenceTransformer({json.dumps(path)})",
        'queries = model.encode_query(["what is a hard negative"])',
        'documents = model.encode_document([("Hard negatives", "documents ranked high that are not relevant"),',
        '                                   "a document without a title is its text"])',
        "print(model.similarity(queries, documents))  # inner products, as hardneg ranks",
        "```",
    ]


def _transformers_snippet(path: str, meta: dict) -> list[str]:
    doc_path = path if meta.get("shared", True) else f"{path}/{DOC_ENCODER}"
    if meta.get("pooling") == "mean":
        pool = [
            '    mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)',
            "    vectors = (hidden * mask).sum(1) / mask.sum(1)  # the mean over the text's tokens",
        ]
    else:
        pool = ["    vectors = hidden[:, 0]  # the [CLS] token"]
    norm = (
        ["    return torch.nn.functional.normalize(vectors, dim=-1)"]
        if meta.get("normalize")
        else ["    return vectors"]
    )
    query_length, doc_length = meta.get("query_max_length") or 512, meta.get("doc_max_length") or 512
    return [
        "```python",
        "import torch",
        "from transformers import AutoModel, AutoTokenizer",
        "",
        f"tokenizer = AutoTokenizer.from_pretrained({json.dumps(path)})",
        f"query_encoder = AutoModel.from_pretrained({json.dumps(path)})",
        f"document_encoder = AutoModel.from_pretrained({json.dumps(doc_path)})",
        "",
        "",
        "def encode(encoder, texts, max_length):",
        "    batch = tokenizer(texts, padding=True, truncation=True, max_length=max_length,",
        '                      return_token_type_ids=False, return_tensors="pt")',
        "    with torch.no_grad():",
        "        hidden = encoder(**batch).last_hidden_state",
        *pool,
        *norm,
        "",
        "",
        f'queries = encode(query_encoder, ["what is a hard negative"], {query_length})',
        'documents = encode(document_encoder, [("Hard negatives", "documents ranked high that are not relevant")],',
        f"                   {doc_length})",
        "print(queries @ documents.T)",
        "```",
    ]


def how_to_load(folder: Path, path: str, meta: dict | None, separator: str) -> list[str]:
    if meta is None:
        return [
            "## How to load",
            "",
            "This folder is not a bi-encoder (a re-ranking model: `hardneg.json` is missing); "
            f"`AutoModel.from_pretrained({json.dumps(path)})` loads its encoder, and the method's own model "
            f"class, named "
            "by the folder's JSON file, loads the rest.",
        ]
    lines = ["## How to load", "", f"### sentence-transformers ({REQUIREMENT})", "", *_st_snippet(path), ""]
    unread = (
        "ColBERT markers"
        if meta.get("markers")
        else "projection head (`head.safetensors`)"
        if meta.get("projection_dim")
        else "layers after the pooling"
        if meta.get("layers")
        else "prompts"
        if any((meta.get("prompts") or {}).values())
        else f"`{meta.get('pooling')}` pooling"
        if meta.get("pooling") not in ("cls", "mean")
        else None
    )
    if unread:
        lines += [
            "### transformers",
            "",
            f"`AutoModel.from_pretrained({json.dumps(path)})` loads the query encoder; the {unread} "
            "are not read by it: load the folder with sentence-transformers or with "
            "`hardneg.dense.model.BiEncoder.load` to get the run's vectors.",
        ]
    else:
        lines += ["### transformers", "", *_transformers_snippet(path, meta)]
    return lines
