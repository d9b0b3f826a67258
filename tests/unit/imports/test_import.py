"""hardneg import: every export of ``hardneg export hardnegs`` comes back as the rows it was exported from (with its
scores when it carries them), a hand-written file of each peer format imports, and what the dataset does not have
stops the import with one error that counts it and shows where it is."""

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from hardneg.errors import HardnegError
from hardneg.export.hardnegs import export_hardnegs
from hardneg.imports.lists import import_hardnegs
from hardneg.imports.matching import UnmatchedError
from hardneg.io import artifacts
from tests.support.exports import (CORPUS, DOCS, EXPECTED, GRADED_QRELS, QUERY_TEXT, RANK, SCORE, scored_results,
                                   table, write_results)

datasets = pytest.importorskip("datasets")


@pytest.fixture
def results(tmp_path):
    return write_results(tmp_path / "results")


def imported(root, source, fmt, tmp_path, name="imported", **kw):
    """Import ``source``; the written list and positives as row lists, and what the import returned."""
    written = import_hardnegs(source, fmt, tmp_path / name, dataset="toy", results=root, **kw)
    hardnegs = artifacts.read_table(artifacts.HARDNEGS, tmp_path / name / "hardnegs.parquet").to_pylist()
    positives = artifacts.read_table(artifacts.POSITIVE_SCORES, tmp_path / name / "positives.parquet").to_pylist()
    return hardnegs, positives, written


def exported_order(negatives=None):
    """(qid, docid) of every exported negative in rank order, each query's first ``negatives`` only."""
    return [(q, d) for q, (_, docs) in EXPECTED.items() for d in docs[:negatives]]


def joined(docid):
    title, text = DOCS[docid]
    return f"{title} [SEP] {text}" if title.strip() else text


# -------------------------------------------------------------------------------------------- round trips
@pytest.mark.parametrize("fmt", ["jsonl", "hf-dataset"])
def test_hardnegs_own_exports_come_back_with_their_ranks_and_scores(results, tmp_path, fmt):
    export_hardnegs("star", fmt, tmp_path / "export", results=results)
    hardnegs, positives, written = imported(results, tmp_path / "export", fmt, tmp_path)
    assert [(r["qid"], r["docid"], r["rank"]) for r in hardnegs] == [(q, d, RANK[q, d]) for q, d in exported_order()]
    assert [r["score"] for r in hardnegs] == pytest.approx([SCORE[key] for key in exported_order()])
    assert [(r["qid"], r["docid"], r["relevance"], r["score"]) for r in positives] == \
        [("q1", "d2", 2, None), ("q1", "d1", 1, None), ("q2", "d3", 1, None), ("q5", "d6", 1, None)]
    assert (written["query_mentions_by_id"], written["document_mentions_by_id"]) == (3, 13)
    assert written["document_mentions_by_text"] == 0


@pytest.mark.parametrize("st_format, negatives", [("triplet", "all"), ("n-tuple", 2), ("labeled-pair", "all"),
                                                  ("labeled-list", "all")])
def test_sentence_transformers_exports_come_back_as_the_same_rows(results, tmp_path, st_format, negatives):
    export_hardnegs("star", "sentence-transformers", tmp_path / "st", results=results, st_format=st_format,
                    negatives=negatives, title_separator="[SEP]")
    hardnegs, positives, written = imported(results, tmp_path / "st", "sentence-transformers", tmp_path)
    kept = None if negatives == "all" else negatives
    assert [(r["qid"], r["docid"]) for r in hardnegs] == exported_order(kept)
    assert [r["rank"] for r in hardnegs if r["qid"] == "q5"] == list(range(1, len(EXPECTED["q5"][1][:kept]) + 1))
    assert {(r["qid"], r["docid"]) for r in positives} == {(q, d) for q, (pos, _) in EXPECTED.items() for d in pos}
    assert written["shape"] == st_format and written["document_mentions_by_text"] > 0
    assert written["negatives_scored"] == 0
    assert all(r["score"] is None for r in hardnegs)


@pytest.mark.parametrize("fmt, st_format", [("tevatron", None), ("sentence-transformers", "triplet"),
                                             ("sentence-transformers", "n-tuple"),
                                             ("sentence-transformers", "labeled-pair"),
                                             ("sentence-transformers", "labeled-list")])
def test_exports_with_teacher_scores_come_back_with_them(tmp_path, fmt, st_format):
    # a labeled pair with scores has no labels: the dataset's judgements tell its positives from its negatives
    root, positive, negative = scored_results(tmp_path)
    options = {"st_format": st_format, "negatives": "all" if st_format != "n-tuple" else 2,
               "title_separator": "[SEP]"} if st_format else {}
    source = tmp_path / ("export.jsonl" if fmt == "tevatron" else "export")
    export_hardnegs("star", fmt, source, results=root, scores="cross-encoder", **options)
    hardnegs, positives, written = imported(root, source, fmt, tmp_path)
    kept = 2 if st_format == "n-tuple" else None
    assert [(r["qid"], r["docid"]) for r in hardnegs] == exported_order(kept)
    assert [r["score"] for r in hardnegs] == pytest.approx([negative[key] for key in exported_order(kept)])
    assert {(r["qid"], r["docid"]): r["score"] for r in positives} == pytest.approx(
        {(q, d): positive[q, d] for q, (pos, _) in EXPECTED.items() for d in pos})
    assert written["negatives_scored"] == written["negatives"] and written["positives_scored"] == written["positives"]
    card = json.loads((tmp_path / "imported" / "hardnegs_card.json").read_text())
    assert card["kind"] == "import" and card["import"]["format"] == fmt and card["import"]["mapping"] == \
        {key: value for key, value in written.items() if key not in ("output", "format", "shape", "dataset", "split")}
    assert card["list"]["path"] == str(tmp_path / "imported" / "hardnegs.parquet") and card["list"]["rows"] == \
        len(hardnegs)
    assert set(card["inputs"]) == {"corpus", "queries", "qrels", "positives"}


@pytest.mark.parametrize("fmt, st_format", [("jsonl", None), ("hf-dataset", None), ("tevatron", None),
                                             ("sentence-transformers", "labeled-list")])
def test_exported_grades_come_back_from_the_file(tmp_path, fmt, st_format):
    # q1 judged 2/1/1/1/1, q5's positive 3; the dataset imported into grades every positive 1, so a grade that comes
    # back came from the file
    root = write_results(tmp_path / "results", qrels=GRADED_QRELS)
    source = tmp_path / ("export.jsonl" if fmt in ("tevatron", "jsonl") else "export")
    export_hardnegs("star", fmt, source, results=root,
                    **({"st_format": st_format, "negatives": "all", "title_separator": "[SEP]"} if st_format else {}))
    ungraded = GRADED_QRELS.set_column(2, "relevance", pa.array([min(r, 1) for r in
                                                                 GRADED_QRELS["relevance"].to_pylist()], pa.int32()))
    artifacts.write_table(ungraded, artifacts.QRELS, root / "datasets" / "toy" / "qrels" / "train.parquet")
    _, positives, written = imported(root, source, fmt, tmp_path)
    graded = {(q, d): r for q, d, r in zip(*(GRADED_QRELS[c].to_pylist() for c in ("qid", "docid", "relevance")))}
    assert {(r["qid"], r["docid"]): r["relevance"] for r in positives} == \
        {key: grade for key, grade in graded.items() if grade >= 1 and key[0] in ("q1", "q2", "q5")}
    assert sorted(r["relevance"] for r in positives if r["qid"] == "q1") == [1, 1, 1, 1, 2]
    assert written["positives_not_judged"] == 0


def test_a_positive_graded_below_1_is_refused(results, tmp_path):
    export_hardnegs("star", "jsonl", tmp_path / "export.jsonl", results=results)
    rows = [json.loads(line) for line in (tmp_path / "export.jsonl").read_text().splitlines()]
    rows[1]["positives"][0]["relevance"] = 0
    bad = write_jsonl(tmp_path / "bad.jsonl", rows)
    with pytest.raises(HardnegError, match=r"bad.jsonl, line 2: positives\[1\].relevance: a positive's grade is at "
                                           r"least 1, got 0"):
        import_hardnegs(bad, "jsonl", tmp_path / "out", dataset="toy", results=results)
    assert not (tmp_path / "out").exists()


# ------------------------------------------------------------------------------------- hand-written files
def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def test_hand_written_files_of_each_peer_format_import(results, tmp_path):
    q1, q2 = QUERY_TEXT["q1"], QUERY_TEXT["q2"]
    spaced = {d: f"{DOCS[d][0]} {DOCS[d][1]}" if DOCS[d][0].strip() else DOCS[d][1] for d in DOCS}
    # sentence-transformers triplets as JSON Lines, documents as "title text" (and a title-less one as its text)
    triplets = write_jsonl(tmp_path / "triplets.jsonl", [
        {"anchor": q1, "positive": spaced["d2"], "negative": spaced["d8"]},
        {"anchor": q1, "positive": spaced["d2"], "negative": DOCS["d4"][1]},
        {"anchor": q2, "positive": spaced["d3"], "negative": spaced["d10"]}])
    hardnegs, positives, written = imported(results, triplets, "sentence-transformers", tmp_path, "a")
    assert [(r["qid"], r["docid"], r["rank"]) for r in hardnegs] == [("q1", "d8", 1), ("q1", "d4", 2),
                                                                      ("q2", "d10", 1)]
    assert written["rows"] == 3 and written["shape"] == "triplet"
    # an n-tuple with scores, as Parquet
    pq.write_table(pa.table({"query": [q1], "positive": [joined("d1")], "negative_1": [joined("d7")],
                             "negative_2": [joined("d5")], "scores": [[0.9, 0.5, 0.25]]}), tmp_path / "ntuple.parquet")
    hardnegs, positives, _ = imported(results, tmp_path / "ntuple.parquet", "sentence-transformers", tmp_path, "b")
    assert [(r["docid"], r["score"]) for r in hardnegs] == [("d7", 0.5), ("d5", 0.25)]
    assert positives == [{"qid": "q1", "docid": "d1", "relevance": 1, "score": pytest.approx(0.9)}]
    # a labeled list with relevance grades: the grade is kept, a negative judged relevant is left out
    graded = write_jsonl(tmp_path / "graded.jsonl", [
        {"query": q1, "docs": [joined("d2"), joined("d8"), joined("d1")], "labels": [2, 0, 0]}])
    hardnegs, positives, written = imported(results, graded, "sentence-transformers", tmp_path, "c")
    assert [r["docid"] for r in hardnegs] == ["d8"] and written["negatives_judged_relevant"] == 1
    assert [(r["docid"], r["relevance"]) for r in positives] == [("d2", 2)]
    # Tevatron v1 with ids of another collection (matched by title and text) and scores
    tevatron = write_jsonl(tmp_path / "tevatron.jsonl", [{
        "query_id": "other-1", "query": q2,
        "positive_passages": [{"docid": "x3", "title": DOCS["d3"][0], "text": DOCS["d3"][1], "score": 3.5}],
        "negative_passages": [{"docid": "x10", "title": "", "text": DOCS["d10"][1], "score": 1.0},
                              {"docid": "d1", "title": "ignored", "text": "the id is the dataset's", "score": 0.5}]}])
    hardnegs, positives, written = imported(results, tevatron, "tevatron", tmp_path, "d")
    assert [(r["qid"], r["docid"], r["score"]) for r in hardnegs] == [("q2", "d10", 1.0), ("q2", "d1", 0.5)]
    assert written["shape"] == "v1" and written["query_mentions_by_text"] == 1
    assert written["document_mentions_by_id"] == 1
    # Tevatron v2: ids only
    v2 = write_jsonl(tmp_path / "v2.jsonl", [{"query_id": "q5", "query_text": QUERY_TEXT["q5"],
                                              "positive_document_ids": ["d6"],
                                              "negative_document_ids": ["d3", "d7"]}])
    hardnegs, _, written = imported(results, v2, "tevatron", tmp_path, "e")
    assert [(r["qid"], r["docid"], r["rank"]) for r in hardnegs] == [("q5", "d3", 1), ("q5", "d7", 2)]
    assert written["shape"] == "v2"
    # FlagEmbedding, with its teacher scores, an instruction and a task type
    flag = write_jsonl(tmp_path / "flag.jsonl", [{
        "query": q1, "pos": [joined("d2")], "neg": [spaced["d7"], joined("d9")], "pos_scores": [0.75],
        "neg_scores": [0.5, 0.125], "prompt": "Represent this question for retrieval: ", "type": "normal"}])
    hardnegs, positives, _ = imported(results, flag, "flagembedding", tmp_path, "f")
    assert [(r["docid"], r["score"]) for r in hardnegs] == [("d7", 0.5), ("d9", 0.125)]
    assert [(r["docid"], r["score"]) for r in positives] == [("d2", 0.75)]


def test_what_the_dataset_does_not_have_is_one_error_that_counts_and_shows_it(results, tmp_path):
    source = write_jsonl(tmp_path / "flag.jsonl", [
        {"query": QUERY_TEXT["q1"], "pos": [joined("d2")], "neg": ["no such text", joined("d8")]},
        {"query": "a query of no split", "pos": [joined("d3")], "neg": ["another unknown text"]}])
    with pytest.raises(UnmatchedError) as error:
        import_hardnegs(source, "flagembedding", tmp_path / "out", dataset="toy", results=results)
    message = str(error.value)
    assert error.value.count == 3 and error.value.total == 7
    assert "3 of 7 queries and documents could not be matched to dataset toy (1 query and 2 documents)" in message
    assert f"{source}, line 1: negative 'no such text'" in message
    assert f"{source}, line 2: query 'a query of no split'" in message
    assert f"{source}, line 2: negative 'another unknown text'" in message
    assert "--title-separator" in message and not (tmp_path / "out").exists()


def test_files_that_fit_no_format_are_refused_naming_where(results, tmp_path):
    pairs = write_jsonl(tmp_path / "pairs.jsonl", [{"query": "q", "positive": "p"}])
    with pytest.raises(HardnegError, match=r"pairs.jsonl, line 1: columns query, positive fit no sentence-"):
        import_hardnegs(pairs, "sentence-transformers", tmp_path / "out", dataset="toy", results=results)
    (tmp_path / "broken.jsonl").write_text('{"query": "x", "pos": [], "neg": []}\n{"query": \n')
    with pytest.raises(HardnegError, match=r"broken.jsonl, line 2: not a JSON object"):
        import_hardnegs(tmp_path / "broken.jsonl", "flagembedding", tmp_path / "out", dataset="toy", results=results)
    scores = write_jsonl(tmp_path / "scores.jsonl", [{"query": "x", "pos": ["a"], "neg": ["b"], "neg_scores": [1, 2]}])
    with pytest.raises(HardnegError, match=r"scores.jsonl, line 1: neg_scores: 2 scores for 1 documents"):
        import_hardnegs(scores, "flagembedding", tmp_path / "out", dataset="toy", results=results)
    with pytest.raises(HardnegError, match=r"dataset 'nope' is not prepared .* \(prepared: toy\)"):
        import_hardnegs(scores, "flagembedding", tmp_path / "out", dataset="nope", results=results)
    with pytest.raises(HardnegError, match=r"no split 'dev' \(its splits: train\)"):
        import_hardnegs(scores, "flagembedding", tmp_path / "out", dataset="toy", split="dev", results=results)
    assert not (tmp_path / "out").exists()


def test_a_text_of_two_documents_takes_the_judged_one_for_a_positive(tmp_path):
    twins = [("d11", *DOCS["d2"]), ("d12", *DOCS["d8"])]  # d11 reads as q1's positive d2, d12 as d8
    corpus = table(artifacts.CORPUS, [*zip(*(CORPUS[c].to_pylist() for c in ("docid", "title", "text"))), *twins])
    root = write_results(tmp_path / "results", corpus=corpus)
    source = write_jsonl(tmp_path / "t.jsonl", [{"query": QUERY_TEXT["q1"], "positive": joined("d2"),
                                                 "negative": joined("d8")},
                                                {"query": QUERY_TEXT["q1"], "positive": joined("d2"),
                                                 "negative": joined("d2")}])
    hardnegs, positives, written = imported(root, source, "sentence-transformers", tmp_path)
    assert [r["docid"] for r in positives] == ["d2"]  # judged relevant to q1, where d11 is not
    assert [r["docid"] for r in hardnegs] == ["d8", "d11"]  # the first in corpus order; the not judged one
    assert written["ambiguous"] == 4 and written["negatives_judged_relevant"] == 0
