"""TREC test collections: topics files, qrels files and a document collection.

Topics may be in the classic SGML form (``<top> <num> Number: 301 <title> ... <desc> ... <narr> ... </top>``),
the XML form of the Web tracks (``<topic number="1"> <query> <description> <narrative>``), or a TSV of
``qid<TAB>text`` as TREC Deep Learning distributes them. The corpus is a JSONL file (BEIR or Pyserini
field names) or a TSV of ``docid, text`` or ``docid, title, text``.
"""

from __future__ import annotations

import bisect
import re
from pathlib import Path

from hardneg.datasets.adapter_declaration import Adapter
from hardneg.datasets.canonical import Dataset
from hardneg.datasets.qrels import read_trec_qrels
from hardneg.datasets.splits import check_query_and_qrels_files
from hardneg.datasets.tables import corpus_table, queries_table, restrict_to_judged, text_field
from hardneg.errors import DataError
from hardneg.io.readers import iter_jsonl, iter_lines, iter_tsv

FIELDS = ("title", "description", "narrative")
_SGML_TAGS = {"num": "num", "title": "title", "desc": "description", "narr": "narrative"}
_SGML_PREFIX = re.compile(r"^\s*(Number|Description|Narrative|Topic)\s*:\s*", re.IGNORECASE)
_XML_TOPIC = re.compile(r"<topic\b[^>]*\bnumber\s*=\s*\"([^\"]+)\"", re.IGNORECASE)
_XML_FIELD = re.compile(r"<(query|description|narrative)>(.*?)</\1>", re.IGNORECASE | re.DOTALL)


def _clean(text: str) -> str:
    return " ".join(_SGML_PREFIX.sub("", text).split())


def _parse_sgml(path: str, lines: list[tuple[int, str]]) -> list[tuple[int, dict]]:
    topics, current, field, start = [], None, None, 0
    tag = re.compile(r"<(/?)(top|num|title|desc|narr)>", re.IGNORECASE)
    for number, line in lines:
        pos = 0
        for match in tag.finditer(line):
            if current is not None and field:
                current[field] += " " + line[pos : match.start()]
            closing, name = match.group(1), match.group(2).lower()
            if name == "top":
                if closing:
                    if current is None:
                        raise DataError(path, number, "</top> without a matching <top>")
                    topics.append((start, current))
                    current, field = None, None
                else:
                    if current is not None:
                        raise DataError(path, number, "<top> inside another topic (missing </top>)")
                    current, field, start = dict.fromkeys(_SGML_TAGS.values(), ""), None, number
            elif current is None:
                raise DataError(path, number, f"<{name}> outside a <top> block")
            else:
                field = None if closing else _SGML_TAGS[name]
            pos = match.end()
        if current is not None and field:
            current[field] += " " + line[pos:]
    if current is not None:
        raise DataError(path, start, "topic not closed with </top>")
    result = []
    for number, topic in topics:
        cleaned = {k: _clean(v) for k, v in topic.items()}
        if not cleaned["num"]:
            raise DataError(path, number, "topic without a <num> number")
        result.append((number, cleaned))
    return result


def _parse_xml(path: str, text: str, line_starts: list[int]) -> list[tuple[int, dict]]:
    result = []
    starts = list(_XML_TOPIC.finditer(text))
    for i, match in enumerate(starts):
        end = starts[i + 1].start() if i + 1 < len(starts) else len(text)
        body = text[match.end() : end]
        topic = {"num": match.group(1).strip(), "title": "", "description": "", "narrative": ""}
        for field in _XML_FIELD.finditer(body):
            name = field.group(1).lower()
            topic["title" if name == "query" else name] = _clean(field.group(2))
        result.append((bisect.bisect_right(line_starts, match.start()), topic))
    return result


def read_topics(path: str, topic_field: str = "title"):
    """Read a topics file into (queries table, Source). ``topic_field`` is one of title, description,
    narrative, or several joined with ``+`` (e.g. ``title+description``)."""
    wanted = topic_field.split("+")
    lines = list(iter_lines(path))
    if not lines:
        raise DataError(path, None, "the topics file is empty")
    joined = "\n".join(line for _, line in lines)
    if "<top>" in joined.lower():
        topics = _parse_sgml(path, lines)
    elif "<topic" in joined.lower():
        starts, offset = [], 0
        for _, line in lines:
            starts.append(offset)
            offset += len(line) + 1
        topics = [(lines[idx - 1][0], t) for idx, t in _parse_xml(path, joined, starts)]
    else:
        return queries_table(((line, f[0], f[1]) for line, f in iter_tsv(path, 2)), path)
    if not topics:
        raise DataError(path, None, "no topics found")
    rows = []
    for number, topic in topics:
        text = " ".join(topic[f] for f in wanted if topic[f])
        rows.append((number, topic["num"], text))
    return queries_table(iter(rows), path)


def read_corpus(path: str):
    """Corpus as JSONL (``_id``/``id``/``docid`` + ``title`` + ``text``/``contents``) or TSV (2 or 3 columns)."""
    name = Path(path).name.lower()
    if ".jsonl" in name or ".json" in name:

        def rows():
            for line, obj in iter_jsonl(path):
                id_key = next((k for k in ("_id", "id", "docid", "doc_id") if k in obj), "_id")
                text_key = "text" if "text" in obj else "contents"
                yield (
                    line,
                    text_field(path, line, obj, id_key, required=True),
                    text_field(path, line, obj, "title", required=False),
                    text_field(path, line, obj, text_key, required=True),
                )

        return corpus_table(rows(), path)

    def tsv_rows():
        for line, f in iter_tsv(path, (2, 3)):
            yield (line, f[0], "", f[1]) if len(f) == 2 else (line, f[0], f[1], f[2])

    return corpus_table(tsv_rows(), path)


def load(corpus: str, topics: dict, qrels: dict, topic_field: str = "title", judged_only: bool = True) -> Dataset:
    check_query_and_qrels_files({"topics": topics, "qrels": qrels}, "topics")
    table, source = read_corpus(corpus)
    queries, queries_source, qrels_tables, qrels_source = {}, {}, {}, {}
    for split, topics_path in topics.items():
        qrels_tables[split], qrels_source[split] = read_trec_qrels(qrels[split])
        queries[split], queries_source[split] = read_topics(topics_path, topic_field)
        if judged_only:
            queries[split], queries_source[split] = restrict_to_judged(
                queries[split], queries_source[split], qrels_tables[split]
            )
    return Dataset(table, queries, qrels_tables, source, queries_source, qrels_source)


ADAPTER = Adapter(
    "trec",
    splits=lambda cfg: list(cfg["topics"]),
    query_files="topics",
    load=lambda cfg: load(cfg["corpus"], cfg["topics"], cfg["qrels"], cfg["topic_field"], cfg["judged_only"]),
    input_files=lambda cfg: [cfg["corpus"], *cfg["topics"].values(), *cfg["qrels"].values()],
)
