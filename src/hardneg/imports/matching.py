"""The one mapping step of an import: the queries and documents an imported file names, by id or by text, as the
dataset's query ids (of one split) and document ids, gathered into a hard-negative list and its positives.

A query is its id when the file gives one the split has, else the split's query of exactly that text. A document
is its id when the file gives one the corpus has, else the corpus document of exactly that text: a title and text
given apart (Tevatron's passages, hardneg's own exports) match the document's title and text; one string matches a
document's text alone, or its title and text joined by a space (as Tevatron and many others join them) or by
``<space><separator><space>`` (as hardneg's sentence-transformers export joins them: :mod:`hardneg.export.texts`;
the separator is :data:`hardneg.imports.TITLE_SEPARATOR` unless told otherwise). The corpus is read batch by
batch, only the texts the file names held.

Where a text names several queries or documents (a corpus holding one text under two ids), a positive takes the one
the dataset judges relevant to the query, a negative one it does not, else the first in the dataset's order; each
such choice is counted (``ambiguous``). What cannot be mapped stops the import with one error
(:class:`UnmatchedError`) that counts it all and shows the first few, with file and line.

The list is written as a mined one: each query's negatives in the file's order (first mention), each once, ranked
1, 2, ... unless the file records ranks (hardneg's own exports); their score is the file's (the teacher's), null
where it gives none. Negatives the dataset judges relevant to their query are left out and counted, as mining
leaves out judged positives.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.parquet as pq

from hardneg.errors import HardnegError
from hardneg.export.texts import joined_texts
from hardneg.imports.records import Document, Example, Item
from hardneg.io import artifacts

SHOWN = 5  # unmatched names an error shows
_CORPUS_BATCH = 65_536


class UnmatchedError(HardnegError):
    """Queries or documents of an imported file that the dataset does not have: ``.count`` of them, of ``.total``
    names; the text counts them by kind and shows the first :data:`SHOWN` with where they are."""

    def __init__(self, message: str, count: int, total: int):
        self.count, self.total = count, total
        super().__init__(message)


@dataclass
class Matched:
    """What the file maps to: ``hardnegs`` (a HARDNEGS table: ``qid``, ``docid``, ``rank``, ``score``, the teacher's
    score or null), ``positives`` (a POSITIVE_SCORES table: ``qid``, ``docid``, ``relevance``: the file's grade,
    else the dataset's, else 1; ``score``: the teacher's or null) and ``counts`` (what the card records)."""

    hardnegs: pa.Table
    positives: pa.Table
    counts: dict = field(default_factory=dict)


# ------------------------------------------------------------------------------------------------ lookups
def _string_forms(title: str, text: str, separator: str) -> set[str]:
    """The strings that stand for a document of ``title`` and ``text`` in a text-only format."""
    forms = {text}
    if title.strip():
        forms.add(f"{title} {text}")
        forms.update(joined_texts([title], [text], separator))
    return forms


def _wanted(examples: list[Example]) -> tuple[set[str], set[str], set[tuple[str, str]]]:
    """The document ids, strings and (title, text) pairs the examples name."""
    ids, strings, pairs = set(), set(), set()
    for example in examples:
        for document in (*example.positives, *example.negatives, *example.unsorted):
            item = document.item
            if item.id is not None:
                ids.add(item.id)
            if item.text is not None:
                (pairs.add((item.title, item.text)) if item.title and item.title.strip() else strings.add(item.text))
    return ids, strings, pairs


def _corpus_lookup(path: str | os.PathLike, examples: list[Example], separator: str) -> tuple[set, dict, dict]:
    """(the wanted ids the corpus has, string → its docids, (title, text) → its docids), the docids in corpus
    order, from one pass over the corpus."""
    ids, strings, pairs = _wanted(examples)
    found: set[str] = set()
    by_string: dict[str, list[str]] = {}
    by_pair: dict[tuple[str, str], list[str]] = {}
    if not (ids or strings or pairs):
        return found, by_string, by_pair
    artifacts.check_file(artifacts.CORPUS, path)
    for batch in pq.ParquetFile(path).iter_batches(batch_size=_CORPUS_BATCH, columns=["docid", "title", "text"]):
        columns = batch.to_pydict()
        for docid, title, text in zip(columns["docid"], columns["title"], columns["text"]):
            title, text = title or "", text or ""
            if docid in ids:
                found.add(docid)
            if (title, text) in pairs:
                by_pair.setdefault((title, text), []).append(docid)
            for form in _string_forms(title, text, separator) & strings if strings else ():
                by_string.setdefault(form, []).append(docid)
    return found, by_string, by_pair


def _document_candidates(item: Item, found: set, by_string: dict, by_pair: dict) -> tuple[str, list[str]]:
    """How ``item`` maps (``id`` or ``text``) and the docids it may be (empty: none)."""
    if item.id is not None and item.id in found:
        return "id", [item.id]
    if item.text is None:
        return "text", []
    if item.title and item.title.strip():
        return "text", by_pair.get((item.title, item.text), [])
    return "text", by_string.get(item.text, [])


# ------------------------------------------------------------------------------------------------ mapping
class _Mapper:
    """Maps the examples one by one, counting how, and keeping what it could not map."""

    def __init__(self, queries: pa.Table, qrels: pa.Table, lookup: tuple[set, dict, dict]):
        self.qids = set(queries["qid"].to_pylist())
        self.query_texts: dict[str, list[str]] = {}
        for qid, text in zip(queries["qid"].to_pylist(), queries["text"].to_pylist()):
            self.query_texts.setdefault(text, []).append(qid)
        self.judged: dict[str, dict[str, int]] = {}
        for qid, docid, grade in zip(*(qrels[c].to_pylist() for c in ("qid", "docid", "relevance"))):
            self.judged.setdefault(qid, {})[docid] = grade
        self.lookup = lookup
        self.counts: Counter[str] = Counter()
        self.unmatched: list[tuple[str, str, Item]] = []

    def query(self, example: Example) -> str | None:
        item = example.query
        if item.id is not None and item.id in self.qids:
            self.counts["query_mentions_by_id"] += 1
            return item.id
        candidates = self.query_texts.get(item.text, []) if item.text is not None else []
        if not candidates:
            self.unmatched.append((example.where, "query", item))
            return None
        self.counts["query_mentions_by_text"] += 1
        self.counts["ambiguous"] += len(candidates) > 1
        return candidates[0]

    def relevant(self, qid: str | None, docid: str) -> bool:
        return qid is not None and self.judged.get(qid, {}).get(docid, 0) >= 1

    def document(self, example: Example, qid: str | None, document: Document, role: str) -> tuple[str, bool] | None:
        """(docid, whether it is a positive) of a document of ``role`` (positive, negative or unsorted)."""
        how, candidates = _document_candidates(document.item, *self.lookup)
        if not candidates:
            self.unmatched.append((example.where, role, document.item))
            return None
        self.counts[f"document_mentions_by_{how}"] += 1
        if len(candidates) > 1:
            self.counts["ambiguous"] += 1
            judged = [docid for docid in candidates if self.relevant(qid, docid)]
            other = [docid for docid in candidates if not self.relevant(qid, docid)]
            candidates = (judged or candidates) if role != "negative" else (other or candidates)
        docid = candidates[0]
        return docid, (role == "positive" or (role == "unsorted" and self.relevant(qid, docid)))


def _table(kind: artifacts.ArtifactKind, rows: list[tuple]) -> pa.Table:
    columns: list[tuple | list] = list(zip(*rows)) if rows else [[] for _ in kind.schema]
    return pa.table({f.name: pa.array(list(c), f.type) for f, c in zip(kind.schema, columns)}, schema=kind.schema)


def _unmatched_error(source: str, unmatched: list, total: int, dataset: str, split: str, separator: str):
    kinds = Counter("query" if role == "query" else "document" for _, role, _ in unmatched)
    plural = {"query": "queries", "document": "documents"}
    parts = [f"{kinds[k]} {k if kinds[k] == 1 else plural[k]}" for k in ("query", "document") if kinds[k]]
    shown = [f"  {where}: {role} {item.shown()}" for where, role, item in unmatched[:SHOWN]]
    more = [f"  … and {len(unmatched) - SHOWN} more"] if len(unmatched) > SHOWN else []
    return UnmatchedError(
        "\n".join(
            [
                f"{source}: {len(unmatched)} of {total} queries and documents could not be matched to dataset "
                f"{dataset} ({' and '.join(parts)}): queries against the ids and texts of split {split!r}, "
                f"documents against the corpus's ids and texts:",
                *shown,
                *more,
                f"a document's text matches its text alone, or its title and text joined by a space or by "
                f"' {separator} ' (--title-separator gives another)",
            ]
        ),
        len(unmatched),
        total,
    )


def match(
    examples: Iterable[Example],
    *,
    corpus: str | os.PathLike,
    queries: pa.Table,
    qrels: pa.Table,
    source: str,
    dataset: str,
    split: str,
    separator: str,
) -> Matched:
    """Map ``examples`` to the dataset (see the module docstring).

    :param examples: what a reader read from the file.
    :param corpus: the dataset's CORPUS Parquet file.
    :param queries: the QUERIES table of ``split``.
    :param qrels: the QRELS table of ``split``.
    :param source: the imported file (the error names it).
    :param dataset: the dataset's name; ``split``: the split (for the error).
    :param separator: what joins a title and its text besides a space (:data:`hardneg.imports.TITLE_SEPARATOR`).
    :returns: the list, its positives and the counts: ``rows`` (examples), ``queries`` (with negatives),
        ``query_mentions_by_id`` / ``_by_text`` and ``document_mentions_by_id`` / ``_by_text`` (how each mention
        in the file was matched: a triplet file mentions its query once a row), ``ambiguous``, ``negatives``,
        ``positives``, ``negatives_judged_relevant`` (left out), ``positives_not_judged`` (kept; the dataset does
        not judge them relevant), ``negatives_scored`` and ``positives_scored`` (rows with the teacher's score).
    :raises UnmatchedError: something could not be mapped (nothing is returned then).
    :raises HardnegError: the file holds no example, or none with a negative.
    """
    examples = list(examples)
    if not examples:
        raise HardnegError(f"{source}: no rows to import")
    mapper = _Mapper(queries, qrels, _corpus_lookup(corpus, examples, separator))
    negatives: dict[str, dict[str, Document]] = {}  # qid → docid → its first mention, in the file's order
    positives: dict[str, dict[str, Document]] = {}
    for example in examples:
        qid = mapper.query(example)
        for role, documents in (
            ("positive", example.positives),
            ("negative", example.negatives),
            ("unsorted", example.unsorted),
        ):
            for document in documents:
                mapped = mapper.document(example, qid, document, role)
                if mapped is None or qid is None:
                    continue
                docid, positive = mapped
                (positives if positive else negatives).setdefault(qid, {}).setdefault(docid, document)
    total = sum(1 + len(e.positives) + len(e.negatives) + len(e.unsorted) for e in examples)
    if mapper.unmatched:
        raise _unmatched_error(source, mapper.unmatched, total, dataset, split, separator)
    neg_rows, pos_rows, counts = [], [], mapper.counts
    for qid, by_docid in negatives.items():
        kept = [(docid, d) for docid, d in by_docid.items() if not mapper.relevant(qid, docid)]
        counts["negatives_judged_relevant"] += len(by_docid) - len(kept)
        neg_rows += [
            (qid, docid, d.rank if d.rank is not None else rank, d.score)
            for rank, (docid, d) in enumerate(kept, start=1)
        ]
    for qid, by_docid in positives.items():
        for docid, d in by_docid.items():
            judged = mapper.judged.get(qid, {}).get(docid, 0)
            counts["positives_not_judged"] += judged < 1
            pos_rows.append((qid, docid, d.grade if d.grade is not None else max(judged, 1), d.score))
    if not neg_rows:
        raise HardnegError(
            f"{source}: no negative left to import ({counts['negatives_judged_relevant']} named, "
            "all judged relevant by the dataset)"
            if counts["negatives_judged_relevant"]
            else f"{source}: its rows name no negative"
        )
    hardnegs, scored = _table(artifacts.HARDNEGS, neg_rows), _table(artifacts.POSITIVE_SCORES, pos_rows)
    counts.update(
        rows=len(examples), queries=len({row[0] for row in neg_rows}), negatives=len(neg_rows), positives=len(pos_rows)
    )
    summary = {
        key: int(counts[key])
        for key in (
            "rows",
            "queries",
            "query_mentions_by_id",
            "query_mentions_by_text",
            "document_mentions_by_id",
            "document_mentions_by_text",
            "ambiguous",
            "negatives",
            "positives",
            "negatives_judged_relevant",
            "positives_not_judged",
        )
    }
    summary.update(
        negatives_scored=len(hardnegs) - hardnegs["score"].null_count,
        positives_scored=len(scored) - scored["score"].null_count,
    )
    return Matched(hardnegs, scored, summary)
