"""The index factories a configuration uses, found through the run plan and checked by the index domain's rules
(:mod:`hardneg.index.validate`) for the dimension of the embeddings each indexes."""

from __future__ import annotations

from hardneg.datasets.adapters import adapter_of
from hardneg.dense.pretrained import model_source
from hardneg.experiments import EXPERIMENTS
from hardneg.index.validate import DEFAULT_TRAIN_SIZE, check_factory, embedding_dim
from hardneg.pipeline.plan import Plan

# Faiss' exact index: the default factory, which Faiss need not be loaded to check (planning a DAG stays without it)
EXACT = "Flat"


def _key_of_value(params: dict, value: str, skip: tuple[str, ...]) -> str | None:
    """The dotted key of the first string in ``params`` equal to ``value`` (other than ``skip``)."""
    for name, item in params.items():
        if isinstance(item, dict):
            inner = _key_of_value(item, value, tuple(s.split(".", 1)[1] for s in skip if s.startswith(f"{name}.")))
            if inner is not None:
                return f"{name}.{inner}"
        elif item == value and name not in skip:
            return name
    return None


def factory_uses(config: dict) -> list[tuple[str, str, str]]:
    """(dotted key, factory, run whose documents it indexes) of every index factory a validated config uses:
    the experiments' first (:attr:`hardneg.experiments.declaration.Experiment.factory_uses`), then per dense run its
    ``index.factory`` and its method's training index."""
    plan = Plan(config)
    uses = [use for experiment in EXPERIMENTS.values() for use in experiment.factory_uses(config)]
    for run in plan.dense_runs:
        params, docs = plan.params(run), plan.doc_run(run)
        own = params["index"]["factory"]
        uses.append((f"runs.{run}.params.index.factory", own, docs))
        training = plan.training_index_factory(run)
        if training is not None and training != own:
            where = _key_of_value(params, training, ("index.factory",))
            uses.append((f"runs.{run}.params.{where}" if where else f"runs.{run}.params", training, docs))
    return uses


def factory_key(config: dict, run: str, factory: str) -> str:
    """The dotted config key that asks for index ``factory`` over the documents of run ``run`` (for errors of the
    index-building job); ``runs.<run>.params.index.factory`` when none does."""
    try:
        uses = factory_uses(config)
    except Exception:  # a config this cannot read only loses the precise key of a later error message
        uses = []
    for key, used, docs in uses:
        if docs == run and used == factory:
            return key
    return f"runs.{run}.params.index.factory"


def check_index_factories(config: dict) -> None:
    """Check every index factory string of a validated config (see :mod:`hardneg.index.validate`); raise
    :class:`ConfigError` naming the first bad key."""
    plan = Plan(config)
    dims: dict[str, int | None] = {}
    seen: set[tuple[str, str]] = set()
    for key, factory, docs in factory_uses(config):
        if (factory, docs) in seen or factory == EXACT:  # exact search suits any dimension and trains nothing
            continue
        seen.add((factory, docs))
        if docs not in dims:
            model = plan.model_params(docs)  # a packaged model's short name (minilm) looked up as training will
            source = model_source(model["name"], where=f"runs.{docs}.params.model.name")
            dims[docs] = embedding_dim({**model, "name": source})
        dataset = config["datasets"][plan.dataset(docs)]
        num_docs = adapter_of(dataset).num_docs(dataset)
        check_factory(
            factory,
            key,
            dim=dims[docs],
            num_docs=num_docs,
            train_size=plan.params(docs)["index"]["train_size"],
            default_train_size=DEFAULT_TRAIN_SIZE,
        )
