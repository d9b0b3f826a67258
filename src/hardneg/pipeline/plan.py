"""The run plan: from a validated config, what every run reads and what each target needs.

Plain functions over the config and the method registry, with no Snakemake in them: the workflow's rules are
thin input functions over a :class:`Plan`, and the command line and the stage runner use the same one. Paths
come from :class:`hardneg.io.layout.Layout`.

What a run reads follows from its method's input roles (:data:`hardneg.methods.PROVIDES`):

=================  ==========================================================================================
role provides      training inputs the plan adds (name → path)
=================  ==========================================================================================
model              ``init``: the input run's model (training continues it)
ranking            ``<role>``: the input run's ranking of the training split
miner              ``hard_negatives``: this run's mined list (mined from the input run's ranking and embeddings), or
                   the copy of the imported list the role names instead (``{imported: <folder>}``)
doc_index          ``doc_embeddings`` and ``train_index`` over the input run's documents; ``init``: its model
teacher            ``<role>``: the input run's model
candidates         nothing for training; re-ranking reads the input run's ranking of each split
runs               ``<role>``: the rankings of the training split of every listed run; a fusion run reads every
                   listed run's ranking of each split it ranks (and of ``tune.split`` when it tunes its weight)
reference_ranking  nothing for training; reports (the hard-negative audit) read its training-split ranking
scorer             nothing for training; the pool's cross-encoder columns read the input run's probabilities
pool_teacher       nothing else; a run that distils (``params.distill``) reads its teacher's scores of its pool and
                   of the judged positives: :meth:`MiningPlan.distillation_inputs` (from this role's run, else the
                   ``scorer``'s, else the imported list's own scores)
=================  ==========================================================================================
"""

from __future__ import annotations

from typing import Any

from hardneg import methods
from hardneg.datasets.adapters import dataset_splits
from hardneg.datasets.hidden import hidden_split
from hardneg.dense.st_folder import cache_prompts
from hardneg.dense.tokenized import cache_key
from hardneg.io.index_names import slug as factory_slug
from hardneg.io.layout import RESULTS, Layout
from hardneg.pipeline import episodes as _episodes
from hardneg.pipeline.compare_plan import ComparePlan
from hardneg.pipeline.episode_plan import EpisodePlan
from hardneg.pipeline.fusion_plan import FusionPlan
from hardneg.pipeline.mining_plan import MiningPlan
from hardneg.pipeline.report_plan import ReportPlan
from hardneg.pipeline.resolution import continued_run, dataset_config, input_runs, resolve_run


class Plan:
    """Every run's inputs and artifacts under ``root`` (default: the config's ``results`` folder), for a config
    already validated (defaults filled).

    What concerns every run (its method, params, dataset, model, caches, training, search and evaluation inputs)
    is here; the rest is in parts the rules name: ``episodes`` (:class:`EpisodePlan`: runs in episodes),
    ``fusion`` (:class:`FusionPlan`), ``mining`` (:class:`MiningPlan`: pools, teachers, selection, audits),
    ``compare`` (:class:`ComparePlan`: the config's comparisons) and ``report`` (:class:`ReportPlan`: targets,
    the summary, tables, figures, the report and the paper target)."""

    def __init__(self, config: dict, root: str | None = None):
        self.user_runs: dict = config["runs"]  # the config's runs (with those the experiments generate)
        self.runs: dict = _episodes.expand(config["runs"])  # and each episode of an episodic run as a run of its own
        self.config = {**config, "runs": self.runs}
        self.layout = Layout(root or config.get("results", RESULTS))
        self.datasets: dict = config["datasets"]
        self.eval_split: str = config["evaluation"]["split"]
        self.episodes = EpisodePlan(self)
        self.fusion = FusionPlan(self)
        self.mining = MiningPlan(self)
        self.compare = ComparePlan(self)
        self.report = ReportPlan(self)

    # --------------------------------------------------------------------------------------------- runs
    def method(self, run: str) -> methods.Method:
        return methods.get(self.runs[run]["method"])

    def runs_of_kind(self, kind: str) -> list[str]:
        return [run for run in self.runs if self.method(run).kind == kind]

    @property
    def dense_runs(self) -> list[str]:
        return self.runs_of_kind(methods.DENSE)

    @property
    def lexical_runs(self) -> list[str]:
        return self.runs_of_kind(methods.LEXICAL)

    @property
    def rerank_runs(self) -> list[str]:
        return self.runs_of_kind(methods.RERANK)

    @property
    def trained_runs(self) -> list[str]:
        """Runs that train a model from the tokenized cache (dense and re-ranking runs)."""
        return [run for run in self.runs if self.method(run).kind in methods.TRAINED]

    @property
    def step_trained_runs(self) -> list[str]:
        """Runs trained by one training job (rule train_dense): every trained run but episodic runs and their
        episodes."""
        return [
            run
            for run in self.trained_runs
            if run not in self.episodes.episodic_runs and run not in self.episodes.episode_runs()
        ]

    @property
    def encoded_runs(self) -> list[str]:
        """Dense runs that encode their own corpus (every dense run but those keeping another run's documents)."""
        return [run for run in self.dense_runs if self.doc_run(run) == run]

    def params(self, run: str) -> dict:
        return self.runs[run]["params"]

    def seed(self, run: str) -> int:
        return self.runs[run].get("seed", self.config["seed"])

    def dataset(self, run: str) -> str:
        return self.runs[run].get("dataset", self.config["dataset"])

    def dataset_config(self, dataset: str) -> dict:
        return dataset_config(self.config, dataset)

    def splits(self, run: str) -> list[str]:
        return dataset_splits(self.datasets[self.dataset(run)])

    def resolved(self, run: str) -> dict:
        """Everything the run depends on (recorded as ``results/<run>/config.yaml``)."""
        return resolve_run(self.config, run)

    def input_run(self, run: str, role: str):
        """The run (or, for a role of many, the runs) named by ``inputs.<role>``; None when not given."""
        return self.runs[run].get("inputs", {}).get(role)

    def role_run(self, run: str, provides: str) -> Any:
        """The input run of the run's first role that provides ``provides``: its name (a list of them for a role of
        many runs, ``{imported: <folder>}`` for a miner role naming an imported list); None when not given."""
        for role in self.method(run).roles_providing(provides):
            other = self.input_run(run, role)
            if other is not None:
                return other
        return None

    def doc_run(self, run: str) -> str:
        """The run whose corpus embeddings and indexes ``run`` searches: its ``doc_index`` input, else itself."""
        return self.role_run(run, "doc_index") or run

    def init_run(self, run: str) -> str | None:
        """The run whose model ``run`` starts from: its ``model`` input, else its ``doc_index`` input (the
        config gave the run that run's ``params.model``, see :func:`hardneg.pipeline.resolution.continued_run`)."""
        source = continued_run(self.runs, run)
        return source[1] if source else None

    def model_root(self, run: str) -> str:
        """The run whose model ``run`` descends from (following ``init_run``): the one that loaded
        ``params.model.name``."""
        while (parent := self.init_run(run)) is not None:
            run = parent
        return run

    def upstream(self, run: str) -> list[str]:
        return input_runs(self.runs[run])

    def ancestors(self, run: str) -> list[str]:
        """Every run that ``run`` is built from (its input runs, theirs, and so on), nearest first, each once."""
        found, queue = [], list(self.upstream(run))
        while queue:
            parent = queue.pop(0)
            if parent not in found:
                found.append(parent)
                queue += self.upstream(parent)
        return found

    # ------------------------------------------------------------------------------------ tokenization
    def model_params(self, run: str) -> dict:
        """The run's ``params.model`` (a continued run's is its parent's, but for the maximum lengths)."""
        return self.params(run)["model"]

    def loaded_model(self, run: str) -> str | None:
        """What a dense run's training starts from, in words: the model folder of the run it continues, else
        ``params.model.name`` (a folder or hub name, or the built-in model with its corpus tokenizer)."""
        if self.method(run).kind not in methods.TRAINED:
            return None
        init = self.init_run(run)
        model = self.model_params(run)
        if init is not None:
            return f"{self.layout.model(init)} (the model of run {init!r}; it descends from {model['name']})"
        if model["name"] == "builtin":
            return f"builtin (a BERT built from params.model.builtin, tokenizer {self.tokenizer_source(run)})"
        return model["name"]

    def tokenizer_source(self, run: str) -> str:
        """The built-in WordPiece folder of the run's dataset, or the model's own (folder or hub name)."""
        model = self.model_params(run)
        if model["name"] == "builtin":
            return self.layout.tokenizer(self.dataset(run), model["vocab_size"])
        return model["name"]

    def cache_prompts(self, run: str) -> tuple[str | None, str | None]:
        """The (query, document) prompts of the run's tokenized cache (None: a hub model's own, read by the job)."""
        return cache_prompts(self.model_params(run), where=f"runs.{run}.params.model")

    def cache_key(self, run: str) -> str:
        model = self.model_params(run)
        return cache_key(
            self.tokenizer_source(run), model["doc_max_length"], model["query_max_length"], *self.cache_prompts(run)
        )

    def cache_dir(self, run: str) -> str:
        return self.layout.tokenized(self.dataset(run), self.cache_key(run))

    def caches(self) -> dict:
        """Every tokenized cache some dense run needs: (dataset, key) → how to build it."""
        out = {}
        for run in self.trained_runs:
            model = self.model_params(run)
            query_prompt, doc_prompt = self.cache_prompts(run)
            out[(self.dataset(run), self.cache_key(run))] = {
                "tokenizer": self.tokenizer_source(run),
                "doc_max_length": model["doc_max_length"],
                "query_max_length": model["query_max_length"],
                "splits": self.splits(run),
                "empty_documents": self.datasets[self.dataset(run)]["empty_documents"],
                "query_prompt": query_prompt,
                "doc_prompt": doc_prompt,
            }
        return out

    def builtin_tokenizers(self, dataset: str, key: str) -> list[str]:
        """The tokenizer folder a cache is built with, when the workflow builds it (the built-in WordPiece)."""
        source = self.caches()[(dataset, key)]["tokenizer"]
        return [source] if source.startswith(f"{self.layout.root}/") else []

    # ---------------------------------------------------------------------------------------- training
    def train_split(self, run: str) -> str:
        return self.params(run)["train"]["split"]

    def training_index_factory(self, run: str) -> str | None:
        method = self.method(run)
        return method.training_index(self.params(run)) if method.training_index else None

    def train_inputs(self, run: str) -> dict:
        """What the training job of a dense run reads: ``cache`` and ``qrels`` (folders), ``init`` when it continues
        a model, and what its roles provide (see the module docstring)."""
        layout, split = self.layout, self.train_split(run)
        inputs = {"cache": self.cache_dir(run), "qrels": layout.qrels_dir(self.dataset(run))}
        init = self.init_run(run)
        if init is not None:
            inputs["init"] = layout.model(init)
        episode = self.episodes.episode_of(run)
        if episode is not None and episode[1] > 0:  # the trainer state the previous episode ended with
            inputs["state"] = layout.trainer_state(init)
        for role, spec in self.method(run).roles.items():
            other = self.input_run(run, role)
            if other is None:
                continue
            if spec.provides == "ranking":
                inputs[role] = layout.ranking(other, split)
            elif spec.provides == "runs":
                inputs[role] = [layout.ranking(o, split) for o in other]
            elif spec.provides == "teacher":
                inputs[role] = layout.model(other)
            elif spec.provides == "miner":
                inputs["hard_negatives"] = layout.hard_negatives(run)
            elif spec.provides == "doc_index":
                inputs["doc_embeddings"] = layout.corpus_embeddings(self.doc_run(other))
                factory = self.training_index_factory(run)
                assert factory is not None, (
                    f"method {self.runs[run]['method']} has a doc_index role: it declares training_index"
                )
                inputs["train_index"] = layout.index(self.doc_run(other), factory_slug(factory))
        return {**inputs, **self.mining.distillation_inputs(run), **self.dev_candidate_inputs(run)}

    def dev_candidate_inputs(self, run: str) -> dict:
        """The rankings a run's dev candidates are built from (``train.dev_every`` with ``train.dev_search``
        ``candidates`` or ``both``; :mod:`hardneg.dense.dev_candidates`): ``dev_lexical``, the dev split's ranking
        of the dataset's first lexical run, and ``dev_init``, that of the run training starts from (an episode's:
        its episodic run's) when it is a bi-encoder retriever of the same dataset (not a pre-trained backbone); for
        a bi-encoder's memorisation check the
        training split's too (``train_lexical``, ``train_init``). None for a run searching another run's fixed
        documents: it evaluates dev over them without encoding a document."""
        train = self.params(run).get("train", {})
        if (
            not train.get("dev_every")
            or train.get("dev_search", "candidates") == "corpus"
            or self.doc_run(run) != run
            or self.method(run).kind != methods.DENSE
        ):
            return {}
        dataset, layout, inputs = self.dataset(run), self.layout, {}
        episode = self.episodes.episode_of(run)
        start = self.init_run(episode[0] if episode else run)
        retriever = start in self.dense_runs and self.method(start).new_model is None  # not a Condenser backbone
        sources = {
            "lexical": next((r for r in self.lexical_runs if self.dataset(r) == dataset), None),
            "init": start if start is not None and retriever and self.dataset(start) == dataset else None,
        }
        splits = {"dev": train.get("dev_split", "dev")}
        if self.method(run).new_model is None:  # a bi-encoder: its memorisation check samples the training split
            splits["train"] = self.train_split(run)
        for source, other in sources.items():
            if other is not None:
                for key, split in splits.items():
                    inputs[f"{key}_{source}"] = layout.ranking(other, split)
        return inputs

    def training_slice(self, run: str) -> dict:
        """What training depends on in the config: changing any other key (search, index, encoding) retrains
        nothing."""
        params = self.params(run)
        episode = {"episode": dict(self.runs[run]["episode"])} if "episode" in self.runs[run] else {}
        return {
            "name": run,
            "method": self.runs[run]["method"],
            "seed": self.seed(run),
            "dataset": self.dataset(run),
            "inputs": dict(self.runs[run].get("inputs", {})),
            "params": {key: params[key] for key in self.method(run).training_sections},
            **episode,
        }

    def method_modules(self, run: str) -> list[str]:
        """The config's ``method_modules`` entry that declares the run's method (none for a method of this
        package or of an entry point): a training job, a process of its own, imports it again."""
        module = self.method(run).module
        return [module] if module in self.config["method_modules"] else []

    def train_gpus(self, run: str) -> int:
        return self.params(run)["train"]["gpus"]

    def inference_gpus(self, run: str) -> int:
        """GPUs a job applying the run's model asks for (encoding a shard, searching, re-ranking): one where the
        run trains on GPUs (``train.gpus`` > 0), else none."""
        return min(self.train_gpus(run), 1)

    # --------------------------------------------------------------------------------------- re-ranking
    def candidates_run(self, run: str) -> str:
        """The run whose rankings a re-ranking run re-ranks."""
        return self.role_run(run, "candidates")

    def rerank_inputs(self, run: str, split: str) -> dict:
        """What re-ranking a split reads: the model, its tokenized cache and the candidates' ranking; for a run
        that scores pairs (a cross-encoder, which may form them from the raw texts: a pretrained one), also the
        dataset's queries (folder) and corpus."""
        inputs = {
            "model": self.layout.model(run),
            "cache": self.cache_dir(run),
            "candidates": self.layout.ranking(self.candidates_run(run), split),
        }
        return inputs | self.pair_texts(run)

    def pair_texts(self, run: str) -> dict:
        """The dataset's queries (folder) and corpus, for a run whose method scores pairs (a cross-encoder, which
        may form them from the raw texts); none for another."""
        if methods.get(self.runs[run]["method"]).score_pairs is None:
            return {}
        dataset = self.dataset(run)
        return {"queries": self.layout.queries_dir(dataset), "corpus": self.layout.corpus(dataset)}

    # ---------------------------------------------------------------------------------------- encoding
    def embedding_shards(self, run: str) -> dict:
        """The corpus-embedding shards of an encoded run (``npy`` and ``ids``, one per ``encode.shards``)."""
        shards = range(self.params(run)["encode"]["shards"])
        return {
            "npy": [self.layout.embedding_shard(run, i) for i in shards],
            "ids": [self.layout.embedding_shard_ids(run, i) for i in shards],
        }

    # ----------------------------------------------------------------------------------------- indexes
    def index_factories(self, run: str) -> dict:
        """slug → factory of every index built over an encoded run's embeddings: its own, and those the runs
        keeping its documents fixed evaluate and train with."""
        factories = [self.params(run)["index"]["factory"]]
        for other in self.dense_runs:
            if other != run and self.doc_run(other) == run:
                factories.append(self.params(other)["index"]["factory"])
                if self.training_index_factory(other):
                    factories.append(self.training_index_factory(other))
        return {factory_slug(f): f for f in factories}

    def search_index(self, run: str, slug: str | None = None) -> str:
        """The index a dense run's queries are searched with: its ``index.factory`` (or ``slug``) over its
        documents."""
        slug = slug or factory_slug(self.params(run)["index"]["factory"])
        return self.layout.index(self.doc_run(run), slug)

    def search_inputs(self, run: str, slug: str | None = None) -> dict:
        """What a dense run's search of a split reads: its model, its tokenized cache, the index (its own, or that of
        ``slug`` over its documents) and the documents' ids."""
        return {
            "model": self.layout.model(run),
            "cache": self.cache_dir(run),
            "index": self.search_index(run, slug),
            "docids": self.layout.corpus_ids(self.doc_run(run)),
        }

    # -------------------------------------------------------------------------------------- evaluation
    def eval_splits(self, run: str) -> list[str]:
        """The splits a run's metrics.json reports: the evaluation split and ``evaluation.extra_splits``, less the
        split whose positives the run's dataset hides (``hide_positives``: its qrels lack them)."""
        hidden = hidden_split(self.datasets[self.dataset(run)])
        return [self.eval_split] + [
            s for s in self.config["evaluation"]["extra_splits"] if s not in (self.eval_split, hidden)
        ]

    def reports(self, run: str) -> list[str]:
        """Reports a run makes beside its metrics (a mining run: the hard-negative audit, viewer and mining card; a
        run trained on an imported list: its audit, viewer and the copy of the import's card), so that any target
        reaching the run builds them and ``snakemake --report`` finds them."""
        if run in self.episodes.episodic_runs:  # each episode's hard negatives, audited
            return [self.layout.audit(episode, "md") for episode in self.episodes.episode_runs(run)]
        if run not in self.mining.listed_runs:
            return []
        return [self.layout.audit(run, "md"), self.layout.viewer(run), self.layout.hardnegs_card(run)]

    def lineage(self, run: str) -> list[str]:
        """The resolved configs and reports (hard-negative audits, viewers) of every run ``run`` is built from:
        whatever target reaches a run's metrics also leaves what it takes to audit the runs behind them (after
        ``snakemake results/adore_star/metrics.json``, ``hardneg audit star`` works)."""
        return [path for parent in self.ancestors(run) for path in [self.layout.config(parent), *self.reports(parent)]]

    def evaluate_inputs(self, run: str, index: str | None = None) -> dict:
        """The run's rankings of the evaluated splits, the qrels, its resolved config, its reports, its lineage's
        configs and reports and, for a dense run, the embeddings behind the ranking (exact whole-corpus pairwise
        errors). With ``index`` (a slug: the run ranked with another index over its documents, the PQ experiment):
        only its ranking of the evaluation split with that index, the qrels and its resolved config."""
        layout = self.layout
        if index is not None:
            return {
                "rankings": layout.ranking(run, self.eval_split, index),
                "qrels": layout.qrels_dir(self.dataset(run)),
                "config": layout.config(run),
            }
        inputs = {
            "rankings": [layout.ranking(run, split) for split in self.eval_splits(run)],
            "qrels": layout.qrels_dir(self.dataset(run)),
            "config": layout.config(run),
            "reports": self.reports(run),
            "lineage": self.lineage(run),
        }
        if self.method(run).kind == methods.DENSE:
            docs = self.doc_run(run)
            inputs.update(
                query_npy=layout.query_embeddings(run, self.eval_split),
                query_ids=layout.query_ids(run, self.eval_split),
                doc_npy=layout.corpus_embeddings(docs),
                doc_ids=layout.corpus_ids(docs),
            )
        return inputs
