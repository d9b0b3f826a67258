"""The method registry: what a run's ``method`` is, declared once per method.

A method is declared by one module that defines ``METHOD = Method(...)``: its name, its kind (``lexical`` runs
are ranked by Pyserini, ``dense`` runs train a bi-encoder, ``rerank`` runs train a model that re-ranks another
run's ranking, ``fusion`` runs combine other runs' rankings), its own parameters (a typed dataclass and the JSON
schema of its keys, whose ``default:`` values are the only defaults), its input roles and what each role must
provide, and how to build its training step. The configuration schema, the run plan (:mod:`hardneg.pipeline.plan`), the
workflow rules and the training stage read these declarations; none of them branches on a method's name.

Methods are found in three places: the modules of this package, the modules listed under the config key
``method_modules`` (dotted names or ``.py`` paths), and the ``hardneg.methods`` entry-point group of installed
packages.
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import pkgutil
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

from hardneg.errors import ConfigError
from hardneg.schema.values import dataclass_from

LEXICAL, DENSE, RERANK, FUSION = "lexical", "dense", "rerank", "fusion"
KINDS = (LEXICAL, DENSE, RERANK, FUSION)
# Kinds whose runs train a model (results/<run>/model) from the tokenized cache.
TRAINED = (DENSE, RERANK)

# What an input role asks of the run it names, and what the plan builds from that run for the role.
PROVIDES = {
    "model": "a run with a trained model (dense or re-ranking) that this run starts from (results/<run>/model)",
    "ranking": "any run whose ranking of the training split is read (results/<run>/rankings/<train split>.parquet)",
    "reference_ranking": "any run whose ranking of the training split reports compare against",
    "miner": "a dense run whose model mines this run's static hard negatives (results/<this run>/hardnegs.parquet)",
    "doc_index": "a dense run whose corpus embeddings and indexes stay fixed; this run starts from its model",
    "teacher": "a run whose model scores training pairs (results/<run>/model)",
    "candidates": "any run whose ranking of each split this run re-ranks (results/<run>/rankings/<split>.parquet)",
    "runs": "a list of runs whose rankings are combined",
    "scorer": "a cross-encoder run whose model scores the candidate pool this run's negatives are selected from "
    "(results/<run>/model)",
    "pool_teacher": "a re-ranking run whose model scores the candidate pool this run's negatives are selected from, "
    "and the judged positives, as it ranks (results/<run>/model): the teacher's scores a run "
    "distils from",
}
# Roles whose run must be dense (its embeddings are used), and roles whose run must have a trained model.
DENSE_PROVIDES = frozenset({"miner", "doc_index"})
MODEL_PROVIDES = frozenset({"model", "teacher", "scorer", "pool_teacher"})


@dataclass(frozen=True)
class Episodes:
    """How an episodic run trains: ``count`` episodes of ``steps`` optimiser steps each, on negatives mined by
    the checkpoint ``lag`` episodes before the previous one (see :mod:`hardneg.pipeline.episodes`)."""

    count: int
    steps: int
    lag: int

    @property
    def total_steps(self) -> int:
        return self.count * self.steps


def source_episode(index: int, lag: int) -> int | None:
    """The episode whose checkpoint mines episode ``index``'s negatives: ``index − 1 − lag``; None when that is
    before the first episode (the episodic run's miner input, its warm-up by default, mines them)."""
    source = index - 1 - lag
    return source if source >= 0 else None


@dataclass(frozen=True)
class Role:
    """An input role of a method: ``inputs.<role>`` of a run names the run (or, with ``many``, the runs) that
    provide ``provides`` (a key of :data:`PROVIDES`). A role of many takes ``min_count`` to ``max_count`` runs
    (None: no upper bound)."""

    provides: str
    required: bool = True
    many: bool = False
    description: str = ""
    min_count: int = 1
    max_count: int | None = None

    def __post_init__(self):
        if self.provides not in PROVIDES:
            raise ValueError(f"unknown role kind {self.provides!r}; known: {', '.join(PROVIDES)}")
        if (self.min_count, self.max_count) != (1, None) and not self.many:
            raise ValueError("min_count and max_count are for a role of many runs (many=True)")
        if self.min_count < 1 or (self.max_count is not None and self.max_count < self.min_count):
            raise ValueError(f"a role takes min_count ({self.min_count}) to max_count ({self.max_count}) runs")


# The roles a method that mines static hard negatives (a role providing "miner") adds to its own: a cross-encoder
# scoring the candidate pool, for the policies' ce_threshold and ce_margin.
MINING_ROLES = {
    "cross_encoder": Role(
        "scorer",
        required=False,
        description="a cross-encoder run whose probabilities of relevance the mining "
        "policy reads (params.mining.ce_threshold, ce_margin)",
    )
}


@dataclass(frozen=True)
class StepContext:
    """What a method's training step is built from. ``inputs`` maps the training inputs the plan resolved for
    the run (e.g. ``negatives``, ``hard_negatives``, ``doc_embeddings``, ``train_index``) to file paths."""

    resolved: dict
    train: Any  # hardneg.dense.data.TrainQueries
    query_texts: Any  # hardneg.dense.tokenized.TokenizedTexts of the training queries
    doc_texts: Any  # hardneg.dense.tokenized.TokenizedTexts of the corpus
    inputs: Mapping[str, str]
    tokenizer: Any = None  # the tokenizer of the model training starts from (special token ids, vocabulary)
    device: str = "cpu"  # the device training runs on (a sampler that encodes with the model uses it)

    @property
    def params(self) -> dict:
        return self.resolved["params"]

    def input(self, name: str) -> str:
        if name not in self.inputs:
            raise ValueError(
                f"method {self.resolved['method']!r} needs the training input {name!r}; "
                f"given: {', '.join(sorted(self.inputs)) or 'none'}"
            )
        return self.inputs[name]


@dataclass(frozen=True)
class Method:
    """One method, declared once.

    ``schema`` holds the JSON schema of the method's own parameter keys (each with its ``default:``); for a
    dense run they sit beside the shared dense sections (model, train, negatives, encode, index, search), for a
    lexical run they are the whole ``params``. ``params`` is the dataclass they are read into
    (:meth:`read_params`): its fields are exactly the schema's keys, and it has no defaults of its own.
    ``training_sections`` are the params keys training depends on (changing any other key re-runs no
    training). ``training_index`` gives, for a run with a ``doc_index`` role, the index factory searched
    during training. ``build_step`` builds the training step (``make_batch`` and ``loss``) from a
    :class:`StepContext`; ``None`` for a method that does not train.

    A method that trains in episodes with negatives mined by its own earlier checkpoints (ANCE) declares
    ``episodes``: its params → :class:`Episodes`; the plan runs each episode as a run of its
    own (:mod:`hardneg.pipeline.episodes`), so such a method needs a role providing ``model`` (the warm-up the first
    episode continues) and one providing ``miner`` (the episodes' negatives).

    ``build_sampler`` builds the trainer's batch sampler (:class:`hardneg.dense.data.BatchSampler`) from the
    :class:`StepContext` and the run's :class:`hardneg.dense.train_config.TrainConfig`; ``None``: a fresh seeded
    shuffle of the training rows each epoch (:class:`hardneg.dense.data.ShuffledBatches`). A method whose batches
    are not of training queries (Condenser's batches of documents) or are grouped by the model (Adaptive Batch
    Scheduling) declares its own. ``check`` is called with a run's name and validated config when the config is
    checked, for what the schema cannot say (a parameter that needs an input role, say); it raises
    :class:`hardneg.errors.ConfigError` naming the key.

    A ``rerank`` method declares ``rerank``: its trained model's folder, the tokenized queries and corpus
    (:class:`hardneg.dense.tokenized.TokenizedTexts`), the candidates' ranking (a RANKING table), ``depth``,
    ``batch_size`` and ``device`` → the re-ranked RANKING table. A method whose saved model is not a bi-encoder
    but can start one (the ColBERT teacher its TCT student) declares ``bi_encoder_from``: a model folder, the
    student's :class:`hardneg.dense.backbone.ModelSpec` and seed → the bi-encoder, or None when the folder is not
    one of its models.

    A method whose model scores (query, document) pairs as probabilities of relevance (a cross-encoder) declares
    ``score_pairs``: ``(model_dir, queries, corpus, pairs, *, batch_size, device)`` → one probability per pair;
    such a run can score the candidate pools of mining runs (their role providing ``scorer``).

    The method training-time tables measure speed-ups against (ANCE, in Table 4 of the STAR/ADORE paper) declares
    ``speed_reference``: the name the tables give it.

    A method whose step encodes its batch through :meth:`hardneg.dense.steps.ContrastiveMethod.encode` (a loss
    over the batch's in-batch documents) declares ``grad_cache``: ``params.train.grad_cache_chunk`` then trains it
    with gradient caching; the other methods reject that key.

    A ``fusion`` method declares ``fuse``: its input runs' rankings of one split (RANKING tables, in the order of its
    role of many runs) and its params → the fused ranking. A fusion method whose schema has the ``tune`` section
    (with ``alpha`` and ``alpha_grid``; :data:`hardneg.fusion.WEIGHT_SCHEMA`) tunes its weight ``alpha`` on a
    sample of queries of ``tune.split`` when ``alpha`` is null (:meth:`tuning_split`).
    """

    name: str
    kind: str
    summary: str
    roles: Mapping[str, Role] = field(default_factory=dict)
    schema: Mapping[str, dict] = field(default_factory=dict)
    params: type | None = None
    training_sections: tuple[str, ...] = ()
    training_index: Callable[[dict], str] | None = None
    build_step: Callable[[StepContext], Any] | None = None
    new_model: Callable[..., Any] | None = None
    exclusive_roles: tuple[tuple[str, ...], ...] = ()
    fuse: Callable[[list, dict], Any] | None = None
    episodes: Callable[[dict], Any] | None = None
    build_sampler: Callable[[StepContext, Any], Any] | None = None
    check: Callable[[str, dict], None] | None = None
    rerank: Callable[..., Any] | None = None
    bi_encoder_from: Callable[..., Any] | None = None
    score_pairs: Callable[..., Any] | None = None
    speed_reference: str | None = None
    grad_cache: bool = False
    module: str = ""

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"method {self.name!r}: kind must be one of {', '.join(KINDS)}")
        if self.kind == RERANK and (not self.role_providing("candidates") or self.rerank is None):
            raise ValueError(f"method {self.name!r} re-ranks, so it needs a 'candidates' role and `rerank`")
        for group in self.exclusive_roles:
            if not set(group) <= set(self.roles):
                raise ValueError(f"method {self.name!r}: exclusive_roles names unknown roles {group}")
        runs_role = self.role_providing("runs")
        if self.kind == FUSION and (self.fuse is None or runs_role is None or not self.roles[runs_role].many):
            raise ValueError(f"method {self.name!r} fuses rankings, so it needs `fuse` and a 'runs' role of many runs")
        if "tune" in self.schema and (self.kind != FUSION or not {"alpha", "alpha_grid"} <= set(self.schema)):
            raise ValueError(
                f"method {self.name!r}: a 'tune' section tunes a fusion method's 'alpha' over its "
                f"'alpha_grid' (hardneg.fusion.WEIGHT_SCHEMA)"
            )
        if self.role_providing("miner") and "mining" not in self.schema:
            raise ValueError(
                f"method {self.name!r} mines hard negatives (a 'miner' role), so its schema needs the "
                f"'mining' section (hardneg.mining.negatives.MINING_SCHEMA)"
            )
        if self.episodes is not None and not (
            self.role_providing("model") and self.role_providing("miner") and self.kind == DENSE
        ):
            raise ValueError(
                f"method {self.name!r} trains in episodes, so it is dense and needs a 'model' role (the "
                f"warm-up) and a 'miner' role (the episodes' negatives)"
            )
        if self.params is not None:
            names = {f.name for f in dataclasses.fields(self.params)}
            if names != set(self.schema):
                raise ValueError(
                    f"method {self.name!r}: the fields of {self.params.__name__} "
                    f"({', '.join(sorted(names))}) differ from its schema keys "
                    f"({', '.join(sorted(self.schema))})"
                )

    @property
    def trains(self) -> bool:
        return self.build_step is not None

    def roles_providing(self, provides: str) -> list[str]:
        return [name for name, role in self.roles.items() if role.provides == provides]

    def role_providing(self, provides: str) -> str | None:
        names = self.roles_providing(provides)
        return names[0] if names else None

    def tuning_split(self, params: Mapping) -> str | None:
        """The split whose queries a fusion run's weight ``alpha`` is tuned on; None when nothing is tuned (a
        method without a ``tune`` section, or ``alpha`` given)."""
        if "tune" not in self.schema or params["alpha"] is not None:
            return None
        return params["tune"]["split"]

    def read_params(self, params: Mapping, where: str = "params"):
        """The method's own parameters of a validated run's ``params``, as its dataclass (or None)."""
        if self.params is None:
            return None
        return dataclass_from(self.params, {key: params[key] for key in self.schema if key in params}, where)


# ----------------------------------------------------------------------------------------------- discovery
_METHODS: dict[str, Method] = {}
_LOADED: set[str] = set()


def register(method: Method, module: str = "") -> Method:
    """Add a method; a second, different declaration of the same name is an error."""
    method = dataclasses.replace(method, module=module or method.module)
    known = _METHODS.get(method.name)
    if known is not None and known.module != method.module:
        raise ValueError(f"method {method.name!r} is declared twice: in {known.module} and in {method.module}")
    _METHODS[method.name] = method
    return method


def _register_module(module, origin: str) -> None:
    method = getattr(module, "METHOD", None)
    if not isinstance(method, Method):
        raise ConfigError("method_modules", f"{origin} declares no METHOD = Method(...)")
    register(method, origin)


def _load_builtin() -> None:
    if "<builtin>" in _LOADED:
        return
    _LOADED.add("<builtin>")
    package = importlib.import_module("hardneg.methods")
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda i: i.name):
        if not info.ispkg or info.name.startswith("_"):
            continue  # a method is a package; the plain modules beside them (registry, contrastive) are shared
        name = f"hardneg.methods.{info.name}"
        _register_module(importlib.import_module(name), name)
    for entry in entry_points(group="hardneg.methods"):
        _register_module(entry.load(), f"entry point {entry.name}")


def load_modules(names: list[str] | None, base: str | Path = ".") -> None:
    """Import the extra method modules named in the config (``method_modules``): dotted module names, or paths
    of ``.py`` files (relative to ``base``)."""
    _load_builtin()
    for position, name in enumerate(names or []):
        if name in _LOADED:
            continue
        where = f"method_modules.{position}"
        if name.endswith(".py"):
            path = Path(base) / name
            if not path.is_file():
                raise ConfigError(where, f"no such file: {path}")
            module_name = f"hardneg_method_{path.stem}"
            spec = importlib.util.spec_from_file_location(module_name, path)
            assert spec is not None and spec.loader is not None  # a .py file's spec, with its source loader
            module = importlib.util.module_from_spec(spec)
            sys.modules[module_name] = module
            spec.loader.exec_module(module)
        else:
            try:
                module = importlib.import_module(name)
            except ImportError as exc:
                raise ConfigError(where, f"cannot import {name!r}: {exc}") from None
        _register_module(module, name)
        _LOADED.add(name)


def get(name: str) -> Method:
    _load_builtin()
    try:
        return _METHODS[name]
    except KeyError:
        raise ConfigError("method", f"unknown method {name!r}; known: {', '.join(sorted(_METHODS))}") from None


def methods() -> dict[str, Method]:
    """Every registered method, by name."""
    _load_builtin()
    return dict(sorted(_METHODS.items()))


def names(kind: str | None = None) -> list[str]:
    return [name for name, method in methods().items() if kind is None or method.kind == kind]
