"""The false-negative experiment (the config's ``false_negatives`` section): does each selection policy keep known
false negatives out of the hard negatives, and what hardness does it give up for it?

The section names a dataset that hides a share of its training positives (``hide_positives``,
:mod:`hardneg.datasets.hidden`), a dense run on it whose ranking mines (``miner``), and policies of the config's
``policies`` (the first, plain top-k, is the reference). Everything runs with the visible judgements, as a user
would; only the measurement reads the hidden ones.

* the pool: the miner's ordinary candidate pool (:class:`hardneg.mining.pool.Pool`, built by
  rules/mine.smk), added to the plan's pools by the declaration's ``pools``;
* the selections: each policy's negatives from that pool; with ``train``, the list of the policy's generated STAR
  run (:func:`run_name`, added by :func:`expand_config`: an ordinary run continuing the miner, whose own
  ``select_hard_negatives`` job makes the list), else the experiment's own selection
  (``results/false_negatives/selections/<policy>.parquet``);
* ``results/false_negatives/leakage.{parquet,md}``: leakage and hardness per policy
  (:func:`hardneg.mining.leakage.write_leakage`), and ``leakage.png`` (:mod:`hardneg.figures.leakage`);
* with ``train``, ``results/false_negatives/effectiveness.{parquet,md}``: the generated runs' measures on the
  evaluation split with paired tests against the reference's run
  (:func:`hardneg.experiments.false_negatives_effectiveness.write_effectiveness`);
* the target ``false_negatives`` (:func:`targets`) and the report's pages (:func:`report_pages`);
* :data:`EXPERIMENT`: its declaration, which the workflow iterates (:mod:`hardneg.experiments`).
"""

from __future__ import annotations

import copy
from dataclasses import asdict, dataclass, field, fields

from hardneg import methods
from hardneg.datasets.hidden import hidden_split
from hardneg.errors import ConfigError
from hardneg.experiments.declaration import Experiment
from hardneg.methods.star import METHOD as STAR  # the method of the generated runs
from hardneg.mining.leakage import policy_settings
from hardneg.mining.policies import Policy
from hardneg.mining.pool import Pool
from hardneg.schema.names import quoted
from hardneg.schema.values import dataclass_from

SECTION = "false_negatives"  # the config's section, the experiment's folder under results/ and its target

# The policy filters that make a policy more than plain top-k (the reference keeps `keep`, `depth`, `sampling`).
_FILTERS = (
    "rank_range",
    "exclude_duplicates",
    "margin",
    "relative_margin",
    "max_score",
    "min_score",
    "ce_threshold",
    "ce_margin",
)
_CE_FILTERS = ("ce_threshold", "ce_margin")


def run_name(miner: str, policy: str) -> str:
    """The generated STAR run trained on the negatives that ``policy`` selects from ``miner``'s pool."""
    return f"{miner}_fn_{policy}"


@dataclass(frozen=True)
class Settings:
    """The validated ``false_negatives`` section (each key is described in the schema); the keys naming runs carry
    ``role`` in their metadata."""

    dataset: str
    miner: str = field(metadata={"role": "the dense run whose pool the policies select from"})
    bm25: str | None = field(metadata={"role": "the BM25 run of the pool's BM25 columns"})
    cross_encoder: str | None = field(metadata={"role": "the cross-encoder run scoring the pool"})
    policies: list[str] = field(default_factory=list)
    depth: int = 200
    duplicates: bool = True
    train: bool = False
    params: dict = field(default_factory=dict)
    measures: list[str] = field(default_factory=list)
    correction: str = "holm"


RUN_KEYS = tuple(f.name for f in fields(Settings) if "role" in f.metadata)  # the section's keys naming runs


def section(config: dict) -> Settings | None:
    """The config's validated ``false_negatives`` section; None when it has none."""
    if not config.get(SECTION):
        return None
    return dataclass_from(Settings, config[SECTION], SECTION)


def _dataset_of(config: dict, run: str) -> str:
    return config["runs"][run].get("dataset", config["dataset"])


def check_config(config: dict) -> None:
    """Check the ``false_negatives`` section of a config the schema validated (defaults filled), before its runs
    are generated: a dataset with ``hide_positives``; the runs it names (a dense miner, a BM25 run, a cross-encoder
    that scores pairs) on that dataset; ``policies`` of the config's ``policies``, the first plain top-k (no filter
    but ``keep``), none deeper than ``depth``, none filtering on a cross-encoder without ``cross_encoder``; with
    ``train``, ``measures`` among ``evaluation.measures`` and no ``params.mining`` (the experiment sets it).

    :raises ConfigError: naming the key at fault (``false_negatives.<key>``, or ``policies.<name>.<key>``).
    """
    fn = section(config)
    if fn is None:
        return
    if fn.dataset not in config["datasets"]:
        raise ConfigError(
            f"{SECTION}.dataset",
            f"no dataset named {quoted(fn.dataset)} under 'datasets' (defined: {', '.join(config['datasets'])})",
        )
    if hidden_split(config["datasets"][fn.dataset]) is None:
        raise ConfigError(
            f"{SECTION}.dataset",
            f"dataset {fn.dataset!r} hides no positives: give it hide_positives "
            f"(e.g. datasets.{fn.dataset}.hide_positives: {{share: 0.5}})",
        )
    for key in RUN_KEYS:
        run = getattr(fn, key)
        if run is None:
            continue
        if run not in config["runs"]:
            raise ConfigError(f"{SECTION}.{key}", f"no run named {quoted(run)}")
        if _dataset_of(config, run) != fn.dataset:
            raise ConfigError(
                f"{SECTION}.{key}",
                f"run {run!r} uses dataset {_dataset_of(config, run)!r}, not the "
                f"experiment's {fn.dataset!r} ({SECTION}.dataset)",
            )
    miner = config["runs"][fn.miner]
    if methods.get(miner["method"]).kind != methods.DENSE:
        raise ConfigError(
            f"{SECTION}.miner",
            f"run {fn.miner!r} is a {miner['method']} run; the miner is a dense "
            f"run ({', '.join(methods.names(methods.DENSE))})",
        )
    if fn.cross_encoder is not None and methods.get(config["runs"][fn.cross_encoder]["method"]).score_pairs is None:
        raise ConfigError(
            f"{SECTION}.cross_encoder",
            f"run {fn.cross_encoder!r} is a {config['runs'][fn.cross_encoder]['method']} run, which scores no pairs",
        )
    for position, name in enumerate(fn.policies):
        if name not in config["policies"]:
            known = ", ".join(config["policies"]) or "none"
            raise ConfigError(
                f"{SECTION}.policies.{position}", f"no policy {quoted(name)} in the config's policies ({known})"
            )
        if name in fn.policies[:position]:
            raise ConfigError(f"{SECTION}.policies.{position}", f"policy {name!r} is listed twice")
        policy = config["policies"][name]
        if policy.get("depth") is not None and policy["depth"] > fn.depth:
            raise ConfigError(
                f"policies.{name}.depth",
                f"{policy['depth']} is deeper than the pool of the "
                f"false-negative experiment ({SECTION}.depth {fn.depth})",
            )
        uses_ce = [key for key in _CE_FILTERS if policy.get(key) is not None]
        if uses_ce and fn.cross_encoder is None:
            raise ConfigError(
                f"{SECTION}.cross_encoder",
                f"policy {name!r} filters on a cross-encoder's scores "
                f"({uses_ce[0]}): name the cross-encoder run that scores "
                f"the pool",
            )
    reference = config["policies"][fn.policies[0]]
    filtering = [key for key in _FILTERS if reference.get(key) not in (None, False)]
    if filtering:
        raise ConfigError(
            f"{SECTION}.policies.0",
            f"the first policy is the reference, plain top-k (keep only); "
            f"{fn.policies[0]!r} sets {', '.join(filtering)}",
        )
    if fn.train:
        for position, measure in enumerate(fn.measures):
            if measure not in config["evaluation"]["measures"]:
                raise ConfigError(
                    f"{SECTION}.measures.{position}",
                    f"{measure!r} is not one of evaluation.measures ({', '.join(config['evaluation']['measures'])})",
                )
        if "mining" in fn.params:
            raise ConfigError(
                f"{SECTION}.params.mining",
                "the experiment sets the generated runs' mining section "
                f"(its depth, duplicates and each policy): set {SECTION}."
                "depth and the policies instead",
            )


def _generated_run(fn: Settings, policy: str, split: str) -> dict:
    """The STAR run of one policy: it continues the miner's model on the policy's negatives from the miner's pool
    (the experiment's depth, BM25 and cross-encoder runs), with ``false_negatives.params``."""
    params = copy.deepcopy(fn.params)
    params.setdefault("train", {})["split"] = split  # the pool's split: the one with hidden positives
    params["mining"] = {"depth": fn.depth, "duplicates": fn.duplicates, "policy": policy}
    inputs = {STAR.role_providing("model"): fn.miner, STAR.role_providing("miner"): fn.miner}
    if fn.bm25 is not None:
        inputs[STAR.role_providing("reference_ranking")] = fn.bm25
    if fn.cross_encoder is not None:
        inputs[STAR.role_providing("scorer")] = fn.cross_encoder
    return {"method": STAR.name, "dataset": fn.dataset, "inputs": inputs, "params": params}


def expand_config(config: dict) -> bool:
    """With ``false_negatives.train``, add one STAR run per policy (:func:`run_name`; kept if the config defines
    it already). Returns whether runs were added (the config is then validated again for their defaults)."""
    fn = section(config)
    if fn is None or not fn.train:
        return False
    split = hidden_split(config["datasets"][fn.dataset])
    assert split is not None  # check_config refused a dataset that hides none
    for policy in fn.policies:
        name, generated = run_name(fn.miner, policy), _generated_run(fn, policy, split)
        defined = config["runs"].get(name)
        if defined is not None and (
            defined.get("method") != generated["method"]
            or defined.get("inputs") != generated["inputs"]
            or defined.get("dataset", config.get("dataset")) != generated["dataset"]
        ):
            raise ConfigError(
                f"runs.{name}",
                f"the false_negatives experiment trains a run of this name (STAR on "
                f"the negatives policy {policy!r} selects from {fn.miner}'s pool); "
                f"the run defined here is another one: rename it (a run of this name "
                f"may only change the generated one's params)",
            )
        config["runs"].setdefault(name, generated)
    return True


# ------------------------------------------------------------------------------------------- the plan's
def experiment_pools(plan) -> list[Pool]:
    """The experiment's pool, which the plan builds beside the mining runs' (none without the section)."""
    return [pool(plan)] if section(plan.config) else []


def _settings(plan) -> Settings:
    fn = section(plan.config)
    if fn is None:
        raise ConfigError(
            SECTION,
            "the config has no false_negatives section (dataset, miner, policies): add one "
            "to run the false-negative experiment",
        )
    return fn


def split(plan) -> str:
    """The split whose positives the experiment's dataset hides (its pool's split)."""
    fn = _settings(plan)
    hidden = hidden_split(plan.datasets[fn.dataset])
    assert hidden is not None  # check_config refused a dataset that hides none
    return hidden


def pool(plan) -> Pool:
    """The miner's candidate pool the policies select from (the one its generated runs select from too)."""
    fn = _settings(plan)
    return Pool(
        miner=fn.miner,
        split=split(plan),
        depth=fn.depth,
        bm25=fn.bm25,
        cross_encoder=fn.cross_encoder,
        duplicates=fn.duplicates,
        dataset=fn.dataset,
    )


def pool_path(plan) -> str:
    chosen = pool(plan)
    return plan.layout.pool(chosen.miner, chosen.name)


def policies(plan) -> list[str]:
    """The experiment's policies, the reference first."""
    return list(_settings(plan).policies)


def runs(plan) -> dict[str, str]:
    """policy → its generated STAR run (none without ``train``)."""
    fn = _settings(plan)
    return {policy: run_name(fn.miner, policy) for policy in fn.policies} if fn.train else {}


def selected_policies(plan) -> list[str]:
    """The policies whose negatives the experiment selects itself (rule false_negatives_select): all of them
    without ``train``; none with it (each generated run's select_hard_negatives job makes its list)."""
    if section(plan.config) is None or runs(plan):
        return []
    return policies(plan)


def selection_path(plan, policy: str) -> str:
    """The negatives ``policy`` selects from the pool: its generated run's list, or the experiment's own."""
    generated = runs(plan)
    if policy in generated:
        return plan.layout.hard_negatives(generated[policy])
    return plan.layout.experiment(SECTION, f"selections/{policy}.parquet")


def policy_params(plan, policy: str) -> dict:
    """A policy's keys, every one of them (plain YAML/JSON values), as the selection job is given them."""
    chosen = Policy.from_params(plan.config["policies"][policy])
    return {key: list(value) if isinstance(value, tuple) else value for key, value in asdict(chosen).items()}


def leakage_inputs(plan) -> dict:
    """What the leakage table reads: the ``pool``, the dataset's ``hidden`` judgements (the folder) and each
    policy's ``selections`` (aligned with :func:`policies`)."""
    fn = _settings(plan)
    return {
        "pool": pool_path(plan),
        "hidden": plan.layout.hidden_qrels_dir(fn.dataset),
        "selections": [selection_path(plan, policy) for policy in policies(plan)],
    }


def leakage_params(plan) -> dict:
    """The leakage job's settings: the policies (the reference first) and their filters in words, the miner,
    dataset, split and depth."""
    fn = _settings(plan)
    names = policies(plan)
    return {
        "policies": names,
        "settings": {name: policy_settings(policy_params(plan, name)) for name in names},
        "miner": fn.miner,
        "dataset": fn.dataset,
        "split": split(plan),
        "depth": fn.depth,
    }


def effectiveness_inputs(plan) -> dict:
    """The generated runs' ``per_query`` values on the evaluation split (aligned with :func:`policies`)."""
    generated = runs(plan)
    if not generated:
        raise ConfigError(
            f"{SECTION}.train",
            "the effectiveness table compares the runs trained on each policy's negatives: set train: true",
        )
    return {"per_query": [plan.layout.per_query(generated[policy]) for policy in policies(plan)]}


def output(plan, file: str) -> str:
    """A file of the experiment's folder, ``results/false_negatives/<file>``."""
    return plan.layout.experiment(SECTION, file)


def targets(plan) -> list[str]:
    """What the ``false_negatives`` target builds: the leakage table and figure, with ``train`` the effectiveness
    table, and their pages of the report."""
    _settings(plan)
    files = [output(plan, "leakage.md"), output(plan, "leakage.png")]
    if runs(plan):
        files.append(output(plan, "effectiveness.md"))
    return files + [f"{markdown[: -len('.md')]}.html" for markdown in report_pages(plan)]


def figure_targets(plan) -> list[str]:
    """The experiment's figure, for the ``paper`` target (none without the section)."""
    return [output(plan, "leakage.png")] if section(plan.config) else []


def report_pages(plan) -> dict:
    """The experiment's Markdown pages in the report (none without the section): path → (title, category, caption
    file of workflow/report/, the figures that come with it)."""
    if section(plan.config) is None:
        return {}
    pages = {
        output(plan, "leakage.md"): (
            "False negatives: leakage and hardness of each selection policy",
            "Experiments",
            "false_negatives_leakage.rst",
            [output(plan, "leakage.png")],
        )
    }
    if runs(plan):
        pages[output(plan, "effectiveness.md")] = (
            "False negatives: training on each policy's negatives",
            "Experiments",
            "false_negatives_effectiveness.rst",
            [],
        )
    return pages


def experiment_runs(plan) -> set[str]:
    """The runs the experiment's pages read: the miner, the BM25 and cross-encoder runs, the generated runs."""
    fn = section(plan.config)
    if fn is None:
        return set()
    named = {*(getattr(fn, key) for key in RUN_KEYS), *runs(plan).values()}
    return {run for run in named if run is not None}


EXPERIMENT = Experiment(
    name=SECTION,
    summary="each selection policy's leakage of hidden positives, hardness and (with train) effectiveness",
    rule_file="false_negatives.smk",
    rules=("false_negatives_select", "leakage_table", "leakage_figure", "false_negatives_effectiveness"),
    reserved_names={SECTION: "the false-negative experiment"},
    expand_config=expand_config,
    runs=experiment_runs,
    report_pages=report_pages,
    check_config=check_config,
    figure_targets=figure_targets,
    pools=experiment_pools,
)
