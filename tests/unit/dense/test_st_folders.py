"""A sentence-transformers folder as ``params.model.name`` (:mod:`hardneg.dense.st_folder`): hardneg reads its
pooling, Dense, LayerNorm and Normalize modules and its prompts, and its query and document vectors are
sentence-transformers' ``encode_query`` / ``encode_document`` of the folder, before training and, saved
(:mod:`hardneg.dense.st_layout`), after a few optimiser steps.

The folders are tiny BERTs with a WordPiece vocabulary written here, assembled and saved by sentence-transformers
itself. A pretrained folder reads a document with a title as the one string ``"title [SEP] text"``, or as the
pair (title, text) without token type ids (sentence-transformers passes them by default, hardneg does not); a
folder hardneg saved reads the plain pair too."""

import json

import numpy as np
import pyarrow as pa
import pytest
import torch

from hardneg.dense.backbone import ModelSpec
from hardneg.dense.encode import encode_rows
from hardneg.dense.model import BiEncoder
from hardneg.dense.model_card import CardFacts, render_model_card
from hardneg.dense.st_folder import cache_prompts, model_folder, resolve_model
from hardneg.dense.st_layout import pair_separator
from hardneg.dense.tokenized import TokenizedTexts, build_cache, cache_key
from hardneg.dense.tokenizer import load_tokenizer
from hardneg.errors import ConfigError
from hardneg.io import artifacts
from hardneg.pipeline.config import validate_params

HIDDEN = 16
WORDS = ["cats", "sleep", "most", "of", "the", "day", "and", "hunt", "birds", "at", "night", "dogs", "are", "loyal",
         "wolves", "live", "in", "packs", "short", "text", "weather", "rain", "why", "do", "what", "query", "passage"]
DOCS = [("d1", "Cats", "Cats sleep most of the day and hunt birds at night."),
        ("d2", "", "A short text."),
        ("d3", "Dogs and wolves", "Dogs are loyal, wolves live in packs."),
        ("d4", "Weather", "Rain at night.")]
QUERIES = [("q1", "why do cats sleep"), ("q2", "dogs"), ("q3", "what do wolves hunt at night")]
E5 = {"query": "query: ", "document": "passage: "}
TOLERANCE = 1e-5
NO_TOKEN_TYPES = {"text": {"return_token_type_ids": False}}  # (title, text) pairs as hardneg reads them


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    """A tiny BERT folder with its WordPiece tokenizer, and the documents and queries as hardneg's files."""
    from transformers import BertConfig, BertModel, BertTokenizerFast

    root = tmp_path_factory.mktemp("st-folders")
    chars = list("abcdefghijklmnopqrstuvwxyz.,:")
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *chars, *[f"##{c}" for c in chars], *WORDS]
    (root / "bert").mkdir()
    (root / "bert" / "vocab.txt").write_text("\n".join(vocab) + "\n")
    BertTokenizerFast(str(root / "bert" / "vocab.txt")).save_pretrained(root / "bert")
    torch.manual_seed(0)
    BertModel(BertConfig(vocab_size=len(vocab), hidden_size=HIDDEN, num_hidden_layers=1, num_attention_heads=2,
                         intermediate_size=32, max_position_embeddings=64)).save_pretrained(root / "bert")
    artifacts.write_table(pa.table({"docid": [d[0] for d in DOCS], "title": [d[1] for d in DOCS],
                                    "text": [d[2] for d in DOCS]}), artifacts.CORPUS, root / "corpus.parquet")
    artifacts.write_table(pa.table({"qid": [q[0] for q in QUERIES], "text": [q[1] for q in QUERIES]}),
                          artifacts.QUERIES, root / "queries.parquet")
    return root


def st_folder(base, name: str, pooling: str, *, include_prompt=True, dense=(), layer_norm=False, normalize=False,
              prompts=E5, similarity=None):
    """A sentence-transformers folder saved by sentence-transformers: the tiny BERT, ``pooling``, a Dense module
    per ``(out_features, bias, activation)`` of ``dense``, a LayerNorm, Normalize."""
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.base.modules import Dense, Normalize, Transformer
    from sentence_transformers.sentence_transformer.modules import LayerNorm, Pooling

    torch.manual_seed(1)
    modules, width = [Transformer(str(base / "bert"), max_seq_length=64),
                      Pooling(HIDDEN, pooling, include_prompt=include_prompt)], HIDDEN
    for out_features, bias, activation in dense:
        modules.append(Dense(width, out_features, bias=bias, activation_function=activation))
        width = out_features
    if layer_norm:
        modules.append(LayerNorm(width))
        torch.nn.init.normal_(modules[-1].norm.weight)  # not the identity it starts as
    if normalize:
        modules.append(Normalize())
    model = SentenceTransformer(modules=modules, prompts=prompts, similarity_fn_name=similarity, device="cpu")
    model.save(str(base / name))
    return base / name


def hardneg_model(base, folder, name: str, **model):
    """(spec, model in eval mode, tokenized documents, tokenized queries) of ``params.model.name: folder``."""
    section = validate_params({"model": {"name": str(folder), "query_max_length": 32, "doc_max_length": 48,
                                         **model}})["model"]
    spec = ModelSpec.from_params(section)
    tokenizer = load_tokenizer(folder)
    cache = base / f"cache-{name}"
    build_cache(folder, base / "corpus.parquet", {"test": base / "queries.parquet"}, cache, doc_max_length=48,
                query_max_length=32, query_prompt=spec.query_prompt, doc_prompt=spec.doc_prompt)
    created = BiEncoder.create(spec, vocab_size=len(tokenizer), pad_token_id=tokenizer.pad_token_id,
                               max_length=48, seed=1, tokenizer=tokenizer)
    return spec, created.eval(), TokenizedTexts(cache, "corpus"), TokenizedTexts(cache, "queries_test")


def vectors(model, docs, queries):
    with torch.no_grad():
        return (encode_rows(model, queries, np.arange(len(queries)), "query"),
                encode_rows(model, docs, np.arange(len(docs)), "doc"))


def documents(separator: str | None):
    """The documents as sentence-transformers is given them: ``"title [SEP] text"`` (``separator``), or with
    None the pair (title, text); the text alone without a title."""
    if separator is None:
        return [(title, text) if title else text for _, title, text in DOCS]
    return [f"{title} {separator} {text}" if title else text for _, title, text in DOCS]


def assert_same(ours, theirs):
    assert np.abs(np.asarray(theirs) - ours).max() <= TOLERANCE


def assert_saved_encodes_as_hardneg(model, folder, docs, queries, tmp_path):
    """``model`` saved (with ``folder``'s tokenizer) and loaded by sentence-transformers: its ``encode_query`` /
    ``encode_document`` give hardneg's vectors."""
    from sentence_transformers import SentenceTransformer

    model.save(tmp_path / "saved", load_tokenizer(folder))
    trained = SentenceTransformer(str(tmp_path / "saved"), device="cpu")
    ours_q, ours_d = vectors(model, docs, queries)
    assert_same(ours_q, trained.encode_query([text for _, text in QUERIES]))
    assert_same(ours_d, trained.encode_document(documents(None)))


def train_a_few_steps(model, docs, queries, steps: int = 2):
    """A few AdamW steps of an in-batch contrastive loss (query i's positive: document i)."""
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    rows = np.arange(len(queries))
    model.train()
    before = [p.detach().clone() for p in model.parameters()]
    for _ in range(steps):
        q, d = model(queries.batch(rows), docs.batch(rows))
        loss = torch.nn.functional.cross_entropy(q @ d.T / 0.1, torch.arange(len(rows)))
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    model.eval()
    assert any(not torch.equal(a, b) for a, b in zip(before, model.parameters()))  # it did train


CASES = {
    "cls-dense-tanh-normalize": dict(pooling="cls", dense=[(8, True, torch.nn.Tanh())], normalize=True),
    "cls-without-prompt": dict(pooling="cls", include_prompt=False, normalize=True),
    "mean-without-prompt-dense-normalize": dict(pooling="mean", include_prompt=False,
                                                dense=[(8, True, torch.nn.Tanh())], normalize=True),
    "max": dict(pooling="max", similarity="dot"),
    "lasttoken-dense-no-bias": dict(pooling="lasttoken", include_prompt=False,
                                    dense=[(12, False, torch.nn.Identity())], similarity="dot"),
    "weightedmean-without-prompt": dict(pooling="weightedmean", include_prompt=False, normalize=True),
    "mean_sqrt_len_tokens-two-dense-layernorm": dict(pooling="mean_sqrt_len_tokens",
                                                     dense=[(12, True, torch.nn.GELU()), (8, True, torch.nn.Tanh())],
                                                     layer_norm=True, normalize=True),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_a_sentence_transformers_folder_encodes_as_sentence_transformers_before_and_after_training(base, tmp_path,
                                                                                                    case):
    from sentence_transformers import SentenceTransformer

    name = next(key for key, value in CASES.items() if value is case)
    folder = st_folder(base, name, **case)
    spec, model, docs, queries = hardneg_model(base, folder, name)
    assert spec.pooling == case["pooling"] and spec.normalize == case.get("normalize", False)
    assert (spec.query_prompt, spec.doc_prompt) == ("query: ", "passage: ")
    assert len(model.layers) == len(case.get("dense", ())) + case.get("layer_norm", False)
    pretrained = SentenceTransformer(str(folder), device="cpu")
    separator = pair_separator(load_tokenizer(folder))
    ours_q, ours_d = vectors(model, docs, queries)
    assert_same(ours_q, pretrained.encode_query([text for _, text in QUERIES]))
    assert_same(ours_d, pretrained.encode_document(documents(separator)))
    assert_same(ours_d, pretrained.encode_document(documents(None), processing_kwargs=NO_TOKEN_TYPES))
    assert np.abs(pretrained.encode([text for _, text in QUERIES]) - ours_q).max() > 10 * TOLERANCE  # no prompt

    train_a_few_steps(model, docs, queries)
    model.save(tmp_path / "saved", load_tokenizer(folder))
    trained = SentenceTransformer(str(tmp_path / "saved"), device="cpu")
    ours_q, ours_d = vectors(model, docs, queries)
    assert np.abs(pretrained.encode_query([text for _, text in QUERIES]) - ours_q).max() > 10 * TOLERANCE
    assert_same(ours_q, trained.encode_query([text for _, text in QUERIES]))
    assert_same(ours_d, trained.encode_document(documents(None)))
    assert_same(ours_d, trained.encode_document(documents(separator)))
    assert trained.prompts["query"] == "query: " and trained.prompts["document"] == "passage: "
    reloaded = BiEncoder.load(tmp_path / "saved").eval()  # and hardneg reads its own folder back
    assert_same(ours_q, vectors(reloaded, docs, queries)[0])
    if model.layers:
        facts = CardFacts(run="r", method="star", summary="STAR", base_model=str(folder), seed=1, dataset="toy",
                          split="train", training_hash="ab" * 32)
        card = render_model_card(tmp_path / "saved", facts)
        assert "(the base model's sentence-transformers modules after its pooling)" in card


def test_separate_encoders_and_a_head_over_a_folders_layers_encode_as_sentence_transformers(base, tmp_path):
    """``shared: false`` and ``projection_dim`` on a folder with a Dense module: each encoder has its copy of the
    folder's layers, the head comes after them; saved, a Router gives each side its own."""
    folder = st_folder(base, "separate", "mean", include_prompt=False, dense=[(8, True, torch.nn.Tanh())],
                       normalize=True)
    _, model, docs, queries = hardneg_model(base, folder, "separate", shared=False, projection_dim=4)
    assert model.doc_layers is not None and model.query_head.linear.in_features == 8 and model.dim == 4
    train_a_few_steps(model, docs, queries)
    assert not torch.equal(model.query_layers[0].linear.weight, model.doc_layers[0].linear.weight)
    assert_saved_encodes_as_hardneg(model, folder, docs, queries, tmp_path)


def test_the_config_overrides_the_folder_and_auto_follows_the_similarity(base, tmp_path):
    """``pooling`` / ``normalize`` / prompts written in the config win over the folder's; ``normalize: auto``
    is true for a folder naming the cosine without a Normalize module; a folder naming its document prompt
    ``passage`` (as encode_document's candidates) gives it to documents."""
    from sentence_transformers import SentenceTransformer

    folder = st_folder(base, "cosine-passage", "mean", prompts={"query": "query: ", "passage": "passage: "},
                       similarity="cosine")
    spec, model, docs, queries = hardneg_model(base, folder, "cosine-passage")
    assert (spec.pooling, spec.normalize, spec.query_prompt, spec.doc_prompt) == ("mean", True, "query: ", "passage: ")
    pretrained = SentenceTransformer(str(folder), device="cpu")
    ours_q, ours_d = vectors(model, docs, queries)
    assert_same(ours_q, pretrained.encode_query([text for _, text in QUERIES], normalize_embeddings=True))
    assert_same(ours_d, pretrained.encode_document(documents(pair_separator(load_tokenizer(folder))),
                                                   prompt_name="passage", normalize_embeddings=True))
    model.save(tmp_path / "saved", load_tokenizer(folder))
    saved = SentenceTransformer(str(tmp_path / "saved"), device="cpu")
    assert_same(ours_d, saved.encode_document(documents(None)))  # the saved folder names it "document"
    card = render_model_card(tmp_path / "saved", CardFacts(run="e5_star", method="star", summary="STAR",
                                                           base_model=str(folder), seed=1, dataset="toy",
                                                           split="train", training_hash="ab" * 32))
    for expected in ('- **Prompts**: queries are read after the prompt "query: ", documents after "passage: "',
                     "`encode_query` gives the query vectors, `encode_document` the document vectors; plain "
                     "`encode` gives neither, as it reads a text without the prompts.",
                     "the prompts are not read by it"):
        assert expected in card, expected

    section = {"name": str(folder), "pooling": "cls", "normalize": False, "query_prompt": "", "doc_prompt": "doc: "}
    overridden = ModelSpec.from_params(validate_params({"model": section})["model"])
    assert (overridden.pooling, overridden.normalize, overridden.query_prompt, overridden.doc_prompt) == \
        ("cls", False, "", "doc: ")


def test_prompts_are_part_of_the_tokenized_cache(base):
    """The cache holds each text after its prompt, records the prompts, and is keyed by them; a cache without
    prompts keeps the key it had before prompts existed."""
    folder = st_folder(base, "e5-folder", "mean")
    spec, _, docs, queries = hardneg_model(base, folder, "e5")
    tokenizer = load_tokenizer(folder)
    first = queries.ids[0, :queries.lengths[0]].tolist()
    assert first == tokenizer("query: " + QUERIES[0][1])["input_ids"]
    assert docs.ids[0, :docs.lengths[0]].tolist() == tokenizer("passage: " + DOCS[0][1], DOCS[0][2])["input_ids"]
    assert json.loads((base / "cache-e5" / "cache.json").read_text())["prompts"] == {"query": "query: ",
                                                                                   "doc": "passage: "}
    assert cache_prompts({"name": str(folder), "query_prompt": None, "doc_prompt": None}) == ("query: ", "passage: ")
    assert cache_prompts({"name": "org/hub-model", "query_prompt": None, "doc_prompt": "d: "}) == (None, "d: ")
    plain = cache_key(str(folder), 48, 32)
    assert plain == cache_key(str(folder), 48, 32, "", "") and "-p" not in plain
    assert len({plain, cache_key(str(folder), 48, 32, "query: ", "passage: "),
                cache_key(str(folder), 48, 32, "query: ", ""), cache_key(str(folder), 48, 32, None, None)}) == 4


def test_auto_keeps_the_defaults_for_the_builtin_model_and_a_plain_hugging_face_folder(base):
    for name in ("builtin", str(base / "bert")):
        spec = resolve_model(validate_params({"model": {"name": name}})["model"])
        assert (spec["pooling"], spec["normalize"], spec["query_prompt"], spec["doc_prompt"]) == ("mean", True, "", "")
    assert model_folder(str(base / "bert")) is None


def test_a_folder_hardneg_cannot_read_is_one_clear_error(base):
    """A module a bi-encoder cannot hold, several pooling modes, ColBERT markers with the folder's prompts."""
    def spec_of(folder, **model):
        return ModelSpec.from_params(validate_params({"model": {"name": str(folder), **model}})["model"])

    router = st_folder(base, "router", "mean")
    modules = json.loads((router / "modules.json").read_text())
    (router / "modules.json").write_text(json.dumps(modules + [{"idx": 9, "name": "9", "path": "9_Router",
                                                                "type": "sentence_transformers.models.Router"}]))
    with pytest.raises(ConfigError, match="params.model.name.*'9_Router'.*Router"):
        model_folder(str(router)).layers()
    two_modes = st_folder(base, "two-modes", "mean")
    (two_modes / "1_Pooling" / "config.json").write_text(json.dumps({"embedding_dimension": HIDDEN,
                                                                      "pooling_mode": ["cls", "mean"]}))
    with pytest.raises(ConfigError, match="params.model.pooling"):
        spec_of(two_modes)
    assert spec_of(two_modes, pooling="cls").pooling == "cls"  # the config settles it
    with pytest.raises(ConfigError, match="params.model.markers"):
        spec_of(st_folder(base, "markers", "cls"), markers=True)

    # the configuration check reads a local folder as training will, naming the run's key
    from hardneg.pipeline.config import validate_config

    def check(folder, **model):
        config = {"seed": 1, "dataset": "tiny",
                  "datasets": {"tiny": {"adapter": "synthetic", "num_docs": 50, "num_queries": {"train": 5, "test": 5}}},
                  "runs": {"bm25": {"method": "bm25"},
                           "z": {"method": "zeroshot", "params": {"model": {"name": str(folder), **model}}}}}
        return validate_config(config)

    with pytest.raises(ConfigError) as error:
        check(router)
    assert error.value.key == "runs.z.params.model.name" and "9_Router" in error.value.message
    with pytest.raises(ConfigError) as error:
        check(two_modes)
    assert error.value.key == "runs.z.params.model.pooling"
    assert check(two_modes, pooling="mean")["runs"]["z"]["params"]["model"]["pooling"] == "mean"


def test_minilm_encodes_as_sentence_transformers_before_and_after_a_training_step(base, tmp_path):
    """The packaged all-MiniLM-L6-v2 with every setting left to its folder (mean pooling, Normalize)."""
    from sentence_transformers import SentenceTransformer

    from hardneg.dense.pretrained import model_source

    folder = model_source("minilm")
    spec, model, docs, queries = hardneg_model(base, folder, "minilm")
    assert (spec.pooling, spec.normalize, spec.query_prompt, spec.doc_prompt) == ("mean", True, "", "")
    pretrained = SentenceTransformer(folder, device="cpu")
    ours_q, ours_d = vectors(model, docs, queries)
    assert_same(ours_q, pretrained.encode_query([text for _, text in QUERIES]))
    assert_same(ours_d, pretrained.encode_document(documents(pair_separator(load_tokenizer(folder)))))
    train_a_few_steps(model, docs, queries, steps=1)
    assert_saved_encodes_as_hardneg(model, folder, docs, queries, tmp_path)


def test_a_folder_lowercasing_its_texts_is_read_lowercased(base, tmp_path):
    """A cased tokenizer under a Transformer with ``do_lower_case``: hardneg's cache lowercases as
    sentence-transformers does, and the saved folder still does."""
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.base.modules import Transformer
    from sentence_transformers.sentence_transformer.modules import Pooling
    from transformers import BertTokenizerFast

    cased = tmp_path / "cased"
    BertTokenizerFast(str(base / "bert" / "vocab.txt"), do_lower_case=False).save_pretrained(cased)
    for name in ("config.json", "model.safetensors"):
        (cased / name).write_bytes((base / "bert" / name).read_bytes())
    folder = tmp_path / "lowercasing"
    SentenceTransformer(modules=[Transformer(str(cased)), Pooling(HIDDEN, "mean")],
                        prompts={"query": "Query: "}, similarity_fn_name="dot", device="cpu").save(str(folder))
    settings = json.loads((folder / "sentence_bert_config.json").read_text())  # as folders saved before 5.x say
    (folder / "sentence_bert_config.json").write_text(json.dumps({**settings, "do_lower_case": True}))
    assert load_tokenizer(folder)("Cats DOGS")["input_ids"] == load_tokenizer(cased)("cats dogs")["input_ids"]
    _, model, docs, queries = hardneg_model(base, folder, "lowercasing")
    ours_q, ours_d = vectors(model, docs, queries)
    pretrained = SentenceTransformer(str(folder), device="cpu")
    assert_same(ours_q, pretrained.encode_query([text.upper() for _, text in QUERIES]))
    model.save(tmp_path / "saved", load_tokenizer(folder))
    saved = SentenceTransformer(str(tmp_path / "saved"), device="cpu")
    assert_same(ours_d, saved.encode_document([(title.upper(), text.upper()) if title else text.upper()
                                               for _, title, text in DOCS]))
