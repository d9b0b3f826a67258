"""A pretrained cross-encoder with its own head: a sentence-transformers ``CrossEncoder`` folder and a one-label
sequence-classification folder, both built here (a tiny BERT over a tiny WordPiece vocabulary), score pairs as
``CrossEncoder.predict`` does; its folder is checked; it re-ranks, scores a pairs file, trains and is saved as a
``CrossEncoder`` folder."""

import json

import numpy as np
import pyarrow as pa
import pytest
import torch
from transformers import BertConfig, BertForSequenceClassification, BertTokenizerFast

from hardneg import methods
from hardneg.dense.backbone import ModelSpec
from hardneg.dense.data import RandomNegatives, TrainQueries
from hardneg.dense.raw_texts import TokenizedWithRaw
from hardneg.dense.tokenized import TokenizedTexts, build_cache
from hardneg.errors import ConfigError, DataError
from hardneg.io import artifacts
from hardneg.methods.crossencoder import new_model
from hardneg.methods.crossencoder.pretrained import PretrainedCrossEncoder, cache_pairs_match, load_model
from hardneg.methods.crossencoder.scoring import rerank, score_pairs, score_pairs_stage
from hardneg.methods.crossencoder.step import CrossEncoderStep
from hardneg.pipeline.config import validate_config, validate_params
from tests.support.crossencoders import tiny_cross_encoder
from tests.support.training import fit_batch

WORDS = ("the a of cat cats dog house tree red blue green river stone light dark water fire ##s ##ing what is "
         "where do").split()
PAIR_LENGTH = 24  # the folders' max_length: long documents are cut
DOCS = [("d0", "cats", "the cat is on the red house"), ("d1", "", "a dog in the river"),
        ("d2", "Trees", "green trees and blue water " * 6), ("d3", "fire", ""),
        ("d4", "stone light", "dark stone of the house where the dog is"), ("d5", None, "zebra quokka unknown")]
QUERIES = [("q0", "where is the cat"), ("q1", "what do dogs do in the river"), ("q2", "stone")]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    root = tmp_path_factory.mktemp("pretrained_ce")
    folders = tiny_cross_encoder(root, WORDS, max_length=PAIR_LENGTH)
    data = root / "data"
    (data / "queries").mkdir(parents=True)
    artifacts.write_table(pa.table({"docid": [d[0] for d in DOCS], "title": [d[1] for d in DOCS],
                                    "text": [d[2] for d in DOCS]}), artifacts.CORPUS, data / "corpus.parquet")
    artifacts.write_table(pa.table({"qid": [q[0] for q in QUERIES], "text": [q[1] for q in QUERIES]}),
                          artifacts.QUERIES, data / "queries" / "test.parquet")
    build_cache(folders["hf"], data / "corpus.parquet", {"test": data / "queries" / "test.parquet"}, root / "cache",
                doc_max_length=16, query_max_length=8)
    queries = TokenizedWithRaw(root / "cache", "queries_test", data / "queries" / "test.parquet", artifacts.QUERIES)
    corpus = TokenizedWithRaw(root / "cache", "corpus", data / "corpus.parquet", artifacts.CORPUS)
    return {**folders, "data": data, "cache": root / "cache", "queries": queries, "corpus": corpus}


def all_pairs() -> pa.Table:
    return pa.table({"qid": [q[0] for q in QUERIES for _ in DOCS], "docid": [d[0] for _ in QUERIES for d in DOCS]})


def predicted(folder, pairs: pa.Table, **options) -> np.ndarray:
    """sentence-transformers' scores of the pairs, each document the string hardneg forms (title [SEP] text)."""
    from sentence_transformers import CrossEncoder  # 3 s to import: only where it is the reference

    query = dict(QUERIES)
    joined = {d: f"{t} [SEP] {x}" if t else x for d, t, x in DOCS}
    return CrossEncoder(str(folder)).predict([(query[q], joined[d]) for q, d in
                                              zip(pairs["qid"].to_pylist(), pairs["docid"].to_pylist())], **options)


# ------------------------------------------------------------------------------------------------ scoring
@pytest.mark.parametrize("kind", ["st", "hf"])
def test_pair_scores_equal_sentence_transformers_predict(tiny, kind):
    pairs = all_pairs()
    scores = score_pairs(tiny[kind], tiny["queries"], tiny["corpus"], pairs, batch_size=4)
    expected = predicted(tiny[kind], pairs)
    assert scores.dtype == np.float32 and scores.shape == (len(QUERIES) * len(DOCS),)
    assert np.abs(scores - expected).max() < 1e-5
    assert np.ptp(scores) > 0.05  # scores that tell pairs apart, not all one value
    declared = methods.get("crossencoder").score_pairs  # what a pool's scorer calls
    assert np.abs(declared(tiny[kind], tiny["queries"], tiny["corpus"], pairs, batch_size=64, device="cpu")
                  - expected).max() < 1e-5


def test_the_folder_says_its_length_activation_and_prompt(tiny, tmp_path):
    from sentence_transformers import CrossEncoder  # 3 s to import: only where it is the reference

    model = PretrainedCrossEncoder.load(tiny["st"])
    assert model.max_length == PAIR_LENGTH and model.activation.endswith("Sigmoid") and model.prompt == ""
    long_pair = model.encode_pairs(["what is the cat " * 10], ["the red house " * 20])
    assert long_pair["input_ids"].shape == (1, PAIR_LENGTH)  # cut longest-first to the folder's length
    assert model.document_texts(["cats", "", " "], ["on it", "alone", "blank title"]) == [
        "cats [SEP] on it", "alone", "blank title"]
    # the identity activation (ms-marco's cross-encoders'): the probability is the sigmoid of predict's score
    folder = tmp_path / "identity"
    CrossEncoder(str(tiny["hf"]), activation_fn=torch.nn.Identity()).save(str(folder))
    pairs = all_pairs()
    scores = score_pairs(folder, tiny["queries"], tiny["corpus"], pairs)
    logits = predicted(folder, pairs)
    assert logits.min() < 0 or logits.max() > 1  # logits, not probabilities
    assert np.abs(scores - torch.sigmoid(torch.from_numpy(logits)).numpy()).max() < 1e-5
    # a default prompt goes before the query, as predict puts it
    prompted = tmp_path / "prompted"
    CrossEncoder(str(tiny["hf"]), prompts={"query": "what is "}, default_prompt_name="query").save(str(prompted))
    assert PretrainedCrossEncoder.load(prompted).prompt == "what is "
    assert np.abs(score_pairs(prompted, tiny["queries"], tiny["corpus"], pairs) - predicted(prompted, pairs)).max() \
        < 1e-5


def test_raw_texts_are_needed_and_must_name_known_ids(tiny):
    plain = TokenizedTexts(tiny["cache"], "queries_test")
    with pytest.raises(ValueError, match="raw texts"):
        score_pairs(tiny["st"], plain, tiny["corpus"], all_pairs().slice(0, 2))
    with pytest.raises(DataError, match="'q9'"):
        tiny["queries"].raw.lookup(["q0", "q9"])
    assert tiny["corpus"].raw.lookup(["d5", "d3"]) == {"d5": ("", "zebra quokka unknown"), "d3": ("fire", "")}


def test_rerank_orders_by_the_heads_logit(tiny):
    ranking = pa.table({"qid": ["q1"] * 6 + ["q0"] * 6, "docid": [d[0] for d in DOCS] * 2,
                        "rank": pa.array(list(range(1, 7)) * 2, pa.int32()),
                        "score": pa.array(np.linspace(1, 0, 12), pa.float32())})
    out = rerank(load_model(tiny["st"]), tiny["queries"], tiny["corpus"], ranking, depth=4, batch_size=3)
    assert out["qid"].to_pylist() == ["q1"] * 4 + ["q0"] * 4
    top = ranking.filter(pa.compute.less_equal(ranking["rank"], 4))
    logits = np.log(predicted(tiny["st"], top)) - np.log1p(-predicted(tiny["st"], top))  # predict's, as logits
    expected = {(q, d): v for q, d, v in zip(top["qid"].to_pylist(), top["docid"].to_pylist(), logits)}
    scores = out["score"].to_numpy()
    assert all(abs(expected[q, d] - s) < 1e-3 for q, d, s in zip(out["qid"].to_pylist(), out["docid"].to_pylist(),
                                                                  scores))
    assert np.all(np.diff(scores[:4]) <= 0) and np.all(np.diff(scores[4:]) <= 0)


def test_the_stage_scores_a_pairs_file_from_raw_texts(tiny, tmp_path):
    pairs = all_pairs()
    ranked = pairs.append_column("rank", pa.array(np.arange(1, 19) % 6 + 1, pa.int32())).append_column(
        "score", pa.array(np.zeros(18), pa.float32()))
    artifacts.write_table(ranked, artifacts.RANKING, tmp_path / "pairs.parquet")
    out = score_pairs_stage(tiny["hf"], tiny["data"] / "queries" / "test.parquet", tiny["data"] / "corpus.parquet",
                            tmp_path / "pairs.parquet", tmp_path / "scored.parquet", batch_size=5)
    expected = dict(zip(zip(pairs["qid"].to_pylist(), pairs["docid"].to_pylist()), predicted(tiny["hf"], pairs)))
    assert all(abs(expected[q, d] - s) < 1e-5 for q, d, s in zip(out["qid"].to_pylist(), out["docid"].to_pylist(),
                                                                  out["score"].to_pylist()))


# ------------------------------------------------------------------------------------------- the run's model
def _resolved(folder, epochs: int, **crossencoder) -> tuple[ModelSpec, dict]:
    params = validate_params({"model": {"name": str(folder), "doc_max_length": 16, "query_max_length": 8},
                              "train": {"epochs": epochs}, "crossencoder": crossencoder}, method="crossencoder")
    return ModelSpec.from_params(params["model"]), {"name": "ce", "seed": 1, "params": params}


def test_a_run_keeps_the_head_and_saves_a_cross_encoder_folder(tiny, tmp_path):
    spec, resolved = _resolved(tiny["st"], 0)
    model = new_model(spec, None, resolved, None)
    source = BertForSequenceClassification.from_pretrained(tiny["st"])
    assert isinstance(model, PretrainedCrossEncoder)
    assert torch.equal(model.model.classifier.weight, source.classifier.weight)  # the folder's head, not a new one
    model.save(tmp_path / "model")
    assert json.loads((tmp_path / "model" / "crossencoder.json").read_text())["head"] == "pretrained"
    pairs = all_pairs()
    assert np.abs(predicted(tmp_path / "model", pairs) - predicted(tiny["st"], pairs)).max() < 1e-6
    continued = new_model(spec, None, resolved, str(tmp_path / "model"))  # a run continuing it
    assert isinstance(continued, PretrainedCrossEncoder) and continued.max_length == PAIR_LENGTH
    with pytest.raises(ConfigError) as error:
        new_model(spec, None, _resolved(tiny["st"], 0, exact_match=True)[1], None)
    assert error.value.key == "runs.ce.params.crossencoder.exact_match"


def test_training_joins_the_caches_rows_as_the_tokenizers_pairs(tiny):
    model = PretrainedCrossEncoder.load(tiny["hf"], query_max_length=8, doc_max_length=16)
    assert cache_pairs_match(model.tokenizer)
    from tokenizers.processors import TemplateProcessing

    roberta_like = BertTokenizerFast.from_pretrained(tiny["hf"])
    roberta_like.backend_tokenizer.post_processor = TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", roberta_like.cls_token_id), ("[SEP]", roberta_like.sep_token_id)])
    assert not cache_pairs_match(roberta_like)
    # a training step over the cache's pairs moves the loss
    queries, corpus = TokenizedTexts(tiny["cache"], "queries_test"), TokenizedTexts(tiny["cache"], "corpus")
    qrels = pa.table({"qid": ["q0", "q1", "q2"], "docid": ["d0", "d1", "d4"],
                      "relevance": pa.array([1, 1, 1], pa.int32())})
    train = TrainQueries(qrels, queries.row_ids, corpus.row_ids)
    step = CrossEncoderStep(train, queries, corpus, negatives=RandomNegatives(train), per_query=2)
    batch = step.make_batch(np.arange(3), np.random.default_rng(0))
    model.eval()  # no dropout: a steady descent
    losses = [loss for loss, _ in fit_batch(step, model, batch, 4)]
    assert losses[-1] < losses[0]


# --------------------------------------------------------------------------------------------- the config
def _config(tmp_path, model: dict, **params) -> dict:
    run = {"method": "crossencoder", "inputs": {"candidates": "bm25"}, "params": {"model": model, **params}}
    return {"dataset": "tiny", "datasets": {"tiny": {"adapter": "synthetic", "num_docs": 100,
                                                     "num_queries": {"train": 10, "test": 5}}},
            "runs": {"bm25": {"method": "bm25"}, "ce": run}}


def test_the_config_refuses_what_a_pretrained_head_cannot_take(tiny, tmp_path):
    from sentence_transformers import CrossEncoder  # 3 s to import: only where it is the reference

    st = str(tiny["st"])
    validate_config(_config(tmp_path, {"name": st}, train={"epochs": 0}))  # scores as it is
    torch.manual_seed(0)
    two = BertForSequenceClassification(BertConfig(vocab_size=30, hidden_size=8, num_hidden_layers=1,
                                                   num_attention_heads=2, intermediate_size=8, num_labels=2))
    two.save_pretrained(tmp_path / "two")
    tanh = tmp_path / "tanh"
    CrossEncoder(str(tiny["hf"]), activation_fn=torch.nn.Tanh()).save(str(tanh))
    cases = [({"name": str(tmp_path / "two")}, {}, "runs.ce.params.model.name", "2 labels"),
             ({"name": str(tanh)}, {}, "runs.ce.params.model.name", "Tanh"),
             ({"name": st}, {"crossencoder": {"soft_match": 2}}, "runs.ce.params.crossencoder.soft_match", "marks"),
             ({"name": "builtin"}, {"train": {"epochs": 0}}, "runs.ce.params.train.epochs", "random")]
    for model, params, key, words in cases:
        with pytest.raises(ConfigError, match=words) as error:
            validate_config(_config(tmp_path, model, **params))
        assert error.value.key == key
