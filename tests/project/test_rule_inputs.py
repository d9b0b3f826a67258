"""A rule whose inputs vary with its run (`unpack(lambda w: PLAN.<...>_inputs(...))`) says which inputs it can
take: a comment above the unpack names them all. The names come from the plan, so the comment is checked against
it: over the default config and the test suite's configs, every wildcard value the plan knows, each input name the
plan's function gives a job is one its comment names."""

import copy
import itertools
import re

from hardneg.experiments import false_negatives, pq_matrix
from hardneg.io.layout import by_index, index_slug
from hardneg.pipeline.config import read_config_files, validate_config
from hardneg.pipeline.figures import FIGURES
from hardneg.pipeline.plan import Plan
from tests.support import REPO
from tests.support import configs as test_configs

UNPACK = re.compile(r"^(?P<indent>\s+)unpack\((?P<call>lambda [^\n]*)\),$", re.M)
COMMENT = re.compile(r"inputs by name, as (?P<function>[\w.]+) gives them for the job: (?P<names>[\w, ]+)$")


def unpacked_inputs() -> list[tuple[str, str, str | None, list[str]]]:
    """(rule file, the unpack's lambda, the function its comment names, the names it lists) of every unpack."""
    found = []
    for path in sorted((REPO / "rules").glob("*.smk")):
        lines = path.read_text(encoding="utf-8").splitlines()
        for number, line in enumerate(lines):
            unpack = UNPACK.match(line)
            if not unpack:
                continue
            above = number
            while above > 0 and lines[above - 1].strip().startswith("#"):
                above -= 1
            comment = " ".join(line.strip().lstrip("#").strip() for line in lines[above:number])
            named = COMMENT.search(comment)
            function = named.group("function") if named else None
            names = [name.strip() for name in named.group("names").split(",")] if named else []
            found.append((path.name, unpack.group("call"), function, names))
    return found


def plans() -> list[Plan]:
    configs = [read_config_files([str(REPO / "config" / "config.yaml")], {})]
    configs += [copy.deepcopy(getattr(test_configs, name)) for name in
                ("DENSE_CONFIG", "FUSION_CONFIG", "STAR_CONFIG", "CROSS_ENCODER_CONFIG", "FALSE_NEGATIVES_CONFIG")]
    return [Plan(validate_config(config)) for config in configs]


class Wildcards:
    def __init__(self, **values):
        self.__dict__.update(values)


def names_given(plan: Plan, call: str) -> set[str]:
    """The input names the unpack's function gives over every wildcard value ``plan`` knows (a value the rule
    cannot take raises, and is passed over)."""
    scope = {"PLAN": plan, "FALSE_NEGATIVES": false_negatives, "PQ_MATRIX": pq_matrix, "index_slug": index_slug}
    if "figure_name" in call:
        function = eval(call, scope | {"figure_name": None})  # the rule file's own lambda
        calls = [lambda name=name: function(None, figure_name=name) for name in FIGURES]
    else:
        function = eval(call, scope)
        values = {"run": list(plan.runs), "teacher": list(plan.runs), "pool": sorted({p.name for p in plan.mining.pools.values()}),
                  "split": ["train", "dev", "test"], "index": ["Flat", "PQ16", "PQ32", "HNSW32"],
                  "by_index": ["", *(by_index(slug) for slug in ("Flat", "PQ16", "PQ32", "HNSW32"))],
                  "comparison": list(plan.compare.comparisons())}
        used = sorted(set(re.findall(r"\bw\.(\w+)", call)))
        calls = [lambda combo=combo: function(Wildcards(**dict(zip(used, combo))))
                 for combo in itertools.product(*(values[name] for name in used))]
    names = set()
    for call_once in calls:
        try:
            names |= set(call_once())
        except Exception:  # a run, split or pool this rule does not build
            continue
    return names


def test_every_unpacked_rule_input_names_what_it_can_take():
    found = unpacked_inputs()
    assert len(found) >= 24
    uncommented = [f"{file}: {call}" for file, call, function, _ in found if function is None]
    assert uncommented == [], "an unpack without a comment naming its inputs"
    for file, call, function, names in found:
        assert function.split(".")[-1] + "(" in call, (file, call, function)
    given = {(file, call): set() for file, call, _, _ in found}
    for plan in plans():
        for file, call, _, _ in found:
            given[(file, call)] |= names_given(plan, call)
    missing = {f"{file}: {call}": sorted(given[(file, call)] - set(names)) for file, call, _, names in found
               if given[(file, call)] - set(names)}
    assert missing == {}
    assert sum(bool(names) for names in given.values()) >= 20  # the plans reach most rules


def test_a_comment_missing_a_name_is_found():
    plan = plans()[0]
    given = names_given(plan, "lambda w: PLAN.train_inputs(w.run)")
    assert {"init", "hard_negatives", "qrels"} <= given
