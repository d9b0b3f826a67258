"""Teacher scores in the exports (``hardneg export hardnegs --scores``): the miner's or the cross-encoder's score of
every positive and negative, found through the run's mining card, written as sentence-transformers'
``mine_hard_negatives(..., output_scores=True)`` writes them (which the first test compares with, on MiniLM) and as a
``score`` of every Tevatron passage; files that changed since the card are refused."""

import json

import numpy as np
import pytest

from hardneg.errors import DataError, HardnegError
from hardneg.export.hardnegs import export_hardnegs
from hardneg.io import artifacts
from hardneg.mining.card import build_card
from tests.support.exports import (EXPECTED, MINED_QRELS, NUM_NEGATIVES, card_of, scored_results, table,
                                   write_results)

datasets = pytest.importorskip("datasets")


@pytest.mark.parametrize("st_format", ["triplet", "n-tuple", "labeled-pair", "labeled-list"])
def test_miner_scores_are_written_as_mine_hard_negatives_output_scores(mined, minilm, tmp_path, st_format):
    from sentence_transformers.util import mine_hard_negatives

    root, pairs, corpus = mined
    expected = mine_hard_negatives(pairs, minilm, corpus=corpus, num_negatives=NUM_NEGATIVES, output_format=st_format,
                                   output_scores=True, verbose=False)
    # the miner's scores of the positives, as rule positive_scores writes them
    toy = root / "datasets" / "toy"
    queries = dict(zip(*(artifacts.read_table(artifacts.QUERIES, toy / "queries" / "train.parquet")[c].to_pylist()
                         for c in ("qid", "text"))))
    docs = artifacts.read_table(artifacts.CORPUS, toy / "corpus.parquet")
    text = dict(zip(docs["docid"].to_pylist(), corpus))
    rows = [(q, d, r) for q, d, r in zip(*(MINED_QRELS[c].to_pylist() for c in ("qid", "docid", "relevance")))]
    similarity = minilm.similarity_pairwise(minilm.encode_query([queries[q] for q, _, _ in rows]),
                                            minilm.encode_document([text[d] for _, d, _ in rows]))
    positives = root / "warmup" / "pools" / "positives_train.parquet"
    artifacts.write_table(table(artifacts.POSITIVE_SCORES, [(q, d, r, float(s)) for (q, d, r), s in
                                                            zip(rows, similarity)]), artifacts.POSITIVE_SCORES,
                          positives)
    card_of(root, {"positives": positives})
    out = tmp_path / "st"
    written = export_hardnegs("star", "sentence-transformers", out, results=root, st_format=st_format, scores="miner")
    exported = datasets.load_from_disk(str(out))
    assert written["scores"] == "miner" and exported.column_names == expected.column_names
    assert exported.features == expected.features
    score_columns = {"scores", "score"} & set(expected.column_names)
    assert len(score_columns) == 1
    for got, want in zip(exported.to_list(), expected.to_list()):
        for name in expected.column_names:
            if name in score_columns:
                assert np.allclose(got[name], want[name], atol=1e-5), (name, got[name], want[name])
            else:
                assert got[name] == want[name], name


@pytest.fixture
def scored(tmp_path):
    """The hand-made run of test_export.py with a pool a cross-encoder scored (tests/support/exports.py)."""
    return scored_results(tmp_path)


def test_tevatron_passages_carry_the_cross_encoders_scores(scored, tmp_path):
    root, positive, negative = scored
    out = tmp_path / "train.jsonl"
    export_hardnegs("star", "tevatron", out, results=root, scores="cross-encoder")
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert [line["query_id"] for line in lines] == list(EXPECTED)
    for line in lines:
        q = line["query_id"]
        assert [(p["docid"], p["score"]) for p in line["positive_passages"]] == \
            [(d, positive[(q, d)]) for d in EXPECTED[q][0]]
        assert [(p["docid"], p["score"]) for p in line["negative_passages"]] == \
            [(d, negative[(q, d)]) for d in EXPECTED[q][1]]  # the shortest decimal of each float32
    card = json.loads((tmp_path / "train.jsonl.hardneg_card.json").read_text())
    assert card["export"]["scores"] == "cross-encoder"


def test_scores_need_their_files_as_the_card_records_them(scored, tmp_path):
    root, _, _ = scored
    with pytest.raises(HardnegError, match="applies to --format sentence-transformers and tevatron"):
        export_hardnegs("star", "jsonl", tmp_path / "a.jsonl", results=root, scores="miner")
    with pytest.raises(HardnegError, match="records no 'positives' input"):
        export_hardnegs("star", "tevatron", tmp_path / "b.jsonl", results=root, scores="miner")
    positives = root / "warmup" / "pools" / "train_top200_ce-ce.ce_positives.parquet"
    rows = artifacts.read_table(artifacts.POSITIVE_SCORES, positives).slice(1)  # q1's d2 loses its score
    artifacts.write_table(rows, artifacts.POSITIVE_SCORES, positives)
    with pytest.raises(HardnegError, match=r"ce_positives\) is not the file the run's mining card records"):
        export_hardnegs("star", "tevatron", tmp_path / "c.jsonl", results=root, scores="cross-encoder")
    card = json.loads((root / "star" / "hardnegs_card.json").read_text())
    card["inputs"]["ce_positives"] = build_card(
        run="star", miner="warmup", dataset="toy", split="train", inputs={"ce_positives": positives},
        hardnegs=root / "star" / "hardnegs.parquet", search={}, pool={}, policy={}, policy_name=None, seed=0,
        results=str(root), threads={}, versions={})["inputs"]["ce_positives"]
    (root / "star" / "hardnegs_card.json").write_text(json.dumps(card))  # a card agreeing with the changed file
    with pytest.raises(DataError, match=r"1 positives have no score here, e.g. query 'q1', document 'd2'"):
        export_hardnegs("star", "tevatron", tmp_path / "d.jsonl", results=root, scores="cross-encoder")
    assert not list(tmp_path.glob("*.jsonl"))  # nothing written


def test_a_pool_no_cross_encoder_scored_has_no_cross_encoder_scores(tmp_path):
    root = write_results(tmp_path / "results")
    card_of(root, {})
    with pytest.raises(HardnegError, match="no cross-encoder scored its pool"):
        export_hardnegs("star", "tevatron", tmp_path / "t.jsonl", results=root, scores="cross-encoder")
