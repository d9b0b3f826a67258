"""ColBERT's input format in the bi-encoder (the TCT student): markers after [CLS], [MASK] query augmentation,
mean pooling after the marker; saved and loaded with the model, and a student started from a teacher's encoder."""

import json

import pytest
import torch

from hardneg.dense.backbone import ModelSpec
from hardneg.dense.markers import NEW, SKIP, Markers, add_markers
from hardneg.dense.model import BiEncoder
from hardneg.dense.tokenized import TokenizedTexts
from hardneg.dense.tokenizer import load_tokenizer
from tests.support.dense import TINY_MODEL, build_tiny

MARKERS = Markers(query=7, doc=8, mask=4, pad=0, sep=3, query_length=6)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return build_tiny(tmp_path_factory.mktemp("markers"))


def spec(**overrides) -> ModelSpec:
    return ModelSpec(**{"name": "builtin", "pooling": "mean", "projection_dim": None, "shared": True,
                        "normalize": False, "markers": True, "query_augmentation": True, "vocab_size": 8000, "builtin": TINY_MODEL,
                        "query_max_length": 16, "doc_max_length": 64, "query_prompt": "", "doc_prompt": "",
                        **overrides})


def test_a_query_gets_its_marker_and_is_padded_with_attended_masks():
    ids = torch.tensor([[2, 11, 12, 3], [2, 13, 3, 0]])
    mask = torch.tensor([[1, 1, 1, 1], [1, 1, 1, 0]])
    out_ids, out_mask = MARKERS.apply(ids, mask, "query")
    assert out_ids.tolist() == [[2, 7, 11, 12, 3, 4], [2, 7, 13, 3, 4, 4]]
    assert out_mask.tolist() == [[1] * 6, [1] * 6]


def test_without_augmentation_a_query_keeps_its_length_and_padding():
    ids = torch.tensor([[2, 11, 12, 3], [2, 13, 3, 0]])
    mask = torch.tensor([[1, 1, 1, 1], [1, 1, 1, 0]])
    plain = Markers(**{**MARKERS.to_json(), "augment": False})
    out_ids, out_mask = plain.apply(ids, mask, "query")
    assert out_ids.tolist() == [[2, 7, 11, 12, 3], [2, 7, 13, 3, 0]]
    assert out_mask.tolist() == [[1, 1, 1, 1, 1], [1, 1, 1, 1, 0]]
    long = torch.tensor([[2, 11, 12, 13, 14, 15, 3]])
    assert plain.apply(long, torch.ones_like(long), "query")[0].tolist() == [[2, 7, 11, 12, 13, 3]]


def test_a_long_query_is_cut_to_the_fixed_length_and_ends_with_sep():
    ids = torch.tensor([[2, 11, 12, 13, 14, 15, 3]])
    out_ids, out_mask = MARKERS.apply(ids, torch.ones_like(ids), "query")
    assert out_ids.tolist() == [[2, 7, 11, 12, 13, 3]] and out_mask.tolist() == [[1] * 6]


def test_a_document_gets_its_marker_keeps_its_padding_and_respects_the_position_limit():
    ids = torch.tensor([[2, 11, 12, 3], [2, 13, 3, 0]])
    mask = torch.tensor([[1, 1, 1, 1], [1, 1, 1, 0]])
    out_ids, out_mask = MARKERS.apply(ids, mask, "doc")
    assert out_ids.tolist() == [[2, 8, 11, 12, 3], [2, 8, 13, 3, 0]]
    assert out_mask.tolist() == [[1, 1, 1, 1, 1], [1, 1, 1, 1, 0]]
    cut_ids, cut_mask = MARKERS.apply(ids, mask, "doc", max_positions=4)
    assert cut_ids.tolist() == [[2, 8, 11, 3], [2, 8, 13, 3]] and cut_mask.tolist() == [[1] * 4] * 2


def test_a_vocabulary_without_unused_tokens_gains_q_and_d(tiny):
    tokenizer = load_tokenizer(tiny["tokenizer"])
    before = len(tokenizer)
    model = BiEncoder.create(spec(), vocab_size=before, pad_token_id=tokenizer.pad_token_id, max_length=65, seed=3,
                             tokenizer=tokenizer)
    assert len(tokenizer) == before + 2
    assert (model.markers.query, model.markers.doc) == tuple(tokenizer.convert_tokens_to_ids(list(NEW)))
    assert model.query_encoder.get_input_embeddings().num_embeddings == before + 2
    assert model.markers.query_length == 17
    # a tokenizer with BERT's unused tokens keeps its vocabulary: ColBERT's [unused0] / [unused1]
    tokenizer.add_tokens(["[unused0]", "[unused1]"])
    again = add_markers(tokenizer, None, 17)
    assert (again.query, again.doc) == tuple(tokenizer.convert_tokens_to_ids(["[unused0]", "[unused1]"]))


def test_mean_pooling_skips_cls_and_the_marker_and_the_model_round_trips(tiny, tmp_path):
    tokenizer = load_tokenizer(tiny["tokenizer"])
    model = BiEncoder.create(spec(), vocab_size=len(tokenizer), pad_token_id=tokenizer.pad_token_id, max_length=65,
                             seed=3, tokenizer=tokenizer).eval()
    docs = TokenizedTexts(tiny["cache"], "corpus")
    batch = docs.batch([0, 1, 2])
    with torch.no_grad():
        vectors = model.encode_docs(batch)
        ids, mask = model.markers.apply(batch["input_ids"], batch["attention_mask"], "doc")
        hidden = model.query_encoder(input_ids=ids, attention_mask=mask).last_hidden_state
        weights = mask[:, SKIP:, None].float()
        expected = (hidden[:, SKIP:] * weights).sum(1) / weights.sum(1)
    assert torch.allclose(vectors, expected, atol=1e-6)
    model.save(tmp_path / "student", tokenizer)
    assert json.loads((tmp_path / "student" / "hardneg.json").read_text())["markers"] == model.markers.to_json()
    loaded = BiEncoder.load(tmp_path / "student").eval()
    queries = TokenizedTexts(tiny["cache"], "queries_test")
    with torch.no_grad():
        assert torch.equal(loaded.encode_queries(queries.batch([0, 1])), model.encode_queries(queries.batch([0, 1])))
        assert torch.equal(loaded.encode_docs(batch), vectors)
    # a student started from the saved encoder (as from a ColBERT teacher's folder) encodes the same way
    student = BiEncoder.from_encoder(tmp_path / "student", spec(), seed=0).eval()
    with torch.no_grad():
        assert torch.allclose(student.encode_docs(batch), vectors, atol=1e-6)
    plain = BiEncoder.from_encoder(tmp_path / "student", spec(markers=False), seed=0)
    assert plain.markers is None
