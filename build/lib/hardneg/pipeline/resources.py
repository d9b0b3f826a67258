"""What each rule's jobs ask the scheduler for: the workflow's own values, or the config's ``resources`` section.

A rule writes ``**rule_resources("<rule>", mem_mb=..., runtime=...)`` in its ``resources:``; the values given there
are sized for the synthetic default, and ``resources.<rule>`` of the config replaces any of them (MS MARCO's
configs give the full-scale ones). Snakemake's ``--set-resources`` still has the last word.
"""

from __future__ import annotations

from typing import Iterable

from hardneg.errors import ConfigError


def rule_resources(config: dict, rule: str, **defaults) -> dict:
    """The resources of ``rule``: ``defaults`` updated with the config's ``resources.<rule>``."""
    return {**defaults, **config.get("resources", {}).get(rule, {})}


def check_resource_rules(config: dict, rules: Iterable[str]) -> None:
    """Every rule named under ``resources`` is one of ``rules`` (those that take their resources from the config);
    a misspelt name would otherwise be ignored without a word."""
    known = sorted(set(rules))
    for name in config.get("resources", {}):
        if name not in known:
            raise ConfigError(f"resources.{name}", f"no rule named {name!r} takes its resources from the config; "
                                                   f"rules: {', '.join(known)}")
