"""Stage function of the training rule: build the method's data and model, train, save.

With ``train.processes`` (or ``train.gpus``) above 1, :func:`train_run` launches that many workers with
torch's launcher (:func:`hardneg.dense.distributed.launch`, what ``torchrun --standalone`` does); each worker
runs :func:`train_run` again with the same arguments and, finding itself in a launched process group, trains
as its rank. Only rank 0 writes the model, the log and checkpoints.
"""

from __future__ import annotations

import logging
import os

import pyarrow as pa

from hardneg import artifacts, methods
from hardneg.atomic import atomic_path
from hardneg.config import config_hash
from hardneg.dense import distributed
from hardneg.dense.data import ShuffledBatches, TrainQueries
from hardneg.dense.model import BiEncoder, ModelSpec, describe
from hardneg.dense.tokenized import TokenizedTexts
from hardneg.dense.tokenizer import load_tokenizer
from hardneg.dense.trainer import Trainer, TrainConfig

log = logging.getLogger(__name__)


def train_config(resolved: dict) -> TrainConfig:
    """The ``TrainConfig`` of a resolved run (its validated ``params.train`` and its seed)."""
    return TrainConfig.from_params(resolved["params"]["train"], resolved["seed"])


def build_method(resolved: dict, train: TrainQueries, query_texts, doc_texts, inputs: dict):
    """The training step of the run's method (``make_batch`` and ``loss``), built by the method's declaration in
    the registry (:mod:`hardneg.methods`) from the run's training inputs (name → path, see
    :meth:`hardneg.plan.Plan.train_inputs`)."""
    from hardneg import methods

    context = methods.StepContext(resolved=resolved, train=train, query_texts=query_texts, doc_texts=doc_texts,
                                  inputs=inputs)
    return methods.get(resolved["method"]).build_step(context)


def train_run(resolved: dict, *, cache_dir, qrels_path, model_dir, log_path, checkpoint_dir, tokenizer_source,
              inputs: dict | None = None, method_modules=(), callbacks=(),
              threads_per_process: int | None = None) -> list[dict]:
    """Train run ``resolved`` and save its model to ``model_dir`` and its per-step log to ``log_path``.

    ``inputs`` are the run's training inputs beside the tokenized cache and the qrels (name → path, as
    :meth:`hardneg.plan.Plan.train_inputs` gives them): ``init``, the model to continue, and what the method's
    roles provide (``negatives``, ``hard_negatives``, ``doc_embeddings``, ``train_index``, ...). The device is
    ``params.train.device``. ``method_modules``: the module declaring the run's method when it is not one of
    :mod:`hardneg.methods` (a config's ``method_modules`` entry), imported here and in every worker.

    A checkpoint in ``checkpoint_dir`` from an interrupted attempt with the same configuration is resumed.
    ``callbacks`` are trainer events (``on_epoch_start(trainer, epoch)``, ``on_step_end(trainer, step, row)``)
    or functions called as ``callback(trainer, step)`` after every optimiser step; with several processes
    they must be picklable (module-level), and every rank gets them. ``threads_per_process``: torch threads of
    each of several processes (default: the available CPUs shared among them). Returns the log rows.
    """
    arguments = dict(locals())  # exactly train_run's arguments, passed on unchanged to launched workers
    methods.load_modules(list(method_modules))
    params = resolved["params"]
    config = train_config(resolved)
    spec = ModelSpec.from_params(params["model"])
    trained = methods.get(resolved["method"]).trains
    if trained and config.dev_every:
        from hardneg.dense.dev_eval import dev_inputs

        dev_inputs(cache_dir, qrels_path, config.dev_split)  # a missing dev split fails before any work
    if trained and config.num_processes > 1 and not distributed.in_launched_worker():
        return distributed.launch(train_run, arguments, config.num_processes, threads=threads_per_process)
    with distributed.process_group(config.device, threads_per_process) as replicas:
        return _train(resolved, config, spec, replicas, cache_dir=cache_dir, qrels_path=qrels_path,
                      model_dir=model_dir, log_path=log_path, checkpoint_dir=checkpoint_dir,
                      tokenizer_source=tokenizer_source, inputs=dict(inputs or {}), trained=trained,
                      callbacks=callbacks)


def _train(resolved: dict, config: TrainConfig, spec: ModelSpec, replicas: distributed.Replicas, *, cache_dir,
           qrels_path, model_dir, log_path, checkpoint_dir, tokenizer_source, inputs, trained,
           callbacks) -> list[dict]:
    """One process's part of :func:`train_run` (all of it in one process)."""
    query_texts = TokenizedTexts(cache_dir, f"queries_{config.split}")
    doc_texts = TokenizedTexts(cache_dir, "corpus")
    qrels = artifacts.read_table(artifacts.QRELS, qrels_path)
    train = TrainQueries(qrels, query_texts.row_ids, doc_texts.row_ids)
    log.info("%d training queries with a relevant document", len(train))
    init_model = inputs.get("init")
    tokenizer = load_tokenizer(init_model or tokenizer_source)
    if init_model:
        model = BiEncoder.load(init_model)
        log.info("initialised from %s", init_model)
    else:
        model = BiEncoder.create(spec, vocab_size=len(tokenizer), pad_token_id=tokenizer.pad_token_id,
                                 max_length=spec.doc_max_length, seed=resolved["seed"])
    log.info("model: %s", describe(model))
    if not trained:
        if replicas.is_main:
            model.save(model_dir, tokenizer)
            write_train_log([], log_path)
        return []
    method = build_method(resolved, train, query_texts, doc_texts, inputs)
    sampler = ShuffledBatches(len(train), config.batch_size, config.seed)
    events = list(callbacks)
    if config.dev_every:
        from hardneg.dense.dev_eval import DevEvaluation

        events.append(DevEvaluation.from_split(cache_dir, qrels_path, config.dev_split, config.dev_every))
    trainer = Trainer(model, method, sampler, config, checkpoint_dir=checkpoint_dir, fingerprint=config_hash(resolved),
                      device=config.device, callbacks=events, replicas=replicas)
    rows = trainer.fit()
    if replicas.is_main:
        model.to("cpu").save(model_dir, tokenizer)
        write_train_log(rows, log_path)
        trainer.discard_checkpoint()
    replicas.barrier()  # the model is saved before any rank returns
    return rows


def write_train_log(rows: list[dict], path: str | os.PathLike) -> None:
    import pyarrow.parquet as pq

    table = pa.Table.from_pylist(rows) if rows else pa.table({"step": pa.array([], pa.int64())})
    with atomic_path(path) as tmp:
        pq.write_table(table, tmp)
