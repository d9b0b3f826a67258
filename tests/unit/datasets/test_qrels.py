"""Qrels a user brings (load_qrels) get the same checks as TREC text and as Parquet, with errors naming the line
(TREC) or the row (Parquet)."""

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from hardneg.datasets.qrels import load_qrels
from hardneg.errors import DataError

GOOD = [("q1", "d1", 1), ("q1", "d2", 0), ("q2", "d3", 2)]

# (rows, message of the TREC file (line 3), message of the Parquet file (row 3))
BAD_QRELS = {
    "negative-relevance": (GOOD[:2] + [("q2", "d3", -1)], "line 3: relevance '-1' is negative",
                           "row 3: relevance -1 is negative"),
    "duplicate-judgement": (GOOD[:2] + [("q1", "d1", 0)],
                            "line 3: duplicate judgement for query 'q1' and document 'd1' (first on line 1)",
                            "row 3: duplicate judgement for query 'q1' and document 'd1' (first on row 1)"),
    "control-character-id": (GOOD[:2] + [("q\x01", "d3", 1)], "line 3: qid 'q\\x01' contains a control character",
                             "row 3: qid 'q\\x01' contains a control character"),
}


def _trec(path, rows):
    path.write_text("".join(f"{q} 0 {d} {r}\n" for q, d, r in rows))
    return path


def _parquet(path, rows):
    qid, docid, relevance = (list(c) for c in zip(*rows)) if rows else ([], [], [])
    pq.write_table(pa.table({"qid": pa.array(qid, pa.string()), "docid": pa.array(docid, pa.string()),
                             "relevance": pa.array(relevance, pa.int64())}), path)
    return path


@pytest.mark.parametrize("case", list(BAD_QRELS), ids=list(BAD_QRELS))
def test_bad_qrels_rows_are_refused_alike_in_trec_and_parquet(case, tmp_path):
    rows, trec_message, parquet_message = BAD_QRELS[case]
    with pytest.raises(DataError) as trec_error:
        load_qrels(_trec(tmp_path / "qrels.trec", rows))
    assert trec_error.value.line == 3 and trec_message in str(trec_error.value), str(trec_error.value)
    parquet = _parquet(tmp_path / "qrels.parquet", rows)
    with pytest.raises(DataError) as parquet_error:
        load_qrels(parquet)
    assert str(parquet_error.value).startswith(f"{parquet}: {parquet_message}"), str(parquet_error.value)


def test_empty_qrels_and_missing_values_are_refused_in_parquet(tmp_path):
    with pytest.raises(DataError, match=r"empty\.trec: the qrels file holds no judgements"):
        load_qrels(_trec(tmp_path / "empty.trec", []))
    with pytest.raises(DataError, match=r"empty\.parquet: the qrels file holds no judgements"):
        load_qrels(_parquet(tmp_path / "empty.parquet", []))
    pq.write_table(pa.table({"qid": ["q1", "q2"], "docid": ["d1", None], "relevance": [1, 1]}),
                   tmp_path / "null_docid.parquet")
    with pytest.raises(DataError, match=r"null_docid\.parquet: row 2: docid is missing \(null\)"):
        load_qrels(tmp_path / "null_docid.parquet")
    pq.write_table(pa.table({"qid": ["q1", "q2"], "docid": ["d1", "d2"], "relevance": pa.array([None, 1], pa.int32())}),
                   tmp_path / "null_relevance.parquet")
    with pytest.raises(DataError, match=r"null_relevance\.parquet: row 1: relevance is missing \(null\)"):
        load_qrels(tmp_path / "null_relevance.parquet")


def test_good_qrels_load_the_same_from_both_forms(tmp_path):
    trec = load_qrels(_trec(tmp_path / "qrels.trec", GOOD))
    parquet = load_qrels(_parquet(tmp_path / "qrels.parquet", GOOD))
    assert trec.equals(parquet) and trec["relevance"].to_pylist() == [1, 0, 2]


@pytest.mark.parametrize("ending", ["\r", "\r\n", "\n", "mixed"], ids=["cr-only", "crlf", "lf", "mixed"])
def test_every_line_ending_reads_the_same_judgements(tmp_path, ending):
    """A file of CR-only endings (old Mac) was one line, "holding no judgements"; lines end as in Python's text
    files, and an error names the line an editor shows."""
    rows = [f"{q} 0 {d} {r}" for q, d, r in GOOD]
    endings = ["\r", "\r\n", "\n"] if ending == "mixed" else [ending] * 3
    path = tmp_path / "qrels.trec"
    path.write_bytes("".join(row + end for row, end in zip(rows, endings)).encode())
    assert load_qrels(path).equals(load_qrels(_trec(tmp_path / "plain.trec", GOOD)))
    path.write_bytes(("q1 0 d1 1" + endings[0] + "q1 0 d1 0" + endings[1]).encode())
    with pytest.raises(DataError, match="line 2: duplicate judgement"):
        load_qrels(path)
