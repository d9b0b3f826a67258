"""Runs a user brings (load_ranking) get the same checks as TREC text and as Parquet, with errors naming the line
(TREC) or the row (Parquet); runs the workflow reads (read_ranking) refuse scores that are not finite."""

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from hardneg.errors import DataError
from hardneg.io import artifacts
from hardneg.io.rankings import load_ranking, read_ranking

GOOD = [("q1", "d1", 1, 3.5), ("q1", "d2", 2, 2.0), ("q2", "d1", 1, 1.0)]


def _trec(path, rows):
    path.write_text("".join(f"{q} Q0 {d} {r} {s} tag\n" for q, d, r, s in rows))
    return path


def _parquet(path, rows, score_type=pa.float64()):
    qid, docid, rank, score = (list(c) for c in zip(*rows)) if rows else ([], [], [], [])
    pq.write_table(pa.table({"qid": pa.array(qid, pa.string()), "docid": pa.array(docid, pa.string()),
                             "rank": pa.array(rank, pa.int64()), "score": pa.array(score, score_type)}), path)
    return path


# (rows, message of the TREC file (line), message of the Parquet file (row)); the bad row is always the third
BAD_RUNS = {
    "nan-score": (GOOD[:2] + [("q2", "d1", 1, float("nan"))], "line 3: score 'nan' is not a finite number",
                  "row 3: score nan is not a finite number"),
    "infinite-score": (GOOD[:2] + [("q2", "d1", 1, float("inf"))], "line 3: score 'inf' is not a finite number",
                       "row 3: score inf is not a finite number"),
    "negative-infinite-score": (GOOD[:2] + [("q2", "d1", 1, float("-inf"))],
                                "line 3: score '-inf' is not a finite number",
                                "row 3: score -inf is not a finite number"),
    "score-beyond-float32": (GOOD[:2] + [("q2", "d1", 1, 1e39)],
                             "line 3: score '1e+39' is beyond the range of a 32-bit float",
                             "row 3: score 1e+39 is beyond the range of a 32-bit float"),
    "duplicate-pair": (GOOD[:2] + [("q1", "d1", 3, 0.5)],
                       "line 3: document 'd1' is ranked twice for query 'q1' (first on line 1)",
                       "row 3: document 'd1' is ranked twice for query 'q1' (first on row 1)"),
    "control-character-id": (GOOD[:2] + [("q2", "d\x07", 1, 1.0)], "line 3: docid 'd\\x07' contains a control",
                             "row 3: docid 'd\\x07' contains a control character"),
}


@pytest.mark.parametrize("case", list(BAD_RUNS), ids=list(BAD_RUNS))
def test_bad_ranking_rows_are_refused_alike_in_trec_and_parquet(case, tmp_path):
    rows, trec_message, parquet_message = BAD_RUNS[case]
    trec = _trec(tmp_path / "run.trec", rows)
    with pytest.raises(DataError) as trec_error:
        load_ranking(trec)
    assert trec_error.value.line == 3 and trec_message in str(trec_error.value), str(trec_error.value)
    parquet = _parquet(tmp_path / "run.parquet", rows)
    with pytest.raises(DataError) as parquet_error:
        load_ranking(parquet)
    assert str(parquet_error.value).startswith(f"{parquet}: {parquet_message}"), str(parquet_error.value)


def test_nan_written_as_text_in_a_trec_ranking_is_refused(tmp_path):
    for text in ("NaN", "Infinity", "-inf"):
        path = tmp_path / f"{text}.trec"
        path.write_text(f"q1 Q0 d1 1 2.0 t\nq1 Q0 d2 2 {text} t\n")
        with pytest.raises(DataError, match=rf"line 2: score '{text}' is not a finite number"):
            load_ranking(path)


def test_parquet_ranking_checks_empty_files_and_missing_values(tmp_path):
    with pytest.raises(DataError, match=r"empty\.parquet: the ranking file holds no ranked documents"):
        load_ranking(_parquet(tmp_path / "empty.parquet", []))
    table = pa.table({"qid": ["q1", None], "docid": ["d1", "d2"], "rank": [1, 2], "score": [1.0, 0.5]})
    pq.write_table(table, tmp_path / "null_qid.parquet")
    with pytest.raises(DataError, match=r"null_qid\.parquet: row 2: qid is missing \(null\)"):
        load_ranking(tmp_path / "null_qid.parquet")
    table = pa.table({"qid": ["q1", "q1"], "docid": ["d1", "d2"], "rank": [1, 2], "score": [1.0, None]})
    pq.write_table(table, tmp_path / "null_score.parquet")
    with pytest.raises(DataError, match=r"null_score\.parquet: row 2: score is missing \(null\)"):
        load_ranking(tmp_path / "null_score.parquet")
    table = pa.table({"qid": ["q1", "q1"], "docid": ["d1", ""], "rank": [1, 2], "score": [1.0, 0.5]})
    pq.write_table(table, tmp_path / "empty_id.parquet")
    with pytest.raises(DataError, match=r"empty_id\.parquet: row 2: docid '' is empty"):
        load_ranking(tmp_path / "empty_id.parquet")


def test_the_first_repeat_in_file_order_is_reported(tmp_path):
    rows = [("q2", "d5", 1, 9.0), ("q1", "d1", 1, 3.0), ("q2", "d5", 2, 8.0), ("q1", "d1", 2, 2.0),
            ("q2", "d5", 3, 1.0)]
    with pytest.raises(DataError, match=r"row 3: document 'd5' is ranked twice for query 'q2' \(first on row 1\)"):
        load_ranking(_parquet(tmp_path / "run.parquet", rows))


def test_rank_beyond_int32_names_its_line(tmp_path):
    path = tmp_path / "run.trec"
    path.write_text("q1 Q0 d1 1 2.0 t\nq1 Q0 d2 4294967296 1.0 t\n")
    with pytest.raises(DataError, match=r"line 2: rank '4294967296' is beyond the range of a 32-bit integer"):
        load_ranking(path)


def test_good_rankings_load_the_same_from_both_forms(tmp_path):
    trec = load_ranking(_trec(tmp_path / "run.trec", GOOD))
    parquet = load_ranking(_parquet(tmp_path / "run.parquet", GOOD))
    assert trec.equals(parquet) and trec.num_rows == 3


def test_read_ranking_names_the_row_of_a_bad_score_in_the_whole_file_even_when_filtered(tmp_path):
    run = pa.table({"qid": ["q1", "q1", "q2", "q3"], "docid": ["d1", "d2", "d1", "d4"], "rank": [1, 2, 1, 1],
                    "score": np.array([2.0, 1.0, np.nan, 0.5], np.float32)}, schema=artifacts.RANKING.schema)
    artifacts.write_table(run, artifacts.RANKING, tmp_path / "run.parquet")
    assert read_ranking(tmp_path / "run.parquet", filters=[("qid", "in", ["q1", "q3"])]).num_rows == 3
    with pytest.raises(DataError, match=r"run\.parquet: row 3: score nan is not a finite number"):
        read_ranking(tmp_path / "run.parquet", filters=[("qid", "in", ["q2", "q3"])])
    with pytest.raises(DataError, match=r"run\.parquet: row 3: score nan is not a finite number"):
        read_ranking(tmp_path / "run.parquet")
