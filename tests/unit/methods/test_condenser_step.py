"""The Condenser / coCondenser training step (:mod:`hardneg.methods.condenser.step`): BERT's MLM masking over real,
non-special tokens, reproducible from the seed, and the two spans of each document within their length bounds."""

import numpy as np
import pytest

from hardneg.methods.condenser.pretraining import IGNORE
from hardneg.methods.condenser.step import build_condenser_step
from tests.support.condenser import condenser_params as _params
from tests.support.condenser import tiny_corpus


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return tiny_corpus(tmp_path_factory.mktemp("condenser_step"))


def _originals(batch) -> np.ndarray:
    """The tokens before MLM corruption: the labels where there is one."""
    return np.where(batch.labels != IGNORE, batch.labels, batch.input_ids)


def test_masking_is_berts_over_real_non_special_tokens_and_reproducible(tiny):
    tok, docs = tiny["tok"], tiny["docs"]
    step = build_condenser_step(docs, tok, _params())
    rows = np.arange(len(docs))
    batch = step.make_batch(rows, np.random.default_rng(7))
    tokens = np.asarray(docs.ids[rows, :batch.input_ids.shape[1]], dtype=np.int64)
    real = batch.attention_mask.astype(bool)
    assert np.array_equal(real.sum(1), docs.lengths[rows])
    special = np.isin(tokens, tok.all_special_ids)
    eligible = real & ~special
    picked = batch.labels != IGNORE
    assert eligible.sum() > 5000
    assert not (picked & ~eligible).any()  # never a special token nor padding
    assert picked.sum() / eligible.sum() == pytest.approx(0.15, abs=0.015)
    assert np.array_equal(batch.labels[picked], tokens[picked])
    assert np.array_equal(batch.input_ids[~picked], tokens[~picked])
    masked = batch.input_ids[picked] == tok.mask_token_id
    kept = batch.input_ids[picked] == tokens[picked]
    assert masked.mean() == pytest.approx(0.8, abs=0.03)
    assert kept.mean() == pytest.approx(0.1, abs=0.03)
    randomised = batch.input_ids[picked][~masked & ~kept]
    assert len(randomised) / picked.sum() == pytest.approx(0.1, abs=0.03)
    assert not np.isin(randomised, tok.all_special_ids).any()
    again = step.make_batch(rows, np.random.default_rng(7))
    other = step.make_batch(rows, np.random.default_rng(8))
    assert all(np.array_equal(getattr(batch, k), getattr(again, k)) for k in ("input_ids", "attention_mask", "labels"))
    assert not np.array_equal(batch.labels, other.labels)
    half = build_condenser_step(docs, tok, _params(mlm_probability=0.5)).make_batch(rows, np.random.default_rng(7))
    assert (half.labels != IGNORE).sum() / eligible.sum() == pytest.approx(0.5, abs=0.02)
    # one token at least, whatever the probability: the loss is defined
    rare = build_condenser_step(docs, tok, _params(mlm_probability=1e-9)).make_batch(rows[:4], np.random.default_rng(0))
    assert (rare.labels != IGNORE).sum() == 1


def test_spans_are_windows_of_their_document_within_the_length_bounds(tiny):
    tok, docs = tiny["tok"], tiny["docs"]
    params = _params(contrastive=True, span_min=0.2, span_max=0.4)
    rows = np.arange(len(docs))
    batch = build_condenser_step(docs, tok, params).make_batch(rows, np.random.default_rng(3))
    count = len(rows)
    assert batch.input_ids.shape[0] == 2 * count and batch.spans.shape == (2 * count, 2)
    original = _originals(batch)
    content = np.tile(docs.lengths[rows].astype(np.int64) - 2, 2)
    starts, sizes = batch.spans[:, 0], batch.spans[:, 1]
    low = np.maximum(1, np.ceil(0.2 * content - 1e-9))
    high = np.maximum(low, np.floor(0.4 * content + 1e-9))
    assert (sizes >= low).all() and (sizes <= high).all() and (sizes >= 1).all()
    assert (starts >= 0).all() and (starts + sizes <= content).all()
    assert np.array_equal(batch.attention_mask.sum(1), sizes + 2)
    for r in range(2 * count):
        doc = np.asarray(docs.ids[rows[r % count]])
        size = sizes[r]
        assert original[r, 0] == tok.cls_token_id and original[r, size + 1] == tok.sep_token_id
        assert np.array_equal(original[r, 1:size + 1], doc[1 + starts[r]:1 + starts[r] + size])
        assert (original[r, size + 2:] == tok.pad_token_id).all()
    assert (batch.spans[:count] != batch.spans[count:]).any(1).mean() > 0.5  # two independent draws
    picked = batch.labels != IGNORE
    assert not np.isin(original[picked], tok.all_special_ids).any() and batch.attention_mask[picked].all()
