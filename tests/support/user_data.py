"""A small collection of the kind users bring, written as a BEIR folder and as MS MARCO passage TSVs: topical
documents (two of them with no text at all), training and test queries with graded judgements, and a few
queries far longer than the default maximum query length; and a BEIR corpus of 40 documents and two empty ones
(``corpus_lines``)."""

from __future__ import annotations

import json
import random
from pathlib import Path

EMPTY_DOCS = ["d_empty1", "d_empty2"]
LONG_QUERY_WORDS = 60  # > 32 tokens, the starter's maximum query length for the built-in model


def collection(seed: int = 0, topics: int = 8, docs_per_topic: int = 8, train: int = 40, test: int = 12):
    """(docs, queries, qrels): docs as (docid, title, text); queries as {split: [(qid, text)]}; qrels as
    {split: [(qid, docid, relevance)]}."""
    rng = random.Random(seed)
    syllables = ["ka", "lo", "mi", "ne", "ru", "sa", "to", "vi", "ze", "po", "da", "fi"]
    vocab = sorted({"".join(rng.choice(syllables) for _ in range(3)) for _ in range(600)})
    rng.shuffle(vocab)
    topic_words = [vocab[i * 25:(i + 1) * 25] for i in range(topics)]
    common = vocab[topics * 25:]
    docs, by_topic = [], []
    for t in range(topics):
        ids = []
        for d in range(docs_per_topic):
            words = rng.sample(topic_words[t], 12) + rng.sample(common, 18)
            rng.shuffle(words)
            docid = f"d{t}_{d}"
            docs.append((docid, " ".join(words[:3]), " ".join(words)))
            ids.append(docid)
        by_topic.append(ids)
    docs += [(docid, "", "") for docid in EMPTY_DOCS]
    text = {docid: body for docid, _, body in docs}
    queries, qrels = {"train": [], "test": []}, {"train": [], "test": []}
    for split, count in (("train", train), ("test", test)):
        for i in range(count):
            t = rng.randrange(topics)
            target = rng.choice(by_topic[t])
            length = LONG_QUERY_WORDS if i % 8 == 0 else 5
            words = [rng.choice(text[target].split()) for _ in range(length)]
            qid = f"{split[:2]}{i}"
            queries[split].append((qid, " ".join(words)))
            qrels[split].append((qid, target, 2))
            sibling = rng.choice([d for d in by_topic[t] if d != target])
            qrels[split].append((qid, sibling, 1))
    return docs, queries, qrels


def write_beir(root: Path, **kwargs) -> Path:
    docs, queries, qrels = collection(**kwargs)
    (root / "qrels").mkdir(parents=True, exist_ok=True)
    with open(root / "corpus.jsonl", "w", encoding="utf-8") as out:
        for docid, title, text in docs:
            out.write(json.dumps({"_id": docid, "title": title, "text": text}) + "\n")
    with open(root / "queries.jsonl", "w", encoding="utf-8") as out:
        for split in queries:
            for qid, text in queries[split]:
                out.write(json.dumps({"_id": qid, "text": text}) + "\n")
    for split, rows in qrels.items():
        lines = ["query-id\tcorpus-id\tscore"] + [f"{q}\t{d}\t{r}" for q, d, r in rows]
        (root / "qrels" / f"{split}.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root


def write_msmarco(root: Path, **kwargs) -> Path:
    """The same collection as MS MARCO passage files (a passage has no title: it is prepended to the text)."""
    docs, queries, qrels = collection(**kwargs)
    root.mkdir(parents=True, exist_ok=True)
    with open(root / "collection.tsv", "w", encoding="utf-8") as out:
        for docid, title, text in docs:
            out.write(f"{docid}\t{(title + ' ' + text).strip()}\n")
    for split in queries:
        (root / f"queries.{split}.tsv").write_text("".join(f"{q}\t{t}\n" for q, t in queries[split]), encoding="utf-8")
        (root / f"qrels.{split}.tsv").write_text("".join(f"{q}\t0\t{d}\t{r}\n" for q, d, r in qrels[split]),
                                                 encoding="utf-8")
    return root


WORDS = ["cat", "dog", "fish", "bird", "tree", "rock", "river", "cloud", "stone", "leaf", "apple", "bread"]
EMPTY = ["e1", "e2"]


def corpus_lines() -> list[str]:
    """corpus.jsonl's lines: documents d0 … d39, and e1 (after d10) and e2 (after d20), both empty."""
    lines = []
    for i in range(40):
        text = " ".join(WORDS[(i * k + 3) % len(WORDS)] for k in range(1, 7))
        lines.append(json.dumps({"_id": f"d{i}", "title": WORDS[i % len(WORDS)], "text": f"{text} number{i}"}))
        if i == 10:
            lines.append(json.dumps({"_id": "e1", "title": "", "text": ""}))
        if i == 20:
            lines.append(json.dumps({"_id": "e2", "title": " ", "text": " \n "}))
    return lines
