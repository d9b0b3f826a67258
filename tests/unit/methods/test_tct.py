"""TCT-ColBERT's step: the distillation loss, a frozen teacher, and the contrastive loss without a teacher."""

import numpy as np
import pytest
import torch

from hardneg.dense.backbone import ModelSpec
from hardneg.dense.data import RandomNegatives, TrainQueries
from hardneg.dense.steps import ContrastiveMethod
from hardneg.dense.model import BiEncoder
from hardneg.dense.tokenized import TokenizedTexts
from hardneg.dense.tokenizer import load_tokenizer
from hardneg.io import artifacts
from hardneg.methods.tct.step import TctMethod, kd_loss
from hardneg.pipeline.config import validate_params
from tests.support.dense import TINY_MODEL, build_tiny


def test_kd_loss_is_zero_when_the_logits_agree_and_positive_otherwise():
    teacher = torch.randn(4, 8, dtype=torch.float64)
    # student / 2 == teacher / 0.25: the same distributions
    assert kd_loss(teacher * 8, teacher, teacher_temperature=0.25, student_temperature=2.0).item() <= 1e-7
    assert kd_loss(teacher * 8 + 3.0, teacher, teacher_temperature=0.25, student_temperature=2.0).item() <= 1e-7
    assert kd_loss(teacher, teacher, teacher_temperature=0.25, student_temperature=2.0).item() > 1e-3


def test_kd_loss_equals_the_sum_over_documents_averaged_over_queries():
    rng = np.random.default_rng(0)
    student, teacher = rng.normal(size=(5, 10)) * 3, rng.normal(size=(5, 10)) * 3
    ts, tt = 0.7, 0.25

    def softmax(x):
        e = np.exp(x - x.max(1, keepdims=True))
        return e / e.sum(1, keepdims=True)

    p, q = softmax(teacher / tt), softmax(student / ts)
    expected = (p * (np.log(p) - np.log(q))).sum(1).mean()
    got = kd_loss(torch.tensor(student), torch.tensor(teacher), teacher_temperature=tt, student_temperature=ts)
    assert got.dtype == torch.float32  # upcast, then computed in float32
    assert got.item() == pytest.approx(expected, rel=1e-5)
    # a masked column: both distributions renormalised over the others
    mask = np.zeros((5, 10), dtype=bool)
    mask[:, 3] = True
    mask[1, 7] = True
    p, q = softmax(np.where(mask, -np.inf, teacher / tt)), softmax(np.where(mask, -np.inf, student / ts))
    with np.errstate(divide="ignore", invalid="ignore"):
        expected = np.where(mask, 0.0, p * (np.log(p) - np.log(q))).sum(1).mean()
    got = kd_loss(torch.tensor(student), torch.tensor(teacher), teacher_temperature=tt, student_temperature=ts,
                  mask=torch.tensor(mask))
    assert torch.isfinite(got) and got.item() == pytest.approx(expected, rel=1e-5)
    with pytest.raises(ValueError, match="without any document"):
        kd_loss(torch.tensor(student), torch.tensor(teacher), mask=torch.ones(5, 10, dtype=torch.bool))


def test_kd_loss_gradient():
    torch.manual_seed(0)
    student = (torch.randn(6, 12) * 2).requires_grad_()
    teacher = torch.randn(6, 12) * 2
    ts, tt = 0.5, 0.25
    kd_loss(student, teacher, teacher_temperature=tt, student_temperature=ts).backward()
    expected = (torch.softmax(student.detach() / ts, 1) - torch.softmax(teacher / tt, 1)) / ts / len(student)
    torch.testing.assert_close(student.grad, expected, rtol=1e-5, atol=1e-7)


def test_kd_loss_is_float32_under_bf16_autocast():
    student, teacher = torch.randn(3, 6).bfloat16(), torch.randn(3, 6).bfloat16()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        got = kd_loss(student, teacher)
    assert got.dtype == torch.float32
    assert got.item() == pytest.approx(kd_loss(student.float(), teacher.float()).item(), rel=1e-6)


# ----------------------------------------------------------------------------------------------- the step
@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    root = build_tiny(tmp_path_factory.mktemp("tct"))
    query_texts = TokenizedTexts(root["cache"], "queries_train")
    doc_texts = TokenizedTexts(root["cache"], "corpus")
    qrels = artifacts.read_table(artifacts.QRELS, root["data"] / "qrels" / "train.parquet")
    return {**root, "queries": query_texts, "docs": doc_texts,
            "train": TrainQueries(qrels, query_texts.row_ids, doc_texts.row_ids)}


def _student(tiny, seed: int = 3, markers: bool = False) -> BiEncoder:
    """A mean-pooled bi-encoder; with ``markers``, TCT's student (ColBERT's input format)."""
    tokenizer = load_tokenizer(tiny["tokenizer"])
    spec = ModelSpec.from_params(validate_params({"model": {
        "builtin": TINY_MODEL, "pooling": "mean", "normalize": False, "markers": markers, "doc_max_length": 64,
        "query_max_length": 16}})["model"])
    return BiEncoder.create(spec, vocab_size=len(tokenizer), pad_token_id=tokenizer.pad_token_id, max_length=64,
                            seed=seed, tokenizer=tokenizer)


@pytest.mark.parametrize("loss", ["ce", "ranknet"])
def test_without_a_teacher_the_loss_is_the_contrastive_one(tiny, loss):
    student = _student(tiny).eval()  # no dropout: both calls see the same vectors
    kwargs = dict(negatives=RandomNegatives(tiny["train"]), per_query=2, loss=loss, temperature=0.5)
    tct = TctMethod(tiny["train"], tiny["queries"], tiny["docs"], **kwargs)
    contrastive = ContrastiveMethod(tiny["train"], tiny["queries"], tiny["docs"], **kwargs)
    batch = tct.make_batch(np.arange(8), np.random.default_rng(1))
    same = contrastive.make_batch(np.arange(8), np.random.default_rng(1))
    assert np.array_equal(batch.doc_rows, same.doc_rows) and len(batch.doc_rows) == 8 * 3
    got, stats = tct.loss(student, batch, "cpu")
    expected, expected_stats = contrastive.loss(student, batch, "cpu")
    assert torch.equal(got, expected) and got.item() > 0
    assert stats == expected_stats
    assert "teacher" not in tct.step_timings


@pytest.fixture(scope="module")
def teacher(tiny):
    from hardneg.dense.maxsim import ColBERT

    spec = ModelSpec.from_params(validate_params({"model": {"builtin": TINY_MODEL, "doc_max_length": 64,
                                                            "query_max_length": 16}})["model"])
    return ColBERT.create(spec, tokenizer=load_tokenizer(tiny["tokenizer"]), dim=16, seed=5)


def test_the_teacher_stays_frozen_and_the_loss_is_the_distillation_of_its_scores(tiny, teacher):
    before = {name: value.clone() for name, value in teacher.state_dict().items()}
    student = _student(tiny, markers=True).train()
    assert student.markers is not None
    method = TctMethod(tiny["train"], tiny["queries"], tiny["docs"], negatives=RandomNegatives(tiny["train"]),
                       per_query=1, teacher=teacher, teacher_temperature=0.25, kd_weight=1.0, temperature=0.5)
    assert not teacher.training and not any(p.requires_grad for p in teacher.parameters())
    optimizer = torch.optim.AdamW(student.parameters(), lr=1e-3)
    first = {name: value.clone() for name, value in student.state_dict().items()}
    for step in range(3):
        batch = method.make_batch(np.arange(8 * step, 8 * step + 8), np.random.default_rng(step))
        loss, stats = method.loss(student, batch, "cpu")
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        assert torch.isfinite(loss) and stats["kd_loss"] == pytest.approx(loss.item())
        assert method.step_timings["teacher"] > 0 and 0.0 <= stats["batch_accuracy"] <= 1.0
    assert any(not torch.equal(first[k], v) for k, v in student.state_dict().items())  # the student learnt
    after = teacher.state_dict()
    assert before.keys() == after.keys() and all(torch.equal(before[k], after[k]) for k in before)
    assert all(p.grad is None for p in teacher.parameters())

    # the loss is kd_loss of the teacher's own score_all (one padded block, not chunks) and the student's vectors
    student.eval()
    batch = method.make_batch(np.arange(40, 48), np.random.default_rng(7))
    loss, stats = method.loss(student, batch, "cpu")
    with torch.no_grad():
        queries, docs = tiny["queries"].batch(batch.query_rows), tiny["docs"].batch(batch.doc_rows)
        expected_teacher = teacher.score_all(queries, docs)
        q, d = student(queries=queries, docs=docs)
    scores = method.teacher_scores(batch, "cpu")
    assert not scores.is_inference() and not scores.requires_grad  # autograd may read it
    torch.testing.assert_close(scores, expected_teacher, rtol=1e-5, atol=1e-5)
    expected = kd_loss(q @ d.T, expected_teacher, teacher_temperature=0.25, student_temperature=0.5)
    assert loss.item() == pytest.approx(expected.item(), rel=1e-4)
    assert expected.item() != pytest.approx(
        kd_loss(q @ d.T, expected_teacher, teacher_temperature=1.0, student_temperature=0.5).item(), rel=1e-2)

    # a teacher switched to training mode by mistake is scored without dropout all the same
    teacher.train()
    assert torch.equal(method.loss(student, batch, "cpu")[0], loss) and not teacher.training


def test_kd_weight_mixes_in_the_contrastive_loss(tiny, teacher):
    student = _student(tiny).eval()
    kwargs = dict(negatives=RandomNegatives(tiny["train"]), per_query=1, loss="ce", temperature=0.5)
    mixed = TctMethod(tiny["train"], tiny["queries"], tiny["docs"], teacher=teacher, kd_weight=0.3, **kwargs)
    contrastive = ContrastiveMethod(tiny["train"], tiny["queries"], tiny["docs"], **kwargs)
    batch = mixed.make_batch(np.arange(8), np.random.default_rng(0))
    loss, stats = mixed.loss(student, batch, "cpu")
    expected = 0.3 * stats["kd_loss"] + 0.7 * contrastive.loss(student, batch, "cpu")[0].item()
    assert loss.item() == pytest.approx(expected, rel=1e-5)
    with pytest.raises(ValueError, match="kd_weight"):
        TctMethod(tiny["train"], tiny["queries"], tiny["docs"], teacher=teacher, kd_weight=1.5, **kwargs)
