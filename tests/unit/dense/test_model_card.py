"""The model card of a saved model folder (:mod:`hardneg.dense.model_card`): it names the base model, the method,
the training data, the training hash and the metrics (or their file), and its two loading recipes (sentence-transformers
and transformers) run as written and give hardneg's own vectors; it holds no absolute path, is the same for the same
facts, and is written again with metrics from the facts it keeps."""

import re

import numpy as np
import pyarrow as pa
import pytest
import torch

from hardneg.dense.backbone import ModelSpec
from hardneg.dense.model import BiEncoder
from hardneg.dense.model_card import CardFacts, card_facts, refresh_model_card, render_model_card, write_model_card
from hardneg.dense.tokenized import encode_chunk
from hardneg.dense.tokenizer import load_tokenizer, train_wordpiece
from hardneg.io import artifacts
from tests.support.dense import TINY_MODEL

QUERY_MAX_LENGTH, DOC_MAX_LENGTH = 8, 24
FACTS = CardFacts(run="adore_x", method="adore", summary="query encoder trained on dynamic hard negatives",
                  base_model="builtin", seed=7, dataset="toy", split="train", training_hash="ab" * 32,
                  builtin={**TINY_MODEL, "vocab_size": 300}, training_queries=42, training_rows=45,
                  training={"epochs": 2, "batch_size": 16, "learning_rate": 0.001}, starts_from="star_x",
                  documents_of="star_x", inputs={"docs": "star_x"})
METRICS = {"run": "adore_x", "dataset": "toy", "split": "test", "num_queries": 30,
           "measures": {"RR@10": 0.25, "nDCG@10": 0.3125}}


@pytest.fixture(scope="module")
def tokenizer_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("card")
    texts = ["Hard negatives are documents ranked high that are not relevant to the query.",
             "A document without a title is its text.", "what is a hard negative", "Cats purr when content."]
    artifacts.write_table(pa.table({"docid": [f"d{i}" for i in range(len(texts))], "title": ["Hard negatives"] * 4,
                                    "text": texts}), artifacts.CORPUS, root / "corpus.parquet")
    train_wordpiece(root / "corpus.parquet", root / "tokenizer", vocab_size=300)
    return root / "tokenizer"


def saved_model(tokenizer_dir, folder, **overrides):
    tokenizer = load_tokenizer(tokenizer_dir)
    spec = ModelSpec(**{"name": "builtin", "pooling": "mean", "projection_dim": None, "shared": True,
                        "normalize": True, "markers": False, "query_augmentation": False, "vocab_size": 300,
                        "builtin": TINY_MODEL, "query_max_length": QUERY_MAX_LENGTH,
                        "doc_max_length": DOC_MAX_LENGTH, "query_prompt": "", "doc_prompt": "", **overrides})
    model = BiEncoder.create(spec, vocab_size=len(tokenizer), pad_token_id=tokenizer.pad_token_id,
                             max_length=DOC_MAX_LENGTH, seed=3, tokenizer=tokenizer)
    model.save(folder, tokenizer)
    return folder


def hardneg_vectors(folder, first, second, max_length, side):
    """Vectors as hardneg's jobs encode texts: the folder's tokenizer as the tokenized cache uses it, then
    ``BiEncoder.load``."""
    tokenizer, model = load_tokenizer(folder), BiEncoder.load(folder).eval()
    ids, lengths, _ = encode_chunk(tokenizer, first, second, max_length)
    mask = torch.arange(ids.shape[1])[None, :] < torch.from_numpy(lengths.astype(np.int64))[:, None]
    with torch.no_grad():
        return model.encode(torch.from_numpy(ids.astype(np.int64)), mask.long(), side).numpy()


def python_blocks(card: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", card, flags=re.S)


def run_block(code: str) -> dict:
    namespace: dict = {}
    exec(compile(code, "<model card>", "exec"), namespace)
    return namespace


CASES = {"mean-normalize": {}, "separate-cls": {"shared": False, "pooling": "cls", "normalize": False}}


@pytest.mark.parametrize("overrides", CASES.values(), ids=CASES.keys())
def test_the_cards_recipes_run_and_give_hardnegs_vectors(tokenizer_dir, tmp_path, overrides):
    folder = saved_model(tokenizer_dir, tmp_path / "model", **overrides)
    write_model_card(folder, FACTS, path=str(folder))
    card = (folder / "README.md").read_text(encoding="utf-8")
    st_code, transformers_code = python_blocks(card)
    st, hf = run_block(st_code), run_block(transformers_code)
    queries = hardneg_vectors(folder, ["what is a hard negative"], None, QUERY_MAX_LENGTH, "query")
    documents = hardneg_vectors(folder, ["Hard negatives", ""], ["documents ranked high that are not relevant",
                                                                  "a document without a title is its text"],
                                DOC_MAX_LENGTH, "doc")
    np.testing.assert_allclose(np.asarray(st["queries"]), queries, atol=1e-5)
    np.testing.assert_allclose(np.asarray(st["documents"]), documents, atol=1e-5)
    np.testing.assert_allclose(hf["queries"].numpy(), queries, atol=1e-5)
    np.testing.assert_allclose(hf["documents"].numpy(), documents[:1], atol=1e-5)
    if not overrides.get("shared", True):
        assert f'AutoModel.from_pretrained("{folder}/doc_encoder")' in transformers_code


def test_the_card_names_what_the_model_is_and_where_it_comes_from(tokenizer_dir, tmp_path):
    folder = saved_model(tokenizer_dir, tmp_path / "model")
    card = render_model_card(folder, FACTS)
    for expected in ("# adore_x: a dense retriever (bi-encoder) trained by hardneg",
                     "| method | `adore`: query encoder trained on dynamic hard negatives |",
                     "| base model | hardneg's built-in BERT (1 layer, hidden size 32, 2 attention heads)",
                     "| starts from | the model of run `star_x` |",
                     "| training data | dataset `toy`, split `train`: 42 queries with a relevant document (45 training "
                     "rows per epoch) |",
                     f"| training hash | `{'ab' * 32}` (SHA-256 of the configuration training read",
                     "the document encoder is run `star_x`'s",
                     "Not known when this model was saved: the run's evaluation writes them to "
                     "`results/adore_x/metrics.json`.",
                     "give `encode_document` `(title, text)` tuples, or the one string \"title [SEP] text\"",
                     'model = SentenceTransformer("results/adore_x/model")',
                     "library_name: sentence-transformers"):
        assert expected in card, expected
    assert str(tmp_path) not in card and render_model_card(folder, FACTS) == card  # no absolute path; the same text
    assert "base_model:" not in card.split("hardneg:", 1)[0]  # the built-in model has no hub id

    minilm = render_model_card(folder, CardFacts(**{**FACTS.__dict__, "base_model": "minilm", "builtin": None}))
    assert "base_model: sentence-transformers/all-MiniLM-L6-v2\n" in minilm
    local = render_model_card(folder, CardFacts(**{**FACTS.__dict__, "base_model": str(tmp_path / "a" / "mini")}))
    assert "| base model | the local folder `…/a/mini` |" in local and str(tmp_path) not in local


def test_the_card_is_written_again_with_the_metrics(tokenizer_dir, tmp_path):
    folder = saved_model(tokenizer_dir, tmp_path / "model")
    write_model_card(folder, FACTS)
    assert card_facts(folder) == FACTS
    assert refresh_model_card(folder, path="exports/x/encoder", metrics=METRICS)
    card = (folder / "README.md").read_text(encoding="utf-8")
    assert "On split `test` of dataset `toy` (30 judged queries), from `results/adore_x/metrics.json`:" in card
    assert "| RR@10 | 0.2500 |\n| nDCG@10 | 0.3125 |" in card
    assert 'SentenceTransformer("exports/x/encoder")' in card and card_facts(folder) == FACTS
    assert not refresh_model_card(tmp_path)  # no card: nothing written
    assert not (tmp_path / "README.md").exists()


def test_a_head_or_markers_send_transformers_users_to_a_loader_that_reads_them(tokenizer_dir, tmp_path):
    folder = saved_model(tokenizer_dir, tmp_path / "model", projection_dim=8)
    card = render_model_card(folder, FACTS)
    assert len(python_blocks(card)) == 1  # sentence-transformers only
    assert "the projection head (`head.safetensors`) are not read by it" in card
    assert "projected to 8 dimensions (linear, then LayerNorm)" in card


def test_a_folder_that_is_not_a_bi_encoder_gets_a_card_that_says_so(tmp_path):
    (tmp_path / "colbert.json").write_text('{"model": "colbert"}')
    card = render_model_card(tmp_path, CardFacts(**{**FACTS.__dict__, "method": "colbert", "documents_of": None}))
    assert "library_name: transformers" in card and "This folder is not a bi-encoder" in card
    assert not python_blocks(card)
