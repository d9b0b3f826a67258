"""Dataset adapters: canonical output, and one clear error (file, line, problem) for each kind of bad input."""

import logging

import pyarrow.parquet as pq
import pytest

from hardneg.datasets import beir, msmarco, trec
from hardneg.datasets.adapters import load_dataset
from hardneg.datasets.canonical import validate
from hardneg.datasets.prepare import prepare_dataset
from hardneg.errors import DataError, HardnegError
from tests.support.files import write_lines


def test_beir_folder_becomes_canonical_tables(beir_folder, tmp_path):
    root = beir_folder()
    stats = prepare_dataset({"adapter": "beir", "path": str(root), "splits": ["test"]}, tmp_path / "out")
    corpus = pq.read_table(tmp_path / "out" / "corpus.parquet")
    assert corpus.column_names == ["docid", "title", "text"]
    assert corpus["docid"].to_pylist() == ["d1", "d2", "d3"]
    queries = pq.read_table(tmp_path / "out" / "queries" / "test.parquet")
    assert queries["qid"].to_pylist() == ["q1", "q2"]
    qrels = pq.read_table(tmp_path / "out" / "qrels" / "test.parquet")
    assert qrels["relevance"].to_pylist() == [1, 2]
    assert stats["num_docs"] == 3 and stats["splits"]["test"]["num_queries"] == 2
    assert (tmp_path / "out" / "stats.json").exists()


def test_beir_split_keeps_only_judged_queries(beir_folder):
    root = beir_folder(qrels=["query-id\tcorpus-id\tscore", "q2\td2\t1"])
    dataset = beir.load(root, ["test"])
    assert dataset.queries["test"]["qid"].to_pylist() == ["q2"]


@pytest.mark.parametrize("kwargs, file, line, message", [
    (dict(corpus=['{"_id": "d1", "text": "a"}', '{"_id": "d2", "text": "b"}', '{"_id": "d1", "text": "c"}']),
     "corpus.jsonl", 3, "duplicate docid 'd1' (first seen on line 1)"),
    (dict(corpus=['{"_id": "d1", "text": "a"}', '{"_id": "d2", "text": "b", ']),
     "corpus.jsonl", 2, "malformed JSON"),
    (dict(corpus=['{"_id": "d1", "text": "a"}', '{"title": "no id", "text": "b"}']),
     "corpus.jsonl", 2, "missing field '_id'"),
    (dict(corpus=['{"_id": "d1", "text": ["a", "list"]}']),
     "corpus.jsonl", 1, "field 'text' must be a string, found list"),
    (dict(corpus=['["not", "an", "object"]']),
     "corpus.jsonl", 1, "expected a JSON object, found list"),
    (dict(qrels=["query-id\tcorpus-id\tscore", "q1\td1\t1", "q2\td9\t1"]),
     "test.tsv", 3, "unknown docid 'd9'"),
    (dict(qrels=["query-id\tcorpus-id\tscore", "q1\td1\t1", "q7\td2\t1"]),
     "test.tsv", 3, "unknown qid 'q7'"),
    (dict(qrels=["query-id\tcorpus-id\tscore", "q1\td1"]),
     "test.tsv", 2, "expected 3 fields separated by tabs, found 2"),
    (dict(qrels=["query-id\tcorpus-id\tscore", "q1\td1\thigh"]),
     "test.tsv", 2, "relevance 'high' is not an integer"),
    (dict(qrels=["query-id\tcorpus-id\tscore", "q1\td1\t1", "q1\td1\t2"]),
     "test.tsv", 3, "duplicate judgement for query 'q1' and document 'd1' (first on line 2)"),
    (dict(queries=['{"_id": "q1", "text": "a"}', '{"_id": "q1", "text": "b"}']),
     "queries.jsonl", 2, "duplicate qid 'q1' (first seen on line 1)"),
])
def test_beir_bad_input_names_file_and_line(beir_folder, kwargs, file, line, message):
    root = beir_folder(**kwargs)
    with pytest.raises(DataError) as info:
        validate(beir.load(root, ["test"]))
    assert info.value.path.endswith(file)
    assert info.value.line == line
    assert message in info.value.message
    assert f"{file}, line {line}: " in str(info.value)


def test_bad_utf8_names_the_line(beir_folder):
    root = beir_folder()
    write_lines(root / "corpus.jsonl", b'{"_id": "d1", "text": "ok"}\n{"_id": "d2", "text": "caf\xe9"}\n')
    with pytest.raises(DataError, match=r"corpus\.jsonl, line 2: invalid UTF-8"):
        beir.load(root, ["test"])


def test_empty_corpus_is_an_error(beir_folder):
    root = beir_folder(corpus=[])
    with pytest.raises(DataError, match=r"corpus\.jsonl: the corpus holds no documents"):
        validate(beir.load(root, ["test"]))
    root = beir_folder(qrels=["query-id\tcorpus-id\tscore"])
    with pytest.raises(DataError, match=r"test\.tsv: the qrels file holds no judgements"):
        beir.load(root, ["test"])


def test_missing_file_and_folder(tmp_path, beir_folder):
    with pytest.raises(DataError, match="BEIR dataset folder does not exist"):
        beir.load(tmp_path / "nowhere", ["test"])
    root = beir_folder()
    with pytest.raises(DataError, match=r"dev\.tsv: file does not exist"):
        beir.load(root, ["dev"])


def test_failed_preparation_leaves_nothing_behind(beir_folder, tmp_path):
    root = beir_folder(qrels=["query-id\tcorpus-id\tscore", "q1\td9\t1"])
    out = tmp_path / "out"
    with pytest.raises(DataError):
        prepare_dataset({"adapter": "beir", "path": str(root), "splits": ["test"]}, out)
    assert not out.exists() or not any(out.rglob("*.parquet"))


def test_warnings_for_empty_text_and_unjudged_queries(beir_folder, caplog):
    root = beir_folder(
        corpus=['{"_id": "d1", "title": "", "text": "  "}', '{"_id": "d2", "text": "dogs"}'],
        qrels=["query-id\tcorpus-id\tscore", "q1\td1\t0", "q2\td2\t1"])
    with caplog.at_level(logging.WARNING):
        validate(beir.load(root, ["test"]))
    text = caplog.text
    assert "1 documents with empty text (e.g. d1)" in text
    assert ("1 of 2 'test' queries have no relevant document (e.g. q1); they are left out of training and of "
            "every evaluation measure") in text
    assert "count as 0" not in text  # evaluation leaves such queries out of every mean (hardneg.evaluation.metrics)


def test_empty_texts_are_counted_across_the_slices_checked(beir_folder, caplog, monkeypatch):
    """Texts are checked a slice of rows at a time: the count and the first five examples are the whole
    corpus's, wherever the slices cut."""
    from hardneg.datasets import empty_documents

    blank = [2, 3, 7, 8, 9, 10, 12]
    corpus = [f'{{"_id": "d{i}", "title": "", "text": "{" " if i in blank else "cats"}"}}' for i in range(14)]
    root = beir_folder(corpus=corpus, qrels=["query-id\tcorpus-id\tscore", "q1\td0\t1", "q2\td1\t1"])
    monkeypatch.setattr(empty_documents, "CHECK_ROWS", 3)
    with caplog.at_level(logging.WARNING):
        validate(beir.load(root, ["test"]))
    assert "7 documents with empty text (e.g. d2, d3, d7, d8, d9)" in caplog.text


def test_msmarco_passage_files(tmp_path):
    collection = write_lines(tmp_path / "collection.tsv", ["0\tthe first passage", "1\tthe second passage"])
    queries = write_lines(tmp_path / "queries.dev.tsv", ["100\twhat is first", "101\tunjudged query"])
    qrels = write_lines(tmp_path / "qrels.dev.tsv", ["100\t0\t0\t1"])
    dataset = msmarco.load_passage(str(collection), {"dev": str(queries)}, {"dev": str(qrels)})
    validate(dataset)
    assert dataset.corpus["text"].to_pylist() == ["the first passage", "the second passage"]
    assert dataset.queries["dev"]["qid"].to_pylist() == ["100"]  # judged_only drops query 101
    assert dataset.qrels["dev"].to_pylist() == [{"qid": "100", "docid": "0", "relevance": 1}]


def test_msmarco_document_files(tmp_path):
    docs = write_lines(tmp_path / "msmarco-docs.tsv", ["D1\thttp://a\tTitle A\tbody a", "D2\thttp://b\tTitle B\tbody b"])
    queries = write_lines(tmp_path / "queries.tsv", ["5\tquery five"])
    qrels = write_lines(tmp_path / "qrels.tsv", ["5 0 D2 1"])
    dataset = msmarco.load_document(str(docs), {"train": str(queries)}, {"train": str(qrels)})
    validate(dataset)
    assert dataset.corpus.to_pylist()[1] == {"docid": "D2", "title": "Title B", "text": "body b"}
    bad = write_lines(tmp_path / "bad-docs.tsv", ["D1\thttp://a\tonly three"])
    with pytest.raises(DataError, match=r"bad-docs\.tsv, line 1: expected 4 fields"):
        msmarco.load_document(str(bad), {"train": str(queries)}, {"train": str(qrels)})


SGML_TOPICS = """<top>
<num> Number: 301
<title> International Organized Crime

<desc> Description:
Identify organizations that participate in
international criminal activity.

<narr> Narrative:
A relevant document must identify the organization.
</top>

<top>
<num> Number: 302
<title> Poliomyelitis and Post-Polio
<desc> Description:
Is the disease of Poliomyelitis (polio) under control?
</top>
"""


def test_trec_sgml_topics_fields(tmp_path):
    path = tmp_path / "topics.txt"
    path.write_text(SGML_TOPICS)
    table, source = trec.read_topics(str(path), "title")
    assert table.to_pylist() == [{"qid": "301", "text": "International Organized Crime"},
                                 {"qid": "302", "text": "Poliomyelitis and Post-Polio"}]
    assert source.lines.tolist() == [1, 13]
    table, _ = trec.read_topics(str(path), "title+description")
    assert table["text"][0].as_py() == ("International Organized Crime Identify organizations that participate in "
                                        "international criminal activity.")


def test_trec_xml_and_tsv_topics(tmp_path):
    xml = tmp_path / "web.xml"
    xml.write_text('<webtrack2013>\n<topic number="201" type="faceted">\n  <query>raspberry pi</query>\n'
                   '  <description>What is a raspberry pi?</description>\n</topic>\n'
                   '<topic number="202" type="single">\n  <query>uss carl vinson</query>\n</topic>\n</webtrack2013>\n')
    table, source = trec.read_topics(str(xml), "title")
    assert table.to_pylist() == [{"qid": "201", "text": "raspberry pi"}, {"qid": "202", "text": "uss carl vinson"}]
    assert source.lines.tolist() == [2, 6]
    tsv = write_lines(tmp_path / "dl.tsv", ["1030303\twho is aziz hashim", "1037496\twho is rep scalise"])
    table, _ = trec.read_topics(str(tsv))
    assert table["qid"].to_pylist() == ["1030303", "1037496"]


def test_trec_unclosed_topic_is_an_error(tmp_path):
    path = tmp_path / "topics.txt"
    path.write_text("<top>\n<num> Number: 1\n<title> open\n")
    with pytest.raises(DataError, match=r"topics\.txt, line 1: topic not closed"):
        trec.read_topics(str(path))


def test_trec_collection_end_to_end(tmp_path):
    corpus = write_lines(tmp_path / "docs.jsonl", ['{"id": "A", "contents": "apples"}', '{"id": "B", "contents": "pears"}'])
    topics = tmp_path / "topics.txt"
    topics.write_text("<top>\n<num> Number: 7\n<title> apple\n</top>\n")
    qrels = write_lines(tmp_path / "qrels.txt", ["7 0 A 1", "7 0 B 0"])
    dataset = load_dataset({"adapter": "trec", "corpus": str(corpus), "topics": {"test": str(topics)},
                            "qrels": {"test": str(qrels)}, "topic_field": "title", "judged_only": True})
    validate(dataset)
    assert dataset.corpus["docid"].to_pylist() == ["A", "B"]
    assert dataset.queries["test"].to_pylist() == [{"qid": "7", "text": "apple"}]


def test_ir_datasets_without_the_package_says_how_to_get_it(monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_irds(name, *args, **kwargs):
        if name == "ir_datasets":
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_irds)
    with pytest.raises(HardnegError, match=r"needs the ir_datasets package.*pip install 'hardneg\[irds\]'"):
        load_dataset({"adapter": "ir_datasets", "splits": {"test": "beir/scifact/test"}})


# ----------------------------------------------------------------------------------- ids and relevance
@pytest.mark.parametrize("kwargs, file, line, message", [
    (dict(corpus=['{"_id": "d1", "text": "a"}', '{"_id": "d 2", "text": "b"}']),
     "corpus.jsonl", 2, "docid 'd 2' contains a space; ids must not contain whitespace or control characters"),
    (dict(corpus=['{"_id": "d\\t1", "text": "a"}']), "corpus.jsonl", 1, "docid 'd\\t1' contains a tab"),
    (dict(corpus=['{"_id": "d\\u00001", "text": "a"}']),
     "corpus.jsonl", 1, "docid 'd\\x001' contains a control character (U+0000)"),
    (dict(corpus=['{"_id": "d\\u00a01", "text": "a"}']), "corpus.jsonl", 1, "contains whitespace (U+00A0)"),
    (dict(queries=['{"_id": "q1", "text": "a"}', '{"_id": "q 2", "text": "b"}']),
     "queries.jsonl", 2, "qid 'q 2' contains a space"),
    (dict(qrels=["query-id\tcorpus-id\tscore", "q1\td1\t1", "q2\td 2\t1"]),
     "test.tsv", 3, "docid 'd 2' contains a space"),
    (dict(qrels=["query-id\tcorpus-id\tscore", "q1 \td1\t1"]), "test.tsv", 2, "qid 'q1 ' contains a space"),
    (dict(qrels=["query-id\tcorpus-id\tscore", "q1\t\t1"]), "test.tsv", 2, "docid '' is empty"),
    (dict(qrels=["query-id\tcorpus-id\tscore", "q1\td1\t1", "q2\td2\t-1"]),
     "test.tsv", 3, "relevance '-1' is negative; relevance must be a non-negative integer (0: not relevant)"),
    (dict(qrels=["query-id\tcorpus-id\tscore", "q1\td1\t0.5"]), "test.tsv", 2, "relevance '0.5' is not an integer"),
    (dict(qrels=["query-id\tcorpus-id\tscore", "q1\td1\tnan"]), "test.tsv", 2, "relevance 'nan' is not an integer"),
    (dict(qrels=["query-id\tcorpus-id\tscore", "q1\td1\t1e12"]), "test.tsv", 2, "relevance '1e12' is too large"),
])
def test_bad_ids_and_relevance_name_file_and_line(beir_folder, kwargs, file, line, message):
    root = beir_folder(**kwargs)
    with pytest.raises(DataError) as info:
        beir.load(root, ["test"])
    assert info.value.path.endswith(file) and info.value.line == line
    assert message in info.value.message


def test_integral_relevance_written_as_a_float_is_accepted(beir_folder):
    root = beir_folder(qrels=["query-id\tcorpus-id\tscore", "q1\td1\t2.0", "q2\td2\t0"])
    assert beir.load(root, ["test"]).qrels["test"]["relevance"].to_pylist() == [2, 0]


def test_msmarco_and_trec_reject_bad_ids_and_relevance(tmp_path):
    collection = write_lines(tmp_path / "collection.tsv", ["0\tfirst", "1 b\tsecond"])
    queries = write_lines(tmp_path / "queries.tsv", ["100\twhat"])
    qrels = write_lines(tmp_path / "qrels.tsv", ["100 0 0 1"])
    with pytest.raises(DataError, match=r"collection\.tsv, line 2: docid '1 b' contains a space"):
        msmarco.load_passage(str(collection), {"dev": str(queries)}, {"dev": str(qrels)})
    collection = write_lines(tmp_path / "collection.tsv", ["0\tfirst", "1\tsecond"])
    bad_queries = write_lines(tmp_path / "bad_queries.tsv", ["100\twhat", "1\x0b01\twho"])
    with pytest.raises(DataError, match=r"bad_queries\.tsv, line 2: qid '1\\x0b01' contains whitespace \(U\+000B\)"):
        msmarco.load_passage(str(collection), {"dev": str(bad_queries)}, {"dev": str(qrels)})
    bad_qrels = write_lines(tmp_path / "bad_qrels.tsv", ["100 0 0 1", "100 0 1\x01 1"])
    with pytest.raises(DataError, match=r"bad_qrels\.tsv, line 2: docid '1\\x01' contains a control character"):
        msmarco.load_passage(str(collection), {"dev": str(queries)}, {"dev": str(bad_qrels)})
    negative = write_lines(tmp_path / "negative.txt", ["100 0 0 1", "100 0 1 -2"])
    with pytest.raises(DataError, match=r"negative\.txt, line 2: relevance '-2' is negative"):
        msmarco.load_passage(str(collection), {"dev": str(queries)}, {"dev": str(negative)})
    topics = tmp_path / "topics.txt"
    topics.write_text("<top>\n<num> Number: 7 8\n<title> apple\n</top>\n")
    with pytest.raises(DataError, match=r"topics\.txt, line 1: qid '7 8' contains a space"):
        trec.read_topics(str(topics))
    corpus = write_lines(tmp_path / "docs.tsv", ["A\tapples", "B C\tpears"])
    with pytest.raises(DataError, match=r"docs\.tsv, line 2: docid 'B C' contains a space"):
        trec.read_corpus(str(corpus))


# ------------------------------------------------------------------------------ a split without qrels
def test_trec_topics_split_without_qrels_names_the_key(tmp_path):
    from hardneg.errors import ConfigError

    corpus = write_lines(tmp_path / "docs.jsonl", ['{"id": "A", "contents": "apples"}'])
    topics = write_lines(tmp_path / "topics.tsv", ["7\tapple"])
    qrels = write_lines(tmp_path / "qrels.txt", ["7 0 A 1"])
    cfg = {"adapter": "trec", "corpus": str(corpus), "topics": {"train": str(topics), "test": str(topics)},
           "qrels": {"train": str(qrels)}}
    with pytest.raises(ConfigError) as info:
        load_dataset(cfg)
    assert info.value.key == "dataset.qrels.test"
    assert info.value.message == ("required key is missing: split 'test' has topics (dataset.topics.test) but no "
                                  "qrels file; every split needs its qrels")
    with pytest.raises(ConfigError, match=r"config key 'dataset\.qrels\.test'"):
        trec.load(str(corpus), {"test": str(topics)}, {})
    with pytest.raises(ConfigError, match=r"config key 'dataset\.qrels\.dev': required key is missing"):
        msmarco.load_passage(str(corpus), {"dev": str(topics)}, {"train": str(qrels)})
    with pytest.raises(ConfigError, match=r"config key 'dataset\.topics\.dev': .*has a qrels file"):
        load_dataset({**cfg, "topics": {"train": str(topics)}, "qrels": {"train": str(qrels), "dev": str(qrels)}})


# ------------------------------------------------------------------------------------- output paths
def test_split_names_cannot_leave_the_dataset_folder(tmp_path):
    from hardneg.datasets.canonical import Dataset, dataset_paths, table_from_rows, write_dataset
    from hardneg.errors import OutputPathError
    from hardneg.io import artifacts

    for split in ("../../../../tmp/x", "..", "a/b", ""):
        with pytest.raises(OutputPathError, match="split name .* cannot be used in a path"):
            dataset_paths(tmp_path / "out", [split])
    corpus = table_from_rows(artifacts.CORPUS, {"docid": ["d1"], "title": [""], "text": ["a"]})
    queries = table_from_rows(artifacts.QUERIES, {"qid": ["q1"], "text": ["a"]})
    qrels = table_from_rows(artifacts.QRELS, {"qid": ["q1"], "docid": ["d1"], "relevance": [1]})
    escape = "../../escaped"
    with pytest.raises(OutputPathError):
        write_dataset(Dataset(corpus, {escape: queries}, {escape: qrels}), tmp_path / "a" / "b" / "out")
    assert not list(tmp_path.rglob("*.parquet"))


def test_a_dataset_write_that_fails_leaves_the_previous_dataset_whole(tmp_path, monkeypatch):
    """A write that fails part way (here the corpus, written after the queries and qrels would have been) puts
    none of its files in place: the folder keeps the previous dataset, byte for byte, and no temporary."""
    from hardneg.datasets import canonical
    from hardneg.datasets.canonical import Dataset, table_from_rows, write_dataset
    from hardneg.io import artifacts

    def dataset(text: str) -> Dataset:
        corpus = table_from_rows(artifacts.CORPUS, {"docid": ["d1"], "title": [""], "text": [text]})
        queries = table_from_rows(artifacts.QUERIES, {"qid": ["q1"], "text": [text]})
        qrels = table_from_rows(artifacts.QRELS, {"qid": ["q1"], "docid": ["d1"], "relevance": [1]})
        return Dataset(corpus, {"test": queries}, {"test": qrels})

    root = tmp_path / "data"
    write_dataset(dataset("before"), root)
    before = {path.relative_to(root): path.read_bytes() for path in root.rglob("*") if path.is_file()}
    write_table = artifacts.write_table

    def failing(table, kind, path):
        if kind is artifacts.CORPUS:
            raise OSError(28, "No space left on device")
        return write_table(table, kind, path)

    monkeypatch.setattr(canonical.artifacts, "write_table", failing)
    with pytest.raises(OSError, match="No space left"):
        write_dataset(dataset("after"), root)
    after = {path.relative_to(root): path.read_bytes() for path in root.rglob("*") if path.is_file()}
    assert after == before and len(before) == 5


# --------------------------------------------------------------------------------------- TREC writer
def test_trec_writer_refuses_ids_that_break_lines(tmp_path):
    import pyarrow as pa

    from hardneg.io import rankings as runs

    run = pa.table({"qid": ["q1", "q1"], "docid": ["d1", "d 2"], "rank": pa.array([1, 2], pa.int32()),
                    "score": pa.array([2.0, 1.0], pa.float32())})
    with pytest.raises(HardnegError) as info:
        runs.write_ranking(run, tmp_path / "run.parquet", tmp_path / "run.trec", "dense")
    assert str(info.value) == (f"{tmp_path / 'run.trec'}: cannot write docid 'd 2' to a TREC file: it contains a "
                               f"space; ids must not contain whitespace or control characters (TREC files separate "
                               f"fields by whitespace)")
    assert not any(tmp_path.iterdir())  # neither the TREC file nor the Parquet twin
    with pytest.raises(HardnegError, match=r"cannot write qid 'q\\t1' to a TREC file: it contains a tab"):
        runs.write_trec(run.set_column(0, "qid", pa.array(["q\t1", "q\t1"])), tmp_path / "r.trec", "dense")
    with pytest.raises(HardnegError, match=r"cannot write tag 'my run' to a TREC file"):
        runs.write_trec(run.slice(0, 1), tmp_path / "r.trec", "my run")
    qrels = pa.table({"qid": ["q 1"], "docid": ["d1"], "relevance": pa.array([1], pa.int32())})
    with pytest.raises(HardnegError, match=r"q\.trec: cannot write qid 'q 1'"):
        runs.write_trec_qrels(qrels, tmp_path / "q.trec")
    assert not any(tmp_path.iterdir())
    runs.write_ranking(run.slice(0, 1), tmp_path / "run.parquet", tmp_path / "run.trec", "dense")
    assert (tmp_path / "run.trec").read_text() == "q1 Q0 d1 1 2.000000 dense\n"
