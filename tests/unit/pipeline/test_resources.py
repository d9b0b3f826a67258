"""The rules whose resources the config sets are declared once (hardneg.pipeline.resources.RESOURCE_RULES): they
are the rules of rules/*.smk that call rule_resources, and validate_config holds the config's `resources` to
them, as the workflow does."""

import copy
import re

import pytest

from hardneg.errors import ConfigError
from hardneg.pipeline.config import validate_config
from hardneg.pipeline.figures import FIGURES
from hardneg.pipeline.resources import RESOURCE_RULES, check_resource_rules, check_rules_declared, rule_resources
from tests.support import REPO
from tests.support.configs import TINY

_CALL = re.compile(r"\*\*rule_resources\((f?)\"([A-Za-z_][\w{}]*)\"")  # not the usage note, "<rule>"


def _rules_calling_rule_resources() -> set[str]:
    """The rule names rules/*.smk pass to rule_resources; the one f-string, figure_{figure_name}, stands for one
    rule per figure."""
    names = set()
    for path in sorted((REPO / "rules").glob("*.smk")):
        for is_template, name in _CALL.findall(path.read_text()):
            if is_template:
                assert name == "figure_{figure_name}", (path, name)
                names.update(f"figure_{figure}" for figure in FIGURES)
            else:
                names.add(name)
    return names


def test_the_declared_rules_are_those_calling_rule_resources():
    assert len(RESOURCE_RULES) == len(set(RESOURCE_RULES)) and list(RESOURCE_RULES) == sorted(RESOURCE_RULES)
    assert set(RESOURCE_RULES) == _rules_calling_rule_resources()
    check_rules_declared(_rules_calling_rule_resources())


def test_a_rule_added_or_removed_without_its_declaration_stops_the_workflow():
    with pytest.raises(RuntimeError, match=r"RESOURCE_RULES: not declared: new_rule$"):
        check_rules_declared({*RESOURCE_RULES, "new_rule"})
    with pytest.raises(RuntimeError, match=r"RESOURCE_RULES: declared but no rule calls rule_resources: evaluate$"):
        check_rules_declared(set(RESOURCE_RULES) - {"evaluate"})


@pytest.mark.parametrize("name", ["nosuchrule", "train_dens", "figure_nosuch", "Train_dense"])
def test_validate_config_refuses_resources_of_a_rule_that_reads_none(name):
    config = copy.deepcopy(TINY)
    config["resources"] = {"train_dense": {"mem_mb": 64000}, name: {"runtime": 5}}
    with pytest.raises(ConfigError) as info:
        validate_config(config)
    assert info.value.key == f"resources.{name}"
    assert info.value.message == (f"no rule named {name!r} takes its resources from the config; rules: "
                                  f"{', '.join(RESOURCE_RULES)}")


@pytest.mark.parametrize(("name", "merged"), [("evaluate_with_index", "evaluate"),
                                              ("dense_search_with_index", "dense_search")])
def test_resources_of_a_rule_merged_into_another_say_where_they_go(name, merged):
    config = copy.deepcopy(TINY)
    config["resources"] = {name: {"mem_mb": 64000}}
    with pytest.raises(ConfigError) as info:
        validate_config(config)
    assert info.value.key == f"resources.{name}"
    assert info.value.message == (f"rule {name!r} is now part of rule {merged!r}, which runs both its jobs: move "
                                  f"these values to resources.{merged} (they apply to every job of it)")
    config["resources"] = {merged: {"mem_mb": 64000}}
    validate_config(config)


def test_every_declared_rule_may_be_given_resources():
    config = copy.deepcopy(TINY)
    config["resources"] = {name: {"mem_mb": 100 + i} for i, name in enumerate(RESOURCE_RULES)}
    validate_config(config)
    check_resource_rules(config)
    assert rule_resources(config, "figure_tsne", mem_mb=1000, runtime=5) == {
        "mem_mb": 100 + RESOURCE_RULES.index("figure_tsne"), "runtime": 5}
