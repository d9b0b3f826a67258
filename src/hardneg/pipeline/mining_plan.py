"""The run plan's static hard-negative mining: mine once, select by policy.

A mining run (a run with a ``miner`` role) names the dense run whose model mines (its miner). The miner's ranking of
the training split, to ``params.mining.depth``, less the judged positives, is a candidate pool
(:mod:`hardneg.mining.pool`) under the miner: ``results/<miner>/pools/<pool>.parquet``, where ``<pool>`` names what
the pool holds (:meth:`MiningPlan.pool_name`). Every mining run that asks for the same pool reads the same file,
so trying another policy (:mod:`hardneg.mining.policies`) re-runs the selection only, not the miner's encoding,
search or cross-encoder scoring. The policy is ``params.mining.policy`` (a name of the config's ``policies``) or
the policy keys of ``params.mining``.
"""

from __future__ import annotations

import dataclasses
import os
from typing import TYPE_CHECKING

from hardneg import imports as imported_files
from hardneg.errors import ConfigError
from hardneg.experiments import EXPERIMENTS
from hardneg.methods.contrastive import distills
from hardneg.mining.card import read_card
from hardneg.mining.negatives import MINING_SCHEMA, POLICY_KEYS
from hardneg.mining.policies import Policy, PolicyValueError
from hardneg.mining.pool import Pool
from hardneg.schema.names import quoted

if TYPE_CHECKING:
    from hardneg.pipeline.plan import Plan


def mining_policy(config: dict, run: str) -> Policy:
    """The selection policy of a mining run: the config's ``policies.<name>`` when ``params.mining.policy``
    names one, else the policy keys of ``params.mining``. The config is validated (defaults filled)."""
    mining = config["runs"][run]["params"]["mining"]
    name = mining["policy"]
    if name is not None:
        return Policy.from_params(config["policies"][name])
    return Policy.from_params({key: mining[key] for key in POLICY_KEYS})


def _key_of(where: str, error: ValueError) -> str:
    """The config key a policy's error is about: ``<where>.<key>`` when it names one, else ``where``."""
    return f"{where}.{error.key}" if isinstance(error, PolicyValueError) else where


def check_policies(config: dict) -> None:
    """Every named policy is a valid :class:`Policy`; a run's ``params.mining.policy`` names one of them, its own
    policy keys then left unset, and the named policy's ``depth`` is within the run's pool."""
    for name, params in config["policies"].items():
        try:
            Policy.from_params(params)
        except ValueError as error:
            raise ConfigError(_key_of(f"policies.{name}", error), str(error)) from None
    defaults = {key: MINING_SCHEMA["properties"][key]["default"] for key in POLICY_KEYS}
    for run, spec in config["runs"].items():
        mining = spec.get("params", {}).get("mining") if isinstance(spec.get("params"), dict) else None
        if not isinstance(mining, dict) or "policy" not in mining:
            continue
        where = f"runs.{run}.params.mining"
        name = mining["policy"]
        if name is None:
            try:
                mining_policy(config, run)
            except ValueError as error:
                raise ConfigError(_key_of(where, error), str(error)) from None
            continue
        if name not in config["policies"]:
            known = ", ".join(config["policies"]) or "none"
            raise ConfigError(f"{where}.policy", f"no policy {quoted(name)} in the config's policies ({known})")
        for key in POLICY_KEYS:
            if mining[key] != defaults[key]:
                raise ConfigError(
                    f"{where}.{key}",
                    f"the run selects with policy {quoted(name)}: set {key} in policies.{name}, not here",
                )
        depth = config["policies"][name].get("depth")
        if depth is not None and depth > mining["depth"]:
            raise ConfigError(
                f"policies.{name}.depth",
                f"{depth} is deeper than the pool of run {run} (params.mining.depth {mining['depth']})",
            )


def check_pool_reach(plan) -> None:
    """Refuse, before anything runs, a mining run that would select nothing or less than it asks: a pool deeper
    than its miner ranks (``params.search.top_k``), a ``rank_range`` beyond the pool's depth, or a cross-encoder
    filter (``ce_threshold``, ``ce_margin``) with no cross-encoder to score the pool. ``plan``: the
    :class:`hardneg.pipeline.plan.Plan` of a validated config.

    :raises ConfigError: naming the key (the run's ``params.mining.<key>``, or ``policies.<name>.<key>`` for a
        named policy's).
    """
    for run in plan.mining.mining_runs:
        mining, miner = plan.params(run)["mining"], plan.mining.miner(run)
        where, name = f"runs.{run}.params.mining", mining["policy"]
        policy_where = f"policies.{name}" if name is not None else where
        top_k = plan.params(miner).get("search", {}).get("top_k")
        if top_k is not None and mining["depth"] > top_k:
            raise ConfigError(
                f"{where}.depth",
                f"{mining['depth']} is deeper than the ranking of run {run}'s miner "
                f"{miner} (runs.{miner}.params.search.top_k: {top_k}): its pool "
                f"would hold ranks up to {top_k} only; give a depth of {top_k} or "
                f"less, or rank deeper with the miner's search.top_k",
            )
        policy = plan.mining.policy(run)
        reach = min(mining["depth"], policy.depth or mining["depth"])
        if policy.rank_range is not None:
            low, high = policy.rank_range
            if high > reach:
                what = "nothing" if low > reach else f"ranks {low} to {reach} only"
                raise ConfigError(
                    f"{policy_where}.rank_range",
                    f"ranks {low} to {high} reach beyond the {reach} candidates of run {run}'s pool "
                    f"({where}.depth {mining['depth']}): it would select {what}; keep the range "
                    f"within {reach}, or deepen the pool",
                )
        if plan.mining.pool(run).cross_encoder is None:
            for key in ("ce_threshold", "ce_margin"):
                if getattr(policy, key) is not None:
                    raise ConfigError(
                        f"{policy_where}.{key}",
                        f"filters by a cross-encoder's scores, but run {run} names no "
                        f"cross-encoder to score its pool: name one in "
                        f"runs.{run}.inputs.cross_encoder, or leave {key} out",
                    )


def check_imported_scores(plan) -> None:
    """Refuse a run that distils from the imported list it trains on when the list carries no teacher scores of
    its negatives or of its positives, as its card's mapping counts say (``negatives_scored``,
    ``positives_scored``), where the card is already there (``hardneg import`` ran); where it is not yet, training
    refuses it (:func:`hardneg.methods.contrastive.read_teacher_scores`). ``plan``: the
    :class:`hardneg.pipeline.plan.Plan` of a validated config.

    :raises ConfigError: naming ``runs.<run>.params.distill.loss``."""
    for run in plan.mining.imported_runs:
        card_path = plan.mining.import_inputs(run)["card"]
        if not distills(plan.params(run)) or not os.path.isfile(card_path):
            continue
        mapping = read_card(card_path).get("import", {}).get("mapping", {})
        for what in ("negatives", "positives"):
            if mapping.get(f"{what}_scored", 0) == 0:
                raise ConfigError(
                    f"runs.{run}.params.distill.loss",
                    f"run {run} distils from the scores of the imported list {plan.mining.imported_list(run)}, "
                    f"and the file carried none of its {what} (its card {card_path}: 0 of "
                    f"{mapping.get(what, 0)} scored): import a file with the teacher's scores, name a "
                    f"teacher, or set distill.loss to null",
                )


class MiningPlan:
    """The part of :class:`hardneg.pipeline.plan.Plan` that concerns mining runs: their pools, the positive
    scores, near-duplicates and the selection."""

    def __init__(self, plan: Plan):
        self.plan = plan  # the whole plan: the runs, the layout and the other parts

    def miner(self, run: str) -> str:
        return self.plan.role_run(run, "miner")

    @property
    def mining_runs(self) -> list[str]:
        """Runs that select their own static hard-negative list from a pool (they name a miner run)."""
        return [
            run
            for run in self.plan.runs
            if isinstance(self.plan.role_run(run, "miner"), str) and run not in self.plan.episodes.episodic_runs
        ]

    # ------------------------------------------------------------------------------------ imported lists
    def imported_list(self, run: str) -> str | None:
        """The folder of the imported list a run trains on (its miner role given as ``{imported: <folder>}``,
        ``hardneg import``'s output); None for any other run."""
        given = self.plan.role_run(run, "miner")
        return given["imported"] if isinstance(given, dict) else None

    @property
    def imported_runs(self) -> list[str]:
        """Runs that train on an imported list: their folder gets a copy of it and of its card."""
        return [run for run in self.plan.runs if self.imported_list(run) is not None]

    def import_inputs(self, run: str) -> dict:
        """The imported list's files (``hardneg.imports.card``'s names): the list, its positives, its card."""
        folder = self.imported_list(run)
        assert folder is not None, f"run {run} trains on no imported list"
        folder = folder.rstrip("/")
        return {
            "hardnegs": f"{folder}/{imported_files.LIST}",
            "positives": f"{folder}/{imported_files.POSITIVES}",
            "card": f"{folder}/{imported_files.CARD}",
        }

    @property
    def listed_runs(self) -> list[str]:
        """Runs with a hard-negative list of their own in their folder, mined or imported (audited, carded)."""
        return self.mining_runs + self.imported_runs

    def pool(self, run: str) -> Pool:
        """The candidate pool a mining run selects from."""
        mining = self.plan.params(run)["mining"]
        return Pool(
            miner=self.miner(run),
            split=self.plan.train_split(run),
            depth=mining["depth"],
            bm25=self.plan.role_run(run, "reference_ranking"),
            cross_encoder=self.plan.role_run(run, "scorer"),
            duplicates=mining["duplicates"],
            dataset=self.plan.dataset(run),
        )

    @property
    def pools(self) -> dict[tuple[str, str], Pool]:
        """(miner, pool name) → pool, for every pool a mining run or an experiment selects from."""
        return {(pool.miner, pool.name): pool for pool in [*map(self.pool, self.mining_runs), *self.experiment_pools()]}

    def experiment_pools(self) -> list[Pool]:
        """The pools experiments select from besides the mining runs' (:attr:`Experiment.pools`)."""
        return [pool for experiment in EXPERIMENTS.values() for pool in experiment.pools(self.plan)]

    def pool_path(self, run: str) -> str:
        pool = self.pool(run)
        return self.plan.layout.pool(pool.miner, pool.name)

    def pool_inputs(self, miner: str, name: str) -> dict:
        """What building a pool reads: the miner's ranking of the split, the split's qrels (folder), the miner's
        scores of the positives, and the BM25 ranking, cross-encoder scores and the dataset's duplicate pairs where
        the pool has them."""
        pool, layout = self.pools[(miner, name)], self.plan.layout
        inputs = {
            "ranking": layout.ranking(miner, pool.split),
            "qrels": layout.qrels_dir(pool.dataset),
            "positives": layout.pool_positive_scores(miner, pool.split),
        }
        if pool.bm25:
            inputs["bm25_ranking"] = layout.ranking(pool.bm25, pool.split)
        if pool.cross_encoder:
            inputs["ce_candidates"] = layout.pool_scores(miner, name, "candidates")
            inputs["ce_positives"] = layout.pool_scores(miner, name, "positives")
        if pool.duplicates:
            inputs["duplicates"] = layout.duplicates(pool.dataset)
        return inputs

    @property
    def scored_pools(self) -> dict[tuple[str, str], Pool]:
        """The pools a cross-encoder scores."""
        return {key: pool for key, pool in self.pools.items() if pool.cross_encoder}

    def pool_scoring_inputs(self, miner: str, name: str) -> dict:
        """What a cross-encoder's scoring of a pool reads: :meth:`scoring_inputs` of its cross-encoder."""
        pool = self.pools[(miner, name)]
        assert pool.cross_encoder is not None, f"pool {name} of {miner} is scored by no cross-encoder"
        return self.scoring_inputs(pool, pool.cross_encoder)

    def scoring_inputs(self, pool: Pool, scorer: str) -> dict:
        """What a run's scoring of a pool reads: its model and tokenized cache, the miner's ranking of the split and
        the split's qrels (the pairs it scores: the pool's candidates and the judged positives), and the dataset's
        queries and corpus where the run scores pairs from them (:meth:`pair_texts`)."""
        layout = self.plan.layout
        return {
            "model": layout.model(scorer),
            "cache": self.plan.cache_dir(scorer),
            "ranking": layout.ranking(pool.miner, pool.split),
            "qrels": layout.qrels_dir(pool.dataset),
            **self.plan.pair_texts(scorer),
        }

    # ------------------------------------------------------------------------------------------ teachers
    def teacher(self, run: str) -> str | None:
        """The teacher run whose scores of its pool a mining run distils from (its ``pool_teacher`` role)."""
        return self.plan.role_run(run, "pool_teacher")

    @property
    def teacher_pools(self) -> dict[tuple[str, str, str], Pool]:
        """(miner, pool name, teacher) → pool, for every pool a teacher run scores."""
        return {
            (pool.miner, pool.name, teacher): pool
            for pool, teacher in ((self.pool(run), self.teacher(run)) for run in self.mining_runs)
            if teacher is not None
        }

    def teacher_scoring_inputs(self, miner: str, name: str, teacher: str) -> dict:
        """What a teacher's scoring of a pool reads: :meth:`scoring_inputs` of the teacher."""
        return self.scoring_inputs(self.teacher_pools[(miner, name, teacher)], teacher)

    def distillation_inputs(self, run: str) -> dict:
        """The teacher's scores a run that distils reads, from the first source it has
        (:data:`hardneg.methods.contrastive.TEACHER_SCORES`, as they are, or ``TEACHER_PROBABILITIES``): its
        teacher run's scores of its pool; its cross-encoder's probabilities of the pool; the scores of the imported
        list it trains on (the run's copies of the list and of its positives). Nothing for a run that does not
        distil (``params.distill.loss`` unset)."""
        if not distills(self.plan.params(run)):
            return {}
        layout = self.plan.layout
        if run in self.imported_runs:
            return {
                "teacher_scores": layout.hard_negatives(run),
                "teacher_positive_scores": layout.imported_positives(run),
            }
        pool, teacher = self.pool(run), self.teacher(run)
        if teacher is not None:
            return {
                "teacher_scores": layout.teacher_scores(pool.miner, pool.name, teacher, "candidates"),
                "teacher_positive_scores": layout.teacher_scores(pool.miner, pool.name, teacher, "positives"),
            }
        if pool.cross_encoder is not None:
            return {
                "teacher_probabilities": layout.pool_scores(pool.miner, pool.name, "candidates"),
                "teacher_positive_probabilities": layout.pool_scores(pool.miner, pool.name, "positives"),
            }
        return {}

    @property
    def mining_splits(self) -> dict[str, set[str]]:
        """miner → the splits whose positives it scores (one file per split, shared by the pools)."""
        splits: dict[str, set[str]] = {}
        for pool in self.pools.values():
            splits.setdefault(pool.miner, set()).add(pool.split)
        return splits

    def positive_scores_inputs(self, miner: str, split: str) -> dict:
        layout, dataset = (
            self.plan.layout,
            next(pool.dataset for pool in self.pools.values() if (pool.miner, pool.split) == (miner, split)),
        )
        return {
            "query_emb": layout.query_embeddings(miner, split),
            "query_ids": layout.query_ids(miner, split),
            "doc_emb": layout.corpus_embeddings(self.plan.doc_run(miner)),
            "doc_ids": layout.corpus_ids(self.plan.doc_run(miner)),
            "qrels": layout.qrels_dir(dataset),
        }

    @property
    def deduplicated_datasets(self) -> list[str]:
        """The datasets whose duplicate pairs a pool reads."""
        return sorted({pool.dataset for pool in self.pools.values() if pool.duplicates})

    @property
    def duplicates_params(self) -> dict:
        """How duplicate documents are found (the config's ``duplicates``)."""
        return dict(self.plan.config["duplicates"])

    def policy(self, run: str) -> Policy:
        return mining_policy(self.plan.config, run)

    def policy_params(self, run: str) -> dict:
        """The run's policy as its keys (plain YAML/JSON values), what the selection job is given."""
        return {
            key: list(value) if isinstance(value, tuple) else value
            for key, value in dataclasses.asdict(self.policy(run)).items()
        }

    def selection_inputs(self, run: str) -> dict:
        return {"pool": self.pool_path(run)}

    def positives_path(self, run: str) -> str:
        """The miner's scores of the training positives of a mining run."""
        return self.plan.layout.pool_positive_scores(self.miner(run), self.plan.train_split(run))

    def mining_inputs(self, run: str) -> dict:
        """The miner's ranking, the qrels and the positive scores a mining run's negatives come from."""
        return {
            "ranking": self.plan.layout.ranking(self.miner(run), self.plan.train_split(run)),
            "qrels": self.plan.layout.qrels_dir(self.plan.dataset(run)),
            "positives": self.positives_path(run),
        }

    def audit_inputs(self, run: str) -> dict:
        """What the audit of a run's list reads: the list, the qrels, the positives' scores, the reference
        rankings and the corpus; for a mined list also the miner's ranking, the selection and its pool (an
        imported list has none of them: its positives' scores are the imported ones)."""
        split = self.plan.train_split(run)
        references = [
            self.plan.input_run(run, role) for role in self.plan.method(run).roles_providing("reference_ranking")
        ]
        common = {
            "hardnegs": self.plan.layout.hard_negatives(run),
            "reference": [self.plan.layout.ranking(other, split) for other in references if other],
            "corpus": self.plan.layout.corpus(self.plan.dataset(run)),
        }  # which negatives are empty documents
        if run in self.imported_runs:
            return {
                **common,
                "qrels": self.plan.layout.qrels_dir(self.plan.dataset(run)),
                "positives": self.plan.layout.imported_positives(run),
            }
        return {
            **self.mining_inputs(run),
            **common,
            "selection": self.plan.layout.selection(run),
            "pool": self.pool_path(run),
        }

    def viewer_inputs(self, run: str) -> dict:
        """What the hard-negative viewer of a run with a list of its own reads: the audit's inputs (the list, the
        miner's ranking, qrels, positive scores, the BM25 reference, the corpus), the audit (table and summary) and
        the queries; for an imported list also its card (``card``: where the list came from), in place of the
        miner's ranking."""
        inputs = {
            **self.audit_inputs(run),
            "audit": self.plan.layout.audit(run, "parquet"),
            "audit_summary": self.plan.layout.audit(run, "json"),
            "queries": self.plan.layout.queries_dir(self.plan.dataset(run)),
        }
        if run in self.imported_runs:
            inputs["card"] = self.plan.layout.hardnegs_card(run)
        return inputs

    def viewer_miner(self, run: str) -> str | None:
        """The run whose ranking a run's list was mined from; None for an imported list (the viewer says where it
        came from instead)."""
        return None if run in self.imported_runs else self.miner(run)

    def card_inputs(self, run: str) -> dict:
        """What the mining card of a mining run records (:mod:`hardneg.mining.card`): the miner's model and
        tokenized cache (folders), the dataset's corpus, queries and qrels (folders), the miner's ranking of the
        split, the index it searched with its row ids and the corpus embeddings, the pool and what it was built
        from (positive scores; the BM25 ranking, duplicate pairs, cross-encoder scores, model and cache where it
        has them), and the list (``hardnegs``)."""
        pool, layout, miner = self.pool(run), self.plan.layout, self.miner(run)
        docs = self.plan.doc_run(miner)
        inputs = {
            "model": layout.model(miner),
            "cache": self.plan.cache_dir(miner),
            "corpus": layout.corpus(pool.dataset),
            "queries": layout.queries_dir(pool.dataset),
            "qrels": layout.qrels_dir(pool.dataset),
            "ranking": layout.ranking(miner, pool.split),
            "index": self.plan.search_index(miner),
            "docids": layout.corpus_ids(docs),
            "corpus_embeddings": layout.corpus_embeddings(docs),
            "pool": self.pool_path(run),
            "hardnegs": layout.hard_negatives(run),
        }
        built_from = self.pool_inputs(miner, pool.name)  # its ranking and qrels are above
        inputs.update({name: path for name, path in built_from.items() if name not in ("ranking", "qrels")})
        if pool.cross_encoder:
            inputs.update(ce_model=layout.model(pool.cross_encoder), ce_cache=self.plan.cache_dir(pool.cross_encoder))
        return inputs

    def card_params(self, run: str) -> dict:
        """What the mining card of a mining run records besides its inputs: the run, miner, dataset, split and
        seed; the miner's dense search as its job is given it (``search``: the index factory, ``search_params``,
        ``top_k``, ``batch_size``, ``device``, ``precision``, and ``doc_run``, whose documents it searched); the
        pool (name, depth, BM25 run, cross-encoder run and method, duplicates); the policy's keys and name."""
        miner, pool = self.miner(run), self.pool(run)
        params = self.plan.params(miner)
        search = {
            "doc_run": self.plan.doc_run(miner),
            "factory": params["index"]["factory"],
            "search_params": params["index"]["search_params"],
            **params["search"],
            "device": params["train"]["device"],
            "precision": params["encode"]["precision"],
        }
        scorer = self.plan.runs[pool.cross_encoder]["method"] if pool.cross_encoder else None
        return {
            "run": run,
            "miner": miner,
            "dataset": pool.dataset,
            "split": pool.split,
            "seed": self.plan.seed(run),
            "search": search,
            "policy": self.policy_params(run),
            "policy_name": self.plan.params(run)["mining"]["policy"],
            "pool": {
                "name": pool.name,
                "depth": pool.depth,
                **dict(bm25=pool.bm25),  # noqa: C408 (a key, not a method's name)
                "cross_encoder": pool.cross_encoder,
                "cross_encoder_method": scorer,
                "duplicates": pool.duplicates,
            },
        }
