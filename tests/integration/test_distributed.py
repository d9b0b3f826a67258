"""Training in two processes (torch.distributed, gloo on CPU) ends where training in one process ends: the
global batch, its loss and its gradient are the same, only summation orders differ; so is dev RR@10."""

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from hardneg.dense.backbone import ModelSpec
from hardneg.dense.encode import encode_rows
from hardneg.dense.model import BiEncoder
from hardneg.dense.tokenized import TokenizedTexts
from hardneg.dense.tokenizer import load_tokenizer
from hardneg.io import artifacts
from hardneg.mining.negatives import mine_hard_negatives
from hardneg.pipeline.config import validate_params
from hardneg.pipeline.train import train_run
from tests.support.dense import TINY_MODEL, build_tiny

# Dropout masks differ between processes (each draws its own share's), so the comparison runs without dropout.
NO_DROPOUT = {**TINY_MODEL, "hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0}


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    root = tmp_path_factory.mktemp("distributed")
    tiny = build_tiny(root)
    docs = TokenizedTexts(tiny["cache"], "corpus")
    queries = TokenizedTexts(tiny["cache"], "queries_train").row_ids
    rng = np.random.default_rng(0)
    picks = np.stack([rng.choice(len(docs), 30, replace=False) for _ in queries])
    ranking = pa.table({"qid": np.repeat(queries, 30), "docid": np.asarray(docs.row_ids)[picks.ravel()],
                        "rank": np.tile(np.arange(1, 31, dtype=np.int32), len(queries)),
                        "score": np.tile(np.linspace(1, 0, 30, dtype=np.float32), len(queries))})
    artifacts.write_table(ranking, artifacts.RANKING, root / "ranking.parquet")  # BM25-like negatives of warmup
    qrels = artifacts.read_table(artifacts.QRELS, tiny["data"] / "qrels" / "train.parquet")
    artifacts.write_table(mine_hard_negatives(ranking, qrels, depth=30), artifacts.HARDNEGS, root / "hardnegs.parquet")
    # STAR and ADORE continue a model (without dropout); ADORE searches its fixed document embeddings.
    tokenizer = load_tokenizer(tiny["tokenizer"])
    spec = ModelSpec.from_params(validate_params({"model": {"builtin": NO_DROPOUT}})["model"])
    init = BiEncoder.create(spec, vocab_size=len(tokenizer), pad_token_id=tokenizer.pad_token_id, max_length=64, seed=2)
    init.save(root / "init", tokenizer)
    embeddings = encode_rows(init, docs, np.arange(len(docs)), "doc")
    np.save(root / "corpus.npy", embeddings)
    from hardneg.index import build_index, save_index

    save_index(build_index(embeddings, "Flat"), root / "Flat.faiss")
    return {**tiny, "root": root}


def _train(tiny, method, out, processes, grad_cache_chunk=0):
    params = validate_params({
        "model": {"builtin": NO_DROPOUT, "doc_max_length": 64, "query_max_length": 16},
        "train": {"epochs": 1, "batch_size": 16, "learning_rate": 0.0001, "checkpoint_every": 0, "log_every": 1,
                  "processes": processes, "dev_every": 4, "dev_split": "test", "grad_cache_chunk": grad_cache_chunk},
        "negatives": {"per_query": 2, "depth": 30},
        # ADORE retrieves its candidates and ranks them: with a fresh model many documents nearly tie, and a score
        # difference of ~1e-7 (rows encoded in batches of other shapes) can swap two of them. The whole corpus
        # as candidates and unweighted pairs keep the loss continuous, so the runs differ by rounding only.
        **({"adore": {"top_k": 300, "cut": 20, "weighted": False}} if method == "adore" else {})}, method=method)
    root = tiny["root"]
    inputs = {"warmup": {"negatives": root / "ranking.parquet"},
              "star": {"hard_negatives": root / "hardnegs.parquet", "init": root / "init"},
              "adore": {"init": root / "init", "doc_embeddings": root / "corpus.npy",
                        "train_index": root / "Flat.faiss"}}[method]
    resolved = {"name": method, "method": method, "seed": 7, "params": params}
    return train_run(resolved, cache_dir=tiny["cache"], qrels_path=tiny["data"] / "qrels" / "train.parquet",
                     model_dir=out / "model", log_path=out / "log.parquet", checkpoint_dir=out / "ckpt",
                     tokenizer_source=tiny["tokenizer"], inputs={k: str(v) for k, v in inputs.items()})


def _parameters(model_dir):
    """The weights to compare. The attention key bias has a true gradient of zero (softmax over the keys ignores
    a shift shared by all of them), so it gets rounding noise only, which Adam scales to steps of ±lr in any
    direction."""
    return {k: v for k, v in BiEncoder.load(model_dir).state_dict().items()
            if not k.endswith("attention.self.key.bias")}


@pytest.mark.slow
@pytest.mark.parametrize("method", ["warmup", "star", "adore"])
def test_two_processes_train_like_one(tiny, tmp_path, method):
    one = _train(tiny, method, tmp_path / "one", processes=1)
    two = _train(tiny, method, tmp_path / "two", processes=2)
    assert len(one) == len(two) == 8
    logs = [pq.read_table(tmp_path / name / "log.parquet").to_pandas() for name in ("one", "two")]
    np.testing.assert_allclose(logs[0]["loss"], logs[1]["loss"], rtol=1e-6, atol=1e-5)
    np.testing.assert_allclose(logs[0]["grad_norm"], logs[1]["grad_norm"], rtol=1e-4)
    # dev RR@10 with the corpus encoding shared between the processes: the same rankings
    assert logs[1].loc[logs[1]["dev_rr10"].notna(), "step"].tolist() == [4, 8]
    np.testing.assert_allclose(logs[0]["dev_rr10"], logs[1]["dev_rr10"], rtol=0, atol=1e-6)
    np.testing.assert_allclose([r["loss"] for r in two], logs[1]["loss"])  # rank 0's rows come back
    a, b = _parameters(tmp_path / "one" / "model"), _parameters(tmp_path / "two" / "model")
    assert a.keys() == b.keys()
    # Adam scales a parameter's step by its gradient's size, so a gradient at rounding level (an embedding row
    # whose contributions nearly cancel) moves by up to lr either way: the difference scales with lr, kept small.
    difference = max(float((a[k] - b[k]).abs().max()) for k in a)
    assert difference <= 1e-4
    initial = BiEncoder.load(tiny["root"] / "init").state_dict()
    if method != "warmup":  # training moved the weights much further than the two runs differ
        assert max(float((a[k] - initial[k]).abs().max()) for k in a if k in initial) > 10 * difference
    assert not (tmp_path / "two" / "ckpt" / "state.json").exists()


def _train_tct(tiny, method, out, processes, teacher=None, grad_cache_chunk=0):
    params = validate_params({
        "model": {"builtin": NO_DROPOUT, "doc_max_length": 64, "query_max_length": 16, "markers": True,
                  "pooling": "mean", "normalize": False},
        "train": {"epochs": 1, "batch_size": 16, "learning_rate": 0.0001, "checkpoint_every": 0, "log_every": 1,
                  "processes": processes, "temperature": 1, "grad_cache_chunk": grad_cache_chunk},
        "negatives": {"per_query": 1, "depth": 30},
        **({"colbert": {"dim": 16, "in_batch": True}} if method == "colbert" else {})}, method=method)
    root = tiny["root"]
    inputs = {"negatives": root / "ranking.parquet"}
    if teacher is not None:
        inputs.update(init=teacher, teacher=teacher)
    resolved = {"name": method, "method": method, "seed": 7, "params": params}
    return train_run(resolved, cache_dir=tiny["cache"], qrels_path=tiny["data"] / "qrels" / "train.parquet",
                     model_dir=out / "model", log_path=out / "log.parquet", checkpoint_dir=out / "ckpt",
                     tokenizer_source=tiny["tokenizer"], inputs={k: str(v) for k, v in inputs.items()})


@pytest.mark.slow
def test_two_processes_train_the_colbert_teacher_and_the_tct_student_like_one(tiny, tmp_path):
    """ColBERT's token vectors are padded to one width before the gather; every rank scores the whole batch
    with its own copy of the teacher."""
    from hardneg.dense.maxsim import ColBERT

    for method in ("colbert", "tct"):
        teacher = None if method == "colbert" else tmp_path / "one_colbert" / "model"
        one = _train_tct(tiny, method, tmp_path / f"one_{method}", processes=1, teacher=teacher)
        two = _train_tct(tiny, method, tmp_path / f"two_{method}", processes=2, teacher=teacher)
        assert len(one) == len(two) == 8
        np.testing.assert_allclose([r["loss"] for r in one], [r["loss"] for r in two], rtol=1e-5, atol=1e-5)
        load = ColBERT.load if method == "colbert" else BiEncoder.load
        a, b = (load(tmp_path / f"{side}_{method}" / "model").state_dict() for side in ("one", "two"))
        assert max(float((a[k] - b[k]).abs().max()) for k in a if not k.endswith("attention.self.key.bias")) <= 1e-4


@pytest.mark.slow
def test_two_processes_with_gradient_caching_train_like_one_without(tiny, tmp_path):
    """Gradient caching under DistributedDataParallel: each rank re-runs its own chunks in the backward pass, and
    the gradients all-reduced are those of the uncached step in one process (warm-up, STAR, and the TCT student
    with its teacher)."""
    _train_tct(tiny, "colbert", tmp_path / "teacher", processes=1)
    teacher = tmp_path / "teacher" / "model"
    for method in ("warmup", "star", "tct"):
        if method == "tct":
            one = _train_tct(tiny, method, tmp_path / f"one_{method}", processes=1, teacher=teacher)
            two = _train_tct(tiny, method, tmp_path / f"two_{method}", processes=2, teacher=teacher,
                             grad_cache_chunk=3)
        else:
            one = _train(tiny, method, tmp_path / f"one_{method}", processes=1)
            two = _train(tiny, method, tmp_path / f"two_{method}", processes=2, grad_cache_chunk=3)
        assert len(one) == len(two) == 8
        np.testing.assert_allclose([r["loss"] for r in one], [r["loss"] for r in two], rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose([r["grad_norm"] for r in one], [r["grad_norm"] for r in two], rtol=1e-4)
        a, b = _parameters(tmp_path / f"one_{method}" / "model"), _parameters(tmp_path / f"two_{method}" / "model")
        assert max(float((a[k] - b[k]).abs().max()) for k in a) <= 1e-4, method
