"""Training in episodes with negatives from an index refreshed in between (ANCE), as runs of the DAG.

A method that trains in episodes declares ``Method.episodes`` (its params → :class:`Episodes`). The run plan
expands each run of such a method (the *episodic run*, e.g. ``ance``) into one run per episode, named
``<run>/episodes/<e>`` and laid out under ``results/<run>/episodes/<e>/``; each is a run of the same method and
params with two inputs of its own:

* ``init``: the previous episode (episode 0: the episodic run's ``init``, its warm-up). The episode continues its
  model and its trainer state (optimiser, scheduler, data order, random states: ``trainer_state/``), so the
  episodes together are one continuous training of ``episodes × steps_per_episode`` optimiser steps whose
  negatives change at the episode boundaries;
* the miner role (``negatives``): the episode whose checkpoint mines this episode's hard negatives, episode
  ``e − 1 − lag`` (:func:`source_episode`). Before the first episode that is the episodic run's own miner input,
  else its ``init``: ANCE's first negatives are mined by its warm-up.

Every episode is thus an ordinary dense run of the DAG: its model is encoded (sharded), indexed and searched
with the train split's queries, and its hard negatives are mined and audited by the same rules as any other
run's. With ``lag`` 1 (ANCE's asynchronous Inferencer) episode ``e`` trains on negatives of checkpoint
``e − 2``, so training episode ``e`` and encoding checkpoint ``e − 1`` are independent jobs that run at the same
time; with ``lag`` 0 each episode waits for the negatives of the checkpoint just before it. The episodic run's
model is its last episode's, and its training log the episodes' logs end to end. With ``train.keep: best`` the
last episode's model is the best evaluated step of all the episodes (the comparison is part of the trainer state
each episode hands on), and the assembled log marks that step (:mod:`hardneg.io.train_log`).
"""

from __future__ import annotations

import copy
import shutil

import pyarrow as pa
import pyarrow.parquet as pq

from hardneg import methods
from hardneg.io.atomic import atomic_dir, atomic_path
from hardneg.io.layout import episode_run, parse_episode_run
from hardneg.io.train_log import mark_kept, read_kept
from hardneg.methods.registry import Episodes, source_episode


def of(method, params: dict) -> Episodes | None:
    """The episodes a run of ``method`` with ``params`` trains in; None for a method without episodes."""
    return method.episodes(params) if method.episodes is not None else None


def expand(runs: dict) -> dict:
    """``runs`` (a validated config's, name → run) with every episode run added after its episodic run."""
    out = {}
    for name, run in runs.items():
        out[name] = run
        method = methods.get(run["method"])
        plan = of(method, run.get("params", {}))
        if plan is None or parse_episode_run(name) is not None:
            continue
        miner_role = method.role_providing("miner")
        init_role = method.role_providing("model")
        inputs = run.get("inputs", {})
        first_miner = inputs.get(miner_role) or inputs[init_role]
        for index in range(plan.count):
            source = source_episode(index, plan.lag)
            episode = {key: copy.deepcopy(value) for key, value in run.items() if key != "inputs"}
            episode["inputs"] = {
                **{role: other for role, other in inputs.items() if role not in (miner_role, init_role)},
                init_role: episode_run(name, index - 1) if index else inputs[init_role],
                miner_role: episode_run(name, source) if source is not None else first_miner,
            }
            episode["episode"] = {"of": name, "index": index}
            out[episode_run(name, index)] = episode
    return out


def assemble(model, train_logs, timings, *, model_dir, log_path, timings_path) -> None:
    """Stage function: an episodic run's model (its last episode's ``model``, copied) and its training log and
    step timings (the episodes' ``train_logs`` and ``timings`` end to end, with an ``episode`` column)."""
    with atomic_dir(model_dir) as tmp:
        shutil.copytree(model, tmp, dirs_exist_ok=True)
    _concatenate(train_logs, log_path, kept=read_kept(train_logs[-1]) if train_logs else None)
    _concatenate(timings, timings_path)


def _concatenate(paths, target, kept: dict | None = None) -> None:
    tables = []
    for index, path in enumerate(paths):
        table = pq.read_table(path)
        tables.append(table.add_column(0, "episode", pa.array([index] * table.num_rows, pa.int32())))
    table = pa.concat_tables(tables, promote_options="default").replace_schema_metadata(None)
    with atomic_path(target) as tmp:
        pq.write_table(mark_kept(table, kept) if kept is not None else table, tmp)
