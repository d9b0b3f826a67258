"""Distillation from a teacher's scores: Margin-MSE and the listwise KL divergence against hand-computed values and
against sentence-transformers' own losses on the same tensors, the pairs without a teacher score left out, the
teacher's scores looked up by training row, and the contrastive step with the distillation term."""

import math

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
import torch

from hardneg.dense.backbone import ModelSpec
from hardneg.dense.data import RandomNegatives, TeacherScores, TrainQueries
from hardneg.dense.losses import DISTILLATION, kl_divergence, margin_mse
from hardneg.dense.steps import ContrastiveMethod, Distillation
from hardneg.dense.model import BiEncoder
from hardneg.dense.tokenized import TokenizedTexts
from hardneg.dense.tokenizer import load_tokenizer
from hardneg.io import artifacts
from hardneg.errors import ConfigError
from hardneg.methods.contrastive import read_teacher_scores, teacher_logits
from hardneg.methods.registry import StepContext
from hardneg.pipeline.config import validate_params
from tests.support.dense import TINY_MODEL, build_tiny

ALL = torch.ones(2, 3, dtype=torch.bool)


def test_margin_mse_by_hand():
    student = torch.tensor([[3.0, 1.0, 0.0], [1.0, 2.0, 1.0]])
    teacher = torch.tensor([[2.0, 1.0, 1.0], [0.0, -1.0, 0.5]])
    # student margins (2, 3) and (-1, 0), teacher margins (1, 1) and (1, -0.5): squared gaps 1, 4, 4, 0.25
    assert margin_mse(student, teacher, ALL).item() == pytest.approx((1 + 4 + 4 + 0.25) / 4)
    assert margin_mse(student + 5.0, teacher - 2.0, ALL).item() == pytest.approx(9.25 / 4)  # shifts cancel
    assert margin_mse(teacher, teacher, ALL).item() == 0.0


def test_kl_by_hand():
    # the student's softmax over (2 ln 3, 0) / 2 is (3/4, 1/4); the teacher's over (0, 0) is (1/2, 1/2)
    student = torch.tensor([[2 * math.log(3), 0.0]])
    teacher = torch.tensor([[0.0, 0.0]])
    scored = torch.ones(1, 2, dtype=torch.bool)
    expected = 0.5 * math.log(0.5 / 0.75) + 0.5 * math.log(0.5 / 0.25)
    got = kl_divergence(student, teacher, scored, teacher_temperature=1.0, student_temperature=2.0)
    assert got.item() == pytest.approx(expected, rel=1e-6)
    # a teacher temperature of 1/2 doubles the teacher's logits: (0, 2 ln 3) / 1 -> (1/10, 9/10)
    teacher = torch.tensor([[0.0, math.log(3)]])
    got = kl_divergence(student, teacher, scored, teacher_temperature=0.5, student_temperature=2.0)
    expected = 0.1 * math.log(0.1 / 0.75) + 0.9 * math.log(0.9 / 0.25)
    assert got.item() == pytest.approx(expected, rel=1e-6)


def _embeddings(seed: int, rows: int = 4, negatives: int = 3, dim: int = 8):
    generator = torch.Generator().manual_seed(seed)
    return [torch.randn(rows, dim, generator=generator) for _ in range(2 + negatives)]


def test_margin_mse_equals_sentence_transformers_margin_mse_loss():
    from sentence_transformers.sentence_transformer.losses import MarginMSELoss
    from sentence_transformers.util import pairwise_dot_score

    query, *documents = _embeddings(0)
    student = torch.stack([pairwise_dot_score(query, d) for d in documents], dim=1)
    teacher = torch.randn(4, 4, generator=torch.Generator().manual_seed(1)) * 3
    labels = teacher[:, :1] - teacher[:, 1:]  # what MarginMSELoss is given: the teacher's margins
    theirs = MarginMSELoss(model=None).compute_loss_from_embeddings([query, *documents], labels)
    ours = margin_mse(student, teacher, torch.ones(4, 4, dtype=torch.bool))
    assert ours.item() == pytest.approx(theirs.item(), rel=1e-6) and ours.item() > 0.1


@pytest.mark.parametrize("teacher_temperature, student_temperature", [(1.0, 1.0), (0.5, 2.0), (3.0, 0.7)])
def test_kl_equals_sentence_transformers_distill_kl_div_loss(teacher_temperature, student_temperature):
    from sentence_transformers.sentence_transformer.losses import DistillKLDivLoss
    from sentence_transformers.util import pairwise_dot_score

    query, *documents = _embeddings(2)
    student = torch.stack([pairwise_dot_score(query, d) for d in documents], dim=1)
    teacher = torch.randn(4, 4, generator=torch.Generator().manual_seed(3)) * 2
    loss = DistillKLDivLoss(model=None, teacher_temperature=teacher_temperature,
                            student_temperature=student_temperature)
    theirs = loss.compute_loss_from_embeddings([query, *documents], teacher)
    ours = kl_divergence(student, teacher, torch.ones(4, 4, dtype=torch.bool),
                         teacher_temperature=teacher_temperature, student_temperature=student_temperature)
    # sentence-transformers multiplies the KL divergence by the student temperature squared (Hinton's gradient
    # scale); hardneg's term is the divergence itself, its share of the loss set by distill.weight
    assert ours.item() * student_temperature ** 2 == pytest.approx(theirs.item(), rel=1e-5) and ours.item() > 1e-3


def test_pairs_without_a_teacher_score_stay_out():
    student = torch.tensor([[3.0, 1.0, 0.0], [1.0, 2.0, 1.0], [0.0, 5.0, 4.0]], requires_grad=True)
    teacher = torch.tensor([[2.0, 1.0, float("nan")], [0.0, -1.0, 0.5], [float("nan"), 1.0, 2.0]])
    scored = ~torch.isnan(teacher)
    # row 0 keeps its first negative, row 1 both, row 2 (its positive unscored) none
    assert margin_mse(student, teacher, scored).item() == pytest.approx((1 + 4 + 0.25) / 3)
    # the KL divergence: the mean of row 0's over (positive, first negative) and row 1's over all three
    expected = (kl_divergence(student[:1, :2], teacher[:1, :2], torch.ones(1, 2, dtype=torch.bool)).item()
                + kl_divergence(student[1:2], teacher[1:2], torch.ones(1, 3, dtype=torch.bool)).item()) / 2
    got = kl_divergence(student, teacher, scored)
    assert torch.isfinite(got) and got.item() == pytest.approx(expected, rel=1e-6)
    got.backward()
    assert torch.isfinite(student.grad).all() and student.grad[2].abs().sum() == 0  # row 2 takes no part
    for loss in DISTILLATION.values():  # nothing scored: zero, with a gradient of zeros
        student.grad = None
        zero = loss(student, teacher, torch.zeros(3, 3, dtype=torch.bool))
        zero.backward()
        assert zero.item() == 0.0 and student.grad.abs().sum() == 0


def test_distillation_losses_are_float32_under_bf16_autocast():
    student, teacher = torch.randn(3, 4).bfloat16(), torch.randn(3, 4).bfloat16()
    scored = torch.ones(3, 4, dtype=torch.bool)
    for loss in DISTILLATION.values():
        with torch.autocast("cpu", dtype=torch.bfloat16):
            got = loss(student, teacher, scored)
        assert got.dtype == torch.float32
        assert got.item() == pytest.approx(loss(student.float(), teacher.float(), scored).item(), rel=1e-6)


def test_teacher_logits_invert_the_sigmoid_and_stay_finite():
    logits = np.array([-8.0, -1.5, 0.0, 2.25, 9.0], np.float32)
    probabilities = torch.sigmoid(torch.from_numpy(logits)).numpy()
    np.testing.assert_allclose(teacher_logits(probabilities), logits, rtol=1e-4, atol=1e-4)
    ends = teacher_logits(np.array([0.0, 1.0], np.float32))
    assert np.isfinite(ends).all() and ends[0] < -80 and 16 < ends[1] < 17


# ----------------------------------------------------------------------------------------------- the step
@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    root = build_tiny(tmp_path_factory.mktemp("distillation"))
    query_texts, doc_texts = TokenizedTexts(root["cache"], "queries_train"), TokenizedTexts(root["cache"], "corpus")
    qrels = artifacts.read_table(artifacts.QRELS, root["data"] / "qrels" / "train.parquet")
    tokenizer = load_tokenizer(root["tokenizer"])
    spec = ModelSpec.from_params(validate_params({"model": {
        "builtin": TINY_MODEL, "pooling": "mean", "normalize": False, "doc_max_length": 64,
        "query_max_length": 16}})["model"])
    student = BiEncoder.create(spec, vocab_size=len(tokenizer), pad_token_id=tokenizer.pad_token_id, max_length=64,
                               seed=3, tokenizer=tokenizer).eval()  # no dropout: repeated calls see the same vectors
    return {"queries": query_texts, "docs": doc_texts, "qrels": qrels, "student": student,
            "train": TrainQueries(qrels, query_texts.row_ids, doc_texts.row_ids)}


def _scores_of(train: TrainQueries, doc_ids: list[str], seed: int) -> pa.Table:
    """A teacher scoring every document for the first 8 training queries, and the rest not at all."""
    rng = np.random.default_rng(seed)
    qids = np.repeat(train.qids[:8], len(doc_ids))
    return pa.table({"qid": qids, "docid": np.tile(doc_ids, 8), "score": rng.normal(size=len(qids)).astype(np.float32)})


def test_teacher_scores_are_looked_up_by_row_and_nan_where_none(tiny):
    train, doc_ids = tiny["train"], tiny["docs"].row_ids
    table = pa.table({"qid": [train.qids[0], train.qids[0], train.qids[1], "no-such-query"],
                      "docid": [doc_ids[5], doc_ids[5], doc_ids[7], doc_ids[5]], "score": [1.5, 9.0, -2.0, 4.0]})
    scores = TeacherScores(train, [table], doc_ids)
    assert len(scores) == 2  # the repeated pair keeps its first score; the unknown query is ignored
    got = scores.lookup(np.array([[0], [1], [2]]), np.array([[5, 7], [5, 7], [5, 7]]))
    np.testing.assert_array_equal(got, np.array([[1.5, np.nan], [np.nan, -2.0], [np.nan, np.nan]], np.float32))
    # per judgement, the rows of one query share its scores
    judgements = TrainQueries(tiny["qrels"], tiny["queries"].row_ids, doc_ids, per_judgement=True)
    rows = [i for i, qid in enumerate(judgements.qids) if qid == train.qids[0]]
    assert (TeacherScores(judgements, [table], doc_ids).lookup(np.array(rows), np.full(len(rows), 5)) == 1.5).all()


def test_teacher_scores_are_read_as_they_are_and_probabilities_as_logits(tiny, tmp_path):
    train, doc_ids = tiny["train"], tiny["docs"].row_ids
    q0, q1 = train.qids[0], train.qids[1]
    positive = tiny["qrels"].filter(pc.equal(tiny["qrels"]["qid"], q0))["docid"][0].as_py()
    # an imported list's two tables: its negatives (a HARDNEGS table, one left unscored) and positives
    negatives = pa.table({"qid": [q0, q0, q1], "docid": [doc_ids[5], doc_ids[7], doc_ids[5]],
                          "rank": pa.array([1, 2, 1], pa.int32()), "score": pa.array([12.5, None, -3.0], pa.float32())})
    positives = pa.table({"qid": [q0], "docid": [positive], "relevance": pa.array([1], pa.int32()),
                          "score": pa.array([0.75], pa.float32())})
    artifacts.write_table(negatives, artifacts.HARDNEGS, tmp_path / "hardnegs.parquet")
    artifacts.write_table(positives, artifacts.POSITIVE_SCORES, tmp_path / "positives.parquet")

    def context(**inputs):
        return StepContext(resolved={"name": "kd", "method": "star", "params": {}}, train=train,
                           query_texts=tiny["queries"], doc_texts=tiny["docs"],
                           inputs={name: str(tmp_path / file) for name, file in inputs.items()})

    doc_row = {d: i for i, d in enumerate(doc_ids)}
    rows, docs = np.array([0, 0, 0, 1]), np.array([doc_row[positive], 5, 7, 5])
    as_they_are = read_teacher_scores(context(teacher_scores="hardnegs.parquet",
                                              teacher_positive_scores="positives.parquet"))
    np.testing.assert_array_equal(as_they_are.lookup(rows, docs), np.array([0.75, 12.5, np.nan, -3.0], np.float32))
    # a cross-encoder's probabilities of a pool (a RANKING table) and of the positives: read as their logits
    pool = pa.table({"qid": [q0], "docid": [doc_ids[5]], "rank": pa.array([1], pa.int32()),
                     "score": pa.array([0.2], pa.float32())})
    artifacts.write_table(pool, artifacts.RANKING, tmp_path / "ce_candidates.parquet")
    logits = read_teacher_scores(context(teacher_probabilities="ce_candidates.parquet",
                                         teacher_positive_probabilities="positives.parquet"))
    np.testing.assert_allclose(logits.lookup(rows[:2], docs[:2]), [np.log(3.0), np.log(0.25)], rtol=1e-5)
    unscored = negatives.set_column(3, "score", pa.array([None] * 3, pa.float32()))
    artifacts.write_table(unscored, artifacts.HARDNEGS, tmp_path / "unscored.parquet")
    with pytest.raises(ConfigError) as info:
        read_teacher_scores(context(teacher_scores="unscored.parquet", teacher_positive_scores="positives.parquet"))
    assert info.value.key == "runs.kd.params.distill.loss" and "score no negative" in info.value.message


@pytest.mark.parametrize("name", ["margin_mse", "kl"])
def test_the_step_mixes_the_distillation_of_each_rows_own_documents_by_its_weight(tiny, name):
    train, doc_ids, student = tiny["train"], tiny["docs"].row_ids, tiny["student"]
    teacher = TeacherScores(train, [_scores_of(train, doc_ids, 0)], doc_ids)
    kwargs = dict(negatives=RandomNegatives(train), per_query=2, loss="ranknet", temperature=0.5)
    distillation = Distillation(loss=name, weight=0.3, teacher=teacher, teacher_temperature=0.5,
                                student_temperature=2.0)
    method = ContrastiveMethod(train, tiny["queries"], tiny["docs"], distillation=distillation, **kwargs)
    plain = ContrastiveMethod(train, tiny["queries"], tiny["docs"], **kwargs)
    queries = np.arange(4, 12)  # rows 4-7 scored, rows 8-11 not
    batch = method.make_batch(queries, np.random.default_rng(1))
    assert batch.teacher.shape == (8, 3)
    assert np.isfinite(batch.teacher[:4]).all() and np.isnan(batch.teacher[4:]).all()
    loss, stats = method.loss(student, batch, "cpu")
    contrastive, _ = plain.loss(student, batch, "cpu")
    with torch.no_grad():
        q, d = student(queries=tiny["queries"].batch(batch.query_rows), docs=tiny["docs"].batch(batch.doc_rows))
        scores = (q @ d.T) / 0.5
    own = scores[torch.arange(8)[:, None], torch.tensor([[i, 8 + 2 * i, 9 + 2 * i] for i in range(8)])]
    # the distillation term by hand, over the four scored rows and their own positive and two negatives
    student_own, teacher_own = own[:4].numpy().astype(np.float64), batch.teacher[:4].astype(np.float64)
    if name == "margin_mse":
        gaps = (student_own[:, :1] - student_own[:, 1:]) - (teacher_own[:, :1] - teacher_own[:, 1:])
        expected = (gaps ** 2).mean()
    else:
        def log_softmax(x):
            return x - x.max(1, keepdims=True) - np.log(np.exp(x - x.max(1, keepdims=True)).sum(1, keepdims=True))

        log_p, log_q = log_softmax(teacher_own / 0.5), log_softmax(student_own / 2.0)
        expected = (np.exp(log_p) * (log_p - log_q)).sum(1).mean()
    assert stats["distill_loss"] == pytest.approx(expected, rel=1e-4) and expected > 1e-3
    assert loss.item() == pytest.approx(0.3 * expected + 0.7 * contrastive.item(), rel=1e-4)
    with pytest.raises(ValueError, match="per_query"):
        ContrastiveMethod(train, tiny["queries"], tiny["docs"], negatives=None, per_query=0, loss="ce",
                          distillation=distillation)
    with pytest.raises(ValueError, match="weight"):
        Distillation(loss=name, weight=1.5, teacher=teacher)
