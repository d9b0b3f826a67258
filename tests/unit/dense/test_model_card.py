"""The model card of a saved model folder (:mod:`hardneg.dense.model_card`): it names the base model, the method,
the training data, the training hash and the metrics (or their file); it holds no absolute path, is the same for the
same facts, and is written again with metrics from the facts it keeps. Its loading recipes are tested in
test_card_usage.py."""

import pytest

from hardneg.dense.model_card import CardFacts, card_facts, refresh_model_card, render_model_card, write_model_card
from tests.support.model_cards import FACTS, card_tokenizer, saved_model

METRICS = {"run": "adore_x", "dataset": "toy", "split": "test", "num_queries": 30,
           "measures": {"RR@10": 0.25, "nDCG@10": 0.3125}}


@pytest.fixture(scope="module")
def tokenizer_dir(tmp_path_factory):
    return card_tokenizer(tmp_path_factory.mktemp("card"))


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
