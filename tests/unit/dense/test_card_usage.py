"""What a model card says of loading its folder (:mod:`hardneg.dense.card_usage`): its two loading recipes
(sentence-transformers and transformers) run as written and give hardneg's own vectors; a head or markers send
transformers users to a loader that reads them, and a folder that is not a bi-encoder gets a card that says so."""

import re

import numpy as np
import pytest
import torch

from hardneg.dense.model import BiEncoder
from hardneg.dense.model_card import CardFacts, render_model_card, write_model_card
from hardneg.dense.tokenized import encode_chunk
from hardneg.dense.tokenizer import load_tokenizer
from tests.support.model_cards import DOC_MAX_LENGTH, FACTS, QUERY_MAX_LENGTH, card_tokenizer, saved_model


@pytest.fixture(scope="module")
def tokenizer_dir(tmp_path_factory):
    return card_tokenizer(tmp_path_factory.mktemp("card"))


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
