"""One word, one meaning: a *run* is an entry of the config's ``runs:``; a ranked list of documents per query (what
TREC calls a run file) is a *ranking*. The package names no ranking a run (the RANKING artifact kind, its readers
and writers), no layout path puts rankings in a ``runs/`` folder, and no rule names a ranking ``run``. Each check is
also shown to find a planted violation."""

import inspect
import io
import re
import tokenize
from pathlib import Path

from hardneg.io.layout import Layout
from tests.support import REPO

# The names rankings had: the artifact kind, its reader, writers and loaders, the search that builds one.
OLD_NAMES = ("RUN", "RunWriter", "read_run", "write_run", "load_run", "run_table", "search_run", "search_run_blocks",
             "write_search_run", "check_run_rows")
# Any mention of them in the package's text, on word boundaries (the command line's placeholder of a run's name
# is written <run>, so that RUN appears nowhere).
MENTIONED = re.compile(r"\b(?:" + "|".join(OLD_NAMES) + r")\b")
# An input or output of a rule (or of the plan's input functions) named run whose path is a ranking
RULE_RANKING = re.compile(r"""(?:\brun\s*=|["']run["']\s*:)[^\n]*\.ranking(?:_trec)?\(""")


def _python_names(text: str) -> set[str]:
    return {token.string for token in tokenize.generate_tokens(io.StringIO(text).readline)
            if token.type == tokenize.NAME}


def old_words(package: Path) -> list[str]:
    """'file:line: text' of each mention of an old name of a ranking in the package's Python and YAML files."""
    found = []
    for path in sorted([*package.rglob("*.py"), *package.rglob("*.yaml")]):
        text = path.read_text(encoding="utf-8")
        shown = path.relative_to(package.parent)
        for number, line in enumerate(text.splitlines(), 1):
            if MENTIONED.search(line):
                found.append(f"{shown}:{number}: {line.strip()}")
        if path.suffix == ".py" and "RUN" in _python_names(text):
            found.append(f"{shown}: the Python name RUN")
    return found


def rankings_named_run(paths) -> list[str]:
    """'file:line: text' of each input or output named run whose path is a ranking, in rule files and Python."""
    return [f"{path.name}:{number}: {line.strip()}"
            for path in paths
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
            if RULE_RANKING.search(line)]


def layout_paths(layout: Layout) -> dict[str, list[str]]:
    """Every path of ``layout``, by method: each called with ``x`` for every argument, and once more without the
    optional ones."""
    paths = {}
    for name, method in inspect.getmembers(type(layout), inspect.isfunction):
        if name.startswith("_"):
            continue
        params = list(inspect.signature(method).parameters.values())[1:]
        required = {p.name: "x" for p in params if p.default is inspect.Parameter.empty}
        paths[name] = sorted({method(layout, **required), method(layout, **{p.name: "x" for p in params})})
    return paths


def in_runs_folder(paths: dict[str, list[str]]) -> list[str]:
    return [f"{name}: {path}" for name, found in paths.items() for path in found
            if "/runs/" in f"{path}/"]


def test_the_package_names_no_ranking_a_run():
    assert old_words(REPO / "src" / "hardneg") == []


def test_no_layout_path_is_in_a_runs_folder():
    paths = layout_paths(Layout("results"))
    assert paths["ranking"] == ["results/x/by_index/x/rankings/x.parquet", "results/x/rankings/x.parquet"]
    assert in_runs_folder(paths) == []


def test_no_rule_names_a_ranking_run():
    package = REPO / "src" / "hardneg"
    files = [*sorted((REPO / "rules").glob("*.smk")), REPO / "Snakefile", *sorted(package.rglob("*.py"))]
    assert rankings_named_run(files) == []


def test_the_checks_find_planted_violations(tmp_path):
    package = tmp_path / "hardneg"
    (package / "io").mkdir(parents=True)
    (package / "io" / "a.py").write_text('"""Read a RUN Parquet file."""\nfrom hardneg.io.artifacts import RUN\n'
                                         'x = read_run(p)\nhelp = "results/RUN/"\n')
    (package / "schema.yaml").write_text("doc: the ``RUN`` kind, written by RunWriter\n")
    assert old_words(package) == [
        "hardneg/io/a.py:1: \"\"\"Read a RUN Parquet file.\"\"\"", "hardneg/io/a.py:2: from hardneg.io.artifacts import RUN",
        "hardneg/io/a.py:3: x = read_run(p)", 'hardneg/io/a.py:4: help = "results/RUN/"',
        "hardneg/io/a.py: the Python name RUN", "hardneg/schema.yaml:1: doc: the ``RUN`` kind, written by RunWriter"]

    rules = tmp_path / "search.smk"
    rules.write_text('rule search:\n    output:\n        run=update(LAYOUT.ranking("{run}", "{split}")),\n'
                     '    wildcard_constraints:\n        run=names_regex(PLAN.runs),\n')
    plan = tmp_path / "plan.py"
    plan.write_text('inputs = {"run": layout.ranking(miner, split), "ranking": layout.ranking(miner, split)}\n')
    assert rankings_named_run([rules, plan]) == [
        'search.smk:3: run=update(LAYOUT.ranking("{run}", "{split}")),',
        'plan.py:1: inputs = {"run": layout.ranking(miner, split), "ranking": layout.ranking(miner, split)}']

    class OldLayout(Layout):
        def ranking(self, run, split, index=None):
            return f"{self.root}/{run}/runs/{split}.parquet"

    assert in_runs_folder(layout_paths(OldLayout("results"))) == ["ranking: results/x/runs/x.parquet"]
