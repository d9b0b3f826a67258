"""JSON-lines files of texts and ids (BEIR corpus and queries, a TREC collection's corpus.jsonl): valid JSON that
no text file or Parquet column can hold (a lone surrogate, NaN, infinity) is an error naming the file and line."""

import pytest

from hardneg.datasets import beir, trec
from hardneg.errors import DataError
from hardneg.io.readers import iter_jsonl

CORPUS = ['{"_id": "d1", "title": "Cats", "text": "cats purr"}', '{"_id": "d2", "text": "dogs bark"}']

BAD_LINES = {
    "lone-high-surrogate": ('{"_id": "d3", "text": "caf\\ud800e"}', "field 'text' holds a lone surrogate"),
    "lone-low-surrogate-in-an-id": ('{"_id": "d\\udfff", "text": "x"}', "field '_id' holds a lone surrogate"),
    "surrogate-in-a-nested-field": ('{"_id": "d3", "text": "x", "meta": {"tags": ["a", "\\ud83d"]}}',
                                    "field 'meta.tags.1' holds a lone surrogate"),
    "nan-literal": ('{"_id": NaN, "text": "x"}', "NaN is not a JSON number: numbers must be finite"),
    "infinity-literal": ('{"_id": "d3", "text": "x", "score": -Infinity}', "-Infinity is not a JSON number"),
    "number-beyond-float": ('{"_id": 1e999, "text": "x"}', "number 1e999 is beyond the range of a 64-bit float"),
}


@pytest.mark.parametrize("case", list(BAD_LINES), ids=list(BAD_LINES))
def test_bad_json_line_is_named_by_file_and_line(case, tmp_path):
    line, message = BAD_LINES[case]
    path = tmp_path / "corpus.jsonl"
    path.write_text("\n".join(CORPUS + [line]) + "\n", encoding="utf-8")
    with pytest.raises(DataError) as error:
        list(iter_jsonl(path))
    assert str(error.value).startswith(f"{path}, line 3: {message}"), str(error.value)


def test_a_surrogate_pair_is_one_character_and_is_kept(tmp_path):
    path = tmp_path / "corpus.jsonl"
    path.write_text('{"_id": "d1", "text": "smile \\ud83d\\ude00"}\n', encoding="utf-8")
    assert list(iter_jsonl(path)) == [(1, {"_id": "d1", "text": "smile \U0001F600"})]


def test_beir_corpus_and_queries_and_trec_corpus_refuse_a_lone_surrogate(beir_folder, tmp_path):
    folder = beir_folder(corpus=CORPUS + ['{"_id": "d3", "text": "\\ud800"}'])
    with pytest.raises(DataError, match=r"corpus\.jsonl, line 3: field 'text' holds a lone surrogate"):
        beir.load(folder, ["test"])
    folder = beir_folder(queries=['{"_id": "q1", "text": "ok"}', '{"_id": "q2", "text": "\\udc00 x"}'])
    with pytest.raises(DataError, match=r"queries\.jsonl, line 2: field 'text' holds a lone surrogate"):
        beir.load(folder, ["test"])
    corpus = tmp_path / "collection.jsonl"
    corpus.write_text('{"id": "d1", "contents": "fine"}\n{"id": "d2", "contents": "\\ud800"}\n')
    with pytest.raises(DataError, match=r"collection\.jsonl, line 2: field 'contents' holds a lone surrogate"):
        trec.read_corpus(str(corpus))
