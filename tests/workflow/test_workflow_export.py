"""hardneg export after `make run`: Pyserini's FaissSearcher over the exported index of adore_star (star's documents,
adore_star's query encoder) ranks the test queries as the run did; the hard-negative exports hold the run's list, with
documents joined as the run's tokenized cache encodes them."""

import json

import numpy as np
import pyarrow.parquet as pq
import pytest

from hardneg.cli import main

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def results(main_run):
    """The results folder after `make run` (tests/support/builds.py): adore_star's ranking of the test split over star's
    Flat index, and star's hard negatives, resolved config and audit (the runs behind adore_star)."""
    return main_run / "results"


def test_pyserini_searches_the_exported_index_as_the_run_did(results, tmp_path, capsys):
    out = tmp_path / "pyserini"
    assert main(["export", "index", "adore_star", "--output", str(out), "--results", str(results)]) == 0
    assert capsys.readouterr().out.startswith(f"wrote {out}: index Flat of run adore_star (5000 documents, dim 256)")
    info = json.loads((out / "hardneg_export.json").read_text())
    assert info["index"] == "Flat" and info["query_max_length"] == 32 and info["documents"] == 5000
    assert (out / "docid").read_text().splitlines() == \
        pq.read_table(results / "star" / "embeddings" / "corpus.ids.parquet")["id"].to_pylist()
    assert json.loads((out / "encoder" / "hardneg_query.json").read_text()) == {"max_length": 32}

    from hardneg.bm25.java import start_jvm

    start_jvm()  # the project's Java 21, before Pyserini's modules reach for a JVM (not the system's)
    from pyserini.search.faiss import FaissSearcher

    from hardneg.export.pyserini import HardnegQueryEncoder

    searcher = FaissSearcher(str(out), HardnegQueryEncoder(out / "encoder"))
    queries = pq.read_table(results / "datasets" / "synthetic" / "queries" / "test.parquet").to_pandas()
    run = pq.read_table(results / "adore_star" / "rankings" / "test.parquet").to_pandas()
    hits = searcher.batch_search(queries["text"].tolist(), queries["qid"].tolist(), k=10)
    assert len(hits) == len(queries) == 200
    for qid, text in zip(queries["qid"], queries["text"]):
        expected = run[run.qid == qid].sort_values("rank").head(10)
        assert [hit.docid for hit in hits[qid]] == expected["docid"].tolist(), qid
        np.testing.assert_allclose([hit.score for hit in hits[qid]], expected["score"], rtol=1e-4, atol=1e-4)
    one = searcher.search(queries["text"][0], k=10)  # one query at a time: the same
    assert [hit.docid for hit in one] == [hit.docid for hit in hits[queries["qid"][0]]]
    from hardneg.export.pyserini import faiss_searcher

    assert [hit.docid for hit in faiss_searcher(out).search(queries["text"][0], k=10)] == [hit.docid for hit in one]

    auto = info["pyserini_auto_query_encoder"]  # the plain model: Pyserini's own encoder matches it
    assert auto is not None
    from pyserini.encode import AutoQueryEncoder

    builtin = AutoQueryEncoder(str(out / "encoder"), pooling=auto["pooling"], l2_norm=auto["l2_norm"])
    ours = HardnegQueryEncoder(out / "encoder")
    for text in queries["text"][:5]:
        np.testing.assert_allclose(builtin.encode(text), ours.encode(text), rtol=1e-4, atol=1e-5)


def test_index_export_errors(results, tmp_path, capsys):
    assert main(["export", "index", "star", "--output", str(tmp_path / "x"), "--index", "IVF4_Flat",
                 "--results", str(results)]) == 2
    assert "run star has no index 'IVF4_Flat': " in capsys.readouterr().err
    partial = tmp_path / "partial"  # a run folder whose resolved config is missing
    (partial / "bm25" / "runs").mkdir(parents=True)
    assert main(["export", "index", "bm25", "--output", str(tmp_path / "x"), "--results", str(partial)]) == 2
    assert f"run bm25: {partial}/bm25/config.yaml is missing, so its dataset and parameters are unknown; build it " \
           f"with snakemake {partial}/bm25/config.yaml" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()


def test_hard_negative_exports_of_the_run(results, tmp_path):
    import datasets

    from hardneg.dense.tokenized import TokenizedTexts, encode_chunk
    from hardneg.dense.tokenizer import load_tokenizer

    hardnegs = pq.read_table(results / "star" / "hardnegs.parquet").to_pandas()
    assert main(["export", "hardnegs", "star", "--format", "jsonl", "--output", str(tmp_path / "h.jsonl"),
                 "--results", str(results)]) == 0
    rows = [json.loads(line) for line in (tmp_path / "h.jsonl").read_text().splitlines()]
    assert sum(len(row["negatives"]) for row in rows) == len(hardnegs)  # every query of the list has a positive
    for row in rows:
        mine = hardnegs[hardnegs.qid == row["qid"]].sort_values("rank")
        assert [n["docid"] for n in row["negatives"]] == mine["docid"].tolist()
        assert [n["rank"] for n in row["negatives"]] == mine["rank"].tolist()

    out = tmp_path / "st"
    assert main(["export", "hardnegs", "star", "--format", "sentence-transformers", "--output", str(out),
                 "--results", str(results), "--negatives", "3"]) == 0
    triplets = datasets.load_from_disk(str(out))
    assert len(triplets) == sum(len(row["positives"]) * min(3, len(row["negatives"])) for row in rows)
    assert triplets[0]["negative"] == " [SEP] ".join(
        [rows[0]["negatives"][0]["title"], rows[0]["negatives"][0]["text"]])  # synthetic documents have titles

    # a joined document tokenizes to the very tokens the run's cache holds for it
    cache = next((results / "datasets" / "synthetic" / "tokenized").iterdir())
    corpus = TokenizedTexts(cache, "corpus")
    tokenizer = load_tokenizer(results / "datasets" / "synthetic" / "tokenizers" / "wordpiece-32000")
    docid = rows[0]["negatives"][0]["docid"]
    row = corpus.row_ids.index(docid)
    ids, lengths, _ = encode_chunk(tokenizer, [triplets[0]["negative"]], None, 128)
    assert lengths[0] == corpus.lengths[row] and (ids[0] == corpus.ids[row]).all()
