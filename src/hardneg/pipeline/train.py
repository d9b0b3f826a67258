"""Stage function of the training rule: build the method's data and model, train, save.

With ``train.processes`` (or ``train.gpus``) above 1, :func:`train_run` launches that many workers with
torch's launcher (:func:`hardneg.dense.distributed.launch`, what ``torchrun --standalone`` does); each worker
runs :func:`train_run` again with the same arguments and, finding itself in a launched process group, trains
as its rank. Only rank 0 writes the model, the log and checkpoints.

Before training, the process that starts it checks the data against the settings and prints what will not
train well on the console (:func:`training_warnings`): epochs of too few optimiser steps. After training, a
dense bi-encoder run measures how far its training queries score above held-out ones
(:mod:`hardneg.dense.memorisation`), records the numbers in its training log and prints a warning when the model
has learnt its training queries by heart.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from hardneg import methods
from hardneg.dense import distributed
from hardneg.dense.backbone import BUILTIN, ModelSpec
from hardneg.dense.checkpoint import load_checkpoint
from hardneg.dense.data import ShuffledBatches, TrainQueries
from hardneg.dense.dev_eval import dev_inputs
from hardneg.dense.memorisation import memorisation_advice, memorisation_warning
from hardneg.dense.model import BiEncoder, describe
from hardneg.dense.model_selection import resolve_keep
from hardneg.dense.tensorboard import TensorBoardLog
from hardneg.dense.tokenized import TokenizedTexts
from hardneg.dense.tokenizer import load_tokenizer
from hardneg.dense.train_config import TrainConfig, Window, resolve_device
from hardneg.dense.trainer import Trainer
from hardneg.dense.trainer_state import CHECKPOINT_FORMAT
from hardneg.errors import DataError
from hardneg.io import artifacts
from hardneg.io.logs import console
from hardneg.io.train_log import write_train_log
from hardneg.pipeline import episodes
from hardneg.pipeline.model_folder import save_run_model
from hardneg.pipeline.train_checks import held_out_checks
from hardneg.pipeline.train_steps import optimiser_steps, too_few_steps
from hardneg.schema.files import config_hash

if TYPE_CHECKING:
    import torch

log = logging.getLogger(__name__)


def train_config(resolved: dict) -> TrainConfig:
    """The ``TrainConfig`` of a resolved run (its validated ``params.train`` and its seed)."""
    return TrainConfig.from_params(resolved["params"]["train"], resolved["seed"])


def steps_per_epoch(num_rows: int, config: TrainConfig) -> int:
    """Optimiser steps of one epoch: batches of ``batch_size`` rows (a last one of a single row is dropped), one
    step per ``grad_accumulation`` batches (:func:`hardneg.pipeline.train_steps.optimiser_steps`)."""
    return optimiser_steps(
        num_rows, batch_size=config.batch_size, grad_accumulation=config.grad_accumulation, epochs=config.epochs
    )[0]


def training_warnings(resolved: dict, config: TrainConfig, train: TrainQueries) -> list[str]:
    """What will not train well, in words (empty when all is well): epochs of fewer than
    ``MIN_STEPS_PER_EPOCH`` optimiser steps when training makes fewer than ``MIN_TOTAL_STEPS`` in all
    (:func:`hardneg.pipeline.train_steps.too_few_steps`), with the fixes. (Whether the model learns its training
    queries by heart is measured after training: :mod:`hardneg.dense.memorisation`.)"""
    name = resolved["name"]
    messages = []
    steps, total = optimiser_steps(
        len(train), batch_size=config.batch_size, grad_accumulation=config.grad_accumulation, epochs=config.epochs
    )
    if too_few_steps(steps, total) and "episode" not in resolved:  # episodes count steps
        rows = "one per (query, positive) judgement" if train.per_judgement else "one per query"
        accumulation = f", grad_accumulation {config.grad_accumulation}" if config.grad_accumulation > 1 else ""
        fixes = ["more epochs (params.train.epochs)", "a smaller batch (params.train.batch_size)"]
        if not train.per_judgement and train.num_judgements > train.num_queries:
            fixes.append(f"one row per judgement (params.train.rows: judgement, {train.num_judgements:,} rows)")
        messages.append(
            f"run {name}: an epoch is {steps} optimiser step{'s' if steps != 1 else ''} ({len(train):,} training "
            f"rows, {rows}; batch_size {config.batch_size}{accumulation}), {total} in all over {config.epochs} "
            f"epoch{'s' if config.epochs != 1 else ''}: too few to train.\nFor more steps: "
            + ", ".join(fixes[:-1])
            + f" or {fixes[-1]}."
        )
    return messages


def load_training_data(cache_dir, qrels_path, config: TrainConfig):
    """The tokenized training queries and corpus of the cache, and the training rows (:class:`TrainQueries`)."""
    query_texts = TokenizedTexts(cache_dir, f"queries_{config.split}")
    doc_texts = TokenizedTexts(cache_dir, "corpus")
    qrels = artifacts.read_table(artifacts.QRELS, qrels_path)
    train = TrainQueries(qrels, query_texts.row_ids, doc_texts.row_ids, per_judgement=config.rows == "judgement")
    return query_texts, doc_texts, train


def step_context(
    resolved: dict,
    train: TrainQueries,
    query_texts,
    doc_texts,
    inputs: dict,
    *,
    tokenizer=None,
    device: str | torch.device = "cpu",
) -> methods.StepContext:
    """What the run's method builds its training step and its batch sampler from."""
    return methods.StepContext(
        resolved=resolved,
        train=train,
        query_texts=query_texts,
        doc_texts=doc_texts,
        inputs=inputs,
        tokenizer=tokenizer,
        device=str(device),
    )


def _build_step(resolved: dict):
    """The run's method's ``build_step`` (a trained method declares one)."""
    build_step = methods.get(resolved["method"]).build_step
    assert build_step is not None, f"method {resolved['method']} trains nothing"
    return build_step


def build_method(resolved: dict, train: TrainQueries, query_texts, doc_texts, inputs: dict, *, tokenizer=None):
    """The training step of the run's method (``make_batch`` and ``loss``), built by the method's declaration in
    the registry (:mod:`hardneg.methods`) from the run's training inputs (name → path, see
    :meth:`hardneg.pipeline.plan.Plan.train_inputs`)."""
    context = step_context(resolved, train, query_texts, doc_texts, inputs, tokenizer=tokenizer)
    return _build_step(resolved)(context)


def build_sampler(context: methods.StepContext, config: TrainConfig):
    """The batch sampler of the run's method (``Method.build_sampler``), else a fresh seeded shuffle of the
    training rows each epoch."""
    declared = methods.get(context.resolved["method"]).build_sampler
    if declared is not None:
        return declared(context, config)
    return ShuffledBatches(len(context.train), config.batch_size, config.seed)


def handoff_fingerprint(resolved: dict) -> str:
    """What the trainer state one episode hands to the next is checked against: the episodic run, its method,
    seed, dataset and training params (the same for all its episodes; see :mod:`hardneg.pipeline.episodes`)."""
    return config_hash(
        {key: resolved[key] for key in ("method", "seed", "dataset", "params")} | {"of": resolved["episode"]["of"]}
    )


def episode_window(resolved: dict, inputs: dict, state_dir) -> Window | None:
    """The part of its episodic run's training an episode run trains (None for any other run): steps
    ``index × steps`` to ``(index + 1) × steps`` of a schedule of ``count × steps``, continuing the trainer state the
    previous episode wrote (training input ``state``) and writing its own to ``state_dir``."""
    episode = resolved.get("episode")
    if episode is None:
        return None
    if state_dir is None:
        raise ValueError(f"run {resolved['name']} is an episode: its trainer state needs a folder (state_dir)")
    plan = episodes.of(methods.get(resolved["method"]), resolved["params"])
    assert plan is not None, f"run {resolved['name']} is an episode: its method trains in episodes"
    fingerprint, start, start_state = handoff_fingerprint(resolved), episode["index"] * plan.steps, None
    if start:
        start_state = load_checkpoint(inputs["state"], fingerprint=fingerprint, format=CHECKPOINT_FORMAT)
        if start_state is None:
            raise DataError(
                inputs["state"],
                None,
                "the previous episode's trainer state cannot be continued (the "
                "log says why); run the previous episode again",
            )
    return Window(
        total_steps=plan.total_steps,
        start=start,
        stop=start + plan.steps,
        start_state=start_state,
        stop_state=state_dir,
        fingerprint=fingerprint,
    )


def train_run(
    resolved: dict,
    *,
    cache_dir,
    qrels_path,
    model_dir,
    log_path,
    checkpoint_dir,
    tokenizer_source,
    inputs: dict | None = None,
    method_modules=(),
    callbacks=(),
    threads_per_process: int | None = None,
    timings_path=None,
    tensorboard_dir=None,
    state_dir=None,
) -> list[dict]:
    """Train run ``resolved`` and save its model and its per-step training log.

    This is what the workflow's ``train_dense`` job does. The run's method (``resolved["method"]``, from the
    method registry ``hardneg.methods``) builds the training step and the batch sampler; the device is
    ``params.train.device``. With ``params.train.processes`` (or ``gpus``) above 1, that many worker processes
    are launched as ``torchrun --standalone`` would, each calling ``train_run`` with the same arguments; only
    rank 0 writes the model, the logs and checkpoints. A checkpoint in ``checkpoint_dir`` left by an interrupted
    attempt with the same configuration is resumed. A method that does not train (a model evaluated as it is), or
    a run with ``train.epochs: 0`` (a pretrained cross-encoder used with its own head), saves its ``init`` model,
    else the model of ``params.model``, and an empty log.

    Before training, the starting process prints on the console what will not train well: epochs of fewer than 20
    optimiser steps when training makes fewer than 100 in all. At its last step, a bi-encoder's training measures
    its RR@10 on a sample of its training queries and of the held-out queries of ``params.train.dev_split``
    (:class:`hardneg.dense.memorisation.MemorisationCheck`): the numbers go into the last row of the log, and a
    training RR@10 far above the held-out one is a console warning that the model learnt its training queries by
    heart.

    :param resolved: the run's resolved configuration, as written to ``results/<run>/config.yaml`` (read it with
        ``hardneg.schema.files.read_resolved``): ``name``, ``method``, ``seed``, ``dataset``, ``params`` (with
        ``model`` and ``train``), and ``episode`` for an episode run.
    :param cache_dir: the tokenized cache of the run's dataset and tokenizer
        (``results/datasets/<dataset>/tokenized/<key>``), holding the tokenized corpus and each split's queries.
    :type cache_dir: str | os.PathLike
    :param qrels_path: the training split's QRELS Parquet file; the dev split's qrels (``params.train.dev_split``,
        when ``dev_every`` is set) are read from the same folder.
    :type qrels_path: str | os.PathLike
    :param model_dir: the folder the trained model is saved to, atomically; a bi-encoder's is a Hugging Face model
        folder with ``hardneg.json`` and the tokenizer, which ``hardneg.dense.model.BiEncoder.load`` reads; every
        model folder gets its model card, ``README.md`` (:mod:`hardneg.pipeline.model_folder`).
    :type model_dir: str | os.PathLike
    :param log_path: the Parquet file of the per-step log written: one row per optimiser step with ``step``,
        ``epoch``, ``loss``, ``lr`` (learning rate), ``grad_norm`` (gradient norm before clipping), the method's
        statistics and the events' columns (e.g. ``dev_rr10``, ``dev_rr100``); no wall-clock times.
    :type log_path: str | os.PathLike
    :param checkpoint_dir: the folder of the periodic checkpoints (``params.train.checkpoint_every``); removed
        once training ends.
    :type checkpoint_dir: str | os.PathLike
    :param tokenizer_source: the tokenizer the cache was built with (a folder or a Hugging Face hub name), used
        when there is no ``init`` model.
    :type tokenizer_source: str
    :param inputs: the run's training inputs beside the cache and the qrels, name → path: ``init`` (the model to
        continue) and what the method's roles provide (``negatives``, ``hard_negatives``, ``doc_embeddings``,
        ``train_index``, ...; see ``hardneg.pipeline.plan.Plan.train_inputs``); for an episode after the first,
        ``state`` (the previous episode's trainer state).
    :param method_modules: the modules declaring the run's method when it is not built in (a config's
        ``method_modules`` entry), imported here and in every worker.
    :type method_modules: list[str] | tuple[str, ...]
    :param callbacks: trainer events (objects with ``on_epoch_start(trainer, epoch)`` and/or
        ``on_step_end(trainer, step, row)``) or functions called as ``callback(trainer, step)`` after every
        optimiser step; with several processes they must be picklable (module-level) and every rank gets them.
    :type callbacks: list | tuple
    :param threads_per_process: torch threads of each of several processes; None: the available CPUs shared
        among them.
    :param timings_path: where to write, as Parquet, the wall-clock seconds of each part of each optimiser step
        (``Trainer.timings``); None: not written.
    :type timings_path: str | os.PathLike | None
    :param tensorboard_dir: the TensorBoard log folder, written while training runs when
        ``params.train.tensorboard`` is on; None: no TensorBoard log.
    :type tensorboard_dir: str | os.PathLike | None
    :param state_dir: for an episode run (``hardneg.pipeline.episodes``), the folder its trainer state at its last
        step is written to, which the next episode continues; its log rows are then its own steps only.
    :type state_dir: str | os.PathLike | None
    :returns: the per-step log rows written to ``log_path`` (an empty list for a run that does not train).
    :raises ConfigError: ``params.train.dev_every`` is set but the dev split's tokenized queries or qrels file is
        missing (the error names ``params.train.dev_split``).
    :raises DataError: a qrels file that is missing or does not match its schema, or an episode's previous
        trainer state that cannot be continued.
    :raises ValueError: an episode run without ``state_dir``.
    """
    arguments = dict(locals())  # exactly train_run's arguments, passed on unchanged to launched workers
    methods.load_modules(list(method_modules))
    params = resolved["params"]
    spec = ModelSpec.from_params(params["model"])
    if not _trains(resolved):  # a model evaluated as it is: no training data or processes
        _save_untrained(
            resolved,
            spec,
            model_dir=model_dir,
            log_path=log_path,
            tokenizer_source=tokenizer_source,
            init_model=(inputs or {}).get("init"),
        )
        if timings_path is not None:
            write_train_log([], timings_path)
        return []
    config = train_config(resolved)
    if config.dev_every:
        dev_inputs(cache_dir, qrels_path, config.dev_split)  # a missing dev split fails before any work
    data = None
    if not distributed.in_launched_worker():  # the starting process speaks, not every worker
        data = load_training_data(cache_dir, qrels_path, config)
        for message in training_warnings(resolved, config, data[2]):
            console(message)
    if config.num_processes > 1 and not distributed.in_launched_worker():
        return distributed.launch(train_run, arguments, config.num_processes, threads=threads_per_process)
    with distributed.process_group(config.device, threads_per_process) as replicas:
        return _train(
            resolved,
            config,
            spec,
            replicas,
            cache_dir=cache_dir,
            qrels_path=qrels_path,
            model_dir=model_dir,
            log_path=log_path,
            checkpoint_dir=checkpoint_dir,
            tokenizer_source=tokenizer_source,
            inputs=dict(inputs or {}),
            callbacks=callbacks,
            data=data,
            timings_path=timings_path,
            tensorboard_dir=tensorboard_dir,
            state_dir=state_dir,
        )


def _trains(resolved: dict) -> bool:
    """Whether run ``resolved`` takes optimiser steps: its method trains, and ``train.epochs`` is not 0 (a run
    trained in episodes counts its steps by episode, not by epoch)."""
    method = methods.get(resolved["method"])
    epochs = resolved["params"].get("train", {}).get("epochs")
    return method.trains and (epochs != 0 or method.episodes is not None)


def _train(
    resolved: dict,
    config: TrainConfig,
    spec: ModelSpec,
    replicas: distributed.Replicas,
    *,
    cache_dir,
    qrels_path,
    model_dir,
    log_path,
    checkpoint_dir,
    tokenizer_source,
    inputs,
    callbacks,
    data=None,
    timings_path=None,
    tensorboard_dir=None,
    state_dir=None,
) -> list[dict]:
    """One process's part of :func:`train_run` (all of it in one process). ``data``: what
    :func:`load_training_data` gives, when the caller has it already."""
    query_texts, doc_texts, train = data or load_training_data(cache_dir, qrels_path, config)
    log.info(
        "%d training rows (%s) of %d queries with a relevant document",
        len(train),
        "one per judgement" if train.per_judgement else "one per query",
        train.num_queries,
    )
    model, tokenizer = _initial_model(resolved, spec, tokenizer_source, inputs.get("init"))
    context = step_context(
        resolved,
        train,
        query_texts,
        doc_texts,
        inputs,
        tokenizer=tokenizer,
        device=replicas.device or resolve_device(config.device),
    )
    method = _build_step(resolved)(context)
    sampler = build_sampler(context, config)
    checks = held_out_checks(
        resolved, config, spec, model, doc_texts, inputs, cache_dir=cache_dir, qrels_path=qrels_path
    )
    events = list(callbacks) + checks.events
    if config.tensorboard and tensorboard_dir is not None:
        # last, so that it sees the columns every other event adds to the step's row
        events.append(TensorBoardLog(tensorboard_dir, config.log_every, config.checkpoint_every))
    window = episode_window(resolved, inputs, state_dir)
    trainer = Trainer(
        model,
        method,
        sampler,
        config,
        checkpoint_dir=checkpoint_dir,
        fingerprint=config_hash(resolved),
        device=config.device,
        callbacks=events,
        replicas=replicas,
        window=window,
    )
    rows = trainer.fit()
    if window is not None:  # an episode's log: its own steps (the state it continued holds the earlier ones)
        rows = [row for row in rows if row["step"] > window.start]
    keep = resolve_keep(config.keep, config.dev_every)
    last_step = window.stop if window is not None else trainer.total_steps
    if window is not None and window.stop < window.total_steps:
        keep = "last"  # an episode before the last: the next one continues its model
    selection = checks.selection
    kept = selection.record(keep, last_step)
    if keep == "best" and selection.restore(model):
        log.info(
            "kept the model of step %d of %d: the best dev %s (%.4f; the last evaluated step's %.4f)",
            kept["step"],
            last_step,
            selection.measure,
            kept["value"],
            kept["last_value"],
        )
    if replicas.is_main:
        advice = memorisation_advice(
            pretrained=spec.name != BUILTIN,
            epochs=config.epochs,
            queries=train.num_queries,
            learning_rate=config.learning_rate,
            selects=resolve_keep(config.keep, config.dev_every) == "best",
        )
        memorisation = checks.memorisation
        message = (
            memorisation_warning(resolved["name"], memorisation.result, advice=advice, kept=kept)
            if memorisation and memorisation.result
            else None
        )
        if message:
            console(message)
        save_run_model(
            model.to("cpu"), tokenizer, model_dir, resolved, init_model=inputs.get("init"), train=train, kept=kept
        )
        write_train_log(rows, log_path, kept=kept)
        if timings_path is not None:
            write_train_log(trainer.timings, timings_path)
        trainer.discard_checkpoint()
    replicas.barrier()  # the model is saved before any rank returns
    return rows


def _initial_model(resolved: dict, spec: ModelSpec, tokenizer_source, init_model):
    """The model training starts from (the ``init`` model, else a new one of ``spec``) and its tokenizer: the
    method's own model (``Method.new_model``), else a bi-encoder. A bi-encoder continuing a model that is not one
    (a TCT student from its ColBERT teacher) starts as that model's method declares (``Method.bi_encoder_from``)."""
    tokenizer = load_tokenizer(init_model or tokenizer_source)
    new_model = methods.get(resolved["method"]).new_model
    if new_model is not None:
        model = new_model(spec, tokenizer, resolved, init_model)
    elif init_model:
        model = _bi_encoder_from(init_model, spec, resolved["seed"])
        if model is None:
            model = BiEncoder.load(init_model)
            # the lengths of this run's tokenized cache, which a continued run may set (CONTINUED_MODEL_KEYS)
            model.query_max_length, model.doc_max_length = spec.query_max_length, spec.doc_max_length
    else:
        model = BiEncoder.create(
            spec,
            vocab_size=len(tokenizer),
            pad_token_id=tokenizer.pad_token_id,
            max_length=spec.doc_max_length,
            seed=resolved["seed"],
            tokenizer=tokenizer,
        )
    if init_model:
        log.info("initialised from %s", init_model)
    log.info("model: %s", describe(model))
    return model, tokenizer


def _bi_encoder_from(folder, spec: ModelSpec, seed: int):
    """A bi-encoder started from the model in ``folder`` by the method that saved it, when that model is not a
    bi-encoder; None otherwise."""
    for method in methods.methods().values():
        model = method.bi_encoder_from(folder, spec, seed) if method.bi_encoder_from is not None else None
        if model is not None:
            return model
    return None


def _save_untrained(resolved: dict, spec: ModelSpec, *, model_dir, log_path, tokenizer_source, init_model) -> None:
    """Save the model a run that does not train evaluates (its ``init`` model, else ``params.model``) and an
    empty training log."""
    model, tokenizer = _initial_model(resolved, spec, tokenizer_source, init_model)
    save_run_model(model, tokenizer, model_dir, resolved, init_model=init_model)
    write_train_log([], log_path)
