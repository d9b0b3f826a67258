"""Stage function of the training rule: build the method's data and model, train, save."""

from __future__ import annotations

import logging
import os

import pyarrow as pa

from hardneg import artifacts
from hardneg.atomic import atomic_path
from hardneg.config import config_hash
from hardneg.dense.data import RandomNegatives, RankedNegatives, ShuffledBatches, TrainQueries
from hardneg.dense.methods import DEFAULT_LOSS, NEGATIVE_SOURCES, UNTRAINED, ContrastiveMethod
from hardneg.dense.model import BiEncoder, describe, spec_from_params
from hardneg.dense.tokenized import TokenizedTexts
from hardneg.dense.tokenizer import load_tokenizer
from hardneg.dense.trainer import Trainer, TrainConfig

log = logging.getLogger(__name__)


def train_config(resolved: dict) -> TrainConfig:
    train = dict(resolved["params"]["train"])
    fields = {k: v for k, v in train.items() if k in TrainConfig.__dataclass_fields__}
    return TrainConfig(**fields, seed=resolved["seed"])


def build_method(resolved: dict, train: TrainQueries, query_texts, doc_texts, negatives_path=None,
                 doc_embeddings=None, train_index=None):
    method, params = resolved["method"], resolved["params"]
    if method == "adore":
        import numpy as np

        from hardneg.dense.adore import AdoreMethod
        from hardneg.index import load_index, set_search_params

        if doc_embeddings is None or train_index is None:
            raise ValueError("ADORE needs the fixed document embeddings and an index over them")
        index = load_index(train_index)
        set_search_params(index, params["index"]["search_params"])
        adore = params["adore"]
        return AdoreMethod(train, query_texts, np.load(doc_embeddings, mmap_mode="r"), index, top_k=adore["top_k"],
                           cut=adore["cut"], weighted=adore["weighted"],
                           temperature=params["train"].get("temperature", 1.0))
    source = NEGATIVE_SOURCES[method]
    per_query = params["negatives"]["per_query"]
    if source == "random":
        negatives = RandomNegatives(train)
    elif source in ("bm25", "hardnegs"):
        if negatives_path is None:
            raise ValueError(f"method {method!r} needs a negatives file")
        kind = artifacts.RUN if source == "bm25" else artifacts.HARDNEGS
        depth = params["negatives"].get("depth") if source == "bm25" else None
        negatives = RankedNegatives(train, artifacts.read_table(kind, negatives_path), doc_texts.row_ids, depth)
    else:
        negatives = None
    loss = params["train"].get("loss") or DEFAULT_LOSS[method]
    return ContrastiveMethod(train, query_texts, doc_texts, negatives=negatives, per_query=per_query, loss=loss,
                             temperature=params["train"].get("temperature", 1.0))


def train_run(resolved: dict, *, cache_dir, qrels_path, model_dir, log_path, checkpoint_dir, tokenizer_source,
              negatives_path=None, init_model=None, device: str = "auto", callbacks=(), doc_embeddings=None,
              train_index=None) -> list[dict]:
    """Train run ``resolved`` and save its model to ``model_dir`` and its per-step log to ``log_path``.

    A checkpoint in ``checkpoint_dir`` from an interrupted attempt with the same configuration is resumed.
    ``callbacks`` are called as ``callback(trainer, step)`` after every optimiser step.
    """
    params = resolved["params"]
    split = params["train"]["split"]
    query_texts = TokenizedTexts(cache_dir, f"queries_{split}")
    doc_texts = TokenizedTexts(cache_dir, "corpus")
    qrels = artifacts.read_table(artifacts.QRELS, qrels_path)
    train = TrainQueries(qrels, query_texts.row_ids, doc_texts.row_ids)
    log.info("%d training queries with a relevant document", len(train))
    tokenizer = load_tokenizer(init_model or tokenizer_source)
    if init_model:
        model = BiEncoder.load(init_model)
        log.info("initialised from %s", init_model)
    else:
        model = BiEncoder.create(spec_from_params(params["model"]), vocab_size=len(tokenizer),
                                 pad_token_id=tokenizer.pad_token_id, max_length=params["model"]["doc_max_length"],
                                 seed=resolved["seed"])
    log.info("model: %s", describe(model))
    if resolved["method"] in UNTRAINED:
        model.save(model_dir, tokenizer)
        write_train_log([], log_path)
        return []
    method = build_method(resolved, train, query_texts, doc_texts, negatives_path, doc_embeddings, train_index)
    config = train_config(resolved)
    sampler = ShuffledBatches(len(train), config.batch_size, config.seed)
    trainer = Trainer(model, method, sampler, config, checkpoint_dir=checkpoint_dir, fingerprint=config_hash(resolved),
                      device=device, callbacks=callbacks)
    rows = trainer.fit()
    model.to("cpu").save(model_dir, tokenizer)
    write_train_log(rows, log_path)
    trainer.discard_checkpoint()
    return rows


def write_train_log(rows: list[dict], path: str | os.PathLike) -> None:
    import pyarrow.parquet as pq

    table = pa.Table.from_pylist(rows) if rows else pa.table({"step": pa.array([], pa.int64())})
    with atomic_path(path) as tmp:
        pq.write_table(table, tmp)
