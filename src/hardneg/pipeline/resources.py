"""What each rule's jobs ask the scheduler for: the workflow's own values, or the config's ``resources`` section.

A rule writes ``**rule_resources("<rule>", mem_mb=..., runtime=...)`` in its ``resources:``; the values given there
are sized for the synthetic default, and ``resources.<rule>`` of the config replaces any of them (MS MARCO's
configs give the full-scale ones). Snakemake's ``--set-resources`` still has the last word.

:data:`RESOURCE_RULES` declares those rules once: :func:`check_resource_rules` holds the config's ``resources``
to them (``hardneg check-config`` and the workflow alike, through
:func:`hardneg.pipeline.config.validate_config`), and the Snakefile checks with :func:`check_rules_declared`
that the rules calling ``rule_resources`` are exactly these.
"""

from __future__ import annotations

from collections.abc import Iterable

from hardneg.errors import ConfigError
from hardneg.experiments import EXPERIMENTS
from hardneg.pipeline.figures import FIGURES
from hardneg.schema.names import quoted

# The rules whose resources the config's `resources` section sets: those of rules/*.smk, and one rule
# figure_<name> per figure (rules/figures.smk).
RESOURCE_RULES: tuple[str, ...] = tuple(
    sorted(
        (
            "assemble_episodes",
            "audit_hard_negatives",
            "bm25_index",
            "bm25_search",
            "build_faiss_index",
            "candidate_pool",
            "compare",
            "dense_search",
            "download",
            "encode_corpus_shard",
            "evaluate",
            "extract_member",
            "fuse",
            "gather_embeddings",
            "hardneg_viewer",
            "import_hard_negatives",
            "markdown_page",
            "mining_card",
            "near_duplicates",
            "positive_scores",
            "prepare_dataset",
            "rerank",
            "run_config",
            "run_graph",
            "score_pool",
            "select_hard_negatives",
            "summary",
            "teacher_pool_scores",
            "tokenize",
            "train_dense",
            "train_episode",
            "train_tokenizer",
            "training_time_table",
            "tune_fusion",
            *(f"figure_{name}" for name in FIGURES),
            *(rule for experiment in EXPERIMENTS.values() for rule in experiment.rules),
        )
    )
)


# Rules that were merged into another, with the rule that now reads their resources: a config naming one is told
# where its values go (a run's search and evaluation with another index are jobs of the rule for its own index).
MERGED_RULES: dict[str, str] = {"dense_search_with_index": "dense_search", "evaluate_with_index": "evaluate"}


def rule_resources(config: dict, rule: str, **defaults) -> dict:
    """The resources of ``rule``: ``defaults`` updated with the config's ``resources.<rule>``."""
    return {**defaults, **config.get("resources", {}).get(rule, {})}


def check_resource_rules(config: dict, rules: Iterable[str] = RESOURCE_RULES) -> None:
    """Every rule named under ``resources`` is one of ``rules`` (by default :data:`RESOURCE_RULES`, those that take
    their resources from the config); a misspelt name would otherwise be ignored without a word."""
    known = sorted(set(rules))
    for name in config.get("resources", {}):
        if name in MERGED_RULES and MERGED_RULES[name] in known:
            merged = MERGED_RULES[name]
            raise ConfigError(
                f"resources.{name}",
                f"rule {quoted(name)} is now part of rule {quoted(merged)}, which runs both its jobs: move these "
                f"values to resources.{merged} (they apply to every job of it)",
            )
        if name not in known:
            raise ConfigError(
                f"resources.{name}",
                f"no rule named {quoted(name)} takes its resources from the config; rules: {', '.join(known)}",
            )


def check_rules_declared(called: Iterable[str]) -> None:
    """The rules that called ``rule_resources`` while the workflow was read (``called``) are exactly
    :data:`RESOURCE_RULES`; a :class:`RuntimeError` naming the difference otherwise (a rule added, renamed or
    removed in ``rules/`` without its declaration here, so that ``check-config`` and the workflow would disagree
    on the names ``resources`` may hold)."""
    called, declared = set(called), set(RESOURCE_RULES)
    if called != declared:
        undeclared, unused = sorted(called - declared), sorted(declared - called)
        raise RuntimeError(
            "the rules that read the config's `resources` differ from "
            "hardneg.pipeline.resources.RESOURCE_RULES: "
            + "; ".join(
                filter(
                    None,
                    [
                        f"not declared: {', '.join(undeclared)}" if undeclared else None,
                        f"declared but no rule calls rule_resources: {', '.join(unused)}" if unused else None,
                    ],
                )
            )
        )
