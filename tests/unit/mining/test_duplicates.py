import random

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from hardneg.io import artifacts
from hardneg.mining import duplicates as dup
from hardneg.mining.duplicates import (duplicate_partners, duplicates_stage, find_duplicates,
                                       flag_duplicates_of_positives, normalise_text, shingles)

# A 60-word text of distinct words: changing word k changes exactly the 3 shingles (of 3 words) that hold it, so
# with 58 shingles per text, m changes far apart give a Jaccard similarity of (58 - 3m) / (58 + 3m).
WORDS = [f"w{i}" for i in range(60)]
BASE = " ".join(WORDS)


def changed(positions, tag):
    words = list(WORDS)
    for p in positions:
        words[p] = f"{tag}{p}"
    return " ".join(words)


def corpus(rows):
    docids, titles, texts = zip(*rows) if rows else ((), (), ())
    return pa.table({"docid": list(docids), "title": list(titles), "text": list(texts)},
                    schema=artifacts.CORPUS.schema)


def pairs(table):
    return [(r["docid"], r["duplicate"], r["kind"], r["similarity"]) for r in table.to_pylist()]


def test_normalise_text():
    assert normalise_text("The  Title.", "Hello,\tWORLD!\n  It's  ﬁne") == "the title hello world it s fine"
    assert normalise_text(None, "ＡＢＣ Straße") == "abc strasse"  # NFKC full-width, casefold ß
    assert normalise_text("", "  x  ") == "x"
    assert normalise_text(None, None) == "" and normalise_text(" ", "... !!") == ""
    assert normalise_text("a", "b") == normalise_text(None, "a b")  # title and text joined with a space


def test_shingles():
    assert shingles("a b c d", 3) == {"a b c", "b c d"}
    assert shingles("a b", 3) == {"a b"}
    assert shingles("a b c", 3) == {"a b c"}
    assert shingles("", 3) == set()
    assert shingles("a a a a", 2) == {"a a"}
    with pytest.raises(ValueError):
        shingles("a", 0)


def test_exact_duplicates_differ_only_in_case_punctuation_and_space():
    table = corpus([
        ("d1", "Title", "The quick brown fox."),
        ("d2", None, "title: the QUICK, brown   fox"),
        ("d3", "TITLE", "the quick-brown fox!!"),
        ("d4", "Other", "Something else entirely, nothing alike."),
    ])
    assert pairs(find_duplicates(table)) == [("d1", "d2", "exact", 1.0), ("d1", "d3", "exact", 1.0),
                                             ("d2", "d3", "exact", 1.0)]


def test_near_duplicate_found_with_its_true_jaccard_and_unrelated_text_not():
    unrelated = " ".join(f"u{i}" for i in range(60))
    table = corpus([("a", None, BASE), ("b", None, changed([10, 40], "x")), ("c", None, unrelated)])
    result = find_duplicates(table, threshold=0.7)
    assert result.schema == artifacts.DUPLICATES.schema
    assert pairs(result) == [("a", "b", "near", pytest.approx(52 / 64))]  # 0.8125: (58 - 6) / (58 + 6)
    assert result["similarity"][0].as_py() == np.float32(52 / 64)


def test_near_pair_expanded_to_exact_group_members():
    # a1, a2 the same text (exact); b near both; each near pair reported once, with the same similarity
    table = corpus([("a2", "", BASE + "."), ("b", None, changed([30], "y")), ("a1", None, BASE.upper())])
    similarity = pytest.approx((58 - 3) / (58 + 3))
    assert pairs(find_duplicates(table, threshold=0.8)) == [
        ("a1", "a2", "exact", 1.0), ("a1", "b", "near", similarity), ("a2", "b", "near", similarity)]


def test_lsh_false_positives_are_dropped():
    # 12 variants with 3 changes each: similarity to the base (58-9)/(58+9) = 0.731, to each other lower, all below
    # the threshold 0.8; LSH proposes some of these pairs, none may be reported
    rows = [("base", None, BASE)]
    rows += [(f"v{k:02d}", None, changed([3 + k, 22 + k, 41 + k], f"v{k}x")) for k in range(12)]
    table = corpus(rows)
    left, right = dup._lsh_candidates(table, np.ones(table.num_rows, bool), threshold=0.8, num_perm=128,
                                      shingle_size=3, seed=1)
    assert len(left) > 0  # LSH's false positives exist here ...
    assert len(find_duplicates(table, threshold=0.8)) == 0  # ... and are dropped
    # at a threshold they pass, the base's pairs appear with their true similarity
    found = find_duplicates(table, threshold=0.7)
    base_pairs = [p for p in pairs(found) if p[0] == "base"]
    assert base_pairs and all(s == pytest.approx(49 / 67) for *_, s in base_pairs)
    assert all(s >= 0.7 for *_, s in pairs(found))


def test_empty_documents_never_pair():
    table = corpus([("e1", None, None), ("e2", "", "   "), ("e3", "...", "!!"), ("e4", None, ""),
                    ("x", "t", "some text"), ("y", None, "t some text")])
    assert pairs(find_duplicates(table, threshold=0.1)) == [("x", "y", "exact", 1.0)]
    assert len(find_duplicates(corpus([]))) == 0


def test_same_table_whatever_the_row_order():
    rows = [("a2", "", BASE + "."), ("b", None, changed([30], "y")), ("a1", None, BASE.upper()),
            ("c", None, changed([5, 50], "z")), ("d", "Quick", "brown fox"), ("e", None, "quick brown fox"),
            ("f", None, ""), ("g", None, " ".join(f"u{i}" for i in range(60)))]
    expected = find_duplicates(corpus(rows), threshold=0.7)
    assert len(expected) > 4
    generator = random.Random(3)
    for _ in range(5):
        generator.shuffle(rows)
        assert find_duplicates(corpus(rows), threshold=0.7).equals(expected)


def test_options_checked():
    table = corpus([("a", None, "x")])
    for bad in ({"threshold": 0.0}, {"threshold": 1.5}, {"num_perm": 1}, {"shingle_size": 0}):
        with pytest.raises(ValueError):
            find_duplicates(table, **bad)
    with pytest.raises(ValueError, match="unique"):
        find_duplicates(corpus([("a", None, "x"), ("a", None, "y")]))


DUPLICATES = pa.table({"docid": ["d1", "d1", "d2", "p1"], "duplicate": ["p1", "p2", "p3", "p3"],
                       "kind": ["near", "exact", "exact", "near"],
                       "similarity": pa.array([0.9, 1.0, 1.0, 0.85], pa.float32())})


def test_duplicate_partners_both_directions():
    both = duplicate_partners(DUPLICATES)
    assert both.schema == artifacts.DUPLICATES.schema
    assert [(r["docid"], r["duplicate"], r["kind"]) for r in both.to_pylist()] == [
        ("d1", "p1", "near"), ("d1", "p2", "exact"), ("d2", "p3", "exact"), ("p1", "d1", "near"),
        ("p1", "p3", "near"), ("p2", "d1", "exact"), ("p3", "d2", "exact"), ("p3", "p1", "near")]
    assert duplicate_partners(both).equals(both)  # a table already in both directions is not doubled


def test_flag_duplicates_of_positives():
    qrels = pa.table({"qid": ["q1", "q1", "q1", "q2"], "docid": ["p1", "p2", "p9", "p3"],
                      "relevance": pa.array([1, 2, 0, 1], pa.int32())})
    qid = ["q1", "q1", "q1", "q2", "q2", "q1", "q2"]
    docid = ["d1", "d2", "x", "d2", "d1", "p3", "p1"]
    duplicate_of, kind = flag_duplicates_of_positives(DUPLICATES, qid, docid, qrels)
    # q1/d1: duplicates p1 (near) and p2 (exact): the exact one. q1/d2 duplicates p3, q2's positive: not q1's.
    # q2/d2: p3 exact. q2/d1: p1, p2 are q1's. q1/p3: p3 is a near duplicate of p1, q1's positive.
    # q2/p1: a near duplicate of p3, q2's positive.
    assert duplicate_of.to_pylist() == ["p2", None, None, "p3", None, "p1", "p3"]
    assert kind.to_pylist() == ["exact", None, None, "exact", None, "near", "near"]
    assert duplicate_of.type == pa.string() and kind.type == pa.string()
    # the partner table gives the same; no candidates, or no pairs, give empty or null arrays
    again = flag_duplicates_of_positives(duplicate_partners(DUPLICATES), pa.array(qid), pa.array(docid), qrels)
    assert again[0].equals(duplicate_of) and again[1].equals(kind)
    none = flag_duplicates_of_positives(artifacts.DUPLICATES.schema.empty_table(), qid, docid, qrels)
    assert none[0].to_pylist() == [None] * 7 and none[1].to_pylist() == [None] * 7
    assert len(flag_duplicates_of_positives(DUPLICATES, [], [], qrels)[0]) == 0


def test_flag_prefers_smallest_positive_among_same_kind():
    qrels = pa.table({"qid": ["q", "q"], "docid": ["pb", "pa"], "relevance": pa.array([1, 1], pa.int32())})
    table = pa.table({"docid": ["c", "c"], "duplicate": ["pa", "pb"], "kind": ["near", "near"],
                      "similarity": pa.array([0.8, 0.95], pa.float32())})
    duplicate_of, kind = flag_duplicates_of_positives(table, ["q"], ["c"], qrels)
    assert duplicate_of.to_pylist() == ["pa"] and kind.to_pylist() == ["near"]


def test_duplicates_stage_round_trip(tmp_path):
    table = corpus([("a", None, BASE), ("b", None, changed([10, 40], "x")), ("c", "T", "some text"),
                    ("d", None, "t. Some TEXT"), ("e", None, "")])
    corpus_path, out = tmp_path / "corpus.parquet", tmp_path / "out" / "duplicates.parquet"
    artifacts.write_table(table, artifacts.CORPUS, corpus_path)
    assert duplicates_stage(corpus_path, out, threshold=0.7, num_perm=128, shingle_size=3, seed=1) == 2
    written = artifacts.read_table(artifacts.DUPLICATES, out)
    assert pq.read_schema(out).names == artifacts.DUPLICATES.schema.names
    assert pairs(written) == [("a", "b", "near", pytest.approx(52 / 64)), ("c", "d", "exact", 1.0)]
    assert written.equals(find_duplicates(table, threshold=0.7))


def test_blocks_and_chunks_give_the_same_table(monkeypatch):
    rows = [("a2", "", BASE + "."), ("b", None, changed([30], "y")), ("a1", None, BASE.upper()),
            ("c", None, changed([5, 50], "z")), ("d", "Quick", "brown fox"), ("e", None, "quick brown fox"),
            ("f", None, ""), ("g", None, "QUICK BROWN FOX")]
    expected = find_duplicates(corpus(rows), threshold=0.7)
    monkeypatch.setattr(dup, "BATCH_ROWS", 3)
    monkeypatch.setattr(dup, "PAIR_CHUNK", 2)
    chunked = pa.concat_tables([corpus(rows[:5]), corpus(rows[5:])])  # two chunks per column
    assert chunked["docid"].num_chunks == 2
    assert find_duplicates(chunked, threshold=0.7).equals(expected)
    assert find_duplicates(corpus(rows), threshold=1.0).to_pylist() == [
        p for p in expected.to_pylist() if p["kind"] == "exact"]


def test_threshold_one_pairs_identical_shingle_sets_only():
    table = corpus([("a", None, "la la la la"), ("b", None, "la la la"), ("c", None, "la la di")])
    assert pairs(find_duplicates(table, threshold=1.0, shingle_size=2)) == [("a", "b", "near", 1.0)]
